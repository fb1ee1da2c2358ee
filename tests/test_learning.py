"""Learning works end to end on CPU: a tiny model learns its questions, and train() saves loadable params."""


import pytest
import torch

from runtime.decoding import predict_places_plain
from submission import CharCorruptionDataset, GPT, NameDataset, Trainer, TrainerConfig, evaluate_places, train

pytestmark = pytest.mark.usefixtures("single_thread")

BLOCK = 48


@pytest.fixture(scope="module")
def task(make_corpus, tmp_path_factory):
    """(questions path, questions, NameDataset) for 12 generated people."""
    corpus = make_corpus(seed=11, count=12)
    path = tmp_path_factory.mktemp("learning") / "questions.tsv"
    path.write_text(corpus.questions, encoding="utf-8")
    names = NameDataset(corpus.questions, CharCorruptionDataset(corpus.wiki, BLOCK))
    return path, [f"Where was {name} born?" for name, _ in corpus.people], names


def test_tiny_model_learns_its_training_questions(task, tiny_config):
    """Finetuned from scratch, a 2-layer model answers every one of its 12
    training questions by greedy decoding."""
    path, questions, names = task
    torch.manual_seed(0)
    model = GPT(tiny_config(len(names.stoi), BLOCK, n_layer=2, n_head=2, n_embd=64))
    config = TrainerConfig(max_epochs=80, batch_size=12, learning_rate=5e-3)
    Trainer(model, names, None, config).train()
    predictions = predict_places_plain(model, questions, names, "cpu")
    total, correct = evaluate_places(str(path), predictions)
    assert total == len(questions)
    assert correct == total, predictions


@pytest.mark.parametrize("perceiver", [False, True], ids=["vanilla", "perceiver"])
def test_params_saved_by_train_load_into_a_fresh_model(task, tiny_config, tmp_path, perceiver):
    """train() trains first and then saves the state dict; a differently
    initialised model that loads it gives the trained model's outputs."""
    _, _, names = task
    extra = dict(perceiver=True, bottleneck_dim=8) if perceiver else {}
    config = tiny_config(len(names.stoi), BLOCK, n_layer=3, **extra)
    torch.manual_seed(0)
    model = GPT(config)
    initial = {name: value.clone() for name, value in model.state_dict().items()}
    trainer = Trainer(model, names, None, TrainerConfig(max_epochs=1, batch_size=6))
    path = tmp_path / "model.params"
    train(model, str(path), trainer)
    saved = torch.load(path, map_location="cpu", weights_only=True)
    assert trainer.step == 2
    assert saved.keys() == initial.keys()
    assert any(not torch.equal(saved[name], initial[name]) for name in saved)

    torch.manual_seed(1)
    fresh = GPT(config).eval()
    idx = torch.randint(0, len(names.stoi), (3, BLOCK))
    with torch.no_grad():
        expected = model.eval()(idx)[0]
        assert not torch.equal(fresh(idx)[0], expected)
        fresh.load_state_dict(saved)
        torch.testing.assert_close(fresh(idx)[0], expected, rtol=0, atol=0)
