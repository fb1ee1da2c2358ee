"""
The paths that only a GPU takes, on the GPU: the fast step (autocast, TF32,
pinned batches) against the plain fp32 step on the CPU, fp16 with its grad
scaler, fused AdamW, torch.compile, batched cached decoding, the CUDA
generators in checkpoints, a resumed run, and torchrun's process group of
one (NCCL). They run where PyTorch sees a CUDA GPU and are skipped
elsewhere; TEST_DEVICE=cpu runs them on the CPU (the tests' own check).

Tolerances, stated once here: fp32 on CUDA computes its matrix products in
TF32 (10-bit mantissa) during training, bf16 keeps 8 bits; sums stay fp32.
"""

import copy
import os

import pytest
import torch

from runtime.decoding import predict_places, predict_places_plain
from runtime.training.checkpoint import rng_states, set_rng_states
from runtime.training.fast_training import FastSteps, fused_adamw
from submission import CharCorruptionDataset, GPT, NameDataset, Trainer, TrainerConfig

from test_fast import fast_trainer
from test_resume import max_difference, questions, run_to_end  # noqa: F401 (questions: a fixture)
from test_resume import killed_and_resumed

DEVICE = os.environ.get("TEST_DEVICE") or ("cuda" if torch.cuda.is_available() else None)
pytestmark = pytest.mark.skipif(DEVICE is None, reason="no CUDA GPU here (TEST_DEVICE=cpu runs these on the CPU)")

LOSS_TOLERANCE = {"fp32": 2e-3, "bf16": 2e-2}  # relative, against the plain fp32 loss on the CPU
GRADIENT_TOLERANCE = {"fp32": 1e-2, "bf16": 5e-2}  # |g - g_plain| / |g_plain| over all parameters


@pytest.fixture(scope="module")
def names(corpus):
    return NameDataset(corpus.questions, CharCorruptionDataset(corpus.wiki, 64))


def graded_width_model(names, tiny_config, **extra):
    """A two-layer model of the graded width (n_embd 256, 8 heads), seeded."""
    torch.manual_seed(0)
    return GPT(tiny_config(len(names.stoi), 64, n_layer=2, n_head=8, n_embd=256, **extra))


def flat_gradient(model):
    return torch.cat([p.grad.float().flatten().cpu() for p in model.parameters()])


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("variant", [{}, dict(perceiver=True, bottleneck_dim=16)], ids=["vanilla", "perceiver"])
def test_the_fast_step_gives_the_plain_steps_loss_and_gradients(names, tiny_config, precision, variant):
    """Batches cut at their last target, moved from pinned memory, under autocast: the loss and the
    gradients of the plain fp32 step on the CPU, within the precision's tolerance."""
    plain = graded_width_model(names, tiny_config, **variant)
    examples = [names[i] for i in range(64)]
    x, y = torch.stack([e[0] for e in examples]), torch.stack([e[1] for e in examples])
    _, plain_loss = plain(x, y)
    plain_loss.backward()
    fast = copy.deepcopy(plain).to(DEVICE)
    fast.zero_grad(set_to_none=True)
    steps = FastSteps(torch.device(DEVICE), 64, precision)
    groups, _ = steps.collate(examples)
    groups = [(x_g.pin_memory() if DEVICE == "cuda" else x_g, y_g, share) for x_g, y_g, share in groups]
    fast_loss = float(steps.batch_loss(fast, groups))
    assert fast_loss == pytest.approx(float(plain_loss.detach()), rel=LOSS_TOLERANCE[precision])
    reference = flat_gradient(plain)
    error = float((flat_gradient(fast) - reference).norm() / reference.norm())
    print(f"{precision}: loss {fast_loss:.6f} against {float(plain_loss.detach()):.6f}, gradient error {error:.2e}")
    assert error <= GRADIENT_TOLERANCE[precision]


def losses_of_steps(names, tiny_config, precision, steps=4, **settings):
    """Losses of `steps` fast optimizer steps on one batch, from the same weights; and the FastSteps."""
    trainer, fast = fast_trainer(graded_width_model(names, tiny_config), batch_size=32, precision=precision,
                                 device=DEVICE, **settings)
    batch = fast.collate([names[i] for i in range(32)])
    trainer.model.train()
    return [float(trainer.train_step(batch)[0]) for _ in range(steps)], fast


def test_fp16_trains_with_its_grad_scaler(names, tiny_config):
    """fp16 autocast scales the loss (the scaler on, its scale finite) and its losses follow fp32's
    within 2% at every step, falling."""
    exact, _ = losses_of_steps(names, tiny_config, "fp32")
    half, fast = losses_of_steps(names, tiny_config, "fp16")
    assert fast.scaler.is_enabled() and 0 < fast.scaler.get_scale() < float("inf")
    assert half == pytest.approx(exact, rel=0.02) and half[-1] < half[0]


