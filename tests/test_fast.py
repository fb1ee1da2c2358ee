"""
The fast training paths give the plain paths' numbers: fused against
written-out attention, batches cut into length groups against whole batches,
fused against default AdamW, the stages' steps against the student's loop;
and the CUDA switches (bf16 and fp16 autocast, torch.compile) run on this
CPU. (Batched cached decoding against the one question at a time loop:
tests/test_decoding_batched.py.)
"""

import math
import unittest.mock

import pytest
import torch
from torch.utils.data import DataLoader

from runtime.command_line import parse_args
from runtime.training import fast_training
from runtime.training.fast_training import FastSteps, FastTraining, default_length_groups, split_by_length
from submission import CharCorruptionDataset, GPT, NameDataset, Trainer, TrainerConfig
from submission import trainer as trainer_module
from submission.attention import CausalCrossAttention, CausalSelfAttention

pytestmark = pytest.mark.usefixtures("single_thread")

VOCAB, BLOCK = 40, 32
EXACT = dict(atol=1e-5, rtol=1e-5)  # fp32: the same numbers up to rounding
VARIANTS = {"vanilla": {}, "perceiver": dict(perceiver=True, bottleneck_dim=12), "rope": dict(rope=True)}


def spread_weights(model, scale=0.3, seed=0):
    """Add N(0, scale^2) noise to every parameter, so that attention is far from uniform and
    the logits are far from equal: a wrong mask or a dropped term then shows."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=generator) * scale)
    return model


def random_batch(batch, length, seed=0):
    """x (B, T) of token ids and targets y (B, T) with about a third PAD (ignored)."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randint(2, VOCAB, (batch, length), generator=generator)
    y = torch.randint(2, VOCAB, (batch, length), generator=generator)
    return x, y * (torch.rand(batch, length, generator=generator) > 0.3)


# ---------------------------------------------------------------- attention

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("length", [BLOCK, 7, 20])
def test_fused_attention_gives_the_written_out_logits_loss_and_gradients(tiny_config, variant, length):
    """fp32, dropout off: same logits, loss and parameter gradients within 1e-5 (the perceiver at
    lengths below, at and above its 12 latents)."""
    torch.manual_seed(0)
    fused = spread_weights(GPT(tiny_config(VOCAB, BLOCK, n_layer=4, fused_attention=True, **VARIANTS[variant])))
    plain = GPT(tiny_config(VOCAB, BLOCK, n_layer=4, fused_attention=False, **VARIANTS[variant]))
    plain.load_state_dict(fused.state_dict())
    x, y = random_batch(6, length)
    fused_logits, fused_loss = fused(x, y)
    plain_logits, plain_loss = plain(x, y)
    fused_loss.backward()
    plain_loss.backward()
    assert plain_logits.std() > 1.0  # the logits are far from one another
    torch.testing.assert_close(fused_logits, plain_logits, **EXACT)
    torch.testing.assert_close(fused_loss, plain_loss, **EXACT)
    for (name, p), q in zip(fused.named_parameters(), plain.parameters()):
        torch.testing.assert_close(p.grad, q.grad, **EXACT, msg=name)


def attention_pair(tiny_config, layer, attn_pdrop):
    """The same attention layer, fused and written out, with the same weights."""
    kind = CausalSelfAttention if layer == "self" else CausalCrossAttention
    torch.manual_seed(0)
    config = tiny_config(VOCAB, 8, n_head=2, n_embd=16)
    config.attn_pdrop = attn_pdrop
    config.fused_attention = True
    fused = spread_weights(kind(config))
    config.fused_attention = False
    plain = kind(config)
    plain.load_state_dict(fused.state_dict())
    return fused, plain


def attention_inputs(layer, batch):
    """The same input (8 positions of 16 dims) repeated `batch` times: one dropout draw a row."""
    x = torch.randn(1, 8, 16, generator=torch.Generator().manual_seed(1)).expand(batch, -1, -1)
    return (x,) if layer == "self" else (x, x.flip(1) * 0.5)


