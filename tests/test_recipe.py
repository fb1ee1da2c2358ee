"""
The pretraining recipe learns: a short CPU pretraining with the graded
recipe's optimizer settings leaves the loss plateau, where a recipe that
stalls the graded pretraining stays on it.

On the course's data the graded vanilla pretraining sits on a plateau of
about 2.5 before it learns its biographies; minGPT's later rule, weight
decay on the weights of nn.Linear only (linear_weights_only below), held it
there for hundreds of epochs, while its undecayed token embeddings grew
(row norms from 0.3 to about 7; docs/departures.md). Here a 2-layer,
64-wide GPT pretrains with the plain Trainer on the first 64 biographies of
data/wiki.txt for 600 steps, with the graded schedule (warmup 512 * 20
tokens, cosine to 10% at final_tokens = 200 * len(dataset) * block_size),
weight decay 0.1, betas (0.9, 0.95) and gradient clipping at 1.0; the
learning rate is 5e-2 rather than 6e-3, so that the decay's pull
(lr * weight_decay a step) tells within those steps. The threshold was set
between the two rules' losses over seeds 0-4 (RECIPE_CALIBRATION below);
fewer steps bring the two rules' losses too close (480 steps: 2.32 to 2.45
against 2.59 to 2.72 for the vanilla model).

The RoPE edition's model (rope=True: queries and keys rotated by position,
no learnt position embedding), of the same size, pretrains by the same
recipe and learns sooner under either rule. Under linear_weights_only it
does not stay on the plateau as clearly as the vanilla model: within these
600 steps neither model is flat under that rule, both descend slowly, and
the RoPE model ends lower (1.92 to 2.44, the vanilla model 2.44 to 2.58),
yet above where the course's recipe takes it (1.41 to 1.54). Its lowest,
1.92, is too close to the vanilla model's recipe to share a threshold:
each model has its own, between its two rules' losses.
"""

import os
from pathlib import Path

import pytest
import torch

from submission import CharCorruptionDataset, GPT, Trainer, TrainerConfig
from submission import trainer as trainer_module

pytestmark = pytest.mark.usefixtures("single_thread")

WIKI = Path(__file__).resolve().parents[1] / "data" / "wiki.txt"
BLOCK = 64
DOCUMENTS = 64
BATCH = 16
EPOCHS = 150  # 4 steps an epoch: 600 steps
LEARNING_RATE = 5e-2
MODELS = {"vanilla": {}, "rope": {"rope": True}}  # the GPTConfig options of each edition's model
# The loss on the views after those steps, seeds 0-4, on an AMD EPYC with torch 2.13 (mean token-embedding row
# norm in brackets), 2026-12-02:
#   vanilla  the course's recipe 1.97 to 2.12 (2.85 to 2.90), linear_weights_only 2.44 to 2.58 (6.35 to 6.49)
#   rope     the course's recipe 1.41 to 1.54 (2.19 to 2.29), linear_weights_only 1.92 to 2.44 (5.22 to 5.56)
# At 800 steps, on an Intel Xeon, they were 1.64 to 1.90 and 2.33 to 2.38 (vanilla), 1.12 to 1.33 and 2.01 to
# 2.20 (rope); a vanilla calibration on a third machine gave 1.65 to 1.79 and 2.24 to 2.45 from the same code:
# the steps carry the CPU's rounding, by about 0.1 here. No one threshold parts both models' rules with a margin
# (2.12 against 1.92): each model's lies between its two rules.
LEARNT = {"vanilla": 2.25, "rope": 1.7}
# RECIPE_CALIBRATION=1 measures both rules on both models over SEEDS (python3 -m pytest -q -rP tests/test_recipe.py
# prints the losses); CI runs the course's recipe on the first seed only, on each model.
CALIBRATING = os.environ.get("RECIPE_CALIBRATION") == "1"
SEEDS = range(5)