def test_fused_adamw_takes_the_steps_of_the_default_adamw():
    """Five steps on the same gradients: the fused kernel's parameters within 1e-6 of torch's default."""
    torch.manual_seed(0)
    start = [torch.randn(300, 70, device=DEVICE), torch.randn(70, device=DEVICE)]
    config = TrainerConfig(learning_rate=6e-3)
    results = []
    for fused in (True, False):
        params = [torch.nn.Parameter(p.clone()) for p in start]
        groups = [{"params": params[:1], "weight_decay": 0.1}, {"params": params[1:], "weight_decay": 0.0}]
        optimizer = fused_adamw(groups, config, torch.device(DEVICE)) if fused else \
            torch.optim.AdamW(groups, lr=config.learning_rate, betas=config.betas, foreach=False)
        assert bool(optimizer.defaults["fused"]) == fused
        generator = torch.Generator(device=DEVICE).manual_seed(1)
        for _ in range(5):
            for p in params:
                p.grad = torch.randn(p.shape, generator=generator, device=DEVICE)
            optimizer.step()
        results.append(params)
    assert all(torch.allclose(a, b, atol=1e-6, rtol=0) for a, b in zip(*results))
    assert not torch.equal(results[0][0], start[0])


def test_a_compiled_model_trains_as_the_eager_one(names, tiny_config):
    """torch.compile on the device, whole batches (one shape): the eager losses within 1e-3."""
    eager, _ = losses_of_steps(names, tiny_config, "fp32", trim_padding=False)
    compiled, fast = losses_of_steps(names, tiny_config, "fp32", trim_padding=False, compile=True)
    assert fast.step_model is not None and compiled == pytest.approx(eager, rel=1e-3)


@pytest.fixture(scope="module", params=["vanilla", "perceiver"])
def trained(request, names, tiny_config):
    """A small model of each variant trained for a few seconds on the questions (by the plain trainer,
    on the GPU where there is one)."""
    extra = dict(perceiver=True, bottleneck_dim=30) if request.param == "perceiver" else {}
    torch.manual_seed(0)
    model = GPT(tiny_config(len(names.stoi), 64, n_layer=4, **extra))
    Trainer(model, names, None, TrainerConfig(max_epochs=4, batch_size=32, learning_rate=1e-2)).train()
    return model.cpu().eval()  # the plain trainer trains on the GPU where there is one


def test_batched_decoding_on_the_device_gives_the_one_at_a_time_answers(trained, corpus, names, tiny_config, capsys):
    """After training steps in the same process (which allow TF32 inside them only), the cached
    batched decoder on the device gives the plain loop's answers exactly, with no fallback; and 98%
    or more of the CPU's (the device's rounding may break a near-tie the other way). The model,
    trained on the GPU, must answer with at least 3 different places for the comparison to mean
    something (an H200 gave 4 for the vanilla model)."""
    losses_of_steps(names, tiny_config, "fp32", steps=1)
    questions = [line.split("\t")[0] for line in corpus.questions.splitlines()]
    on_cpu = predict_places(trained, questions, names, "cpu")
    model = copy.deepcopy(trained).to(DEVICE)
    capsys.readouterr()
    batched = predict_places(model, questions, names, DEVICE)
    assert "one question at a time" not in capsys.readouterr().err
    assert batched == predict_places_plain(model, questions, names, DEVICE)
    assert len(set(batched)) >= 3
    assert sum(a == b for a, b in zip(batched, on_cpu)) >= 0.98 * len(questions)


def test_a_checkpoints_generator_states_bring_the_cuda_draws_back():
    """rng_states() holds the CUDA generators, and set_rng_states() restores them."""
    if not DEVICE.startswith("cuda"):
        pytest.skip("the CUDA generators exist only on a CUDA GPU")
    torch.cuda.manual_seed_all(3)
    states = rng_states()
    first = torch.rand(5, device=DEVICE)
    assert len(states["cuda"]) == torch.cuda.device_count()
    set_rng_states(states)
    assert torch.equal(torch.rand(5, device=DEVICE), first)


@pytest.fixture(scope="module")
def uninterrupted_runs(questions, tmp_path_factory):
    """Two uninterrupted runs with dropout on the device: their parameters' difference is the
    device's own run-to-run floor (its attention backward may add in any order)."""
    folders = [tmp_path_factory.mktemp("run") for _ in range(2)]
    for folder in folders:
        run_to_end(questions, folder / "experiments", folder / "final.params", dropout=0.1, device=DEVICE)
    return [folder / "final.params" for folder in folders]


def tolerance(uninterrupted_runs):
    """Ten times the run-to-run floor of the device, at least 1e-6."""
    return max(1e-6, 10 * max_difference(*uninterrupted_runs))


def test_a_run_killed_mid_epoch_resumes_to_the_uninterrupted_run(questions, tmp_path, uninterrupted_runs):
    """SIGKILLed mid-epoch and resumed: the uninterrupted run's parameters within the tolerance; the
    checkpoint held this device's generators."""
    params, _, state = killed_and_resumed(questions, tmp_path, lambda s: 0 < s["position"] < 7 and s["epoch"] >= 1,
                                          dropout=0.1, device=DEVICE)
    assert bool(state["rng"][0]["cuda"]) == DEVICE.startswith("cuda")
    assert max_difference(params, uninterrupted_runs[0]) <= tolerance(uninterrupted_runs)


def test_torchrun_with_one_process_trains_as_the_plain_run(questions, tmp_path, uninterrupted_runs):
    """One process under torchrun has a process group (NCCL on CUDA) and DDP: the plain run's
    parameters within the tolerance."""
    params = tmp_path / "torchrun.params"
    done = run_to_end(questions, tmp_path / "experiments", params, dropout=0.1, device=DEVICE, torchrun=True)
    assert " x 1;" in done.stdout
    assert max_difference(params, uninterrupted_runs[0]) <= tolerance(uninterrupted_runs)
