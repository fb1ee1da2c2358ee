"""
Interrupted and multi-process training (src/runtime/training/checkpoint.py,
batches.py, distributed.py): a run killed at any moment and resumed (twice in one epoch,
or under two processes with dropout) ends with the parameters and records of
an uninterrupted run; two processes (torchrun, gloo) train as one and
evaluate as one; a checkpoint is written whole or not at all, and a
checkpoint of another run is refused. Every run that is killed, and every
run of two processes but run.sh's own, is forked from a server that has
imported torch (tests/forked_runs.py) rather than started as a new
interpreter.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import run
from forked_runs import Forked, finished_run, started_run
from processes import process_tree, running, signal_tree
from runtime_helpers import one_thread
from runtime.training.checkpoint import CHECKPOINT_NAME, save_atomically
from runtime.training.records import read_metrics

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
RUN = "run"


@pytest.fixture(scope="module")
def questions(tmp_path_factory):
    path = tmp_path_factory.mktemp("questions") / "train.tsv"
    path.write_text("".join((DATA / "birth_places_train.tsv").read_text(encoding="utf-8").splitlines(True)[:200]))
    return path


def training_options(epochs=4, every=3, dropout=0, device="cpu"):
    """A small model (no loader workers) finetuned on 200 questions: four epochs of 13 steps are the
    fewest with a kill between epochs (after the second) and more than 10 rows of records (3 an epoch)
    to compare."""
    return ["--tb_expt_name", RUN, "--small", "--max_epochs", str(epochs), "--batch_size", "16", "--dropout",
            str(dropout), "--device", device, "--checkpoint_every", str(every), "--seed", "0"]


def arguments(questions, experiments, params, *extra, **options):
    """run.py's command line (without `python run.py`) of finetuning with training_options(**options)."""
    return ["--function", "finetune", "--variant", "vanilla", "--pretrain_corpus_path", str(DATA / "wiki.txt"),
            "--finetune_corpus_path", str(questions), "--writing_params_path", str(params),
            "--experiments_dir", str(experiments), *training_options(**options), *extra]


def env():
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO / "src"))


def run_to_end(questions, experiments, params, *extra, processes=1, torchrun=False, **options):
    """The run to its end: under torchrun where `torchrun` (returns the finished process, its output
    captured); forked where it has several processes; else in this process, on one thread as env() gives
    the others."""
    argv = arguments(questions, experiments, params, *extra, **options)
    if torchrun:
        done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                               f"--nproc_per_node={processes}", str(REPO / "src" / "run.py"), *argv],
                              env=env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done
    if processes > 1:
        status, output = finished_run(argv, env(), log_of(experiments), processes)
        assert status == 0, output[-2000:]
        return None
    with one_thread():
        assert run.main(argv) == 0
    return None


def log_of(experiments):
    """Where a forked run's output goes: beside its experiments folder."""
    return experiments.with_name(experiments.name + ".log")


def max_difference(path_a, path_b):
    a, b = torch.load(path_a, weights_only=True), torch.load(path_b, weights_only=True)
    assert a.keys() == b.keys()
    return max(float((a[key] - b[key]).abs().max()) for key in a)


def checkpoint_of(experiments):
    path = experiments / RUN / CHECKPOINT_NAME
    return torch.load(path, weights_only=False) if path.is_file() else None