@pytest.mark.parametrize("layer", ["self", "cross"])
def test_fused_attention_still_drops_attention_weights_while_training(tiny_config, layer):
    """attn_pdrop 0.2, training mode, 4000 independent draws (rows of one batch), seeded.
    Every draw differs from the eval-mode output and the draws differ from one another;
    dropout is inverted, so the mean of the draws is the eval-mode output, within 5 standard
    errors (the draws' own spread / sqrt(4000)) at every element; and the fused path's draws
    spread like the written-out path's: their mean variances are within 10% (the estimate's
    own error is about 2%)."""
    fused, plain = attention_pair(tiny_config, layer, attn_pdrop=0.2)
    draws = 4000
    with torch.no_grad():
        expected = fused.eval()(*attention_inputs(layer, 1))[0]  # (8, 16)
        torch.testing.assert_close(plain.eval()(*attention_inputs(layer, 1))[0], expected, **EXACT)
        torch.manual_seed(2)
        fused_draws = fused.train()(*attention_inputs(layer, draws))  # (draws, 8, 16)
        plain_draws = plain.train()(*attention_inputs(layer, draws))
    assert all((draw - expected).abs().max() > 1e-4 for draw in fused_draws[:50])
    assert (fused_draws[0] - fused_draws[1]).abs().max() > 1e-4
    standard_error = fused_draws.std(dim=0) / math.sqrt(draws)
    assert ((fused_draws.mean(dim=0) - expected).abs() <= 5 * standard_error + 1e-6).all()
    ratio = fused_draws.var(dim=0).mean() / plain_draws.var(dim=0).mean()
    assert 0.9 < ratio < 1.1


# ---------------------------------------------------------------- trainer

@pytest.fixture(scope="module")
def pretraining(corpus):
    return CharCorruptionDataset(corpus.wiki, 64)


@pytest.fixture(scope="module")
def names(corpus, pretraining):
    return NameDataset(corpus.questions, pretraining)


def fast_trainer(model, dataset=None, batch_size=64, precision="fp32", compile=False, device="cpu", **steps_settings):
    """A Trainer on `device` with the stages' fast training plugged in and started (the optimizer and
    the step put in, as train() has them), for stepping by hand; and its FastSteps."""
    steps = FastSteps(torch.device(device), batch_size, precision, compile, **steps_settings)
    trainer = Trainer(model.to(device), dataset, None, TrainerConfig(learning_rate=1e-3, batch_size=batch_size))
    FastTraining(torch.device(device), steps, batches=lambda trainer: None).attach(trainer)
    trainer.trigger_callbacks('on_train_start')
    return trainer, steps


def test_length_groups_partition_the_rows_and_cut_each_after_its_last_target(names):
    """Groups of rows sorted by length, each cut right after its own last non-PAD target; every
    row with a target is in exactly one group and a row without one is left out; the shares
    are the groups' fractions of the targets."""
    examples = [names[i] for i in range(21)] + [(names[0][0], torch.zeros_like(names[0][1]))]
    x, y = torch.stack([e[0] for e in examples]), torch.stack([e[1] for e in examples])
    groups = split_by_length(x, y, 4)
    assert len(groups) == 4 and sum(g[0].size(0) for g in groups) == 21
    seen = []
    for x_g, y_g, share in groups:
        assert y_g[:, -1].ne(0).any()  # the last column holds a target: nothing more could be cut
        assert share == pytest.approx(int(y_g.ne(0).sum()) / int(y.ne(0).sum()))
        for row_x, row_y in zip(x_g, y_g):
            matches = [i for i in range(len(examples))
                       if torch.equal(x[i, :len(row_x)], row_x) and torch.equal(y[i, :len(row_y)], row_y)
                       and not y[i, len(row_y):].any()]
            assert matches
            seen.append(matches[0])
    assert sorted(seen) == list(range(21))
    assert sum(g[2] for g in groups) == pytest.approx(1.0)
    widths = [g[0].size(1) for g in groups]
    assert widths == sorted(widths, reverse=True)


@pytest.mark.parametrize("batch_size, groups", [(1, 1), (31, 1), (32, 2), (64, 4), (128, 8), (512, 8)])
def test_default_length_groups_hold_about_16_rows_on_a_cpu_and_all_rows_on_a_gpu(batch_size, groups):
    assert default_length_groups(torch.device("cpu"), batch_size) == groups
    assert default_length_groups(torch.device("cuda"), batch_size) == 1
    assert default_length_groups(torch.device("mps"), batch_size) == 1
    assert FastSteps(torch.device("cpu"), batch_size).collate.keywords["groups"] == groups


