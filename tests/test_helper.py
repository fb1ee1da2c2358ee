"""
The helpers run.py calls (src/submission/helper.py): the model builders, the
finetune and pretrain configs (the SPEC's table; num_workers 4 or 0, as the
editions of the handout say), reading the questions (UTF-8 whatever the
locale, any line ending), loading pretrained params strictly onto the CPU,
and train(), which saves the parameters after training.
"""

import copy
import pickle

import pytest
import torch

from submission import (CharCorruptionDataset, GPT, NameDataset, Trainer, finetune,
                        initialize_perceiver_model, initialize_vanilla_model, pretrain, train)

pytestmark = pytest.mark.usefixtures("single_thread")

BLOCK = 64
QUESTIONS = 60  # fewer than the corpus's 200 documents: final_tokens counts the documents

COMMON = dict(batch_size=256, learning_rate=6e-4, lr_decay=True, warmup_tokens=512 * 20, ckpt_path=None)
FINETUNE_WITHOUT_PRETRAIN = dict(COMMON, max_epochs=75)
FINETUNE_PRETRAINED = dict(COMMON, max_epochs=10)
PRETRAIN = dict(COMMON, max_epochs=650, batch_size=128, learning_rate=6e-3)


class Writer:
    def add_scalar(self, tag, value, step):
        pass


def assert_config(tconf, expected, final_tokens, writer):
    for name, value in expected.items():
        assert getattr(tconf, name) == value, name
    assert tconf.num_workers in (0, 4)
    assert tconf.final_tokens == final_tokens
    assert tconf.writer is writer


@pytest.fixture(scope="module")
def pretraining(corpus):
    return CharCorruptionDataset(corpus.wiki, BLOCK)


@pytest.fixture(scope="module")
def questions_path(tmp_path_factory, corpus):
    """The first QUESTIONS questions of the corpus, in a file."""
    path = tmp_path_factory.mktemp("finetune") / "questions.tsv"
    path.write_text("".join(corpus.questions.splitlines(keepends=True)[:QUESTIONS]), encoding="utf-8")
    return path


@pytest.fixture(params=["vanilla", "perceiver"])
def config(request, pretraining, tiny_config):
    extra = dict(perceiver=True, bottleneck_dim=8) if request.param == "perceiver" else {}
    return tiny_config(pretraining.vocab_size, BLOCK, n_layer=3, **extra)


@pytest.fixture
def model(config):
    torch.manual_seed(0)
    return GPT(config)


@pytest.fixture
def saved(config, tmp_path):
    """(path, model): the parameters of a differently seeded model of the same config, saved to a file."""
    torch.manual_seed(1)
    other = GPT(config).eval()
    path = tmp_path / "pretrained.params"
    torch.save(other.state_dict(), path)
    return path, other


def outputs(model, vocab_size):
    idx = torch.randint(0, vocab_size, (2, BLOCK), generator=torch.Generator().manual_seed(2))
    model.eval()
    with torch.no_grad():
        return model(idx)[0]


# ---------------------------------------------------------------- configs

def test_finetune_without_pretraining_config(questions_path, pretraining, model):
    writer = Writer()
    tconf, trainer = finetune(None, str(questions_path), pretraining, BLOCK, model, writer=writer)
    assert_config(tconf, FINETUNE_WITHOUT_PRETRAIN, 200 * len(pretraining) * BLOCK, writer)
    assert isinstance(trainer, Trainer)
    assert trainer.model is model and trainer.config is tconf
    assert isinstance(trainer.train_dataset, NameDataset) and trainer.test_dataset is None
    assert len(trainer.train_dataset) == QUESTIONS
    assert trainer.train_dataset.stoi == pretraining.stoi


def test_finetune_with_pretrained_params_config(questions_path, pretraining, model, saved):
    writer = Writer()
    tconf, trainer = finetune(str(saved[0]), str(questions_path), pretraining, BLOCK, model, writer=writer)
    assert_config(tconf, FINETUNE_PRETRAINED, 200 * len(pretraining) * BLOCK, writer)
    assert trainer.model is model and trainer.config is tconf
    assert len(trainer.train_dataset) == QUESTIONS and trainer.test_dataset is None


def test_finetune_passes_its_learning_rate(questions_path, pretraining, model, saved):
    tconf, _ = finetune(None, str(questions_path), pretraining, BLOCK, model, finetune_lr=1e-3)
    assert tconf.learning_rate == 1e-3
    tconf, _ = finetune(str(saved[0]), str(questions_path), pretraining, BLOCK, model, finetune_lr=2e-3)
    assert tconf.learning_rate == 2e-3


def test_pretrain_config(pretraining, model):
    writer = Writer()
    tconf, trainer = pretrain(pretraining, BLOCK, model, writer=writer)
    assert_config(tconf, PRETRAIN, 200 * len(pretraining) * BLOCK, writer)
    assert trainer.model is model and trainer.config is tconf
    assert trainer.train_dataset is pretraining and trainer.test_dataset is None
    assert pretrain(pretraining, BLOCK, model, pretrain_lr=1e-2)[0].learning_rate == 1e-2


def test_real_corpus_final_tokens(wiki_text, shared_data, tiny_config):
    pretraining = CharCorruptionDataset(wiki_text, 128)
    model = GPT(tiny_config(pretraining.vocab_size, 128, n_layer=2))
    questions = str(shared_data / "birth_places_train.tsv")
    assert pretrain(pretraining, 128, model)[0].final_tokens == 75_187_200
    assert finetune(None, questions, pretraining, 128, model)[0].final_tokens == 75_187_200


# ---------------------------------------------------------------- loading params