def file_version(path):
    """What changes whenever the file at `path` is replaced (None if there is none)."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def stopped_where(process, experiments, wanted, timeout=120):
    """Freeze the run's processes (SIGSTOP) once its checkpoint satisfies `wanted`; returns that checkpoint.
    A checkpoint is read once a version: it changes only by being replaced."""
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline and process.poll() is None:
        version = file_version(experiments / RUN / CHECKPOINT_NAME)
        try:
            state = checkpoint_of(experiments) if version != seen else None
            seen = version
        except Exception:  # read while being replaced: try again
            state = None
        if state is not None and wanted(state):
            signal_tree(process_tree(process.pid), signal.SIGSTOP)
            state = checkpoint_of(experiments)
            if wanted(state):
                return state
            signal_tree(process_tree(process.pid), signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError("the run ended before its checkpoint was where the test wanted it")


def killed_where(questions, experiments, params, wanted, *extra, **settings):
    """A run (with the options `extra`) SIGKILLed, every process of it, where `wanted` holds; returns
    that checkpoint."""
    processes = settings.pop("processes", 1)
    process = started_run(arguments(questions, experiments, params, *extra, **settings), env(),
                          log_of(experiments), processes)
    try:
        return stopped_where(process, experiments, wanted)
    finally:
        tree = process_tree(process.pid)
        signal_tree(tree, signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + 30
        while any(running(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.01)


def killed_and_resumed(questions, tmp_path, wanted, **settings):
    """A run SIGKILLed where `wanted` holds, then resumed to the end; returns (params, experiments, checkpoint)."""
    experiments, params = tmp_path / "experiments", tmp_path / "resumed.params"
    state = killed_where(questions, experiments, params, wanted, **settings)
    assert not params.exists()
    run_to_end(questions, experiments, params, "--resume", **settings)
    return params, experiments, state


REFERENCE_RUNS = {"one process": dict(processes=1), "two processes with dropout": dict(processes=2, dropout=0.1)}
STAGE = "vanilla_finetune_without_pretrain"  # arguments()' run, as a stage of run.sh


@pytest.fixture(scope="module")
def through_run_sh(questions, tmp_path_factory):
    """arguments()' run in two processes as run.sh runs a stage with NPROC=2, on a data folder of its
    corpus and questions: (the finished process, its params, its experiments folder)."""
    folder = tmp_path_factory.mktemp("run_sh")
    (folder / "data").mkdir()
    (folder / "data" / "wiki.txt").write_bytes((DATA / "wiki.txt").read_bytes())
    (folder / "data" / "birth_places_train.tsv").write_bytes(questions.read_bytes())
    settings = dict(DATA_DIR=str(folder / "data"), OUT_DIR=str(folder), EXPERIMENTS_DIR=str(folder / "experiments"),
                    DEVICE="cpu", SMALL="1", NPROC="2")
    done = subprocess.run(["bash", str(REPO / "run.sh"), STAGE, *training_options()], env=dict(env(), **settings),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done, folder / "vanilla.model.params", folder / "experiments"


@pytest.fixture(scope="module")
def uninterrupted(questions, tmp_path_factory, through_run_sh):
    """The reference runs: REFERENCE_RUNS' names and "two processes" (run.sh's run) -> (params, experiments)."""
    runs = {"two processes": through_run_sh[1:]}
    for name, settings in REFERENCE_RUNS.items():
        folder = tmp_path_factory.mktemp("uninterrupted")
        run_to_end(questions, folder / "experiments", folder / "final.params", **settings)
        runs[name] = (folder / "final.params", folder / "experiments")
    return runs


def test_two_processes_train_as_one(uninterrupted):
    """The global batch split over two processes: the parameters of one process within 1e-5 (measured
    3.1e-6 apart with AVX-512 kernels, 2.9e-6 with ATEN_CPU_CAPABILITY=default), the same tokens at
    every recorded step."""
    (one, one_records), (two, two_records) = uninterrupted["one process"], uninterrupted["two processes"]
    assert max_difference(one, two) <= 1e-5
    one_rows, two_rows = (read_metrics(folder / RUN / "metrics.csv") for folder in (one_records, two_records))
    assert [(r["step"], r["tokens"]) for r in one_rows] == [(r["step"], r["tokens"]) for r in two_rows]
    assert len(one_rows) > 10


def test_two_processes_train_the_rope_model_as_one(questions, tmp_path):
    """The same for the RoPE model over one epoch: DDP averages its gradients (its rope_cache buffers are
    no parameters) and the two processes end with the one process's weights, within 1e-4: the two differ
    in the order of their sums alone, measured 3.4e-5 apart with PyTorch's plain kernels
    (ATEN_CPU_CAPABILITY=default), 1.6e-5 with AVX2 and 1.5e-6 with AVX-512 ones (over two epochs up to
    3.3e-5, below 1e-5 with AVX-512: the second epoch did not widen it). A process that trained alone,
    on half the batch, would stray from the first step."""
    ends = {}
    for processes in (1, 2):
        params = tmp_path / f"{processes}.params"
        run_to_end(questions, tmp_path / f"records{processes}", params, "--variant", "rope", processes=processes,
                   epochs=1)
        ends[processes] = params
    assert any(key.endswith("rope_cache") for key in torch.load(ends[2], weights_only=True))
    assert max_difference(ends[1], ends[2]) <= 1e-4


def test_sharded_evaluation_gives_the_single_process_predictions(uninterrupted, tmp_path, single_thread, capsys):
    """Two processes (forked, as torchrun starts them) against one, in-process on one thread as each of
    those runs, on 101 of the dev questions: an odd number, so the shares differ by one (which is all an
    uneven split can do) and the processes' answers are put back in order."""
    params, _ = uninterrupted["one process"]
    questions = tmp_path / "dev.tsv"
    questions.write_text("".join((DATA / "birth_dev.tsv").read_text(encoding="utf-8").splitlines(True)[:101]))
    outputs = {processes: tmp_path / f"{processes}.predictions" for processes in (1, 2)}
    command_lines = {processes: ["--function", "evaluate", "--variant", "vanilla", "--pretrain_corpus_path",
                                 str(DATA / "wiki.txt"), "--eval_corpus_path", str(questions),
                                 "--reading_params_path", str(params), "--outputs_path", str(outputs[processes]),
                                 "--small", "--device", "cpu"] for processes in (1, 2)}
    assert run.main(command_lines[1]) == 0, capsys.readouterr().err[-2000:]
    status, output = finished_run(command_lines[2], env(), tmp_path / "two.log", processes=2)
    assert status == 0, output[-2000:]
    one = outputs[1].read_text(encoding="utf-8").splitlines()
    assert len(one) == 101 and outputs[2].read_text(encoding="utf-8").splitlines() == one


