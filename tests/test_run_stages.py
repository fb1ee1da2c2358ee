"""
run.sh and src/run.py end to end: every stage in the small configuration
(on data/ when this checkout has it, else on a corpus written here in the
course's formats), the predictions against the one-question-at-a-time loop,
the run records and plots, the baselines, and one clear error line, a
nonzero exit and untouched outputs for every bad input. First, in-process
and in seconds, what run.py itself decides: an evaluation's parameters and
seed, the seed and dropout a model is built with, the training settings
that override --small's, Ctrl-C's exit, a resume at a run's end and one of
another run.

Outputs go to temporary folders (OUT_DIR, EXPERIMENTS_DIR), never to
src/submission/.
"""

import collections
import contextlib
import io
import os
import random
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import run
from assignment import facts
from grader_fixtures import report
from runtime import command_line
from runtime.decoding import predict_places_plain
from runtime.inputs import pretraining_dataset
from runtime.params import stamp, vocabulary_string
from runtime.training import records
from runtime.training.checkpoint import Checkpointer, Interrupted
from stages import london_baseline, plot
from submission import GPT, GPTConfig, helper
from submission.dataset import CharCorruptionDataset

from runtime_helpers import raising

REPO = Path(__file__).resolve().parents[1]
RUN_SH = REPO / "run.sh"
DEFAULT_DATA = REPO / "data"
COURSE_DATA = REPO.parent / "shared" / "data"
DATA_FILES = ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv", "birth_test_inputs.tsv")

# stage -> (file it writes, file it reads or None, stage that makes the file it reads)
STAGES = {
    "vanilla_finetune_without_pretrain": ("vanilla.model.params", None, None),
    "vanilla_eval_dev_without_pretrain": ("vanilla.nopretrain.dev.predictions", "vanilla.model.params",
                                          "vanilla_finetune_without_pretrain"),
    "vanilla_eval_test_without_pretrain": ("vanilla.nopretrain.test.predictions", "vanilla.model.params",
                                           "vanilla_finetune_without_pretrain"),
    "vanilla_pretrain": ("vanilla.pretrain.params", None, None),
    "vanilla_finetune_with_pretrain": ("vanilla.finetune.params", "vanilla.pretrain.params", "vanilla_pretrain"),
    "vanilla_eval_dev_with_pretrain": ("vanilla.pretrain.dev.predictions", "vanilla.finetune.params",
                                       "vanilla_finetune_with_pretrain"),
    "vanilla_eval_test_with_pretrain": ("vanilla.pretrain.test.predictions", "vanilla.finetune.params",
                                        "vanilla_finetune_with_pretrain"),
    "perceiver_pretrain": ("perceiver.pretrain.params", None, None),
    "perceiver_finetune_with_pretrain": ("perceiver.finetune.params", "perceiver.pretrain.params",
                                         "perceiver_pretrain"),
    "perceiver_eval_dev_with_pretrain": ("perceiver.pretrain.dev.predictions", "perceiver.finetune.params",
                                         "perceiver_finetune_with_pretrain"),
    "perceiver_eval_test_with_pretrain": ("perceiver.pretrain.test.predictions", "perceiver.finetune.params",
                                          "perceiver_finetune_with_pretrain"),
}
TRAINING_STAGES = [s for s in STAGES if "_eval_" not in s]
DEV_STAGES = [s for s in STAGES if "_eval_dev_" in s]
TEST_STAGES = [s for s in STAGES if "_eval_test_" in s]
OTHER_STAGES = ["london_baseline", "demo", "test", "bench", "plot", "release", "copies", "collect_submission",
                "help"]
TINY = dict(n_layer=2, n_head=2, n_embd=32)  # the explicit model size of the in-process tests
CORRECT_LINE = re.compile(r"^Correct: (\d+\.\d+) out of (\d+\.\d+): ([\d.]+)%$", re.M)

FIRST = ["Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kenji", "Lara"]
LAST = ["Abbott", "Barros", "Cole", "Dunn", "Eklund", "Ferro", "Gale", "Hale", "Ivers", "Jory", "Kahn", "Lund"]
PLACES = ["London", "London", "London", "Paris", "Lagos", "Quito", "Bergen", "Osaka", "Perth", "Tbilisi"]