def linear_weights_only(model, weight_decay):
    """minGPT's later rule, the alternative the threshold was calibrated against: weight decay on
    the weights of nn.Linear modules, none on anything else (embeddings, LayerNorm gains, biases)."""
    decayed = {id(module.weight) for module in model.modules() if isinstance(module, torch.nn.Linear)}
    parameters = list(model.parameters())
    return [{"params": [p for p in parameters if id(p) in decayed], "weight_decay": weight_decay},
            {"params": [p for p in parameters if id(p) not in decayed], "weight_decay": 0.0}]


@pytest.fixture(scope="module")
def documents():
    """Span-corruption examples of the first DOCUMENTS biographies, in the whole corpus's vocabulary."""
    dataset = CharCorruptionDataset(WIKI.read_text(encoding="utf-8"), BLOCK)
    dataset.data = dataset.data[:DOCUMENTS]
    return dataset


@pytest.fixture(scope="module")
def views(documents, seeded_random):
    """Four fixed span corruptions of every document: x, y (4 * DOCUMENTS, BLOCK - 1) each."""
    with seeded_random(1000):
        examples = [documents[index] for _ in range(4) for index in range(len(documents))]
    return tuple(torch.stack(tensors) for tensors in zip(*examples))


@pytest.fixture
def pretrained_loss(documents, views, tiny_config, seeded_random):
    """pretrained_loss(model_name, seed): pretrain a fresh model of MODELS by the graded recipe (at
    LEARNING_RATE) with the plain Trainer on the CPU; returns its loss on the views and its mean
    token-embedding row norm."""
    def pretrain(model_name, seed):
        torch.manual_seed(seed)
        model = GPT(tiny_config(documents.vocab_size, BLOCK, n_layer=2, n_head=4, n_embd=64, **MODELS[model_name]))
        config = TrainerConfig(max_epochs=EPOCHS, batch_size=BATCH, learning_rate=LEARNING_RATE, lr_decay=True,
                               warmup_tokens=512 * 20, final_tokens=200 * len(documents) * BLOCK,
                               weight_decay=0.1, betas=(0.9, 0.95), grad_norm_clip=1.0)
        trainer = Trainer(model, documents, None, config)
        trainer.device = torch.device("cpu")  # where the threshold was measured
        with seeded_random(seed):  # the span corruption draws from the global random
            trainer.train()
        assert trainer.step == EPOCHS * DOCUMENTS // BATCH
        model.eval()
        with torch.no_grad():
            loss = float(model(*views)[1])
            norm = float(model.tok_emb.weight.norm(dim=1).mean())  # (vocab_size, n_embd) -> (vocab_size,) -> mean
        print(f"{model_name}, seed {seed}: loss {loss:.3f}, token-embedding row norm {norm:.2f}")
        return loss, norm
    return pretrain


@pytest.mark.parametrize("seed", SEEDS if CALIBRATING else SEEDS[:1])
@pytest.mark.parametrize("model_name", MODELS)
def test_the_course_recipe_leaves_the_plateau(pretrained_loss, model_name, seed):
    """Kills a recipe that stalls the graded pretraining, such as minGPT's later weight-decay rule
    (linear_weights_only), and anything else that keeps a small GPT on the plateau: after 600
    steps the loss on the pretraining slice is below the model's LEARNT."""
    loss, norm = pretrained_loss(model_name, seed)
    assert loss < LEARNT[model_name], f"loss {loss:.3f} after {EPOCHS} epochs, token-embedding row norm {norm:.2f}"


@pytest.mark.skipif(not CALIBRATING, reason="calibration only: RECIPE_CALIBRATION=1 runs it")
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("model_name", MODELS)
def test_linear_weights_only_stays_on_the_plateau(pretrained_loss, model_name, seed, monkeypatch):
    """Kills a threshold that no longer tells the recipes apart: under linear_weights_only the same
    pretraining ends above the model's LEARNT."""
    monkeypatch.setattr(trainer_module, "optimizer_groups", linear_weights_only)
    loss, norm = pretrained_loss(model_name, seed)
    assert loss > LEARNT[model_name], f"loss {loss:.3f} after {EPOCHS} epochs, token-embedding row norm {norm:.2f}"
