"""
run.sh and src/run.py end to end: every stage in the small configuration
on a corpus written here in the course's formats (tests/test_full_run.py runs
a chain of stages through full_run on one), the predictions against the
one-question-at-a-time loop, the run records and plots, the baselines, and
run.sh's own help and errors. One graded stage, the baseline and an error
go through run.sh; the other stages call run.py's main in this process with
the options run.sh gives it (tests/test_run_sh.py checks those options), which
spares an interpreter and torch's import a stage.

Outputs go to temporary folders (OUT_DIR, EXPERIMENTS_DIR), never to
src/submission/.
"""

import collections
import contextlib
import io
import re
import subprocess
import sys

import pytest
import torch

import run
from assignment import facts
from runtime.decoding import predict_places_plain
from runtime.training import records
from stages import london_baseline, plot
from submission.dataset import CharCorruptionDataset

from run_helpers import (REPO, folder_state, nonblank_lines, run_sh, small_model, stage_env,
                         vocabulary_size, write_corpus)
from runtime_helpers import one_thread


COURSE_DATA = REPO.parent / "shared" / "data"

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
CORRECT_LINE = re.compile(r"^Correct: (\d+\.\d+) out of (\d+\.\d+): ([\d.]+)%$", re.M)


class Pipeline:
    def __init__(self, data, out, experiments, results):
        self.data, self.out, self.experiments, self.results = data, out, experiments, results


THROUGH_RUN_SH = "vanilla_finetune_without_pretrain"  # the graded stage that runs as the user runs it


def stage_in_process(stage, data, out, experiments, *extra, small=True):
    """run.py's main on run.sh's options for `stage` (SMALL=1 unless not `small`), on one thread as
    stage_env gives run.sh: its exit status and what it printed, as a CompletedProcess."""
    argv = ["--stage", stage, "--data_dir", str(data), "--test_file", str(data / "birth_test_inputs.tsv"),
            "--experiments_dir", str(experiments), "--device", "cpu", "--out_dir", str(out),
            *(["--small"] if small else []), *extra]
    stdout, stderr = io.StringIO(), io.StringIO()
    with one_thread(), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = run.main(argv)
    return subprocess.CompletedProcess(argv, status, stdout.getvalue(), stderr.getvalue())


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """Every graded stage and the baseline, in order, with SMALL=1, on a written corpus: THROUGH_RUN_SH
    and the baseline through run.sh, the others in-process."""
    tmp = tmp_path_factory.mktemp("pipeline")
    data = write_corpus(tmp / "data")
    out = tmp / "out"
    out.mkdir()
    env = stage_env(data, out, tmp / "experiments")
    results = {stage: run_sh(stage, "--seed", "0", env=env) if stage == THROUGH_RUN_SH else
               stage_in_process(stage, data, out, tmp / "experiments", "--seed", "0") for stage in STAGES}
    results["london_baseline"] = run_sh("london_baseline", env=env)
    return Pipeline(data, out, tmp / "experiments", results)


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


@pytest.mark.parametrize("stage", DEV_STAGES)
def test_predictions_equal_the_one_question_at_a_time_loop(pipeline, stage, single_thread):
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
def test_london_baseline_on_the_course_data_is_five_percent(capsys):
    """In-process: the pipeline runs the stage through run.sh."""
    assert london_baseline.main(["--train_path", str(COURSE_DATA / "birth_places_train.tsv"),
                                 "--dev_path", str(COURSE_DATA / "birth_dev.tsv")]) == 0
    assert capsys.readouterr().out.split("\n")[0] == 'Always "London": Correct: 25.0 out of 500.0: 5.0%'


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
def test_stage_without_its_params_names_the_stage_that_makes_them(stage, tmp_path, capsys):
    """In-process run.py --stage, as run.sh calls it (test_missing_data_folder_says_to_set_data_dir
    shows that run.sh passes on run.py's one line and exit status)."""
    data = write_corpus(tmp_path / "data")
    (tmp_path / "out").mkdir()
    assert run.main(["--stage", stage, "--data_dir", str(data), "--out_dir", str(tmp_path / "out"),
                     "--experiments_dir", str(tmp_path / "experiments"), "--device", "cpu", "--small"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"./run.sh {STAGES[stage][2]}" in err
    assert list((tmp_path / "out").iterdir()) == []


def test_missing_data_folder_says_to_set_data_dir(tmp_path):
    (tmp_path / "out").mkdir()
    result = run_sh("vanilla_pretrain", env=stage_env(tmp_path / "nowhere", tmp_path / "out", tmp_path / "e"))
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "DATA_DIR" in result.stderr


def test_graded_stages_use_the_graded_model_unless_small(pipeline, tmp_path):
    """Without SMALL=1 (run.sh then gives no --small, as test_run_sh.py shows) the stage builds the
    4-layer, 256-wide model, which small parameters do not fit."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "vanilla.model.params").write_bytes((pipeline.out / "vanilla.model.params").read_bytes())
    (out / "vanilla.nopretrain.dev.predictions").write_text("kept\n")
    before = folder_state(out)
    result = stage_in_process("vanilla_eval_dev_without_pretrain", pipeline.data, out, tmp_path / "experiments",
                              small=False)
    assert result.returncode == 1 and "another size" in result.stderr
    assert folder_state(out) == before
