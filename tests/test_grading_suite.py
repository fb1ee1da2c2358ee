"""
A grading run (grading/suite.py): each test's verdict, its time limit, its
seconds (without the wait for the zygote's start), its scratch folder, the
files folder graded, two at a time, and what an interrupt leaves.
"""

import itertools
import os
import shutil
import time
import types

import pytest

from grading import bundle, suite
from grading.bundle import BundleError
from grading.context import NotGraded, SubmissionError, SubmissionTimeout
from grading.context import TestFailure as Failed
from grading.registry import GradedTest
from grading.runner import Limits

from grading_helpers import write
from runtime_helpers import DISK_FULL, then_raising


def ending(error):
    def function(ctx):
        raise error
    return GradedTest("1e-0-basic", 5.0, "basic", 9.0, "d", function)


def test_judge_names_each_way_a_test_can_end():
    passing = GradedTest("1e-0-basic", 5.0, "basic", 9.0, "d", lambda ctx: None)
    assert suite.judge(passing, None) == ("pass", "")
    noted = GradedTest("1e-0-basic", 5.0, "basic", 9.0, "d", lambda ctx: "a note")
    assert suite.judge(noted, None) == ("pass", "a note")
    assert suite.judge(ending(NotGraded("later")), None) == ("hidden", "later")
    assert suite.judge(ending(Failed("wrong")), None) == ("fail", "wrong")
    assert suite.judge(ending(AssertionError()), None) == ("fail", "a check failed")
    assert suite.judge(ending(SubmissionTimeout("slow")), None) == ("timeout", "slow")
    assert suite.judge(ending(SubmissionError("crash")), None) == ("error", "crash")
    assert suite.judge(ending(BundleError("no labels")), None) == ("error", "hidden bundle: no labels")
    assert suite.judge(ending(KeyError("k")), None) == (
        "error", "the grader could not judge the submission's answer (KeyError: 'k')")


def runner_root(probes):
    return probes.args["work_root"]


class RecordingRunner:
    """Stands in for the ProbeRunner in a suite run: records how it was made and closed."""

    made = []

    def __init__(self, work_root, token, limits, user, hidden_env, preload, fork):
        self.args = dict(work_root=work_root, token=token, limits=limits, user=user,
                         hidden_env=hidden_env, preload=preload, fork=fork)
        self.closed = self.killed = False
        RecordingRunner.made.append(self)

    def close(self):
        self.closed = True

    def kill_all(self):
        self.killed = True


def test_a_suite_run_scores_each_test_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(suite, "ProbeRunner", RecordingRunner)
    monkeypatch.setattr(suite.tempfile, "tempdir", str(tmp_path))
    RecordingRunner.made = []
    write(tmp_path / "hand_in" / "a.predictions", "x\n")
    seen = []

    def looks(ctx):
        seen.append((ctx.scratch, ctx.deadline - time.monotonic(), ctx.snapshot.files, ctx.bundle,
                     os.stat(ctx.scratch).st_mode & 0o777, os.stat(os.path.dirname(ctx.scratch)).st_mode & 0o777))
        return "ok"
    tests = [GradedTest("1e-0-basic", 5.0, "basic", 9.0, "d", looks), ending(Failed("no"))]
    run = suite.Suite(str(tmp_path / "hand_in"), "bundle", Limits(), None, jobs=0, timeout=None,
                      preload=("torch",), fork=False)
    found, seconds = run.run(tests)
    assert [(r.status, r.score, r.message) for r in found] == [("pass", 5.0, "ok"), ("fail", 0.0, "no")]
    assert all(r.test is t for r, t in zip(found, tests)) and 0 <= found[0].seconds <= seconds < 60
    scratch, left, files, given, mode, work_mode = seen[0]
    assert 5 < left <= 9 and files == {"a.predictions": "x\n"} and given == "bundle"  # the test's own 9 s
    assert os.path.basename(scratch).startswith("1e-0-basic-") and mode == work_mode == 0o755
    assert os.path.dirname(scratch) == runner_root(RecordingRunner.made[0])
    probes, = RecordingRunner.made
    assert probes.closed and not probes.killed and len(probes.args["token"]) == 32
    assert probes.args["hidden_env"] == (bundle.HIDDEN_ENV,) and probes.args["preload"] == ("torch",)
    assert probes.args["fork"] is False
    assert os.listdir(tmp_path) == ["hand_in"]  # the private and work folders are gone


