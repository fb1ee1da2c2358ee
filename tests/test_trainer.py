"""
The student's plain trainer (src/submission/trainer.py): TrainerConfig's
defaults, the learning-rate schedule counted in tokens (warmup, cosine decay
to the 10% floor at final_tokens, rising again after it) and set on every
parameter group after each step, each step's gradient fresh and clipped to
grad_norm_clip, the weight-decay groups, the data order, the checkpoint, the
writer's scalars, the test loss (in eval mode) and training mode at every
epoch, and the callbacks.
"""

import itertools
import math
import types

import pytest
import torch

from runtime.training.fast_training import collate_trimmed, plug_into
from submission import CharCorruptionDataset, GPT, NameDataset, Trainer, TrainerConfig
from submission import trainer as trainer_module
from submission.trainer import learning_rate, optimizer_groups

pytestmark = pytest.mark.usefixtures("single_thread")


def schedule(base, warmup, final, tokens):
    """The SPEC's schedule, written out independently of the trainer."""
    if tokens < warmup:
        return base * tokens / warmup
    progress = (tokens - warmup) / (final - warmup)
    return base * max(0.1, 0.5 * (1 + math.cos(math.pi * progress)))


def test_trainer_config_defaults_are_the_spec():
    config = TrainerConfig()
    assert config.max_epochs == 10
    assert config.batch_size == 64
    assert config.learning_rate == 3e-4
    assert tuple(config.betas) == (0.9, 0.95)
    assert config.grad_norm_clip == 1.0
    assert config.weight_decay == 0.1
    assert config.lr_decay is False
    assert config.warmup_tokens == 375e6
    assert config.final_tokens == 260e9
    assert config.ckpt_path is None
    assert config.num_workers == 0
    assert config.writer is None


def test_trainer_config_takes_any_keyword():
    config = TrainerConfig(max_epochs=3, learning_rate=1e-2, something_else="kept")
    assert (config.max_epochs, config.learning_rate, config.something_else) == (3, 1e-2, "kept")
    assert TrainerConfig().max_epochs == 10


# ---------------------------------------------------------------- schedule

WARMUP, FINAL, BASE = 10_240, 1_000_000, 6e-4
TOKEN_COUNTS = [0, 1, 2_560, 5_120, WARMUP - 1, WARMUP, WARMUP + 1, 100_000, 505_120, 900_000, FINAL,
                1_500_000, 1_995_000, 2 * FINAL - WARMUP, 2_500_000, 3.2 * FINAL]


@pytest.fixture
def decaying():
    return TrainerConfig(learning_rate=BASE, lr_decay=True, warmup_tokens=WARMUP, final_tokens=FINAL)


@pytest.mark.parametrize("tokens", TOKEN_COUNTS)
def test_learning_rate_follows_warmup_cosine_floor(decaying, tokens):
    assert learning_rate(decaying, tokens) == pytest.approx(schedule(BASE, WARMUP, FINAL, tokens), rel=1e-12)


def test_learning_rate_landmarks(decaying):
    """Linear warmup to the base rate, half of it halfway through the cosine,
    the 10% floor by final_tokens, and back up past final_tokens (progress
    is not clamped): the full base rate again at progress 2."""
    def lr(tokens):
        return learning_rate(decaying, tokens)

    assert lr(0) == 0
    assert lr(WARMUP / 4) == pytest.approx(BASE / 4)
    assert lr(WARMUP) == pytest.approx(BASE)
    assert lr((WARMUP + FINAL) / 2) == pytest.approx(BASE / 2)
    assert lr(FINAL) == pytest.approx(0.1 * BASE)
    assert lr(FINAL + 0.1 * (FINAL - WARMUP)) == pytest.approx(0.1 * BASE)
    assert lr(WARMUP + 1.5 * (FINAL - WARMUP)) == pytest.approx(BASE / 2)
    assert lr(WARMUP + 2 * (FINAL - WARMUP)) == pytest.approx(BASE)


