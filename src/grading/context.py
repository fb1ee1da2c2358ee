"""
What a test function receives (`ctx`), and the ways a test can end.

A test passes by returning (optionally a short string for the report), and
otherwise ends with one of the exceptions below; `check` raises TestFailure.
"""

import os
import time

from .bundle import BundleError

GRADED_ON_SUBMISSION = "graded on submission"


class TestFailure(Exception):
    """The submission's answer is wrong."""


class NotGraded(Exception):
    """The test cannot be graded here (no hidden bundle): graded on submission."""


class SubmissionError(Exception):
    """The submission could not produce an answer: it failed to import, raised, exited or crashed."""


class SubmissionTimeout(SubmissionError):
    """The submission did not answer within the test's time limit."""


def check(condition, message):
    """Fail the test with `message` unless `condition` holds (unlike assert, never optimized away)."""
    if not condition:
        raise TestFailure(message)


class Snapshot:
    """The submission's prediction files, read once before any submission code runs (None: too large)."""

    def __init__(self, submission_dir, suffix=".predictions", max_bytes=16 << 20):
        self.files = {}
        for name in sorted(os.listdir(submission_dir)):
            path = os.path.join(submission_dir, name)
            if name.endswith(suffix) and os.path.isfile(path):
                with open(path, encoding="utf-8", errors="replace", newline="") as f:
                    text = f.read(max_bytes + 1)
                self.files[name] = text if len(text) <= max_bytes else None


class Context:
    """A test's view of the run: probes of the submission, its prediction files, the hidden bundle."""

    def __init__(self, sandbox, submission_dir, snapshot, bundle, scratch, deadline):
        self.sandbox = sandbox
        self.submission_dir = submission_dir
        self.snapshot = snapshot
        self.bundle = bundle
        self.scratch = scratch
        self.deadline = deadline
        self.outputs = []

    def run(self, probe, **kwargs):
        """probe(submission, **kwargs), run in a fresh sandboxed process; returns its plain-data value."""
        return self._run(self.submission_dir, probe, kwargs)

    def run_reference(self, probe, **kwargs):
        """The same probe run against the bundle's reference solution."""
        bundle = self.require_bundle()
        if bundle.reference is None:
            raise BundleError(f"the hidden bundle {bundle.path} has no reference/ package")
        self.deadline += self.sandbox.warm_up()
        outcome = self.sandbox.run(bundle.reference, probe.__name__, kwargs, self.remaining())
        if outcome.status != "ok":
            raise BundleError(f"the reference solution failed this probe: {outcome.reason}")
        return outcome.value

    def _run(self, package_dir, probe, kwargs):
        if not getattr(probe, "is_probe", False):
            raise TypeError(f"{probe.__name__} is not decorated with @probe")
        self.deadline += self.sandbox.warm_up()  # the one-off start of the zygote is not the test's time
        outcome = self.sandbox.run(package_dir, probe.__name__, kwargs, self.remaining())
        if outcome.output:
            self.outputs.append(outcome.output)
        if outcome.status == "timeout":
            raise SubmissionTimeout(outcome.reason)
        if outcome.status != "ok":
            raise SubmissionError(outcome.reason)
        return outcome.value

    def remaining(self):
        """Seconds left before the test's deadline (at least a moment, so a late probe times out cleanly)."""
        return max(0.1, self.deadline - time.monotonic())

    def require_bundle(self):
        """The hidden bundle; without one the test is graded on submission."""
        if self.bundle is None:
            raise NotGraded(GRADED_ON_SUBMISSION)
        return self.bundle

    def predictions(self, filename, stage):
        """The lines of the submission's prediction file `filename`, which `./run.sh stage` makes."""
        if filename not in self.snapshot.files:
            missing = f"{os.path.join(self.submission_dir, filename)} is missing: make it with ./run.sh {stage}"
            if self.bundle is None:
                raise NotGraded(f"{GRADED_ON_SUBMISSION}; {missing}")
            raise TestFailure(missing)
        text = self.snapshot.files[filename]
        if text is None:
            raise TestFailure(f"{filename} is too large to be a prediction file")
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        return [line.rstrip("\r") for line in lines]

    def answers(self, filename):
        """The hidden answers of labelled file `filename`."""
        return self.require_bundle().answers(filename)

    def threshold(self, key):
        """The threshold entry `key`, from the bundle's thresholds.json or the tests' defaults."""
        return self.require_bundle().thresholds[key]
