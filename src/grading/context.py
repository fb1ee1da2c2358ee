"""
What a test function receives (`ctx`), and the ways a test can end.

A test passes by returning (optionally a short string for the report), and
otherwise ends with one of the exceptions below; `check` raises TestFailure.
"""

import os
import shutil
import time

from .bundle import BundleError
from .registry import source_of
from .trusted import TrustedFailure, run_trusted

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


MAX_PREDICTIONS_BYTES = 16 << 20  # a prediction file larger than this is refused
MAX_PARAMS_BYTES = 1 << 30


def prediction_lines(text):
    """The lines of a prediction file's text: each ends at \\n, \\r\\n or a lone \\r, as Python reads the
    labels and questions (universal newlines); a last line end starts no empty line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


class Snapshot:
    """
    The prediction files of the hand-in's `folder`, read once before any
    submission code runs (None: too large), and its parameters files, copied
    as they are then into `private_dir`, which submitted code cannot reach.
    """

    def __init__(self, folder, private_dir, max_bytes=MAX_PREDICTIONS_BYTES, max_params_bytes=MAX_PARAMS_BYTES):
        self.folder, self.files, self.params = folder, {}, {}
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            if name.endswith(".predictions"):
                with open(path, encoding="utf-8", errors="replace", newline="") as f:
                    text = f.read(max_bytes + 1)
                self.files[name] = text if len(text) <= max_bytes else None
            elif name.endswith(".params"):
                self.params[name] = None
                if os.path.getsize(path) <= max_params_bytes:
                    self.params[name] = shutil.copyfile(path, os.path.join(private_dir, name))


class Context:
    """A test's view of the run: probes of the submission and of the reference, its files, the hidden bundle."""

    def __init__(self, test, runner, submission_dir, snapshot, bundle, scratch, deadline, computed=None):
        self.test = test
        self.runner = runner
        self.submission_dir = submission_dir
        self.snapshot = snapshot
        self.bundle = bundle
        self.scratch = scratch
        self.deadline = deadline
        self.outputs = []
        self.computed = {} if computed is None else computed  # once()'s, shared by the tests of one grading run

    def run(self, probe, **kwargs):
        """probe(submission, **kwargs), run in a fresh sandboxed process; returns its plain-data value."""
        if not getattr(probe, "is_probe", False):
            raise TypeError(f"{probe.__name__} is not decorated with @probe")
        self.deadline += self.runner.warm_up()  # the one-off start of the zygote is not the test's time
        outcome = self.runner.run(self.submission_dir, source_of(probe), probe.__name__, kwargs, self.remaining())
        if outcome.output:
            self.outputs.append(outcome.output)
        if outcome.status == "timeout":
            raise SubmissionTimeout(outcome.reason)
        if outcome.status != "ok":
            raise SubmissionError(outcome.reason)
        return outcome.value

    def once(self, key, compute):
        """compute(), or what it returned to an earlier test of this grading run under the same `key`: for
        what a seeded probe answers alike every time, asked by several tests. A compute() that raises is
        not kept, so the next test asks again."""
        if key not in self.computed:
            self.computed[key] = compute()
        return self.computed[key]

    def run_reference(self, probe, **kwargs):
        """
        The same probe run against the bundle's reference solution, in a trusted
        process that never imports submitted code (trusted.py), with the bundle's
        decoder (runtime/decoding/) first on its path.
        """
        bundle = self.require_bundle()
        if bundle.local:
            raise NotGraded(f"{GRADED_ON_SUBMISSION}: it needs the reference solution")
        if bundle.reference is None:
            raise BundleError(f"the hidden bundle {bundle.path} has no reference/ package")
        if not getattr(probe, "is_probe", False):
            raise TypeError(f"{probe.__name__} is not decorated with @probe")
        self.deadline += self.runner.warm_up()  # the zygote, which forks the trusted process too
        try:
            return run_trusted(source_of(probe), probe.__name__, kwargs, bundle.reference, bundle.runtime,
                               self.remaining(), self.runner.limits.memory_bytes)
        except TrustedFailure as failure:
            raise BundleError(f"the reference solution failed {probe.__name__}: {failure}")

    def remaining(self):
        """Seconds left before the test's deadline (at least a moment, so a late probe times out cleanly)."""
        return max(0.1, self.deadline - time.monotonic())

    def require_bundle(self):
        """The hidden bundle; without one the test is graded on submission."""
        if self.bundle is None:
            raise NotGraded(GRADED_ON_SUBMISSION)
        return self.bundle

    def hand_in(self, found, filename, stage, kind):
        """found[filename], one of the snapshot's tables, once the file is known present and not too large."""
        if filename not in found:
            missing = f"{os.path.join(self.snapshot.folder, filename)} is missing: make it with ./run.sh {stage}"
            if self.bundle is None or self.bundle.local:
                raise NotGraded(f"{GRADED_ON_SUBMISSION}; {missing}")
            raise TestFailure(missing)
        if found[filename] is None:
            raise TestFailure(f"{filename} is too large to be {kind}")
        return found[filename]

    def predictions(self, filename, stage):
        """The lines of the submission's prediction file `filename`, which `./run.sh stage` makes."""
        return prediction_lines(self.hand_in(self.snapshot.files, filename, stage, "a prediction file"))

    def params(self, filename, stage):
        """The path of the private copy of the submission's parameters file `filename`, which `./run.sh stage` makes."""
        return self.hand_in(self.snapshot.params, filename, stage, "a parameters file")

    def shared(self, path):
        """A copy of `path` in the test's scratch folder, which the submission's processes may read."""
        copy = shutil.copyfile(path, os.path.join(self.scratch, os.path.basename(path)))
        os.chmod(copy, 0o644)
        return copy

    def answers(self, filename):
        """The hidden answers of labelled file `filename` (a local check without it: graded on submission)."""
        bundle = self.require_bundle()
        if bundle.local and filename not in bundle.labels:
            raise NotGraded(f"{GRADED_ON_SUBMISSION}: it needs the labels of {filename}")
        return bundle.answers(filename)

    def questions(self, filename):
        """The hidden questions of labelled file `filename`, in order."""
        return self.require_bundle().questions(filename)

    def threshold(self):
        """This test's thresholds: its @graded line's, with the bundle's thresholds.json entry for it on top."""
        return dict(self.test.thresholds, **self.require_bundle().thresholds.get(self.test.test_id, {}))
