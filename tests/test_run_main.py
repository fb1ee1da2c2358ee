"""
src/run.py in-process, in seconds: what a run reads, seeds and says (an
evaluation's parameters and seed, the seed and dropout a model is built
with, the training settings that override --small's, its summary), Ctrl-C's
exit, a resume at a run's end, one of a run stopped midway and one of
another run.

Outputs go to temporary folders, never to src/submission/.
"""

import contextlib
import io

import pytest
import torch

import run
from runtime import command_line
from runtime.training import records
from runtime.training.checkpoint import Checkpointer, Interrupted
from submission import helper

from run_helpers import evaluate_args, finetune_args, inputs, run_argv
from runtime_helpers import one_thread, raising


def test_an_evaluation_without_params_is_one_line(inputs, tmp_path, capsys):
    """Kills an evaluation without --reading_params_path let past the checks (load_state_dict(None), a
    traceback)."""
    out = tmp_path / "out"
    out.mkdir()
    assert run.main(run_argv(evaluate_args(inputs, out, reading_params_path=None))) == 1
    assert capsys.readouterr().err == "run.py: error: --reading_params_path is needed: parameters file\n"
    assert list(out.iterdir()) == []


def test_an_evaluation_with_resume_and_no_seed_needs_no_records(inputs, tmp_path, capsys, single_thread):
    """Kills RESUME=1, which run.sh passes to every stage, making an evaluation look for the seed of a
    training run (an evaluation trains nothing, and has no records to resume)."""
    out = tmp_path / "out"
    out.mkdir()
    argv = [option for option in run_argv(evaluate_args(inputs, out)) if not option.startswith("--seed")]
    assert run.main(argv + ["--resume"]) == 0, capsys.readouterr().err
    assert len((out / "kept.predictions").read_text().splitlines()) == 20


def built_model(inputs, tmp_path, seed, *extra):
    """The model run.py builds for a finetuning run with --seed `seed` (and `extra` options)."""
    args = command_line.parse_args(run_argv(finetune_args(inputs, tmp_path)) + [f"--seed={seed}", *extra])
    return run.read_inputs(args, "cpu").model


def test_the_seed_fixes_the_models_start(inputs, tmp_path, single_thread):
    """Kills the model built before the seed is set (or unseeded): the same --seed would start two runs
    from different parameters."""
    first, again, other = (built_model(inputs, tmp_path, seed).state_dict() for seed in (3, 3, 4))
    assert all(torch.equal(first[key], again[key]) for key in first)
    assert not all(torch.equal(first[key], other[key]) for key in first)


def test_dropout_sets_every_dropout_of_the_model_and_its_absence_keeps_the_models_own(inputs, tmp_path):
    """Kills --dropout left out of the embeddings', the attention's or the residuals' dropout."""
    rates = lambda model: {module.p for module in model.modules() if isinstance(module, torch.nn.Dropout)}
    assert rates(built_model(inputs, tmp_path, 0, "--dropout=0.3")) == {0.3}
    assert rates(built_model(inputs, tmp_path, 0, "--variant=perceiver", "--dropout=0")) == {0.0}
    assert rates(built_model(inputs, tmp_path, 0)) == {0.1}


def test_a_perceiver_is_built_with_the_latents_asked_for(inputs, tmp_path):
    """Kills --bottleneck_dim left out of the perceiver, which would be built with the graded 32 latents."""
    assert built_model(inputs, tmp_path, 0, "--variant=perceiver", "--bottleneck_dim=8").down_block.C.shape == \
        (1, 8, 32)
    assert built_model(inputs, tmp_path, 0, "--variant=perceiver").down_block.C.shape == (1, 32, 32)


@pytest.mark.parametrize("steps, seconds, said", [(4, 0.5, "trained 4 steps in 0.5 s (8.00 steps/s)"),
                                                  (300, 120.04, "trained 300 steps in 120.0 s (2.50 steps/s)"),
                                                  (0, 0.0, "trained 0 steps in 0.0 s (0.00 steps/s)")])
