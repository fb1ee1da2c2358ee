"""
run.sh's own part (its arguments and settings): the stage named checked
against the stage table, the settings of the environment turned into
src/run.py's options (relative paths against the folder run.sh is called
from, SMALL=1 and RESUME=1 and their spellings, NPROC's processes under
torchrun, a bad NPROC refused in one line) with the user's options last, so
they win; the other stages' commands, and the instructors' stages refused
in a checkout without their tools. The interpreter is stood in for by a
script that records what a stage runs and exits with $STATUS; run.sh's own
checks (the stage list, the installed packages) run on the real one.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUN_PY = str(REPO / "src" / "run.py")
STAND_IN = """#!/bin/bash
# run.sh's checks run; any other call records its arguments in $CALLED, one a line, and exits with $STATUS
if [[ "$1" == -c || "$1 $2" == "-m stages.help" ]]; then
    exec "{python}" "$@"
fi
printf '%s\\n' "$@" > "$CALLED"
exit "${STATUS:-0}"
"""
SETTINGS = ("DATA_DIR", "OUT_DIR", "EXPERIMENTS_DIR", "TEST_FILE", "DEVICE", "SMALL", "NPROC", "RESUME", "STATUS",
            "TEST_WORKERS")


@pytest.fixture
def run_sh(tmp_path):
    """run.sh called from tmp_path/caller with `settings` and the stand-in interpreter: (its exit status,
    stdout, stderr, the arguments of the command the stage ran, or None)."""
    python = tmp_path / "python"
    python.write_text(STAND_IN.replace("{python}", sys.executable))
    python.chmod(0o755)
    (tmp_path / "caller").mkdir()
    called = tmp_path / "called"

    def ran(*args, script=REPO / "run.sh", **settings):
        env = {name: value for name, value in os.environ.items() if name not in SETTINGS}
        env.update(settings, PYTHON=str(python), CALLED=str(called))
        called.unlink(missing_ok=True)
        done = subprocess.run(["bash", str(script), *args], cwd=tmp_path / "caller", env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        given = called.read_text().splitlines() if called.exists() else None
        return done.returncode, done.stdout, done.stderr, given
    return ran


def option(given, name):
    """The value after the last `name` in `given`."""
    return given[len(given) - given[::-1].index(name)]


def test_a_graded_stage_gets_the_settings_as_options_with_the_users_last(run_sh, tmp_path):
    """Kills a setting not passed on, a relative path taken from the repository rather than the caller's
    folder, TEST_FILE's default outside DATA_DIR, and the user's options put before run.sh's (where the
    setting's default would win over them)."""
    status, _, _, given = run_sh("vanilla_eval_test_with_pretrain", "--device", "cpu", DATA_DIR="d",
                                 OUT_DIR="o", EXPERIMENTS_DIR="e")
    caller = tmp_path / "caller"
    assert status == 0 and given[:3] == [RUN_PY, "--stage", "vanilla_eval_test_with_pretrain"]
    assert (option(given, "--data_dir"), option(given, "--test_file"), option(given, "--experiments_dir"),
            option(given, "--out_dir")) == (f"{caller}/d", f"{caller}/d/birth_test_inputs.tsv", f"{caller}/e",
                                            f"{caller}/o")
    assert given[-2:] == ["--device", "cpu"] and option(given[:-2], "--device") == "auto"
    assert "--small" not in given and "--resume" not in given


def test_without_settings_the_defaults_are_the_repositorys_and_out_dir_is_left_to_run_py(run_sh):
    """Kills OUT_DIR passed when unset (run.py puts a smoke run in smoke/, the graded one in src/submission),
    and other defaults."""
    _, _, _, given = run_sh("vanilla_pretrain")
    assert "--out_dir" not in given
    assert (option(given, "--data_dir"), option(given, "--test_file"), option(given, "--experiments_dir"),
            option(given, "--device")) == (f"{REPO}/data", f"{REPO}/data/birth_test_inputs.tsv",
                                           f"{REPO}/experiments", "auto")