def test_learning_rate_without_decay_is_constant():
    config = TrainerConfig(learning_rate=BASE, lr_decay=False, warmup_tokens=WARMUP, final_tokens=FINAL)
    assert all(learning_rate(config, tokens) == BASE for tokens in TOKEN_COUNTS)


# ---------------------------------------------------------------- training runs

@pytest.fixture(scope="module")
def names(corpus):
    """A NameDataset of 20 questions; their examples are mostly PAD at block size 128."""
    pretraining = CharCorruptionDataset(corpus.wiki, 128)
    return NameDataset("".join(corpus.questions.splitlines(keepends=True)[:20]), pretraining)


def test_collate_cuts_all_pad_target_columns_and_keeps_the_loss(names, tiny_config):
    """The cut batch keeps every column up to the last non-PAD target, drops
    only all-PAD target columns, reports the uncut positions B*T, and gives
    the model the same loss as the uncut batch."""
    examples = [names[i] for i in range(8)]
    x, y, positions = collate_trimmed(examples)
    whole_x, whole_y = torch.stack([e[0] for e in examples]), torch.stack([e[1] for e in examples])
    last = max(int(torch.nonzero(e[1]).max()) for e in examples)
    assert positions == whole_y.numel() == 8 * 127
    assert x.shape == y.shape == (8, last + 1)
    assert torch.equal(x, whole_x[:, :last + 1]) and torch.equal(y, whole_y[:, :last + 1])
    torch.manual_seed(0)
    model = GPT(tiny_config(len(names.stoi), 128, n_layer=2)).eval()
    with torch.no_grad():
        torch.testing.assert_close(model(x, y)[1], model(whole_x, whole_y)[1])


def test_learning_rates_follow_schedule_on_uncut_token_counts(names, tiny_config, monkeypatch):
    """Batches of 8, 8, 4 examples of 127 positions each, over 2 epochs; the
    rate set after each step is the schedule at the positions seen so far,
    counting whole (uncut) batches. Warmup and final_tokens are chosen so the
    run crosses warmup, the cosine, the floor and the rise past final_tokens."""
    per_example = 127
    warmup, final = 10 * per_example, 22 * per_example
    config = TrainerConfig(max_epochs=2, batch_size=8, learning_rate=1e-3, lr_decay=True,
                           warmup_tokens=warmup, final_tokens=final)
    torch.manual_seed(1)
    trainer = Trainer(GPT(tiny_config(len(names.stoi), 128, n_layer=2)), names, None, config)
    rates = []
    steps = trainer_module.learning_rate
    monkeypatch.setattr(trainer_module, "learning_rate", lambda *args: rates.append(steps(*args)) or rates[-1])
    trainer.train()
    seen = list(itertools.accumulate([8, 8, 4] * 2))
    assert trainer.step == 6
    assert trainer.tokens == 40 * per_example
    assert rates == pytest.approx([schedule(1e-3, warmup, final, n * per_example) for n in seen])
    assert [group["lr"] for group in trainer.optimizer.param_groups] == [rates[-1]] * 2


# ---------------------------------------------------------------- each step

