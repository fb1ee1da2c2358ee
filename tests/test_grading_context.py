"""
A test's context (grading/context.py): probes run through the runner, the
reference through the trusted process, the hand-in's files, the bundle's
answers and the test's thresholds. A prediction file reads as its
predictions whatever its line ends (a hypothesis property, derandomized so
that CI sees the same examples on every run).
"""

import os
import time
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grading import context
from grading.bundle import BundleError, HiddenBundle
from grading.context import GRADED_ON_SUBMISSION, Context, NotGraded, Snapshot, SubmissionError, SubmissionTimeout
from grading.context import TestFailure as Failed
from grading.registry import GradedTest
from grading.runner import Limits, ProbeOutcome

from grading_helpers import STAGE_FILE, scoring_context, write
from runtime_helpers import EDGE, joined, line_ends, path_of


def test_check_fails_with_the_message():
    context.check(True, "never")
    with pytest.raises(Failed, match="^the message$"):
        context.check(0, "the message")


def test_the_snapshot_reads_predictions_as_utf8_whatever_the_locale(tmp_path, ascii_locale):
    (tmp_path / "hand_in").mkdir()
    (tmp_path / "hand_in" / "a.predictions").write_bytes("Orléans\n".encode("utf-8"))
    assert Snapshot(str(tmp_path / "hand_in"), str(tmp_path)).files == {"a.predictions": "Orléans\n"}


def test_the_snapshot_reads_predictions_and_copies_parameters(tmp_path):
    hand_in, private = tmp_path / "hand_in", tmp_path / "private"
    private.mkdir()
    hand_in.mkdir()
    (hand_in / "bad.predictions").write_bytes(b"\xff\n")
    write(hand_in / "big.predictions", "x" * 11)
    write(hand_in / "edge.predictions", "x" * 10)
    write(hand_in / "m.params", "p" * 5)
    write(hand_in / "huge.params", "p" * 6)
    write(hand_in / "notes.txt", "n")
    os.mkdir(hand_in / "dir.predictions")
    os.symlink(hand_in / "m.params", hand_in / "link.params")
    snap = Snapshot(str(hand_in), str(private), max_bytes=10, max_params_bytes=5)
    assert snap.files == {"bad.predictions": "\ufffd\n", "big.predictions": None, "edge.predictions": "x" * 10}
    assert snap.params == {"huge.params": None, "m.params": str(private / "m.params")}
    assert (private / "m.params").read_text() == "p" * 5 and not (private / "huge.params").exists()
    (hand_in / "crlf.predictions").write_bytes(b"a\r\nb\r\n")
    assert Snapshot(str(hand_in), str(private)).files["crlf.predictions"] == "a\r\nb\r\n"


class FakeRunner:
    """The runner's interface, answering from a list of outcomes."""

    def __init__(self, *outcomes, warm=0.0):
        self.outcomes, self.warm, self.calls = list(outcomes), warm, []
        self.limits = Limits(memory_bytes=123)

    def warm_up(self):
        return self.warm

    def run(self, package_dir, module, name, kwargs, timeout):
        self.calls.append((package_dir, module, name, kwargs, timeout))
        return self.outcomes.pop(0)


def a_probe(sub, **kwargs):
    return kwargs


a_probe.is_probe = True


SCORED = GradedTest("1f-1-hidden", 5.0, "hidden", 50.0, "d", None, {"min_correct": 1, "min_accuracy": 0.1})


def make_context(tmp_path, runner=None, bundle=None, files=None, params=None, deadline=None, test=SCORED):
    snapshot = types.SimpleNamespace(folder="/hand_in", files=files or {}, params=params or {})
    return Context(test, runner or FakeRunner(), "/package", snapshot, bundle, str(tmp_path),
                   time.monotonic() + 50 if deadline is None else deadline)


def test_once_computes_a_key_once_for_the_contexts_sharing_its_answers_and_keeps_no_failure(tmp_path):
    """Kills once() computing again for a later test, answering one key with another's value, or keeping a
    compute that raised."""
    calls = []

    def compute(value):
        def computed():
            calls.append(value)
            if value == "raises":
                raise Failed("no answer")
            return value
        return computed
    answers = {}
    first, second = (Context(SCORED, FakeRunner(), "/package", None, None, str(tmp_path), 0.0, answers)
                     for _ in range(2))
    with pytest.raises(Failed):
        first.once("k", compute("raises"))
    assert first.once("k", compute("a")) == "a" and second.once("k", compute("b")) == "a"
    assert second.once("other", compute("c")) == "c" and make_context(tmp_path).once("k", compute("d")) == "d"
    assert calls == ["raises", "a", "c", "d"]