@pytest.mark.parametrize("words, options", [
    (["compile"], ["--compile"]),
    (["no-compile"], ["--no-compile"]),
    (["compile", "aot_eager"], ["--compile", "--backend=aot_eager"]),
    (["no-compile", "inductor", "--seed", "3"], ["--no-compile", "--backend=inductor", "--seed", "3"]),
    (["compile", "--seed", "3"], ["--compile", "--seed", "3"]),
    (["--seed", "3", "compile"], ["--seed", "3", "compile"]),  # the words come first, as in the course's run.sh
])
def test_the_courses_compile_words_become_run_pys_options_after_the_settings(run_sh, words, options):
    """Kills the course's `./run.sh <stage> compile [backend]` passed on as words run.py refuses, a backend
    dropped or taken from an option, or the words put before the settings (where they would not win)."""
    status, _, _, given = run_sh("vanilla_pretrain", *words)
    assert status == 0 and given[-len(options):] == options
    assert given[:3] == [RUN_PY, "--stage", "vanilla_pretrain"] and "--data_dir" in given[3:-len(options)]


@pytest.mark.parametrize("value, on", [("1", True), ("true", True), ("yes", True), ("0", False), ("", False)])
def test_small_and_resume_take_each_of_their_spellings(run_sh, value, on):
    """Kills SMALL=true (or yes) ignored, which would train the graded configuration where a smoke run
    was asked for, or RESUME=yes starting the run over."""
    _, _, _, given = run_sh("vanilla_finetune_without_pretrain", SMALL=value, RESUME=value)
    assert ("--small" in given, "--resume" in given) == (on, on)