@pytest.mark.parametrize("groups", [1, 3, 8])
def test_length_groups_give_the_whole_batch_loss_and_gradients(names, tiny_config, groups):
    """sum_g share_g * loss_g and its gradients equal the whole batch's, within 1e-5."""
    examples = [names[i] for i in range(24)]
    losses, gradients = [], []
    for trim in (False, True):
        torch.manual_seed(0)
        model = spread_weights(GPT(tiny_config(len(names.stoi), 64, n_layer=2)), scale=0.1)
        steps = FastSteps(torch.device("cpu"), 24, "fp32", trim_padding=trim, length_groups=groups)
        batch, positions = steps.collate(examples)
        assert positions == 24 * 63
        assert len(batch) == (groups if trim else 1)
        losses.append(steps.batch_loss(model, batch))
        gradients.append([p.grad for p in model.parameters()])
    torch.testing.assert_close(losses[1], losses[0], **EXACT)
    for cut, whole in zip(gradients[1], gradients[0]):
        torch.testing.assert_close(cut, whole, **EXACT)


class LossRecorder:
    """A writer that keeps every train/loss value."""

    def __init__(self):
        self.losses = []

    def add_scalar(self, tag, value, step):
        if tag == 'train/loss':
            self.losses.append(value)


def recording_rates(rates):
    """The trainer's learning_rate, recording every rate it sets in `rates`."""
    schedule = trainer_module.learning_rate
    return lambda config, tokens: rates.append(schedule(config, tokens)) or rates[-1]


def short_run(dataset, tiny_config, seeded_random, vocab_size, fast=True, num_workers=0, dtype=torch.float32,
              variant="vanilla", **steps_settings):
    """Two epochs of batches of 8 from the same seeds, with the stages' training plugged in (FastSteps,
    fused AdamW, a DataLoader in file order) or the student's plain loop, its model (of `variant`) in
    `dtype`; returns the trainer, its per-step losses, the model and the learning rate set after each step."""
    recorder, rates = LossRecorder(), []
    torch.manual_seed(3)
    model = GPT(tiny_config(vocab_size, 64, n_layer=2, **VARIANTS[variant])).to(dtype)
    config = TrainerConfig(max_epochs=2, batch_size=8, learning_rate=3e-3, lr_decay=True, warmup_tokens=1000,
                           final_tokens=6000, writer=recorder, num_workers=num_workers)
    trainer = Trainer(model, dataset, None, config)
    if fast:
        steps = FastSteps(torch.device("cpu"), 8, "fp32", **steps_settings)
        FastTraining(torch.device("cpu"), steps, log_every=1, batches=lambda trainer: DataLoader(
            dataset, batch_size=8, num_workers=num_workers, collate_fn=steps.collate)).attach(trainer)
    with seeded_random(5), unittest.mock.patch.object(trainer_module, "learning_rate", recording_rates(rates)):
        trainer.train()
    return trainer, recorder.losses, model, rates


@pytest.fixture(scope="module")
def short_examples(names, pretraining):
    """The first 36 examples of each kind of dataset: four and a half batches of 8."""
    return {"names": torch.utils.data.Subset(names, range(36)),
            "pretraining": torch.utils.data.Subset(pretraining, range(36))}


@pytest.fixture(scope="module")
def exact_runs(short_examples, names, tiny_config, seeded_random):
    """The student's plain loop in float64, on each kind of dataset: the run without (float32's) rounding."""
    return {kind: short_run(dataset, tiny_config, seeded_random, len(names.stoi), fast=False, dtype=torch.float64)
            for kind, dataset in short_examples.items()}


# Two float32 runs of the same arithmetic in another order of sums (another CPU's vector kernels, another
# thread count, fused kernels, length groups) differ by rounding alone, which Adam amplifies where a gradient
# is near 0 (a key's bias, whose true gradient is 0, moves by noise of either sign). What rounding alone
# moves a float32 run is measured, on the machine running the test, as its largest distance from the float64
# run (over the weights, and over the losses); two float32 runs may then differ by ROUNDING_SPREADS of it.
# The largest ratio measured was 1.4 for the weights and for the losses, over ATEN_CPU_CAPABILITY default,
# avx2 and avx512, one and two threads, oneDNN on and off (docs/setup.md).
ROUNDING_SPREADS = 4


def rounding_spread(run, exact):
    """How far rounding alone moved a float32 `run` from the `exact` (float64) one: the largest
    |float32 - float64| over the losses of every step, and over the weights at the end."""
    losses = max(abs(a - b) for a, b in zip(run[1], exact[1]))
    weights = max(float((p.double() - q).abs().max()) for p, q in zip(run[2].parameters(), exact[2].parameters()))
    return losses, weights