class Weighted(torch.nn.Module):
    """A model whose loss is scale * sum((weight + bias) * x) over the batch: the gradient of each of its
    two weights is scale * sum(x), and of its bias twice that, whatever their values."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.weight = torch.nn.Parameter(torch.ones(2))
        self.bias = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x, y):
        return None, self.scale * ((self.weight + self.bias) * x.float()).sum()


@pytest.fixture
def stepped(monkeypatch):
    """The (gradients, learning rates) each AdamW step of a Trainer is taken with, in order."""
    seen = []

    class RecordingAdamW(torch.optim.AdamW):
        def step(self, closure=None):
            seen.append(([p.grad.clone() for group in self.param_groups for p in group["params"]],
                         [group["lr"] for group in self.param_groups]))
            return super().step(closure)

    monkeypatch.setattr(torch.optim, "AdamW", RecordingAdamW)
    return seen


def test_each_step_takes_its_own_batchs_gradient(stepped):
    """Kills gradients left over from the step before: with a clip far above them, each step's gradient is
    its batch's alone (10, 26, 19 for each weight, twice that for the bias, for the batches [1..4], [5..8],
    [9, 10])."""
    config = TrainerConfig(max_epochs=2, batch_size=4, grad_norm_clip=1e9)
    Trainer(Weighted(scale=1.0), Positions(), None, config).train()
    assert [[g.tolist() for g in grads] for grads, _ in stepped] == [
        [[total] * 2, [2 * total]] for total in (10.0, 26.0, 19.0)] * 2


@pytest.mark.parametrize("clip", [1.0, 0.5])
def test_each_step_clips_the_whole_gradients_norm_to_grad_norm_clip(stepped, clip):
    """Kills a step without clipping, at another norm, or clipping each parameter apart: a gradient whose
    norm is above grad_norm_clip is scaled down to it, its direction kept; one below it is left alone."""
    config = TrainerConfig(max_epochs=1, batch_size=4, grad_norm_clip=clip)
    Trainer(Weighted(scale=1.0), Positions(), None, config).train()
    for grads, _ in stepped:
        weight, bias = grads
        assert torch.cat([weight, bias]).norm().item() == pytest.approx(clip, rel=1e-5)
        assert weight.tolist() == pytest.approx([bias.item() / 2] * 2)
    stepped.clear()
    Trainer(Weighted(scale=clip / 100), Positions(), None, config).train()
    assert [g for grads, _ in stepped for g in torch.cat(grads).tolist()] == pytest.approx(
        [clip * share * factor for share in (0.1, 0.26, 0.19) for factor in (1, 1, 2)])


def test_the_first_step_runs_at_the_base_rate_and_each_next_one_at_the_schedule_so_far(stepped):
    """The rate is set after each step, for the next one, on both groups: the first step runs at the base
    rate, the next ones at the schedule after 4 and after 8 positions (warmup 16)."""
    config = TrainerConfig(max_epochs=1, batch_size=4, learning_rate=1e-2, lr_decay=True, warmup_tokens=16,
                           final_tokens=40)
    Trainer(Weighted(scale=1.0), Positions(), None, config).train()
    rates = [lrs for _, lrs in stepped]
    assert rates == [[1e-2] * 2, [1e-2 * 4 / 16] * 2, [1e-2 * 8 / 16] * 2]


# ---------------------------------------------------------------- epochs, checkpoint, writer, test loss

def test_the_trainer_trains_in_training_mode_at_every_epoch(tiny_config):
    """Kills a trainer that sets training mode once, before the first epoch, or never (a model handed
    over in eval mode), and a test loss taken in training mode: over three epochs with a test set, every
    forward with gradients (a step) has every module in training mode, every one without (the test
    loss) has none, and there is one of each a batch."""
    torch.manual_seed(0)
    model = GPT(tiny_config(12, 8, n_layer=2, dropout=0.1)).eval()
    modes = []
    model.register_forward_pre_hook(lambda module, args: modes.append(
        (torch.is_grad_enabled(), {m.training for m in module.modules()})))
    ids = torch.randint(1, 12, (12, 9), generator=torch.Generator().manual_seed(12))
    train = torch.utils.data.TensorDataset(ids[:8, :-1], ids[:8, 1:])
    test = torch.utils.data.TensorDataset(ids[8:, :-1], ids[8:, 1:])
    trainer = Trainer(model, train, test, TrainerConfig(max_epochs=3, batch_size=4, learning_rate=1e-3))
    trainer.device = torch.device("cpu")
    trainer.train()
    assert [mode for grad, mode in modes if grad] == [{True}] * (3 * 2)
    assert [mode for grad, mode in modes if not grad] == [{False}] * (3 * 1)
    assert [grad for grad, _ in modes] == [True, True, False] * 3


def test_training_starts_at_the_trainers_epoch_and_stops_at_max_epochs():
    """A run whose epoch is set before it starts (as a resume sets it) trains only the epochs left."""
    trainer = Trainer(Weighted(scale=1.0), Positions(), None, TrainerConfig(max_epochs=3, batch_size=4))
    epochs = []
    trainer.add_callback('on_train_start', lambda t: setattr(t, 'epoch', 1))
    trainer.add_callback('on_epoch_end', lambda t: epochs.append((t.epoch, t.step)))
    trainer.train()
    assert epochs == [(1, 3), (2, 6)]
    idle = Trainer(Weighted(scale=1.0), Positions(), None, TrainerConfig(max_epochs=0, batch_size=4))
    idle.train()
    assert idle.step == 0 and idle.model.weight.tolist() == [1.0, 1.0] and idle.model.bias.tolist() == [0.0]


def test_the_checkpoint_holds_the_model_at_each_epochs_end(tmp_path):
    path = tmp_path / "checkpoint.params"
    model = Weighted(scale=1.0)
    trainer = Trainer(model, Positions(), None, TrainerConfig(max_epochs=2, batch_size=4, ckpt_path=str(path)))
    saved = []
    trainer.add_callback('on_epoch_end', lambda t: saved.append(
        torch.load(path, weights_only=True)["weight"].tolist() == model.weight.tolist()))
    trainer.train()
    assert saved == [True, True]


def test_no_checkpoint_is_saved_without_a_path(monkeypatch):
    saves = []
    monkeypatch.setattr(torch, "save", lambda *args, **kwargs: saves.append(args))
    Trainer(Weighted(scale=1.0), Positions(), None, TrainerConfig(max_epochs=2, batch_size=4)).train()
    assert saves == []


def test_the_writer_gets_each_steps_loss_rate_tokens_and_epoch():
    """The scalars of each reported step, tagged train/..., at the step's number: its loss, the rate set
    for the next step, the positions so far and the epoch counted from 1."""
    written = {}
    writer = types.SimpleNamespace(add_scalar=lambda tag, value, step: written.setdefault(tag, []).append(
        (step, value)))
    config = TrainerConfig(max_epochs=2, batch_size=4, learning_rate=1e-2, lr_decay=True, warmup_tokens=16,
                           final_tokens=40, writer=writer)
    trainer = Trainer(Weighted(scale=0.5), Positions(), None, config)
    trainer.train()
    tokens = [4, 8, 10, 14, 18, 20]
    assert set(written) == {'train/loss', 'train/lr', 'train/tokens', 'train/epoch', 'train/seconds'}
    assert written['train/tokens'] == list(zip(range(1, 7), tokens))
    assert written['train/epoch'] == list(zip(range(1, 7), [1, 1, 1, 2, 2, 2]))
    assert written['train/lr'] == [(step, pytest.approx(schedule(1e-2, 16, 40, n)))
                                   for step, n in zip(range(1, 7), tokens)]
    assert [step for step, _ in written['train/loss']] == list(range(1, 7))
    assert written['train/loss'][0][1] == pytest.approx(0.5 * 2 * 10)  # the first batch's, before any step
    assert all(later >= earlier for (_, earlier), (_, later) in zip(written['train/seconds'],
                                                                     written['train/seconds'][1:]))


def test_the_test_loss_is_the_mean_of_its_batches_losses():
    """Batches of 4, 4 and 2 examples: the mean of their three losses, not of the examples' losses."""
    trainer = Trainer(Weighted(scale=1.0), Positions(), Positions(), TrainerConfig(batch_size=4))
    trainer.device = torch.device("cpu")
    assert trainer.test_loss() == pytest.approx((2 * 10 + 2 * 26 + 2 * 19) / 3)