def test_the_suites_timeout_overrides_each_tests(tmp_path, monkeypatch):
    monkeypatch.setattr(suite, "ProbeRunner", RecordingRunner)
    left = []
    test = GradedTest("1e-0-basic", 5.0, "basic", 900.0, "d", lambda ctx: left.append(ctx.deadline - time.monotonic()))
    (tmp_path / "hand_in").mkdir()
    suite.Suite(str(tmp_path / "hand_in"), timeout=3).run([test])
    suite.Suite(str(tmp_path / "hand_in")).run([test])
    assert 2 < left[0] <= 3 and 800 < left[1] <= 900
    assert suite.Suite("rel").submission_dir == os.path.abspath("rel") == suite.Suite("rel").files_dir
    assert suite.Suite("rel", files_dir="out").files_dir == os.path.abspath("out")


def test_each_tests_context_is_of_that_test(tmp_path, monkeypatch):
    """Kills a context made without its test (ctx.threshold() reads the test's thresholds)."""
    monkeypatch.setattr(suite, "ProbeRunner", RecordingRunner)
    (tmp_path / "hand_in").mkdir()
    seen = []
    tests = [GradedTest(f"1e-{i}-basic", 1.0, "basic", 9.0, "d", lambda ctx: seen.append(ctx.test)) for i in range(2)]
    suite.Suite(str(tmp_path / "hand_in"), jobs=0).run(tests)
    assert seen == tests


def test_a_suite_hands_each_test_its_runner_snapshot_and_outputs(tmp_path, monkeypatch):
    monkeypatch.setattr(suite, "ProbeRunner", RecordingRunner)
    RecordingRunner.made = []
    write(tmp_path / "hand_in" / "m.params", "weights")
    limits, user, seen = Limits(memory_bytes=5), types.SimpleNamespace(pw_uid=1), {}

    def uses(ctx):
        private = os.path.dirname(ctx.snapshot.params["m.params"])
        seen.update(runner=ctx.runner, package=ctx.submission_dir, private=private,
                    private_mode=os.stat(private).st_mode & 0o777, work=os.path.dirname(ctx.scratch))
        ctx.outputs += ["printed", "more"]
        time.sleep(0.3)
        ctx.deadline += 0.3  # as a wait for the zygote's start would: not the test's time
        shutil.rmtree(private)  # folders a cleaner took away: the run still ends with its results
        shutil.rmtree(seen["work"])
        raise Failed("no")
    found, _ = suite.Suite(str(tmp_path / "hand_in"), None, limits, user).run(
        [GradedTest("1e-0-basic", 5.0, "basic", 9.0, "d", uses)])
    assert (found[0].status, found[0].output) == ("fail", "printed\nmore") and found[0].seconds < 0.5
    probes, = RecordingRunner.made
    assert seen["runner"] is probes and seen["package"] == str(tmp_path / "hand_in") and seen["private_mode"] == 0o700
    assert probes.args["limits"] is limits and probes.args["user"] is user and probes.args["fork"] is True
    assert os.path.basename(seen["private"]).startswith("grading-private-")
    assert os.path.basename(seen["work"]).startswith("grading-") and seen["work"] == probes.args["work_root"]


def test_the_tests_of_one_run_share_what_once_computed_and_the_next_run_computes_again(tmp_path, monkeypatch):
    """Kills a context per test with answers of its own (the span tests' examples made four times) or
    answers kept from one grading run to the next (another hand-in judged on the first's examples)."""
    monkeypatch.setattr(suite, "ProbeRunner", RecordingRunner)
    (tmp_path / "hand_in").mkdir()
    computed = []
    tests = [GradedTest(f"1e-{i}-basic", 1.0, "basic", 9.0, "d",
                        lambda ctx: str(ctx.once("examples", lambda: computed.append(1) or len(computed))))
             for i in range(3)]
    run = suite.Suite(str(tmp_path / "hand_in"), jobs=0)
    assert [r.message for r in run.run(tests)[0]] == ["1", "1", "1"]
    assert [r.message for r in run.run(tests[:1])[0]] == ["2"]


def overlapping(tmp_path, monkeypatch, jobs):
    """How many of three tests of a suite with `jobs` ran at the same time, at most."""
    monkeypatch.setattr(suite, "ProbeRunner", RecordingRunner)
    (tmp_path / "hand_in").mkdir(exist_ok=True)
    running, most = [], []

    def waits(ctx):
        running.append(1)
        most.append(len(running))
        time.sleep(0.2)
        running.pop()
    tests = [GradedTest(f"1e-{i}-basic", 1.0, "basic", 9.0, "d", waits) for i in range(3)]
    run = suite.Suite(str(tmp_path / "hand_in")) if jobs is None else \
        suite.Suite(str(tmp_path / "hand_in"), jobs=jobs)
    run.run(tests)
    return max(most)