def write_corpus(folder, seed=7, people=90):
    """The course's four student files for `people` invented people: 60 to train, 20 dev, the rest test."""
    rng = random.Random(seed)
    names = rng.sample([f"{first} {last}" for first in FIRST for last in LAST], people)
    births = [(name, rng.choice(PLACES)) for name in names]
    wiki = [f"{name}. {name} is a writer born in {place} who later lived in {rng.choice(PLACES)} ."
            for name, place in births]
    wiki.append("Where was the river born? Nobody knows .")
    questions = [f"Where was {name} born?" for name, _ in births]
    labelled = [f"{q}\t{place}\n" for q, (_, place) in zip(questions, births)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "wiki.txt").write_text("\n".join(wiki) + "\n", encoding="utf-8")
    (folder / "birth_places_train.tsv").write_text("".join(labelled[:60]), encoding="utf-8")
    (folder / "birth_dev.tsv").write_text("".join(labelled[60:80]), encoding="utf-8")
    (folder / "birth_test_inputs.tsv").write_text("".join(q + "\n" for q in questions[80:]), encoding="utf-8")
    return folder


def stage_env(data_dir, out_dir, experiments_dir, small=True):
    env = dict(os.environ, DATA_DIR=str(data_dir), OUT_DIR=str(out_dir), EXPERIMENTS_DIR=str(experiments_dir),
               DEVICE="cpu", OMP_NUM_THREADS="1")
    env.pop("SMALL", None)
    if small:
        env["SMALL"] = "1"
    return env


def run_sh(*args, env=None):
    return subprocess.run(["bash", str(RUN_SH), *args], env=env or dict(os.environ), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=900)


def nonblank_lines(path):
    return [line for line in Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]


def vocabulary_size(wiki_path):
    return len(set(Path(wiki_path).read_text(encoding="utf-8"))) + 2


def folder_state(folder):
    """Every file of a folder with its bytes."""
    return {p.name: p.read_bytes() for p in Path(folder).iterdir()}


class Pipeline:
    def __init__(self, data, out, experiments, results):
        self.data, self.out, self.experiments, self.results = data, out, experiments, results


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """Every graded stage and the baseline, in order, through run.sh with SMALL=1."""
    tmp = tmp_path_factory.mktemp("pipeline")
    has_default_data = all((DEFAULT_DATA / name).is_file() for name in DATA_FILES)
    data = DEFAULT_DATA if has_default_data else write_corpus(tmp / "data")
    out = tmp / "out"
    out.mkdir()
    env = stage_env(data, out, tmp / "experiments")
    results = {stage: run_sh(stage, "--seed", "0", env=env) for stage in STAGES}
    results["london_baseline"] = run_sh("london_baseline", env=env)
    return Pipeline(data, out, tmp / "experiments", results)


def small_model(variant, vocab_size, **size):
    mconf = GPTConfig(vocab_size, facts.BLOCK_SIZE, **{**command_line.SMALL_MODEL, **size})
    if variant == "vanilla":
        return helper.initialize_vanilla_model(mconf)
    return helper.initialize_perceiver_model(mconf, bottleneck_dim=32)


# ---- run.py in-process: what a run reads, seeds and says --------------------------------------------

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
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: far faster on one thread of a busy CPU
    try:
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            assert run.main(argv) == 0
    finally:
        torch.set_num_threads(threads)
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


# ---- every stage, end to end -------------------------------------------------------------------