# ---------------------------------------------------------------- weight decay

def expected_decay(name):
    """The course trainer's rule on this model: its LayerNorms are named ln1, ln2 and ln_f, so
    only the biases escape weight decay (embeddings, LayerNorm gains and C are decayed)."""
    return not name.endswith(".bias")


@pytest.fixture
def perceiver(tiny_config):
    return GPT(tiny_config(30, 32, n_layer=3, perceiver=True, bottleneck_dim=8))


def decayed_names(model, groups):
    by_id = {id(p): name for name, p in model.named_parameters()}
    seen = [by_id[id(p)] for group in groups for p in group["params"]]
    assert sorted(seen) == sorted(by_id.values())
    return {by_id[id(p)]: group["weight_decay"] for group in groups for p in group["params"]}


def test_every_parameter_but_the_biases_is_decayed_as_by_the_course(perceiver):
    """Kills minGPT's later rule (Linear weights only), which stalls the graded pretraining on the
    course's data (docs/departures.md): embeddings, LayerNorm gains and C are decayed here."""
    decay = decayed_names(perceiver, optimizer_groups(perceiver, 0.1))
    for name in ["pos_emb", "tok_emb.weight", "down_block.C", "ln_f.weight", "blocks.0.ln1.weight",
                 "head.weight", "blocks.0.mlp.0.weight", "down_block.attn.proj.weight"]:
        assert decay[name] == 0.1
    for name in ["blocks.0.ln1.bias", "up_block.attn.key.bias", "ln_f.bias", "down_block.mlp.2.bias"]:
        assert decay[name] == 0.0
    assert {name: rate > 0 for name, rate in decay.items()} == {name: expected_decay(name) for name in decay}