def assert_records_continue(experiments, reference):
    """
    metrics.csv after a resume, against the uninterrupted run's records `reference`: each step
    once and in order; a step both have, the same epoch, tokens and rate; and every epoch's last
    step, where every run writes a row, there (a checkpoint between epochs is at such a step, so
    its own row is kept). Within an epoch resumed mid-way the other rows fall on other steps:
    the trainer writes one every 10 steps of a pass.
    """
    rows, expected = ({row["step"]: row for row in read_metrics(folder / RUN / "metrics.csv")}
                      for folder in (experiments, reference))
    assert list(rows) == sorted(rows) and len(rows) > 10
    same = ("epoch", "tokens", "lr")
    assert all([rows[step][c] for c in same] == [expected[step][c] for c in same] for step in rows if step in expected)
    epoch_ends = {row["epoch"]: step for step, row in expected.items()}
    assert set(epoch_ends.values()) <= set(rows)


def test_a_run_killed_twice_in_one_epoch_then_between_epochs_resumes_to_the_uninterrupted_run(questions, tmp_path,
                                                                                              uninterrupted):
    """The second kill comes after a resume in the same epoch, so the resume after it starts at the
    position the resumed pass recorded: counted from where it resumed, not from 0. That resume, with
    checkpoints only at the ends of epochs, is killed at the one after the second epoch, and the last
    resume starts the third epoch from it. One run for the three kills: each resume meets the run as
    an uninterrupted one would have left it."""
    experiments, params = tmp_path / "experiments", tmp_path / "resumed.params"
    first = killed_where(questions, experiments, params, lambda s: 0 < s["position"] < 7)
    second = killed_where(questions, experiments, params,
                          lambda s: s["epoch"] == first["epoch"] and s["step"] > first["step"], "--resume")
    assert second["position"] - first["position"] == second["step"] - first["step"] > 0
    between = killed_where(questions, experiments, params, lambda s: s["position"] == 0 and s["epoch"] >= 2,
                           "--resume", every=1000)
    assert between["step"] > second["step"] and not params.exists()
    run_to_end(questions, experiments, params, "--resume", every=1000)
    reference, records = uninterrupted["one process"]
    assert max_difference(params, reference) <= 1e-6
    assert_records_continue(experiments, records)


def test_a_two_process_run_with_dropout_resumes_to_its_uninterrupted_parameters(questions, tmp_path, uninterrupted):
    """Each process draws its own dropout masks, so each must get its own generators back."""
    params, _, state = killed_and_resumed(questions, tmp_path, lambda s: s["step"] >= 20, processes=2, dropout=0.1)
    assert len(state["rng"]) == 2
    assert max_difference(params, uninterrupted["two processes with dropout"][0]) <= 1e-6


