"""
Running a selection of graded tests: a Context for each, a few at a time,
every outcome turned into a TestResult with a status and a score.

Statuses: pass, fail (a wrong answer), error (the submission could not
answer, or the bundle lacks what the test needs), timeout, and hidden (not
graded here: no hidden bundle).
"""

import contextlib
import os
import secrets
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .bundle import HIDDEN_ENV, BundleError
from .context import Context, NotGraded, Snapshot, SubmissionError, SubmissionTimeout, TestFailure
from .runner import ProbeRunner
from .trusted import forked_from


@dataclass
class TestResult:
    test: object  # the GradedTest
    status: str
    score: float
    message: str
    output: str  # what the submission printed during the test
    seconds: float


def judge(test, context):
    """Call the test function and classify how it ended: (status, message)."""
    try:
        note = test.function(context)
        return "pass", note or ""
    except NotGraded as reason:
        return "hidden", str(reason)
    except (TestFailure, AssertionError) as reason:
        return "fail", str(reason) or "a check failed"
    except SubmissionTimeout as reason:
        return "timeout", str(reason)
    except SubmissionError as reason:
        return "error", str(reason)
    except BundleError as reason:
        return "error", f"hidden bundle: {reason}"
    except Exception as reason:
        return "error", f"the grader could not judge the submission's answer ({type(reason).__name__}: {reason})"


class Suite:
    """One grading run of a submission package, with an optional hidden bundle."""

    def __init__(self, submission_dir, bundle=None, limits=None, user=None,
                 jobs=2, timeout=None, preload=(), fork=True, files_dir=None):
        self.submission_dir = os.path.abspath(submission_dir)
        self.files_dir = os.path.abspath(files_dir or submission_dir)  # the parameters and predictions
        self.bundle = bundle
        self.limits = limits
        self.user = user
        self.jobs = max(1, jobs)
        self.timeout = timeout  # overrides every test's own limit when set
        self.preload = preload  # modules the zygote imports before forking probes
        self.fork = fork

    def run(self, tests):
        """Run `tests`; returns (results in the same order, wall-clock seconds)."""
        started = time.monotonic()
        with contextlib.ExitStack() as cleanup:  # whatever fails, each folder made is removed, last first
            private = tempfile.mkdtemp(prefix="grading-private-")  # mode 0700: the snapshot's parameters
            cleanup.callback(shutil.rmtree, private, ignore_errors=True)
            snapshot = Snapshot(self.files_dir, private)  # a copy may fail midway (a full disk)
            work_root = tempfile.mkdtemp(prefix="grading-")
            cleanup.callback(shutil.rmtree, work_root, ignore_errors=True)
            os.chmod(work_root, 0o755)
            runner = ProbeRunner(work_root, secrets.token_hex(16), self.limits, self.user,
                                 hidden_env=(HIDDEN_ENV,), preload=self.preload, fork=self.fork)
            cleanup.callback(runner.close)
            cleanup.enter_context(forked_from(runner))
            computed = {}  # what the tests' ctx.once() computed, for the later tests of this run
            with ThreadPoolExecutor(max_workers=self.jobs) as pool:
                futures = [pool.submit(self.run_one, test, runner, snapshot, work_root, computed) for test in tests]
                try:
                    results = [future.result() for future in futures]
                except KeyboardInterrupt:
                    for future in futures:
                        future.cancel()
                    runner.kill_all()
                    raise
        return results, time.monotonic() - started

    def run_one(self, test, runner, snapshot, work_root, computed):
        """Run one test under its time limit."""
        started = time.monotonic()
        scratch = tempfile.mkdtemp(prefix=f"{test.test_id}-", dir=work_root)
        os.chmod(scratch, 0o755)
        limit = self.timeout if self.timeout is not None else test.timeout
        context = Context(test, runner, self.submission_dir, snapshot, self.bundle, scratch, started + limit, computed)
        status, message = judge(test, context)
        waited = context.deadline - (started + limit)  # the zygote's start, shared by all tests
        return TestResult(test, status, test.points if status == "pass" else 0.0, message,
                          "\n".join(context.outputs), time.monotonic() - started - waited)