def test_the_groups_are_chosen_by_name_as_the_course_chooses_them():
    """Kills a rule by module type: a parameter whose name holds "LayerNorm.weight" is not decayed,
    whatever its module, and a LayerNorm named otherwise is."""
    model = torch.nn.Module()
    model.LayerNorm = torch.nn.Linear(4, 4)
    model.norm = torch.nn.LayerNorm(4)
    model.proj = torch.nn.Linear(4, 4, bias=False)
    decay = decayed_names(model, optimizer_groups(model, 0.3))
    assert decay == {"LayerNorm.weight": 0.0, "LayerNorm.bias": 0.0, "norm.weight": 0.3, "norm.bias": 0.0,
                     "proj.weight": 0.3}


def test_trainer_builds_adamw_with_those_groups(perceiver, names, monkeypatch):
    """The optimizer the Trainer really builds: AdamW decaying every parameter
    but the biases, at config.weight_decay."""
    built = []

    class RecordingAdamW(torch.optim.AdamW):
        def __init__(self, params, **kwargs):
            super().__init__(params, **kwargs)
            built.append(self)

    monkeypatch.setattr(torch.optim, "AdamW", RecordingAdamW)
    config = TrainerConfig(max_epochs=0, weight_decay=0.05, learning_rate=2e-3)
    Trainer(perceiver, names, None, config).train()
    (optimizer,) = built
    decay = decayed_names(perceiver, optimizer.param_groups)
    assert {name: rate > 0 for name, rate in decay.items()} == {name: expected_decay(name) for name in decay}
    assert {rate for rate in decay.values()} == {0.0, 0.05}
    assert all(group["lr"] == 2e-3 and group["betas"] == config.betas for group in optimizer.param_groups)


def test_the_stages_training_builds_adamw_with_those_groups(perceiver, names):
    """Kills a fast path whose optimizer decays other parameters than the student's Trainer."""
    trainer = Trainer(perceiver, names, None, TrainerConfig(weight_decay=0.05, learning_rate=2e-3))
    plug_into(trainer, torch.device("cpu"))
    trainer.trigger_callbacks('on_train_start')
    assert trainer.optimizer.defaults['fused']
    decay = decayed_names(perceiver, trainer.optimizer.param_groups)
    assert {name: rate > 0 for name, rate in decay.items()} == {name: expected_decay(name) for name in decay}
    assert {rate for rate in decay.values()} == {0.0, 0.05}


def test_a_trainer_without_callbacks_is_refused_in_one_line(perceiver, names):
    """Kills an AttributeError's traceback for a trainer.py that is not the starter's (another
    edition's, say): run.py turns this ValueError into one line."""
    class OtherEditionsTrainer:
        config = TrainerConfig()

    with pytest.raises(ValueError, match="the Trainer has no add_callback, .* is not the starter's"):
        plug_into(OtherEditionsTrainer(), torch.device("cpu"))