def test_run_gives_the_probes_value_and_keeps_its_output(tmp_path):
    probes = FakeRunner(ProbeOutcome("ok", {"v": 1}, "", "printed", 0.1), ProbeOutcome("ok", 2, "", "", 0.1),
                          warm=30.0)
    ctx = make_context(tmp_path, probes)
    deadline = ctx.deadline
    assert ctx.run(a_probe, x=1) == {"v": 1} and ctx.run(a_probe) == 2
    assert ctx.outputs == ["printed"] and ctx.deadline == deadline + 60
    package, module, name, kwargs, timeout = probes.calls[0]
    assert (package, module, name, kwargs) == ("/package", __file__, "a_probe", {"x": 1}) and 75 < timeout <= 80


def test_run_turns_a_failed_probe_into_an_error_or_timeout(tmp_path):
    probes = FakeRunner(ProbeOutcome("timeout", None, "too slow", "", 1), ProbeOutcome("error", None, "crash", "", 1))
    ctx = make_context(tmp_path, probes)
    with pytest.raises(SubmissionTimeout, match="^too slow$"):
        ctx.run(a_probe)
    with pytest.raises(SubmissionError, match="^crash$") as caught:
        ctx.run(a_probe)
    assert not isinstance(caught.value, SubmissionTimeout)
    with pytest.raises(TypeError, match="^print is not decorated with @probe$"):
        ctx.run(print)


def test_remaining_is_never_below_a_moment(tmp_path):
    assert make_context(tmp_path, deadline=time.monotonic() - 5).remaining() == 0.1
    assert 9 < make_context(tmp_path, deadline=time.monotonic() + 10).remaining() <= 10


def labelled_bundle(tmp_path, reference=None, local=False):
    return HiddenBundle(str(tmp_path), {"dev.tsv": [("Q1", "A1"), ("Q2", "A2")]}, {"1f-1-hidden": {"min_correct": 2}},
                        reference=reference, runtime="/runtime", local=local)