@pytest.mark.parametrize("stage", list(STAGES))
def test_stage_runs_and_writes_its_file(pipeline, stage):
    result = pipeline.results[stage]
    assert result.returncode == 0, result.stderr[-3000:]
    written = pipeline.out / STAGES[stage][0]
    assert written.is_file() and written.stat().st_size > 0
    assert not [p for p in pipeline.out.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("stage", TRAINING_STAGES)
def test_training_stage_saves_a_small_model_of_its_variant(pipeline, stage):
    state = torch.load(pipeline.out / STAGES[stage][0], map_location="cpu", weights_only=True)
    model = small_model(stage.split("_")[0], vocabulary_size(pipeline.data / "wiki.txt"))
    assert {k: tuple(v.shape) for k, v in state.items()} == {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert "epoch 1/1 iter 0: train loss" in pipeline.results[stage].stderr  # the progress bar
    with open(pipeline.data / "wiki.txt", encoding="utf-8") as f:
        characters = sorted(set(f.read()) | set(facts.RESERVED_CHARS))
    assert sorted(state._metadata[""]["vocabulary"]) == characters  # stamped with its vocabulary


def parameter_distance(a, b):
    return sum(float((a[k].float() - b[k].float()).norm()) for k in a if k.endswith("weight"))


def test_finetuning_with_pretraining_starts_from_the_pretrained_parameters(pipeline):
    load = lambda name: torch.load(pipeline.out / name, map_location="cpu", weights_only=True)
    pretrained = load("vanilla.pretrain.params")
    assert parameter_distance(load("vanilla.finetune.params"), pretrained) < \
        0.5 * parameter_distance(load("vanilla.model.params"), pretrained)


@pytest.mark.parametrize("stage", DEV_STAGES)
def test_dev_evaluation_prints_the_accuracy_of_its_predictions(pipeline, stage):
    result = pipeline.results[stage]
    predictions = (pipeline.out / STAGES[stage][0]).read_text(encoding="utf-8").split("\n")[:-1]
    places = [line.strip().split("\t")[1] for line in nonblank_lines(pipeline.data / "birth_dev.tsv")]
    assert len(predictions) == len(places)
    correct = sum(p == q for p, q in zip(predictions, places))
    match = CORRECT_LINE.search(result.stdout)
    assert match, result.stdout
    assert (float(match[1]), float(match[2])) == (correct, len(places))
    assert float(match[3]) == pytest.approx(100 * correct / len(places))


@pytest.mark.parametrize("stage", TEST_STAGES)
def test_test_evaluation_writes_one_unlabelled_prediction_a_question(pipeline, stage):
    result = pipeline.results[stage]
    lines = (pipeline.out / STAGES[stage][0]).read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(nonblank_lines(pipeline.data / "birth_test_inputs.tsv"))
    assert "Correct:" not in result.stdout and "no labels" in result.stdout


@pytest.fixture
def one_thread():
    """Tiny models decode fastest on one thread, above all on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("stage", DEV_STAGES)
def test_predictions_equal_the_one_question_at_a_time_loop(pipeline, stage, one_thread):
    """run.py decodes many questions per forward pass; the plain loop answers one at a time."""
    written, params, _ = STAGES[stage]
    with open(pipeline.data / "wiki.txt", encoding="utf-8") as f:
        dataset = CharCorruptionDataset(f.read(), facts.BLOCK_SIZE)
    model = small_model(stage.split("_")[0], dataset.vocab_size)
    model.load_state_dict(torch.load(pipeline.out / params, map_location="cpu", weights_only=True))
    count = 48
    questions = [line.split("\t")[0] for line in nonblank_lines(pipeline.data / "birth_dev.tsv")][:count]
    expected = [p.replace("\n", " ") for p in predict_places_plain(model, questions, dataset, torch.device("cpu"))]
    assert (pipeline.out / written).read_text(encoding="utf-8").split("\n")[:len(questions)] == expected


@pytest.mark.parametrize("stage", TRAINING_STAGES)
def test_training_writes_a_metrics_csv(pipeline, stage):
    rows = records.read_metrics(pipeline.experiments / stage / "metrics.csv")
    assert rows and all(None not in row.values() for row in rows)
    steps = [row["step"] for row in rows]
    tokens = [row["tokens"] for row in rows]
    assert steps == sorted(set(steps)) and tokens == sorted(set(tokens))
    assert all(row["epoch"] == 1 and row["lr"] > 0 and row["loss"] > 0 and row["seconds"] >= 0 for row in rows)


def test_london_baseline_scores_both_constant_answers(pipeline):
    result = pipeline.results["london_baseline"]
    assert result.returncode == 0, result.stderr
    train = [line.strip().split("\t")[1] for line in nonblank_lines(pipeline.data / "birth_places_train.tsv")]
    dev = [line.strip().split("\t")[1] for line in nonblank_lines(pipeline.data / "birth_dev.tsv")]
    most_frequent = collections.Counter(train).most_common(1)[0][0]
    lines = result.stdout.strip().split("\n")
    for line, place in zip(lines, ["London", most_frequent]):
        assert line.startswith(f'Always "{place}"')
        assert line.endswith(f"Correct: {float(dev.count(place))} out of {float(len(dev))}: "
                             f"{dev.count(place) / len(dev) * 100}%")
    assert len(lines) == 2


@pytest.mark.skipif(not (COURSE_DATA / "birth_dev.tsv").is_file(), reason="course data not found at ../shared/data")
def test_london_baseline_on_the_course_data_is_five_percent():
    result = run_sh("london_baseline", env=dict(os.environ, DATA_DIR=str(COURSE_DATA)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == 'Always "London": Correct: 25.0 out of 500.0: 5.0%'


# ---- records and plots -----------------------------------------------------------------------

def test_recorder_writes_one_row_a_step_from_the_trainer_tags(tmp_path):
    with records.RunRecorder(tmp_path / "run", use_tensorboard=False) as recorder:
        for step in (1, 11):
            for column, value in zip(("loss", "lr", "tokens", "epoch", "seconds"), (2.5, 1e-4, 100 * step, 1, 0.5)):
                recorder.add_scalar("train/" + column, value, step)
        recorder.add_scalar("train/loss", 1.5, 21)
    rows = records.read_metrics(tmp_path / "run" / "metrics.csv")
    assert [row["step"] for row in rows] == [1, 11, 21]
    assert rows[1] == dict(step=11, epoch=1, loss=2.5, lr=1e-4, tokens=1100, seconds=0.5)
    assert rows[2]["loss"] == 1.5 and rows[2]["lr"] is None


def test_plot_draws_a_png_of_a_run(pipeline, tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is optional; plotting is tested where it is installed")
    output = tmp_path / "curves.png"
    assert plot.main(["vanilla_pretrain", "--experiments_dir", str(pipeline.experiments),
                      "--output", str(output)]) == 0
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_so(pipeline, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert plot.main(["vanilla_pretrain", "--experiments_dir", str(pipeline.experiments)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "matplotlib" in err and "pip install matplotlib" in err
    assert not (pipeline.experiments / "vanilla_pretrain" / "curves.png").exists()


def test_plot_of_an_unknown_run_lists_the_runs(pipeline, capsys):
    assert plot.main(["no_such_run", "--experiments_dir", str(pipeline.experiments)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "vanilla_pretrain" in err


# ---- run.sh itself -------------------------------------------------------------------------------

def test_help_lists_every_stage():
    result = run_sh("help")
    assert result.returncode == 0
    listed = {line.split()[0] for line in result.stdout.split("\n") if line.startswith("  ")}
    assert listed >= set(STAGES) | set(OTHER_STAGES)


@pytest.mark.parametrize("args", [["no_such_stage"], []])
def test_unknown_or_missing_stage_exits_nonzero(args):
    result = run_sh(*args)
    assert result.returncode != 0
    assert "vanilla_pretrain" in result.stderr and result.stdout == ""


@pytest.mark.parametrize("stage", [s for s in STAGES if STAGES[s][1]])
def test_stage_without_its_params_names_the_stage_that_makes_them(stage, tmp_path):
    data = write_corpus(tmp_path / "data")
    (tmp_path / "out").mkdir()
    result = run_sh(stage, env=stage_env(data, tmp_path / "out", tmp_path / "experiments"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and f"./run.sh {STAGES[stage][2]}" in result.stderr
    assert list((tmp_path / "out").iterdir()) == []


def test_missing_data_folder_says_to_set_data_dir(tmp_path):
    (tmp_path / "out").mkdir()
    result = run_sh("vanilla_pretrain", env=stage_env(tmp_path / "nowhere", tmp_path / "out", tmp_path / "e"))
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "DATA_DIR" in result.stderr


def test_graded_stages_use_the_graded_model_unless_small(pipeline, tmp_path):
    """Without SMALL=1 the stage builds the 4-layer, 256-wide model, which small parameters do not fit."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "vanilla.model.params").write_bytes((pipeline.out / "vanilla.model.params").read_bytes())
    (out / "vanilla.nopretrain.dev.predictions").write_text("kept\n")
    before = folder_state(out)
    result = run_sh("vanilla_eval_dev_without_pretrain",
                    env=stage_env(pipeline.data, out, tmp_path / "experiments", small=False))
    assert result.returncode == 1 and "another size" in result.stderr
    assert folder_state(out) == before


# ---- bad inputs: one line on stderr, exit 1, outputs untouched -----------------------------------

@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A small corpus, params of both variants and of another vocabulary, and malformed question files."""
    folder = write_corpus(tmp_path_factory.mktemp("inputs"))
    vocab = vocabulary_size(folder / "wiki.txt")
    torch.save(small_model("vanilla", vocab, **TINY).state_dict(), folder / "vanilla.params")
    torch.save(small_model("perceiver", vocab, **TINY).state_dict(), folder / "perceiver.params")
    torch.save(small_model("vanilla", vocab + 3, **TINY).state_dict(), folder / "other_vocab.params")
    torch.save(small_model("vanilla", vocab, n_layer=3, n_head=2, n_embd=32).state_dict(), folder / "deeper.params")
    (folder / "not_params.params").write_text("these are not parameters\n")
    whole = (folder / "vanilla.params").read_bytes()
    (folder / "cut_short.params").write_bytes(whole[:len(whole) // 2])
    characters = vocabulary_string(pretraining_dataset(str(folder / "wiki.txt")))
    same_size = small_model("vanilla", vocab, **TINY)
    stamp(same_size, characters.replace("a", "~"), "")
    torch.save(same_size.state_dict(), folder / "same_size_vocab.params")
    good = (folder / "birth_dev.tsv").read_text(encoding="utf-8").split("\n")
    (folder / "no_tab.tsv").write_text("\n".join([good[0], good[1].replace("\t", " "), *good[2:]]))
    (folder / "unknown_chars.tsv").write_text("\n".join([good[0], "Where was Zoë #9 born?\tLondon", *good[1:]]))
    (folder / "mixed.tsv").write_text("\n".join([good[0].split("\t")[0], good[1]]))
    return folder


def finetune_args(inputs, out, **changes):
    args = dict(function="finetune", variant="vanilla", pretrain_corpus_path=inputs / "wiki.txt",
                finetune_corpus_path=inputs / "birth_places_train.tsv", writing_params_path=out / "kept.params",
                reading_params_path=None, experiments_dir=out.parent / "experiments")
    args.update(changes)
    return args


def evaluate_args(inputs, out, **changes):
    args = dict(function="evaluate", variant="vanilla", pretrain_corpus_path=inputs / "wiki.txt",
                eval_corpus_path=inputs / "birth_dev.tsv", reading_params_path=inputs / "vanilla.params",
                outputs_path=out / "kept.predictions", experiments_dir=out.parent / "experiments")
    args.update(changes)
    return args


def run_argv(args):
    argv = [f"--{name}={value}" for name, value in args.items() if value is not None]
    size = [f"--{name}={value}" for name, value in TINY.items()]
    return argv + size + ["--max_epochs=1", "--device=cpu", "--seed=0"]


BAD_INPUTS = {
    "missing pretraining corpus": (finetune_args, dict(pretrain_corpus_path="{inputs}/none.txt"), "not found"),
    "missing finetuning corpus": (finetune_args, dict(finetune_corpus_path="{inputs}/none.tsv"), "not found"),
    "missing evaluation corpus": (evaluate_args, dict(eval_corpus_path="{inputs}/none.tsv"), "not found"),
    "missing params to evaluate": (evaluate_args, dict(reading_params_path="{inputs}/none.params"), "not found"),
    "missing params to finetune": (finetune_args, dict(reading_params_path="{inputs}/none.params"), "not found"),
    "finetuning line without a tab": (finetune_args, dict(finetune_corpus_path="{inputs}/no_tab.tsv"),
                                      "line 2: expected 'question<TAB>place'"),
    "evaluation line without a tab": (evaluate_args, dict(eval_corpus_path="{inputs}/no_tab.tsv"),
                                      "line 2: expected 'question<TAB>place'"),
    "questions with and without labels": (evaluate_args, dict(eval_corpus_path="{inputs}/mixed.tsv"),
                                          "line 2 has a tab, but line 1 has none"),
    "finetuning characters not in the vocabulary": (finetune_args, dict(finetune_corpus_path="{inputs}/unknown_chars.tsv"),
                                                    "line 2: characters not in the pretraining corpus's vocabulary: '#', '9', 'Z'"),
    "question characters not in the vocabulary": (evaluate_args, dict(eval_corpus_path="{inputs}/unknown_chars.tsv"),
                                                  "line 2: characters not in the pretraining corpus's vocabulary: '#', '9', 'Z', 'ë'"),
    "perceiver params for vanilla": (evaluate_args, dict(reading_params_path="{inputs}/perceiver.params"),
                                     "holds perceiver parameters, but --variant is vanilla"),
    "vanilla params for perceiver": (finetune_args, dict(variant="perceiver", reading_params_path="{inputs}/vanilla.params"),
                                     "holds vanilla parameters, but --variant is perceiver"),
    "params of another vocabulary": (evaluate_args, dict(reading_params_path="{inputs}/other_vocab.params"),
                                     "was saved with a vocabulary of"),
    "params of another model size": (finetune_args, dict(reading_params_path="{inputs}/deeper.params"),
                                     "saved from a model of another size (blocks.2."),
    "params of a vocabulary of the same size": (finetune_args, dict(reading_params_path="{inputs}/same_size_vocab.params"),
                                                "was trained with another vocabulary (it differs in 'a', '~')"),
    "not a params file": (evaluate_args, dict(reading_params_path="{inputs}/not_params.params"),
                          "cannot read parameters"),
    "params file cut short": (evaluate_args, dict(reading_params_path="{inputs}/cut_short.params"),
                              "not a PyTorch parameters file, or cut short"),
    "params folder is a file": (finetune_args, dict(writing_params_path="{inputs}/wiki.txt/vanilla.params"),
                                "the folder of --writing_params_path is a file, not a folder"),
    "missing folder for params": (finetune_args, dict(writing_params_path="{out}/none/vanilla.params"),
                                  "the folder of --writing_params_path does not exist"),
    "missing folder for predictions": (evaluate_args, dict(outputs_path="{out}/none/dev.predictions"),
                                       "the folder of --outputs_path does not exist"),
}


def test_a_diverged_run_gives_one_line_and_keeps_the_earlier_parameters(inputs, tmp_path, capsys):
    """Kills NaN parameters saved over good ones (their predictions are all PAD, and decoding falls
    back to the slow loop): a learning rate of 1e30 makes the weights overflow within the epoch."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept.params").write_bytes(b"earlier parameters")
    before = folder_state(out)
    assert run.main(run_argv(finetune_args(inputs, out, finetune_lr=1e30, batch_size=8))) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("run.py: error")]
    assert len(errors) == 1 and errors[0].startswith("run.py: error: training diverged: the parameters hold NaN")
    assert folder_state(out) == before


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_gives_one_line_and_touches_nothing(case, inputs, tmp_path, capsys):
    make_args, changes, message = BAD_INPUTS[case]
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept.params").write_bytes(b"earlier parameters")
    (out / "kept.predictions").write_text("earlier predictions\n")
    before = folder_state(out)
    args = make_args(inputs, out, **{k: v.format(inputs=inputs, out=out) for k, v in changes.items()})
    assert run.main(run_argv(args)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("run.py: error: ") and message in err, err
    assert folder_state(out) == before
    assert not (tmp_path / "experiments").exists()


def test_bad_input_through_run_sh_leaves_the_submission_files(inputs, tmp_path):
    """The same checks hold for a whole stage: bad training data, the earlier params stay."""
    data = tmp_path / "data"
    data.mkdir()
    for name in DATA_FILES:
        (data / name).write_bytes((inputs / name).read_bytes())
    (data / "birth_places_train.tsv").write_bytes((inputs / "no_tab.tsv").read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    (out / "vanilla.model.params").write_bytes(b"earlier parameters")
    result = run_sh("vanilla_finetune_without_pretrain", env=stage_env(data, out, tmp_path / "experiments"))
    assert result.returncode == 1
    assert [line for line in result.stderr.split("\n") if line.strip() and "SMALL=1" not in line] == \
        [f"run.py: error: {data}/birth_places_train.tsv line 2: expected 'question<TAB>place', "
         f"found no tab: {(inputs / 'no_tab.tsv').read_text().split(chr(10))[1][:70]!r}"]
    assert (out / "vanilla.model.params").read_bytes() == b"earlier parameters"


@pytest.mark.parametrize("missing", ["data folder", "test file"])
def test_a_missing_data_file_names_the_setting_to_fix(tmp_path, missing):
    out = tmp_path / "out"
    out.mkdir()
    (out / "vanilla.finetune.params").write_bytes(b"earlier parameters")
    env = stage_env(tmp_path / "no_data", out, tmp_path / "experiments")
    if missing == "data folder":
        result = run_sh("vanilla_pretrain", env=env)
        expected = f"set DATA_DIR to the folder holding the data files (now {tmp_path / 'no_data'})"
    else:
        env.update(DATA_DIR=str(REPO / "data"), TEST_FILE=str(tmp_path / "none.tsv"))
        result = run_sh("vanilla_eval_test_with_pretrain", env=env)
        expected = f"needs {tmp_path / 'none.tsv'}, which is not there; set TEST_FILE to the test questions"
    lines = [line for line in result.stderr.split("\n") if line.strip() and "SMALL=1" not in line]
    assert result.returncode != 0 and len(lines) == 1 and lines[0].endswith(expected), result.stderr
    assert (out / "vanilla.finetune.params").read_bytes() == b"earlier parameters"


def test_small_is_never_the_default():
    args = command_line.parse_args(["--function", "pretrain", "--variant", "vanilla"])
    assert not args.small and command_line.model_size(args) == dict(n_layer=4, n_head=8, n_embd=256)
    small = command_line.parse_args(["--function", "pretrain", "--variant", "vanilla", "--small", "--n_embd", "64"])
    assert command_line.model_size(small) == dict(command_line.SMALL_MODEL, n_embd=64)


def test_baseline_rejects_a_line_without_a_tab(inputs, capsys):
    assert london_baseline.main(["--train_path", str(inputs / "no_tab.tsv"), "--dev_path", str(inputs / "birth_dev.tsv")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 2" in err


# ---- the student's path: smoke runs, unwritten code, long CPU runs ------------------------------

def test_a_smoke_stage_writes_to_its_own_folder(inputs, tmp_path, monkeypatch, capsys):
    """A graded stage in another configuration, with no --out_dir, writes to smoke/, never where
    the hand-in is collected from; its params are stamped with what differs."""
    monkeypatch.setattr(command_line, "GRADED_OUT", str(tmp_path / "submission"))
    monkeypatch.setattr(command_line, "SMOKE_OUT", str(tmp_path / "smoke"))
    (tmp_path / "submission").mkdir()
    (tmp_path / "smoke").mkdir()
    argv = ["--stage", "vanilla_finetune_without_pretrain", "--data_dir", str(inputs), "--device", "cpu",
            "--experiments_dir", str(tmp_path / "experiments"), *run_argv({})]
    assert run.main(argv) == 0
    assert list((tmp_path / "submission").iterdir()) == []
    state = torch.load(tmp_path / "smoke" / "vanilla.model.params", weights_only=True)
    assert state._metadata[""]["configuration"] == "n_layer=2 n_head=2 n_embd=32 max_epochs=1"
    assert "not the graded configuration (n_layer=2 n_head=2 n_embd=32 max_epochs=1)" in capsys.readouterr().err


def test_the_graded_configuration_is_stamped_empty_and_goes_to_the_submission():
    args = command_line.parse_args(["--stage", "vanilla_pretrain"])
    assert args.configuration == "" and args.writing_params_path == str(Path(command_line.GRADED_OUT) / "vanilla.pretrain.params")
    small = command_line.parse_args(["--stage", "vanilla_pretrain", "--small"])
    assert small.writing_params_path == str(Path(command_line.SMOKE_OUT) / "vanilla.pretrain.params")
    assert command_line.parse_args(["--stage", "vanilla_pretrain", "--pretrain_lr", "1e-3"]).configuration == "pretrain_lr=0.001"


def unwritten_run(inputs, tmp_path, capsys, function="finetune", variant="vanilla"):
    """run.main on a tiny finetuning (or pretraining) run; returns (exit status, stderr lines)."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    args = finetune_args(inputs, out, variant=variant, function=function,
                         finetune_corpus_path=None if function == "pretrain" else inputs / "birth_places_train.tsv")
    status = run.main(run_argv(args))
    return status, [line for line in capsys.readouterr().err.splitlines() if line.startswith("run.py: error")]


def written_nothing(*args, **kwargs):
    return None


UNWRITTEN = {
    "initialize_vanilla_model returns None": (
        "initialize_vanilla_model", written_nothing, "finetune", "vanilla",
        "run.py: error: part (c): initialize_vanilla_model returned None: it is not written yet"),
    "initialize_perceiver_model returns None": (
        "initialize_perceiver_model", written_nothing, "pretrain", "perceiver",
        "run.py: error: part (g): initialize_perceiver_model returned None: it is not written yet"),
    "the perceiver flag forgotten": (
        "initialize_perceiver_model", lambda mconf, bottleneck_dim=32: GPT(mconf), "pretrain", "perceiver",
        "run.py: error: part (g): initialize_perceiver_model builds a GPT without down and up blocks: "
        "set mconf.perceiver = True"),
    "pretrain returns nothing": (
        "pretrain", lambda *args, **kwargs: (None, None), "pretrain", "vanilla",
        "run.py: error: part (f): pretrain returned no TrainerConfig: it is not written yet"),
    "train still pass": (
        "train", written_nothing, "finetune", "vanilla",
        "run.py: error: part (c): train saved no parameters (it should save the model's state_dict to "
        "writing_params_path): it is not written yet"),
}


@pytest.mark.parametrize("case", list(UNWRITTEN))
def test_unwritten_student_code_is_named_in_one_line(case, inputs, tmp_path, capsys, monkeypatch):
    name, replacement, function, variant, expected = UNWRITTEN[case]
    monkeypatch.setattr(helper, name, replacement)
    status, errors = unwritten_run(inputs, tmp_path, capsys, function, variant)
    assert status == 1 and errors == [expected]
    assert list((tmp_path / "out").iterdir()) == []


def test_training_gives_ctrl_c_back_its_former_handler(inputs, tmp_path, capsys, monkeypatch):
    """Ctrl-C checkpoints while run.py trains; after training, well or not, it is what it was
    before, so a later Ctrl-C in the same process is not swallowed."""
    received = []
    before = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        assert unwritten_run(inputs, tmp_path, capsys)[0] == 0
        os.kill(os.getpid(), signal.SIGINT)
        monkeypatch.setattr(helper, "train", written_nothing)
        assert unwritten_run(inputs, tmp_path, capsys)[0] == 1
        os.kill(os.getpid(), signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
    assert received == [signal.SIGINT] * 2


def test_an_unwritten_span_corruption_is_named_before_its_traceback(inputs, tmp_path, capsys, monkeypatch):
    def __getitem__(self, idx):  # the starter's placeholder, raised in the loader's workers
        raise NotImplementedError
    monkeypatch.setattr(CharCorruptionDataset, "__getitem__", __getitem__)
    status, errors = unwritten_run(inputs, tmp_path, capsys, "pretrain")
    assert status == 1
    assert errors == ["run.py: error: part (e): CharCorruptionDataset.__getitem__ raises NotImplementedError: "
                      "it is not written yet"]


def test_score_dev_grades_the_dev_files_with_the_hidden_tests_and_their_thresholds(tmp_path):
    """score_dev is grader.py's hidden tests on the dev files, against the dev labels of DATA_DIR."""
    data = write_corpus(tmp_path / "data")
    places = [line.split("\t")[1] for line in nonblank_lines(data / "birth_dev.tsv")]
    out = tmp_path / "out"
    out.mkdir()
    (out / "vanilla.pretrain.dev.predictions").write_text("".join(p + "\n" for p in places))
    (out / "perceiver.pretrain.dev.predictions").write_text("Nowhere\n" * len(places))
    done = subprocess.run(["bash", str(REPO / "run.sh"), "score_dev"], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, DATA_DIR=str(data), OUT_DIR=str(out)))
    assert done.returncode == 0, done.stderr
    not_here = ("hidden", None)
    assert report(done.stdout) == {"1c-0-hidden": not_here, "1d-0-hidden": not_here, "1d-1-hidden": not_here,
                                   "1f-1-hidden": ("pass", 5.0), "1f-2-hidden": not_here,
                                   "1g-1-hidden": ("fail", 0.0), "1g-2-hidden": not_here}
    assert f"local check: labels {data / 'birth_dev.tsv'}" in done.stdout
    assert "perceiver.pretrain.dev.predictions: 0 of 20 correct (0.0%); needed at least 2.4%" in done.stdout
    assert f"{out / 'vanilla.nopretrain.dev.predictions'} is missing: make it with " \
           "./run.sh vanilla_eval_dev_without_pretrain" in done.stdout