def test_a_suite_runs_two_tests_at_once_unless_told(tmp_path, monkeypatch):
    assert overlapping(tmp_path, monkeypatch, None) == overlapping(tmp_path, monkeypatch, 2) == 2
    assert overlapping(tmp_path, monkeypatch, 1) == overlapping(tmp_path, monkeypatch, 0) == 1


def test_an_interrupted_suite_kills_its_probes(tmp_path, monkeypatch):
    monkeypatch.setattr(suite, "ProbeRunner", RecordingRunner)
    RecordingRunner.made = []
    (tmp_path / "hand_in").mkdir()

    def interrupted(ctx):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        suite.Suite(str(tmp_path / "hand_in")).run([GradedTest("1e-0-basic", 1.0, "basic", 9.0, "d",
                                                                        interrupted)])
    assert RecordingRunner.made[0].killed and RecordingRunner.made[0].closed


def test_a_tests_seconds_leave_out_the_wait_for_the_zygote_and_a_timeout_of_zero_is_a_limit(tmp_path, monkeypatch):
    """Kills the zygote's one-off start counted in the seconds of the test that waited for it, and a
    --timeout of 0 taken for no --timeout (the test's own limit)."""
    monkeypatch.setattr(suite, "ProbeRunner", RecordingRunner)
    clock = itertools.count(100.0, 10.0)  # each reading of the suite's clock is 10 s after the one before
    monkeypatch.setattr(suite, "time", types.SimpleNamespace(monotonic=lambda: next(clock)))
    (tmp_path / "hand_in").mkdir()
    deadlines = []

    def waits(ctx):
        deadlines.append(ctx.deadline)
        ctx.deadline += 4.0  # as Context.run adds the zygote's start
    waiting = GradedTest("1e-0-basic", 5.0, "basic", 900.0, "d", waits)
    found, seconds = suite.Suite(str(tmp_path / "hand_in"), timeout=0).run([waiting])
    assert deadlines == [110.0] and found[0].seconds == 10.0 - 4.0 and seconds == 30.0


def test_the_files_graded_come_from_the_files_folder(tmp_path, monkeypatch):
    """Kills the parameters and predictions read from the package rather than the --files folder."""
    monkeypatch.setattr(suite, "ProbeRunner", RecordingRunner)
    write(tmp_path / "package" / "__init__.py", "")
    write(tmp_path / "package" / "a.predictions", "in the package\n")
    write(tmp_path / "out" / "a.predictions", "in the files folder\n")
    seen = []
    test = GradedTest("1e-0-basic", 5.0, "basic", 9.0, "d", lambda ctx: seen.append((ctx.snapshot.files,
                                                                                      ctx.submission_dir)))
    suite.Suite(str(tmp_path / "package"), files_dir=str(tmp_path / "out")).run([test])
    assert seen == [({"a.predictions": "in the files folder\n"}, str(tmp_path / "package"))]


def test_a_snapshot_that_fails_midway_leaves_no_copies_and_the_next_run_works(tmp_path, monkeypatch):
    """Kills the private copies of the parameters left behind (in a folder of the machine's temporary
    space) when copying them fails midway, a disk filled by a large parameters file, say."""
    monkeypatch.setattr(suite, "ProbeRunner", RecordingRunner)
    monkeypatch.setattr(suite.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    for name in ("a.params", "b.params"):
        write(tmp_path / "hand_in" / name, "weights")
    test = GradedTest("1e-0-basic", 5.0, "basic", 9.0, "d", lambda ctx: " ".join(sorted(ctx.snapshot.params)))
    with monkeypatch.context() as patch, pytest.raises(OSError):
        patch.setattr(shutil, "copyfile", then_raising(shutil.copyfile, DISK_FULL))
        suite.Suite(str(tmp_path / "hand_in")).run([test])
    assert os.listdir(tmp_path / "tmp") == []
    found, _ = suite.Suite(str(tmp_path / "hand_in")).run([test])
    assert (found[0].status, found[0].message) == ("pass", "a.params b.params")
    assert os.listdir(tmp_path / "tmp") == []