def test_the_reference_runs_trusted_with_the_bundle(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(context, "run_trusted", lambda *args: calls.append(args) or "answer")
    ctx = make_context(tmp_path, bundle=labelled_bundle(tmp_path, reference="/reference"))
    assert ctx.run_reference(a_probe, x=1) == "answer"
    (module, name, kwargs, reference, runtime, timeout, memory), = calls
    assert (module, name, kwargs, reference, runtime, memory) == (__file__, "a_probe", {"x": 1},
                                                                  "/reference", "/runtime", 123)
    assert 45 < timeout <= 50
    with pytest.raises(TypeError, match="print is not decorated"):
        ctx.run_reference(print)

    def fails(*args):
        raise context.TrustedFailure("it broke")
    monkeypatch.setattr(context, "run_trusted", fails)
    with pytest.raises(BundleError, match="^the reference solution failed a_probe: it broke$"):
        ctx.run_reference(a_probe)
    without = make_context(tmp_path, bundle=labelled_bundle(tmp_path))
    with pytest.raises(BundleError, match=rf"^the hidden bundle {tmp_path} has no reference/ package$"):
        without.run_reference(a_probe)
    with pytest.raises(NotGraded, match=f"^{GRADED_ON_SUBMISSION}$"):
        make_context(tmp_path).run_reference(a_probe)
    local = make_context(tmp_path, bundle=labelled_bundle(tmp_path, reference="/reference", local=True))
    with pytest.raises(NotGraded, match=f"^{GRADED_ON_SUBMISSION}: it needs the reference solution$"):
        local.run_reference(a_probe)


def test_prediction_lines_lose_their_line_ends(tmp_path):
    ctx = make_context(tmp_path, bundle=labelled_bundle(tmp_path),
                       files={"a": "London\r\n\nKyoto\r\n", "b": "x\ny", "gap": "x\n\ny",
                              "two": "x\ny\n", "essex": "ESSEX\r\nXX\r\n"})
    assert ctx.predictions("a", "stage") == ["London", "", "Kyoto"]
    assert ctx.predictions("b", "stage") == ["x", "y"]
    assert ctx.predictions("gap", "stage") == ["x", "", "y"] and ctx.predictions("two", "stage") == ["x", "y"]
    assert ctx.predictions("essex", "stage") == ["ESSEX", "XX"]


def test_parameters_come_from_the_private_copy(tmp_path):
    ctx = make_context(tmp_path, bundle=labelled_bundle(tmp_path), params={"m.params": "/private/m.params"})
    assert ctx.params("m.params", "s") == "/private/m.params"


@pytest.mark.parametrize("method, kind, what", [("predictions", "files", "a prediction file"),
                                                ("params", "params", "a parameters file")])
def test_a_hand_in_file_too_large_or_missing_fails_with_the_stage_that_makes_it(tmp_path, method, kind, what):
    ctx = make_context(tmp_path, bundle=labelled_bundle(tmp_path), **{kind: {"big": None}})
    with pytest.raises(Failed, match=f"^big is too large to be {what}$"):
        getattr(ctx, method)("big", "s")
    with pytest.raises(Failed, match="^/hand_in/c is missing: make it with ./run.sh the_stage$"):
        getattr(ctx, method)("c", "the_stage")
    for bundle_given in (None, labelled_bundle(tmp_path, local=True)):
        with pytest.raises(NotGraded, match=f"^{GRADED_ON_SUBMISSION}; /hand_in/c is missing: make it with "
                                            "./run.sh s$"):
            getattr(make_context(tmp_path, bundle=bundle_given), method)("c", "s")


def test_shared_copies_readable_into_the_scratch(tmp_path):
    """Kills a copy left with the mode a private umask gives it: the submission's user must read it."""
    private = tmp_path / "private"
    path = write(private / "m.params", "weights")
    os.chmod(path, 0o600)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ctx = make_context(scratch)
    old = os.umask(0o077)
    try:
        copy = ctx.shared(str(path))
    finally:
        os.umask(old)
    assert copy == str(scratch / "m.params") and open(copy).read() == "weights"
    assert os.stat(copy).st_mode & 0o777 == 0o644


def test_the_bundle_answers_questions_and_thresholds(tmp_path):
    ctx = make_context(tmp_path, bundle=labelled_bundle(tmp_path))
    assert ctx.answers("dev.tsv") == ["A1", "A2"] and ctx.questions("dev.tsv") == ["Q1", "Q2"]
    assert ctx.threshold() == {"min_correct": 2, "min_accuracy": 0.1}  # the bundle's entry over the test's own
    other = GradedTest("1g-1-hidden", 5.0, "hidden", 9.0, "d", None, {"min_accuracy": 0.3})
    assert make_context(tmp_path, bundle=labelled_bundle(tmp_path), test=other).threshold() == {"min_accuracy": 0.3}
    assert ctx.require_bundle() is ctx.bundle
    for ask in (lambda c: c.answers("dev.tsv"), lambda c: c.questions("dev.tsv"), lambda c: c.threshold()):
        with pytest.raises(NotGraded):
            ask(make_context(tmp_path))
    with pytest.raises(BundleError, match="has no test.tsv"):
        ctx.answers("test.tsv")
    local = make_context(tmp_path, bundle=labelled_bundle(tmp_path, local=True))
    assert local.answers("dev.tsv") == ["A1", "A2"]
    with pytest.raises(NotGraded, match=f"^{GRADED_ON_SUBMISSION}: it needs the labels of test.tsv$"):
        local.answers("test.tsv")


# ---- prediction files at their edges: every line ending -----------------------------------------

predictions_lists = st.lists(st.text(" \tLondoné\x0c\x85\u2028", max_size=6), max_size=6)


@EDGE
@given(predicted=predictions_lists, data=st.data())
def test_a_prediction_file_reads_as_its_predictions_whatever_its_line_ends(tmp_path_factory, predicted, data):
    """Kills a lone \\r not ending a prediction, a \\r left on one, a blank line (an empty prediction)
    dropped, a missing last line end losing the last prediction, and a split at a Unicode line separator
    (\\x0c, \\x85, \\u2028: characters a prediction may hold)."""
    ends, last = data.draw(line_ends(len(predicted)))
    last = last or not predicted or predicted[-1] == ""  # without its end an empty last line is no line
    folder = tmp_path_factory.mktemp("hand_in")
    path_of(folder, STAGE_FILE, joined(predicted, ends, last))
    snapshot = Snapshot(str(folder), str(tmp_path_factory.mktemp("private")))
    assert scoring_context(snapshot, []).predictions(STAGE_FILE, "stage") == predicted