def assert_same_run(one, other, exact):
    """Two short float32 runs are one run: the same steps, tokens and learning rates exactly; at
    every step the same loss, and at the end the same weights, within ROUNDING_SPREADS times what
    rounding alone moved `one` from the `exact` float64 run."""
    (trainer_a, losses_a, model_a, rates_a), (trainer_b, losses_b, model_b, rates_b) = one, other
    assert trainer_a.step == trainer_b.step == exact[0].step == 10
    assert trainer_a.tokens == trainer_b.tokens == 72 * 63
    assert rates_a == rates_b == exact[3]
    assert len(set(rates_a)) == 10 and rates_a[0] < rates_a[1]  # warmup, then cosine
    assert losses_a[-1] < losses_a[0]  # it learned
    loss_spread, weight_spread = rounding_spread(one, exact)
    assert 0 < loss_spread < 1e-4 and 0 < weight_spread < 1e-3  # float64 ran the same run, without rounding
    assert losses_b == pytest.approx(losses_a, abs=ROUNDING_SPREADS * loss_spread)
    for (name, p), q in zip(model_a.named_parameters(), model_b.parameters()):
        apart = float((p - q).abs().max())
        assert apart <= ROUNDING_SPREADS * weight_spread, \
            f"{name}: {apart:.3g} apart; rounding alone moves this run's weights up to {weight_spread:.3g}"


@pytest.mark.parametrize("kind", ["names", "pretraining"])
def test_the_stages_training_trains_as_the_plain_loop(kind, short_examples, exact_runs, names, tiny_config,
                                                     seeded_random):
    """The student's plain loop (whole batches, PyTorch's default AdamW) and the same trainer with the
    stages' training plugged in (length groups, fused AdamW), on the same batch order: the same run."""
    plain = short_run(short_examples[kind], tiny_config, seeded_random, len(names.stoi), fast=False)
    fast = short_run(short_examples[kind], tiny_config, seeded_random, len(names.stoi), length_groups=4)
    assert fast[0].optimizer.defaults['fused'] is True and not plain[0].optimizer.defaults['fused']
    assert_same_run(plain, fast, exact_runs[kind])


def test_the_stages_training_trains_the_rope_model_as_the_plain_loop(short_examples, names, tiny_config,
                                                                     seeded_random):
    """The same for the RoPE model (its rotation at every position of the cut groups), against its own
    float64 run."""
    runs = [short_run(short_examples["names"], tiny_config, seeded_random, len(names.stoi), variant="rope", **settings)
            for settings in (dict(fast=False, dtype=torch.float64), dict(fast=False), dict(length_groups=4))]
    assert any(name.endswith(".rope_cache") for name, _ in runs[0][2].named_buffers())
    assert not hasattr(runs[0][2], "pos_emb")
    assert_same_run(runs[1], runs[2], runs[0])


@pytest.mark.parametrize("kind", ["names", "pretraining"])
def test_cut_batches_train_as_whole_batches(kind, short_examples, exact_runs, names, tiny_config, seeded_random):
    """A short run (2 epochs of 36 examples, batches of 8, warmup then cosine) with batches cut into
    length groups and with whole batches, both through the fast step: the same run."""
    assert_same_run(*[short_run(short_examples[kind], tiny_config, seeded_random, len(names.stoi),
                                trim_padding=trim, length_groups=4) for trim in (False, True)], exact_runs[kind])


def test_fused_adamw_trains_as_the_default_adamw(short_examples, exact_runs, names, tiny_config, seeded_random,
                                                 monkeypatch):
    """The same short run with fused and with PyTorch's default AdamW (the kernels round differently)."""
    runs = {True: short_run(short_examples["names"], tiny_config, seeded_random, len(names.stoi))}
    monkeypatch.setattr(fast_training, "fused_adamw", lambda groups, config, device: torch.optim.AdamW(
        groups, lr=config.learning_rate, betas=config.betas))
    runs[False] = short_run(short_examples["names"], tiny_config, seeded_random, len(names.stoi))
    assert runs[True][0].optimizer.defaults['fused'] is True
    assert not runs[False][0].optimizer.defaults['fused']
    assert_same_run(runs[False], runs[True], exact_runs["names"])


def test_loader_workers_train_as_the_main_process(short_examples, names, tiny_config, seeded_random):
    """Two persistent DataLoader workers cutting the batches into length groups give the run of
    collating in the main process: the same learning rates over both epochs, the same losses over
    the first (the second epoch's shuffle differs: a persistent loader draws no new worker seed
    from torch's generator before it, so the sampler draws another order)."""
    runs = [short_run(short_examples["names"], tiny_config, seeded_random, len(names.stoi), num_workers=workers)
            for workers in (0, 2)]
    assert runs[1][0].step == runs[0][0].step == 10
    assert runs[1][3] == runs[0][3]
    assert runs[1][1][:5] == pytest.approx(runs[0][1][:5], abs=1e-6)