def test_nproc_runs_the_stage_under_torchrun(run_sh):
    """Kills NPROC ignored, or its count not passed on."""
    _, _, _, given = run_sh("perceiver_pretrain", NPROC="2")
    assert given[:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", RUN_PY]
    assert run_sh("perceiver_pretrain", NPROC="1")[3][0] == RUN_PY


@pytest.mark.parametrize("nproc", ["0", "two"])
def test_a_bad_nproc_is_refused_in_one_line(run_sh, nproc):
    """Kills NPROC=0 (or a word) handed to torchrun."""
    assert run_sh("vanilla_pretrain", NPROC=nproc) == (
        1, "", f"run.sh: NPROC={nproc}: give the number of processes, e.g. NPROC=2\n", None)


@pytest.mark.parametrize("stage", ["vanilla", "vanilla_pretrain_"])
def test_a_stage_is_only_a_whole_name_of_the_table(run_sh, stage):
    """Kills a part of a stage's name taken for the stage (src/run.py would get a --stage it refuses)."""
    status, out, err, given = run_sh(stage)
    assert (status, out, given) == (2, "", None)
    assert err.startswith(f"run.sh: unknown stage '{stage}'; the stages are:\n") and "vanilla_pretrain" in err


def test_without_a_stage_the_usage_goes_to_stderr_and_help_to_stdout(run_sh):
    """Kills a call without a stage that succeeds, or prints the usage where a pipe would take it."""
    status, out, err, _ = run_sh()
    assert (status, out) == (2, "") and err.startswith("usage: ./run.sh <stage> [options]")
    for spelling in ("help", "-h", "--help"):
        assert run_sh(spelling)[:3] == (0, err, "")


def test_plot_without_a_run_says_what_it_needs(run_sh, tmp_path):
    """Kills plot started without a run to draw."""
    status, _, err, _ = run_sh("plot", EXPERIMENTS_DIR="e")
    assert (status, err) == (1, f"run.sh: plot needs a run name: ./run.sh plot <run> (runs are the folders of "
                                f"{tmp_path}/caller/e)\n")


@pytest.mark.parametrize("stage, runs", [
    (["london_baseline"], ["-m", "stages.london_baseline", "--train_path", "{caller}/d/birth_places_train.tsv",
                           "--dev_path", "{caller}/d/birth_dev.tsv"]),
    (["score_dev"], ["{repo}/grader.py", "--labels", "{caller}/d/birth_dev.tsv", "--files", "{caller}/o", "hidden"]),
    (["score_dev", "1f-1-hidden"], ["{repo}/grader.py", "--labels", "{caller}/d/birth_dev.tsv", "--files",
                                    "{caller}/o", "1f-1-hidden"]),
    (["plot", "vanilla_pretrain"], ["-m", "stages.plot", "--experiments_dir", "{caller}/e", "vanilla_pretrain"]),
    (["collect_submission", "--out", "z.zip"], ["-m", "stages.collect_submission", "--out", "z.zip"]),
])
def test_the_other_stages_run_their_commands_on_the_settings(run_sh, tmp_path, stage, runs):
    """Kills a stage reading another folder's files than DATA_DIR's (or the training file for the dev one),
    score_dev scoring other predictions than OUT_DIR's or without its default of the hidden tests, and a
    stage's own options lost."""
    status, _, _, given = run_sh(*stage, DATA_DIR="d", OUT_DIR="o", EXPERIMENTS_DIR="e")
    caller = tmp_path / "caller"
    assert status == 0 and given == [arg.format(caller=caller, repo=REPO) for arg in runs]


def test_score_dev_reads_the_submissions_files_without_out_dir(run_sh):
    """Kills score_dev scoring another folder than the one collect_submission zips."""
    assert run_sh("score_dev")[3][3:5] == ["--files", f"{REPO}/src/submission"]


@pytest.mark.parametrize("status, said", [(0, ""), (1, ""), (5, "run.sh: pytest collected no tests: that is a failure\n")])
def test_the_tests_stage_fails_when_pytest_finds_no_tests(run_sh, status, said):
    """Kills pytest's exit status lost, or a run that collected nothing (a wrong path) told as a pass."""
    assert run_sh("test", "tests/none.py", STATUS=str(status), TEST_WORKERS="3") == (
        status, "", said, ["-m", "pytest", "-q", "-n", "3", "--dist", "loadgroup", "tests/none.py"])


def test_the_tests_stage_runs_one_worker_more_than_the_cores_and_quick_leaves_out_the_slow(run_sh):
    """Kills workers that leave a core idle while the others wait on subprocesses, TEST_WORKERS
    ignored, and --quick passed to pytest (which refuses it) instead of the marker that selects the
    fast tier, wherever it stands among the options."""
    given = run_sh("test")[3]
    assert option(given, "-n") == str(len(os.sched_getaffinity(0)) + 1) and option(given, "--dist") == "loadgroup"
    assert option(run_sh("test", TEST_WORKERS="5")[3], "-n") == "5"
    for args in (("--quick",), ("-x", "--quick", "tests/test_layout.py")):
        given = run_sh("test", *args)[3]
        assert option(given, "-m") == "not slow" and "--quick" not in given
        assert [arg for arg in given if arg in args] == [arg for arg in args if arg != "--quick"]


def test_a_checkout_without_the_instructors_tools_refuses_their_stages(run_sh, tmp_path):
    """Kills an instructors' stage started in the student starter (a ModuleNotFoundError), and the
    starter's help listing stages it cannot run."""
    starter = tmp_path / "starter"
    (starter / "src").mkdir(parents=True)
    shutil.copy(REPO / "run.sh", starter)
    for package in ("assignment", "stages"):
        shutil.copytree(REPO / "src" / package, starter / "src" / package)
    for stage in ("demo", "release", "copies", "mutate"):
        assert run_sh(stage, script=starter / "run.sh") == (
            1, "", f"run.sh: {stage} is an instructors' stage; this checkout has no src/instructors\n", None)
    status, out, _, _ = run_sh("help", script=starter / "run.sh")
    assert status == 0 and "london_baseline" in out and "  demo " not in out and "  release " not in out