def test_the_summary_says_the_steps_and_their_pace(steps, seconds, said):
    """Kills the pace computed otherwise (a floor of a second under a fast run's time), a division by
    zero when no step was left to train, and GPU memory told on a CPU."""
    assert run.training_summary(steps, seconds, torch.device("cpu")) == said


@pytest.mark.parametrize("options, overrides", [
    ([], {}), (["--small"], dict(max_epochs=1, batch_size=32, num_workers=0)),
    (["--small", "--max_epochs=3", "--batch_size=8"], dict(max_epochs=3, batch_size=8, num_workers=0)),
    (["--batch_size=8"], dict(batch_size=8)),
])
def test_the_training_options_override_smalls_training(options, overrides):
    """Kills --small's epochs or batch size winning over --max_epochs and --batch_size, or --small's
    training applied without --small."""
    args = command_line.parse_args(["--function", "pretrain", "--variant", "vanilla", *options])
    assert run.training_overrides(args) == overrides


def test_an_interrupted_run_exits_130_and_says_how_to_resume(inputs, tmp_path, capsys, monkeypatch):
    """Kills Ctrl-C's exit status (130, as a shell reports a SIGINT) or its resume command lost."""
    monkeypatch.setattr(helper, "train", raising(Interrupted()))
    out = tmp_path / "out"
    out.mkdir()
    assert run.main(run_argv(finetune_args(inputs, out))) == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        "run.py: interrupted; the run is saved in a checkpoint: resume it with the same command and --resume "
        "(./run.sh <stage> --resume, or RESUME=1)")
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("options", [[], ["--compile", "--backend=aot_eager"]])
def test_the_stages_train_eager_and_say_so_when_asked_to_compile(inputs, tmp_path, monkeypatch, capsys, options):
    """Kills a stage compiled for the course's word 'compile' (measured slower than eager, docs/gpu.md),
    or one that trains eager without saying so."""
    asked = []

    def plug_into(trainer, device, precision, compile, processes, seed, **overrides):
        asked.append(compile)
        raise ValueError("stopped before training")
    monkeypatch.setattr(run, "plug_into", plug_into)
    out = tmp_path / "out"
    out.mkdir()
    assert run.main(run_argv(finetune_args(inputs, out)) + options) == 1
    assert asked == [False]
    assert (run.EAGER_NOT_COMPILED in capsys.readouterr().err.splitlines()) == bool(options)


def four_step_run(inputs, out):
    """The command line of a small finetuning run, named 'run', of 4 steps (60 questions, batches of 16)
    into out/kept.params, its records in out/../experiments; --small: no loader workers."""
    return run_argv(finetune_args(inputs, out, batch_size=16, tb_expt_name="run")) + ["--small"]


@pytest.fixture(scope="module")
def finished_run(inputs, tmp_path_factory):
    """four_step_run trained to its end in-process: (its command line, what it printed, its parameters
    file)."""
    out = tmp_path_factory.mktemp("finished") / "out"
    out.mkdir()
    argv = four_step_run(inputs, out)
    with one_thread(), contextlib.redirect_stdout(io.StringIO()) as printed:
        assert run.main(argv) == 0
    return argv, printed.getvalue(), out / "kept.params"


def test_a_run_resumed_at_its_end_trains_no_steps_and_keeps_its_parameters(finished_run, capsys):
    """Kills the summary of a resumed run counting the steps trained before the resume, and a resume
    that trains again."""
    argv, printed, path = finished_run
    trained = torch.load(path, weights_only=True)
    assert "trained 4 steps in " in printed
    assert run.main(argv + ["--resume"]) == 0 and "trained 0 steps in " in capsys.readouterr().out
    again = torch.load(path, weights_only=True)
    assert all(torch.equal(trained[key], again[key]) for key in trained)


def stopped_at(step):
    """The Checkpointer, as if Ctrl-C came during training step `step`."""
    class Stopped(Checkpointer):
        def __call__(self, trainer, event):
            self.interrupted = self.interrupted or (event == "step" and trainer.step == step)
            return super().__call__(trainer, event)
    return Stopped