# ---------------------------------------------------------------- data order

class Positions(torch.utils.data.Dataset):
    """Example i is x = y = [i + 1] (a target that is not PAD), so a batch shows which examples it holds."""

    def __len__(self):
        return 10

    def __getitem__(self, index):
        return torch.tensor([index + 1]), torch.tensor([index + 1])


@pytest.mark.parametrize("stages", [False, True])
def test_every_epoch_visits_the_examples_in_file_order(stages, monkeypatch):
    """Kills shuffled batches, in the student's plain loop or the stages' loader: the course's
    DataLoader does not shuffle, and its graded results were made in file order."""
    seen = []

    def recording_model(x, y):
        seen.append((x[:, 0] - 1).tolist())
        return None, (weight * x.float()).mean()

    weight = torch.nn.Parameter(torch.ones(1))
    model = torch.nn.Module()
    model.weight = weight
    model.forward = recording_model
    trainer = Trainer(model, Positions(), None, TrainerConfig(max_epochs=2, batch_size=4))
    if stages:
        plug_into(trainer, torch.device("cpu"), seed=3)
    trainer.train()
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] * 2


# ---------------------------------------------------------------- callbacks

def test_callbacks_run_at_their_events_in_order_with_the_run_so_far():
    """Kills an event missed or fired at the wrong moment, callbacks of one event run out of the order
    they were added in, or 'on_batch_end' fired before the step's learning-rate update."""
    model = torch.nn.Module()
    model.weight = torch.nn.Parameter(torch.ones(1))
    model.forward = lambda x, y: (None, (model.weight * x.float()).mean())
    trainer = Trainer(model, Positions(), None, TrainerConfig(max_epochs=2, batch_size=4, lr_decay=True,
                                                              warmup_tokens=100, final_tokens=1000))
    seen = []
    trainer.add_callback('on_train_start', lambda t: seen.append(('start', t.step, t.optimizer is not None,
                                                                   len(t.batches))))
    trainer.add_callback('on_batch_end', lambda t: seen.append(('batch', t.step, t.epoch, t.tokens)))
    trainer.add_callback('on_batch_end', lambda t: seen.append(('lr', t.optimizer.param_groups[0]['lr'] == t.lr
                                                                and t.lr == learning_rate(t.config, t.tokens))))
    trainer.add_callback('on_epoch_end', lambda t: seen.append(('epoch', t.step, t.epoch)))
    trainer.train()
    steps = [(step, epoch, tokens) for step, epoch, tokens in zip(range(1, 7), [0] * 3 + [1] * 3,
                                                                   [4, 8, 10, 14, 18, 20])]
    assert seen == [('start', 0, True, 3)] + [event for step, epoch, tokens in steps for event in (
        [('batch', step, epoch, tokens), ('lr', True)] + ([('epoch', step, epoch)] if step % 3 == 0 else []))]


def test_a_callback_at_the_start_may_put_in_another_step_and_report_less_often():
    """Kills a train_step put in by a callback and not used (the plain step would move the weight and
    count 4 positions a batch), or report_every not honoured, or the epoch's last step not reported."""
    model = torch.nn.Module()
    model.weight = torch.nn.Parameter(torch.ones(1))
    reported = []  # the steps the writer is given a loss at
    writer = types.SimpleNamespace(add_scalar=lambda tag, value, step: tag == 'train/loss' and reported.append(step))
    trainer = Trainer(model, Positions(), None, TrainerConfig(max_epochs=2, batch_size=4, writer=writer))
    taken = []

    def start(t):
        t.train_step = lambda batch: taken.append(batch[0].flatten().tolist()) or (torch.tensor(0.5), 7)
        t.report_every = 2

    trainer.add_callback('on_train_start', start)
    trainer.train()
    assert taken == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]] * 2
    assert trainer.tokens == 6 * 7 and model.weight.detach().item() == 1.0
    assert reported == [1, 3, 4, 6]  # steps 0 and 2 of each epoch: every other one, and the last