# ---------------------------------------------------------------- CUDA switches, on this CPU

def steps_at_precision(names, tiny_config, precision, steps=3, **settings):
    """Losses of `steps` steps on one batch from the same weights, the dtype the head computed in, the
    trainer and its FastSteps."""
    torch.manual_seed(0)
    model = GPT(tiny_config(len(names.stoi), 64, n_layer=2))
    seen = []
    model.head.register_forward_hook(lambda module, inputs, output: seen.append(output.dtype))
    trainer, fast = fast_trainer(model, precision=precision, **settings)
    model.train()
    batch = fast.collate([names[i] for i in range(16)])
    return [float(trainer.train_step(batch)[0]) for _ in range(steps)], seen[0], trainer, fast


@pytest.mark.parametrize("precision, dtype", [("bf16", torch.bfloat16), ("fp16", torch.float16)])
def test_autocast_training_steps_run_on_cpu(names, tiny_config, precision, dtype):
    """bf16 autocast, and fp16 autocast with a grad scaler, train on the CPU: the head computes in
    the half dtype, the losses are finite and within 2% of fp32's at each of 3 steps."""
    exact, exact_dtype, _, _ = steps_at_precision(names, tiny_config, "fp32")
    half, half_dtype, _, fast = steps_at_precision(names, tiny_config, precision)
    assert exact_dtype == torch.float32 and half_dtype == dtype
    assert fast.scaler.is_enabled() == (precision == "fp16")
    assert all(math.isfinite(loss) for loss in half)
    assert half == pytest.approx(exact, rel=0.02)
    assert half[-1] < half[0]


def test_training_is_fp32_unless_a_half_precision_is_asked_for():
    """Kills bf16 or fp16 autocast by default: under bf16 the graded pretraining diverged on a GPU
    (docs/gpu.md). On CUDA the default computes in fp32 with TF32 matrix products, no grad scaler;
    --precision fp32 turns TF32 off, and it is never on off CUDA."""
    steps = FastSteps(torch.device("cuda"), 32)
    assert steps.dtype is None and not steps.scaler.is_enabled() and steps.tf32
    assert parse_args(["--function", "pretrain", "--variant", "vanilla"]).precision == "tf32"
    assert FastSteps(torch.device("cuda"), 32, "bf16").dtype == torch.bfloat16
    strict = FastSteps(torch.device("cuda"), 32, "fp32")
    assert strict.dtype is None and not strict.tf32
    assert not FastSteps(torch.device("cpu"), 32).tf32


def test_tf32_is_allowed_inside_the_steps_only(names, tiny_config):
    """Kills TF32 left on after a step (decoding later in the process would then tell its batched
    logits apart from the one-prompt logits it checks them against) or never on: the model's
    forward runs with TF32 allowed, and afterwards the flags are what they were."""
    model = GPT(tiny_config(len(names.stoi), 64, n_layer=1))
    seen = []
    model.register_forward_hook(lambda *_: seen.append(torch.backends.cuda.matmul.allow_tf32))
    steps = FastSteps(torch.device("cpu"), 16)
    steps.tf32 = True  # as on CUDA: a CPU build reads and sets the flags all the same
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    steps.batch_loss(model, steps.collate([names[i] for i in range(16)])[0])
    assert seen and all(seen) and not before[0]
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before


def test_compiled_model_trains_as_the_eager_one(names, tiny_config):
    """FastSteps(compile=True) on a two-layer model with whole batches: the same losses as eager within
    1e-5, the step going through the compiled module. Compiled with dynamo's aot_eager backend: the graphs
    and the autograd of inductor's path, without building its C++ kernels (over two minutes of a test
    worker on an empty kernel cache; the bench, `./run.sh bench --parts compile`, compiles with inductor)."""
    settings = dict(trim_padding=False, backend="aot_eager")
    eager, _, _, _ = steps_at_precision(names, tiny_config, "fp32", steps=2, **settings)
    compiled, _, trainer, fast = steps_at_precision(names, tiny_config, "fp32", steps=2, compile=True, **settings)
    assert fast.step_model is not trainer.model
    assert compiled == pytest.approx(eager, abs=1e-5)