def test_ctrl_c_saves_a_checkpoint_that_resumes(questions, tmp_path, uninterrupted):
    experiments, params = tmp_path / "experiments", tmp_path / "resumed.params"
    log = log_of(experiments)
    process = started_run(arguments(questions, experiments, params, every=1000), env(), log)
    deadline = time.monotonic() + 120
    while not (experiments / RUN / "metrics.csv").is_file() or len(read_metrics(experiments / RUN / "metrics.csv")) < 3:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)
    err = log.read_text(encoding="utf-8")
    assert process.returncode == 130, err[-2000:]
    assert "interrupted; the run is saved in a checkpoint" in err and "--resume" in err
    assert checkpoint_of(experiments)["step"] >= 3 and not params.exists()
    run_to_end(questions, experiments, params, "--resume", every=1000)
    assert max_difference(params, uninterrupted["one process"][0]) <= 1e-6


@pytest.mark.parametrize("change, named", [(["--variant", "perceiver"], "its variant is 'vanilla', this run's is "
                                                                      "'perceiver'"),
                                           (["--n_embd", "64"], "its configuration is")])
def test_a_checkpoint_of_another_run_is_refused(questions, uninterrupted, tmp_path, change, named, capsys):
    experiments = tmp_path / "experiments"
    (experiments / RUN).mkdir(parents=True)
    source = uninterrupted["one process"][1] / RUN
    for name in (CHECKPOINT_NAME, "metrics.csv"):
        (experiments / RUN / name).write_bytes((source / name).read_bytes())
    before = {p.name: p.read_bytes() for p in (experiments / RUN).iterdir()}
    argv = arguments(questions, experiments, tmp_path / "other.params", "--resume") + change  # the last one counts
    status = run.main(argv)  # in-process: the run ends where it reads the checkpoint
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("run.py: error")]
    assert status == 1 and len(errors) == 1 and "is of another run" in errors[0] and named in errors[0]
    assert {p.name: p.read_bytes() for p in (experiments / RUN).iterdir()} == before
    assert not (tmp_path / "other.params").exists()


def test_resume_without_a_checkpoint_says_so(questions, tmp_path, capsys):
    assert run.main(arguments(questions, tmp_path / "experiments", tmp_path / "p.params", "--resume")) == 1
    assert "no checkpoint to resume from" in capsys.readouterr().err


class SlowToPickle:
    """An object whose pickling takes `seconds`, so a save can be killed in the middle."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __reduce__(self):
        time.sleep(self.seconds)
        return (SlowToPickle, (0,))


def save_slowly(path):
    """In a forked process: a checkpoint saved to `path` whose pickling takes a minute."""
    save_atomically({"weights": torch.zeros(1000, 1000), "slow": SlowToPickle(60)}, path)


def test_a_kill_during_a_save_leaves_the_previous_checkpoint(tmp_path):
    path = tmp_path / CHECKPOINT_NAME
    save_atomically({"step": 7, "weights": torch.arange(10)}, path)
    process = Forked(save_slowly, str(path))
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(f".{CHECKPOINT_NAME}.*.tmp")):  # the new checkpoint is being written
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.01)
    process.kill()
    process.wait()
    state = torch.load(path, weights_only=False)
    assert state["step"] == 7 and torch.equal(state["weights"], torch.arange(10))


def test_run_sh_runs_a_stage_in_nproc_processes(through_run_sh):
    """NPROC=2 runs the stage under torchrun (its run records say x 2): the two-process reference is
    run.sh's run (test_run_sh.py checks NPROC's and RESUME's options with a stand-in interpreter)."""
    done, params, _ = through_run_sh
    assert "on cpu x 2" in done.stdout and params.is_file()


def test_a_finished_run_resumes_at_its_end(questions, tmp_path, uninterrupted):
    """Its last checkpoint, after the last epoch, leaves nothing to train: the same parameters again."""
    params, records = uninterrupted["one process"]
    experiments = tmp_path / "experiments"
    (experiments / RUN).mkdir(parents=True)
    for name in (CHECKPOINT_NAME, "metrics.csv"):
        (experiments / RUN / name).write_bytes((records / RUN / name).read_bytes())
    run_to_end(questions, experiments, tmp_path / "again.params", "--resume")
    assert max_difference(tmp_path / "again.params", params) == 0