def test_finetune_loads_the_pretrained_params(questions_path, pretraining, model, saved):
    path, pretrained = saved
    expected = outputs(pretrained, pretraining.vocab_size)
    assert not torch.equal(outputs(model, pretraining.vocab_size), expected)
    finetune(str(path), str(questions_path), pretraining, BLOCK, model)
    torch.testing.assert_close(outputs(model, pretraining.vocab_size), expected, rtol=0, atol=0)


def test_finetune_without_params_keeps_the_model(questions_path, pretraining, model):
    before = outputs(model, pretraining.vocab_size)
    finetune(None, str(questions_path), pretraining, BLOCK, model)
    torch.testing.assert_close(outputs(model, pretraining.vocab_size), before, rtol=0, atol=0)


def test_finetune_loads_params_onto_the_cpu(questions_path, pretraining, model, saved, monkeypatch):
    """The params are read with map_location cpu, so a file saved on a GPU loads anywhere."""
    calls = []
    real_load = torch.load

    def recording_load(*args, **kwargs):
        calls.append((args, kwargs))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", recording_load)
    finetune(str(saved[0]), str(questions_path), pretraining, BLOCK, model)
    (args, kwargs), = calls
    location = kwargs["map_location"] if "map_location" in kwargs else args[1]
    assert torch.device(location) == torch.device("cpu")


@pytest.mark.parametrize("saved_layers", [2, 4], ids=["keys missing", "keys left over"])
def test_finetune_refuses_params_of_another_model(questions_path, pretraining, config, tmp_path, saved_layers):
    """The pretrained params must fit the model exactly: a file of the same variant with one layer fewer
    (its keys all fit, some are missing) or one more (some are left over) is refused, not taken as a
    pretrained model."""
    path = tmp_path / "other.params"
    other = copy.copy(config)
    other.n_layer = saved_layers
    torch.save(GPT(other).state_dict(), path)
    with pytest.raises(RuntimeError, match="Missing key|Unexpected key"):
        finetune(str(path), str(questions_path), pretraining, BLOCK, GPT(config))


class Pickled:
    """An object a params file may not hold: loading it would run pickled code."""


def test_finetune_loads_params_as_weights_only(questions_path, pretraining, model, saved, tmp_path):
    """A params file holding anything but tensors is refused by the unpickler, before any of it is loaded."""
    state = torch.load(saved[0], weights_only=True)
    state["tok_emb.weight"] = Pickled()
    path = tmp_path / "pickled.params"
    torch.save(state, path)
    with pytest.raises(pickle.UnpicklingError):
        finetune(str(path), str(questions_path), pretraining, BLOCK, model)


# ---------------------------------------------------------------- reading the questions

def finetune_examples(path, pretraining, model):
    """The (x, y) examples of the NameDataset that finetune reads from `path`, as lists of ids."""
    _, trainer = finetune(None, str(path), pretraining, BLOCK, model)
    return [(x.tolist(), y.tolist()) for x, y in trainer.train_dataset]


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_finetune_reads_questions_with_any_line_ending(questions_path, pretraining, model, tmp_path, newline):
    other = tmp_path / "questions.tsv"
    other.write_bytes(questions_path.read_bytes().replace(b"\n", newline.encode()))
    assert finetune_examples(other, pretraining, model) == finetune_examples(questions_path, pretraining, model)


def test_finetune_reads_questions_as_utf8_whatever_the_locale(pretraining, model, tmp_path, ascii_locale):
    """A question file holding non-ASCII characters is read as UTF-8 (NameDataset then drops them), also
    in the C locale."""
    path = tmp_path / "questions.tsv"
    path.write_text("Where was Ad\u00e9 Moreau born?\tLisbon\nWhere was Bo Szabo born?\tBr\u00fcn\n",
                    encoding="utf-8")
    plain = tmp_path / "plain.tsv"
    plain.write_text("Where was Ad Moreau born?\tLisbon\nWhere was Bo Szabo born?\tBrn\n", encoding="utf-8")
    assert finetune_examples(path, pretraining, model) == finetune_examples(plain, pretraining, model)


# ---------------------------------------------------------------- train

class ShiftingTrainer:
    """A stand-in trainer whose train() adds 1 to every parameter of its model, once a call."""

    def __init__(self, model):
        self.model, self.calls = model, 0

    def train(self):
        self.calls += 1
        with torch.no_grad():
            for parameter in self.model.parameters():
                parameter.add_(1.0)


def test_train_trains_once_and_then_saves_the_trained_state_dict(model, tmp_path):
    before = {name: value.clone() for name, value in model.state_dict().items()}
    trainer = ShiftingTrainer(model)
    path = tmp_path / "model.params"
    assert train(model, str(path), trainer) is None
    saved = torch.load(path, map_location="cpu", weights_only=True)
    assert trainer.calls == 1
    assert saved.keys() == before.keys()
    for name, value in model.state_dict().items():
        assert torch.equal(saved[name], value)
    assert torch.equal(saved["tok_emb.weight"], before["tok_emb.weight"] + 1)


# ---------------------------------------------------------------- model builders

def test_initialize_vanilla_model(tiny_config):
    mconf = tiny_config(40, 48, n_layer=3)
    model = initialize_vanilla_model(mconf)
    assert isinstance(model, GPT) and not model.perceiver
    assert len(model.blocks) == 3


@pytest.mark.parametrize("kwargs, expected", [({}, 32), ({"bottleneck_dim": 12}, 12)])
def test_initialize_perceiver_model_sets_the_bottleneck(tiny_config, kwargs, expected):
    mconf = tiny_config(40, 48, n_layer=4)
    model = initialize_perceiver_model(mconf, **kwargs)
    assert mconf.perceiver is True and mconf.bottleneck_dim == expected
    assert isinstance(model, GPT) and model.perceiver
    assert model.down_block.C.shape == (1, expected, mconf.n_embd)
    assert len(model.blocks) == 2