def test_a_run_stopped_midway_resumes_to_the_uninterrupted_parameters_and_records(finished_run, inputs, tmp_path,
                                                                                  capsys, monkeypatch, single_thread):
    """Kills a resume that does not take back its checkpoint, its recorded seed (none is given) or its
    records: the resumed run must end with the uninterrupted run's parameters, keep the interrupted
    run's rows of metrics.csv and go on after them, and say it trained the steps left."""
    _, _, uninterrupted = finished_run
    out = tmp_path / "out"
    out.mkdir()
    argv = [option for option in four_step_run(inputs, out) if not option.startswith("--seed")]
    metrics = tmp_path / "experiments" / "run" / "metrics.csv"
    with monkeypatch.context() as patch:
        patch.setattr(run, "Checkpointer", stopped_at(2))
        assert run.main(argv + ["--seed=0"]) == 130 and not (out / "kept.params").exists()
    capsys.readouterr()
    before = records.read_metrics(metrics)
    assert run.main(argv + ["--resume"]) == 0 and "trained 2 steps in " in capsys.readouterr().out
    steps = [row["step"] for row in records.read_metrics(metrics)]
    assert before and records.read_metrics(metrics)[:len(before)] == before
    assert steps == sorted(set(steps)) and steps[-1] == 4
    resumed, expected = (torch.load(path, weights_only=True) for path in (out / "kept.params", uninterrupted))
    assert max(float((resumed[key] - expected[key]).abs().max()) for key in expected) <= 1e-6


@pytest.mark.parametrize("change, named", [
    ("--function=pretrain", "its function is 'finetune', this run's is 'pretrain'"),
    ("--variant=perceiver", "its variant is 'vanilla', this run's is 'perceiver'"),
    ("--dropout=0.2", "its configuration is 'n_layer=2 n_head=2 n_embd=32 max_epochs=1 batch_size=16', this run's "
                      "is 'n_layer=2 n_head=2 n_embd=32 max_epochs=1 batch_size=16 d...'"),
])
def test_a_checkpoint_of_another_run_is_refused_naming_what_differs(finished_run, capsys, change, named):
    """Kills a checkpoint resumed by a run of another function, variant or configuration (its parameters
    and optimizer loaded into the wrong model, or training it on)."""
    argv, _, _ = finished_run
    assert run.main(argv + [change, "--resume"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[1].startswith("run.py: error: the checkpoint ") and err[1].endswith(named)


def test_a_runs_name_is_its_variant_then_its_function_unless_one_is_given():
    """Kills another default name for a run's folder of records than the one --help gives."""
    args = command_line.parse_args(["--function", "pretrain", "--variant", "perceiver"])
    assert run.run_name(args) == "perceiver_pretrain"
    args.tb_expt_name = "mine"
    assert run.run_name(args) == "mine"


def test_a_rope_run_stopped_midway_resumes_to_the_uninterrupted_parameters(inputs, tmp_path, monkeypatch, capsys,
                                                                           single_thread):
    """The same for the RoPE model: its checkpoint holds the rope_cache buffers with the weights, and the
    resumed run ends where the uninterrupted one does."""
    ended = {}
    for name, stop in (("whole", None), ("stopped", 2)):
        out = tmp_path / name / "out"
        out.mkdir(parents=True)
        argv = four_step_run(inputs, out) + ["--variant=rope"]
        if stop:
            with monkeypatch.context() as patch:
                patch.setattr(run, "Checkpointer", stopped_at(stop))
                assert run.main(argv) == 130
            argv += ["--resume"]
        assert run.main(argv) == 0, capsys.readouterr().err
        ended[name] = torch.load(out / "kept.params", weights_only=True)
    assert any(key.endswith("rope_cache") for key in ended["whole"]) and "pos_emb" not in ended["whole"]
    assert max(float((ended["stopped"][key] - ended["whole"][key]).abs().max()) for key in ended["whole"]) <= 1e-6
