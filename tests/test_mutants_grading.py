"""
Tests that kill mutants of the grading machinery (src/grading/) that the rest
of the suite lets live, because it runs grader.py in other processes: the
hidden bundle's reading, the results file and the report, the registry, a
test's context, the suite's verdicts, the command line, the runner's side
of a probe (the result channel and its run token, the time limit, the output
cap, the zygote, ending and sweeping) and the trusted process of the
reference. Everything is called in the test's own process; the probes it
starts run small tests files made here.
"""

import io
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import types
from pathlib import Path

import pytest

from grading import bundle, cli, context, registry, report, results, runner, suite, trusted
from grading.bundle import BundleError, HiddenBundle, read_labels
from grading.context import GRADED_ON_SUBMISSION, Context, NotGraded, Snapshot, SubmissionError, SubmissionTimeout
from grading.context import TestFailure as Failed
from grading.registry import GradedTest
from grading.runner import CappedBuffer, Limits, ProbeOutcome, Sandbox
from grading.suite import TestResult as Result


def test_hidden_labels_lose_the_whitespace_around_each_answer(tmp_path):
    path = tmp_path / "birth_dev.tsv"
    path.write_bytes(b"Where was Ada born?\t London \r\n\nWhere was Kofi born?\tKumasi  \n  \n"
                     b"Where was Frida born?\tCoyoacan")
    assert [answer for _, answer in read_labels(str(path))] == ["London", "Kumasi", "Coyoacan"]


# ---- the hidden bundle -------------------------------------------------------------------------

def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_labels_keep_the_question_and_name_a_line_without_a_tab(tmp_path):
    path = write(tmp_path / "dev.tsv", "Where was Ada born? \tLondon\n\nA\tB\tC\n")
    with pytest.raises(BundleError, match=r"dev.tsv, line 3: expected 'question<TAB>answer' with a non-empty answer$"):
        read_labels(str(path))
    write(path, "Where was Ada born? \tLondon\nWhere is é?\tÉcole\n")
    assert read_labels(str(path)) == [("Where was Ada born? ", "London"), ("Where is é?", "École")]


def test_a_label_without_an_answer_or_with_a_third_column_is_a_bundle_error(tmp_path):
    path = write(tmp_path / "test.tsv", "Where was Ada born?\tLondon\nWhere was Kofi born?\t \n")
    with pytest.raises(BundleError, match=r"test.tsv, line 2: .* non-empty answer$"):
        read_labels(str(path))
    write(path, "Where was Ada born?\tLondon\t\n")
    with pytest.raises(BundleError, match=r"test.tsv, line 1: "):
        read_labels(str(path))


def test_labels_are_utf8_whatever_the_locale(tmp_path, ascii_locale):
    path = tmp_path / "dev.tsv"
    path.write_bytes("Where was Émile born?\tOrléans\n".encode("utf-8"))
    assert read_labels(str(path)) == [("Where was Émile born?", "Orléans")]


def test_labels_keep_every_character_of_an_answer(tmp_path):
    path = write(tmp_path / "dev.tsv", "Where was X born?\tESSEX\nWhere was Y born?\tXX\r\n")
    assert read_labels(str(path)) == [("Where was X born?", "ESSEX"), ("Where was Y born?", "XX")]


def test_json_is_read_as_utf8_whatever_the_locale(tmp_path, ascii_locale):
    path = tmp_path / "vocabulary.json"
    path.write_bytes('"aé□"'.encode("utf-8"))
    assert bundle.read_json(str(path)) == "aé□"


def test_read_json_names_a_file_that_is_not_json(tmp_path):
    assert bundle.read_json(str(write(tmp_path / "a.json", '{"é": 1}'))) == {"é": 1}
    with pytest.raises(BundleError, match=r"a.json is not valid JSON: Expecting"):
        bundle.read_json(str(write(tmp_path / "a.json", "{")))


DEFAULTS = {"dev": {"min_accuracy": 0.1}, "test": {"min_correct": 1}}


def test_thresholds_replace_the_defaults_key_by_key(tmp_path):
    path = tmp_path / "thresholds.json"
    assert bundle.read_thresholds(str(path), DEFAULTS) == DEFAULTS
    write(path, '{"dev": {"min_accuracy": 0.5, "min_agreement": 1}}')
    found = bundle.read_thresholds(str(path), DEFAULTS)
    assert found == {"dev": {"min_accuracy": 0.5, "min_agreement": 1}, "test": {"min_correct": 1}}
    found["test"]["min_correct"] = 9
    assert DEFAULTS["test"] == {"min_correct": 1}


@pytest.mark.parametrize("text, told", [
    ('[1]', "must hold an object of threshold entries"),
    ('{"other": {"min_accuracy": 1}}', "unknown threshold 'other'; known: dev, test"),
    ('{"dev": {}}', "'dev' must map some of"),
    ('{"dev": [1]}', "'dev' must map some of"),
    ('{"dev": {"min_accuracy": 1, "max": 2}}', "'dev' must map some of"),
    ('{"dev": {"min_accuracy": "1"}}', "'dev' must map some of"),
    ('{"dev": {"min_accuracy": true}}', "'dev' must map some of"),
    ('{"dev": {"min_correct": 1, "min_accuracy": null}}', "'dev' must map some of"),
])
def test_a_malformed_threshold_is_refused(tmp_path, text, told):
    path = write(tmp_path / "thresholds.json", text)
    with pytest.raises(BundleError) as caught:
        bundle.read_thresholds(str(path), DEFAULTS)
    assert str(caught.value).startswith(f"{path}") and told in str(caught.value)


MODEL = {"n_layer": 1, "n_head": 2, "n_embd": 8, "block_size": 16, "bottleneck_dim": 4}


def test_settings_give_the_mode_and_the_model(tmp_path):
    path = tmp_path / "grading.json"
    assert bundle.read_settings(str(path)) == ("regenerate", None)
    write(path, json.dumps({"predictions": "files"}))
    assert bundle.read_settings(str(path)) == ("files", None)
    write(path, json.dumps({"model": MODEL}))
    assert bundle.read_settings(str(path)) == ("regenerate", MODEL)


@pytest.mark.parametrize("settings, told", [
    ([], "must be an object with 'predictions' and/or 'model'"),
    ({"predictions": "files", "extra": 1}, "must be an object with 'predictions' and/or 'model'"),
    ({"predictions": "all"}, "unknown predictions setting 'all'; use 'regenerate' or 'files'"),
    ({"model": [1]}, "'model' must give each of n_layer, n_head, n_embd, block_size, bottleneck_dim"),
    ({"model": dict(MODEL, extra=1)}, "'model' must give each of"),
    ({"model": dict(MODEL, n_layer=0)}, "as a positive integer"),
    ({"model": dict(MODEL, n_layer=True)}, "as a positive integer"),
    ({"model": dict(MODEL, n_layer=1.0)}, "as a positive integer"),
])
def test_malformed_settings_are_refused(tmp_path, settings, told):
    path = write(tmp_path / "grading.json", json.dumps(settings))
    with pytest.raises(BundleError) as caught:
        bundle.read_settings(str(path))
    assert str(caught.value).startswith(str(path)) and told in str(caught.value)


def test_the_vocabulary_is_a_string_of_distinct_characters(tmp_path):
    path = tmp_path / "vocabulary.json"
    assert bundle.read_vocabulary(str(path)) is None
    write(path, json.dumps("ab□"))
    assert bundle.read_vocabulary(str(path)) == "ab□"
    for wrong in (["a", "b", "c"], "aba", "ab"):
        write(path, json.dumps(wrong))
        with pytest.raises(BundleError, match="must hold one JSON string: the vocabulary's distinct characters"):
            bundle.read_vocabulary(str(path))


def test_a_package_folder_needs_its_init(tmp_path):
    assert bundle.package_folder(str(tmp_path / "none"), "") is None
    write(tmp_path / "runtime" / "stages" / "__init__.py", "")
    assert bundle.package_folder(str(tmp_path / "runtime"), "stages") == str(tmp_path / "runtime")
    with pytest.raises(BundleError, match=r"runtime is not a package: it has no other/__init__.py"):
        bundle.package_folder(str(tmp_path / "runtime"), "other")
    write(tmp_path / "runtime" / "other" / "__init__.py", "")
    os.remove(tmp_path / "runtime" / "other" / "__init__.py")
    os.mkdir(tmp_path / "runtime" / "other" / "__init__.py")
    with pytest.raises(BundleError):
        bundle.package_folder(str(tmp_path / "runtime"), "other")


def test_a_bundle_is_read_whole(tmp_path, monkeypatch):
    root = tmp_path / "bundle"
    write(root / "birth_dev.tsv", "Q1\tA1\n")
    write(root / "birth_test.tsv", "Q2\tA2\nQ3\tA3\n")
    write(root / "notes.txt", "not labels\n")
    write(root / "thresholds.json", '{"dev": {"min_accuracy": 0.5}}')
    write(root / "grading.json", json.dumps({"predictions": "files", "model": MODEL}))
    write(root / "vocabulary.json", json.dumps("abc"))
    write(root / "reference" / "__init__.py", "")
    write(root / "runtime" / "stages" / "__init__.py", "")
    monkeypatch.chdir(tmp_path)
    found = bundle.load_bundle("bundle", DEFAULTS)
    labels = {"birth_dev.tsv": [("Q1", "A1")], "birth_test.tsv": [("Q2", "A2"), ("Q3", "A3")]}
    assert found == HiddenBundle(str(root), labels, {"dev": {"min_accuracy": 0.5}, "test": {"min_correct": 1}},
                                 reference=str(root / "reference"),
                                 predictions="files", model=MODEL, vocabulary="abc", runtime=str(root / "runtime"))
    assert found.answers("birth_test.tsv") == ["A2", "A3"] and found.questions("birth_test.tsv") == ["Q2", "Q3"]
    with pytest.raises(BundleError, match=rf"the hidden bundle {root} has no birth_train.tsv"):
        found.answers("birth_train.tsv")
    bare = tmp_path / "bare"
    bare.mkdir()
    assert bundle.load_bundle(str(bare), DEFAULTS) == HiddenBundle(str(bare), {}, DEFAULTS, None)
    with pytest.raises(BundleError, match=r"hidden bundle .*birth_dev.tsv is not a directory"):
        bundle.load_bundle(str(root / "birth_dev.tsv"), DEFAULTS)
    write(root / "reference" / "__init__.py", "").unlink()
    with pytest.raises(BundleError, match=r"reference is not a package"):
        bundle.load_bundle(str(root), DEFAULTS)


# ---- the registry ------------------------------------------------------------------------------

@pytest.fixture
def registered(monkeypatch):
    """An empty registry for the test."""
    monkeypatch.setattr(registry, "TESTS", {})
    return registry.TESTS


def test_graded_registers_a_test_with_its_description(registered):
    @registry.graded("2b-1-hidden", points=3, visibility="hidden", timeout=7)
    def judged(ctx):
        """  a first line  \n        and more"""
    test = registered["2b-1-hidden"]
    assert test == GradedTest("2b-1-hidden", 3.0, "hidden", 7.0, "a first line", judged)
    assert type(test.points) is float and type(test.timeout) is float and test.part == "2b"
    assert registry.graded("2b-1-hidden", 3, "hidden", 7)(judged) is judged  # the same file may register it again


@pytest.mark.parametrize("test_id, visibility, told", [
    ("2b-1", "basic", "should look like '1e-0-basic'"),
    ("b-1-basic", "basic", "should look like"),
    ("2b-1-basic ", "basic", "should look like"),
    (" 2b-1-basic", "basic", "should look like"),
    ("2b-1-basic", "hidden", "visibility must be one of ('basic', 'hidden') and end its id"),
    ("2b-1-public", "public", "should look like"),
])
def test_a_badly_named_test_is_refused(registered, test_id, visibility, told):
    with pytest.raises(ValueError) as caught:
        registry.graded(test_id, 1, visibility, 1)
    assert told in str(caught.value)


def test_a_test_needs_a_docstring_and_one_file(registered):
    with pytest.raises(ValueError, match=r"^test 2b-1-basic needs a docstring: its first line is the description$"):
        registry.graded("2b-1-basic", 1, "basic", 1)(lambda ctx: None)
    namespace = {}
    exec(compile('def judged(ctx):\n    """other"""\n', "other_tests.py", "exec"), namespace)

    def judged(ctx):
        """mine"""
    registry.graded("2b-1-basic", 1, "basic", 1)(judged)
    with pytest.raises(ValueError, match=r"^test id 2b-1-basic is registered twice$"):
        registry.graded("2b-1-basic", 1, "basic", 1)(namespace["judged"])
    registry.graded("2b-2-basic", 1, "basic", 1)(namespace["judged"])
    assert list(registered) == ["2b-1-basic", "2b-2-basic"]


def test_select_by_id_part_or_visibility(registered):
    def judged(ctx):
        """a test"""
    for test_id in ("1c-0-hidden", "1c-1-basic", "1e-0-basic", "1e-1-basic", "1f-0-hidden"):
        registry.graded(test_id, 1, test_id.rsplit("-", 1)[1], 1)(judged)
    ids = lambda selectors: [t.test_id for t in registry.select(selectors)]  # noqa: E731
    assert ids([]) == list(registered)
    assert ids(["1e"]) == ["1e-0-basic", "1e-1-basic"]
    assert ids(["1f-0-hidden", "1c-1-basic"]) == ["1c-1-basic", "1f-0-hidden"]
    assert ids(["hidden"]) == ["1c-0-hidden", "1f-0-hidden"]
    assert ids(["basic", "1c"]) == ["1c-0-hidden", "1c-1-basic", "1e-0-basic", "1e-1-basic"]
    with pytest.raises(KeyError) as caught:
        registry.select(["1e", "1z", "1e-0", "public"])
    assert caught.value.args[0] == ["1z", "1e-0", "public"]


def test_probe_marks_the_function_itself():
    def observe(sub):
        return 1
    assert registry.probe(observe) is observe and observe.is_probe is True


# ---- results.json and the report ---------------------------------------------------------------

def result(test_id="1e-0-basic", status="pass", score=None, message="", output="", seconds=1.25, points=5,
           description="span corruption: truncation length"):
    visibility = test_id.rsplit("-", 1)[1]
    test = GradedTest(test_id, float(points), visibility, 60.0, description, None)
    return Result(test, status, float(points if score is None and status == "pass" else score or 0), message,
                  output, seconds)


def test_a_test_output_shows_the_tail_of_what_failing_code_printed():
    assert results.test_output(result()) == "pass"
    assert results.test_output(result(message="fine", output="noise")) == "pass: fine"
    assert results.test_output(result(status="fail", message="wrong", output=" \n")) == "fail: wrong"
    long = "x" * 10 + "y" * 2000
    assert results.test_output(result(status="error", output=long)) == \
        "error\n\nYour code printed (last part):\n" + "y" * 2000


def test_gradescope_results_list_every_test(tmp_path):
    runs = [result(), result("1f-1-hidden", "fail", message="no", points=2.5, description="vanilla")]
    document = results.write_results(str(tmp_path / "out" / "results.json"), runs, 12.345)
    assert document == {"score": 5.0, "execution_time": 12.35, "tests": [
        {"name": "span corruption: truncation length", "number": "1e-0-basic", "score": 5.0, "max_score": 5.0,
         "output": "pass", "visibility": "visible"},
        {"name": "vanilla", "number": "1f-1-hidden", "score": 0.0, "max_score": 2.5, "output": "fail: no",
         "visibility": "after_due_date"}]}
    text = (tmp_path / "out" / "results.json").read_text(encoding="utf-8")
    assert json.loads(text) == document and text.endswith("}\n") and text.startswith('{\n  "score"')
    assert os.listdir(tmp_path / "out") == ["results.json"]
    assert type(results.gradescope_results([], 3)["score"]) is float


def test_results_are_replaced_whole(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    path.write_text("old")
    monkeypatch.setattr(json, "dump", lambda *args, **kwargs: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        results.write_results(str(path), [result()], 1)
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["results.json"]


def test_report_lines_align_and_cut_long_descriptions():
    assert report.points(2.0) == "2" and report.points(2.5) == "2.5"
    line = report.test_line(result(seconds=1.25))
    assert line == f"{'1e-0-basic':<12} {'span corruption: truncation length':<52}    5/5  pass (1.2 s)"
    hidden = report.test_line(result("1f-1-hidden", "hidden", description="d" * 53, points=8))
    assert hidden == f"{'1f-1-hidden':<12} {'d' * 49 + '...'} {'-/8':>6}  hidden"
    assert report.test_line(result(description="d" * 52)).split()[1] == "d" * 52


def test_details_indent_the_reason_and_when_verbose_the_output():
    failed = result(status="fail", message="wrong\nsecond", output="printed\nlines\n")
    assert report.detail(failed, False) == "1e-0-basic (fail):\n    wrong\n    second"
    assert report.detail(failed, True) == ("1e-0-basic (fail):\n    wrong\n    second\n    the submission printed:\n"
                                           "      | printed\n      | lines")
    assert report.detail(result(status="fail", message="m", output=" \n"), True) == "1e-0-basic (fail):\n    m"


def test_totals_split_basic_and_hidden_points():
    runs = [result(), result("1e-1-basic", "fail", message="no", points=2.5),
            result("1f-1-hidden", "hidden", message=GRADED_ON_SUBMISSION, points=8)]
    assert report.totals(runs) == ["basic: 5/7.5 points", "hidden: 8 points graded on submission",
                                   "total: 5/15.5 points"]
    mixed = runs + [result("1f-2-hidden", "pass", points=3)]
    assert report.totals(mixed)[1] == "hidden: 3/3 points (8 more graded on submission)"
    assert report.totals([result("1f-2-hidden", "pass", points=3)]) == ["hidden: 3/3 points", "total: 3/3 points"]


def test_the_report_details_only_troubled_tests():
    runs = [result(message="a note"), result("1e-1-basic", "fail", message="wrong"),
            result("1f-1-hidden", "hidden", message=GRADED_ON_SUBMISSION), result("1f-2-hidden", "error", message="")]
    text = report.render(runs, 3.21)
    lines = text.split("\n")
    assert lines[:4] == [report.test_line(r) for r in runs]
    assert lines[4:8] == ["", "Details:", "1e-1-basic (fail):", "    wrong"]
    assert lines[8] == "" and lines[-1] == "(3.2 s)" and lines[-2].startswith("total: ")
    assert "Details:" not in report.render(runs[:1] + runs[2:], 1)
    printing = [result(status="fail", message="m", output="o")]
    assert "the submission printed" in report.render(printing, 1, verbose=True)
    assert "the submission printed" not in report.render(printing, 1)


# ---- a test's context --------------------------------------------------------------------------

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


class FakeSandbox:
    """The runner's interface, answering from a list of outcomes."""

    def __init__(self, *outcomes, warm=0.0):
        self.outcomes, self.warm, self.calls = list(outcomes), warm, []
        self.tests_file, self.limits = "/grader.py", Limits(memory_bytes=123)

    def warm_up(self):
        return self.warm

    def run(self, package_dir, name, kwargs, timeout):
        self.calls.append((package_dir, name, kwargs, timeout))
        return self.outcomes.pop(0)


def a_probe(sub, **kwargs):
    return kwargs


a_probe.is_probe = True


def make_context(tmp_path, sandbox=None, bundle=None, files=None, params=None, deadline=None):
    snapshot = types.SimpleNamespace(files=files or {}, params=params or {})
    return Context(sandbox or FakeSandbox(), "/hand_in", snapshot, bundle, str(tmp_path),
                   time.monotonic() + 50 if deadline is None else deadline)


def test_run_gives_the_probes_value_and_keeps_its_output(tmp_path):
    sandbox = FakeSandbox(ProbeOutcome("ok", {"v": 1}, "", "printed", 0.1), ProbeOutcome("ok", 2, "", "", 0.1),
                          warm=30.0)
    ctx = make_context(tmp_path, sandbox)
    deadline = ctx.deadline
    assert ctx.run(a_probe, x=1) == {"v": 1} and ctx.run(a_probe) == 2
    assert ctx.outputs == ["printed"] and ctx.deadline == deadline + 60
    package, name, kwargs, timeout = sandbox.calls[0]
    assert (package, name, kwargs) == ("/hand_in", "a_probe", {"x": 1}) and 75 < timeout <= 80


def test_run_turns_a_failed_probe_into_an_error_or_timeout(tmp_path):
    sandbox = FakeSandbox(ProbeOutcome("timeout", None, "too slow", "", 1), ProbeOutcome("error", None, "crash", "", 1))
    ctx = make_context(tmp_path, sandbox)
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


def labelled_bundle(tmp_path, reference=None):
    return HiddenBundle(str(tmp_path), {"dev.tsv": [("Q1", "A1"), ("Q2", "A2")]}, {"dev": {"min_correct": 1}},
                        reference=reference, runtime="/runtime")


def test_the_reference_runs_trusted_with_the_bundle(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(context, "run_trusted", lambda *args: calls.append(args) or "answer")
    ctx = make_context(tmp_path, bundle=labelled_bundle(tmp_path, reference="/reference"))
    assert ctx.run_reference(a_probe, x=1) == "answer"
    (tests_file, name, kwargs, reference, runtime, timeout, memory), = calls
    assert (tests_file, name, kwargs, reference, runtime, memory) == ("/grader.py", "a_probe", {"x": 1},
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
    with pytest.raises(NotGraded, match=f"^{GRADED_ON_SUBMISSION}; /hand_in/c is missing: make it with ./run.sh s$"):
        getattr(make_context(tmp_path), method)("c", "s")


def test_shared_copies_readable_into_the_scratch(tmp_path):
    private = tmp_path / "private"
    os.umask(old := os.umask(0o077))
    path = write(private / "m.params", "weights")
    os.chmod(path, 0o600)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ctx = make_context(scratch)
    copy = ctx.shared(str(path))
    assert copy == str(scratch / "m.params") and open(copy).read() == "weights"
    assert os.stat(copy).st_mode & 0o777 == 0o644 and old is not None


def test_the_bundle_answers_questions_and_thresholds(tmp_path):
    ctx = make_context(tmp_path, bundle=labelled_bundle(tmp_path))
    assert ctx.answers("dev.tsv") == ["A1", "A2"] and ctx.questions("dev.tsv") == ["Q1", "Q2"]
    assert ctx.threshold("dev") == {"min_correct": 1}
    assert ctx.require_bundle() is ctx.bundle
    for ask in (lambda c: c.answers("dev.tsv"), lambda c: c.questions("dev.tsv"), lambda c: c.threshold("dev")):
        with pytest.raises(NotGraded):
            ask(make_context(tmp_path))


# ---- the suite's verdicts ----------------------------------------------------------------------

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


def sandbox_root(sandbox):
    return sandbox.args["work_root"]


class RecordingSandbox:
    """Stands in for the runner's Sandbox in a suite run: records how it was made and closed."""

    made = []

    def __init__(self, tests_file, work_root, token, limits, user, hidden_env, preload, fork):
        self.args = dict(tests_file=tests_file, work_root=work_root, token=token, limits=limits, user=user,
                         hidden_env=hidden_env, preload=preload, fork=fork)
        self.closed = self.killed = False
        RecordingSandbox.made.append(self)

    def close(self):
        self.closed = True

    def kill_all(self):
        self.killed = True


def test_a_suite_run_scores_each_test_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(suite, "Sandbox", RecordingSandbox)
    monkeypatch.setattr(suite.tempfile, "tempdir", str(tmp_path))
    RecordingSandbox.made = []
    write(tmp_path / "hand_in" / "a.predictions", "x\n")
    seen = []

    def looks(ctx):
        seen.append((ctx.scratch, ctx.deadline - time.monotonic(), ctx.snapshot.files, ctx.bundle,
                     os.stat(ctx.scratch).st_mode & 0o777, os.stat(os.path.dirname(ctx.scratch)).st_mode & 0o777))
        return "ok"
    tests = [GradedTest("1e-0-basic", 5.0, "basic", 9.0, "d", looks), ending(Failed("no"))]
    run = suite.Suite("/t/grader.py", str(tmp_path / "hand_in"), "bundle", Limits(), None, jobs=0, timeout=None,
                      preload=("torch",), fork=False)
    found, seconds = run.run(tests)
    assert [(r.status, r.score, r.message) for r in found] == [("pass", 5.0, "ok"), ("fail", 0.0, "no")]
    assert all(r.test is t for r, t in zip(found, tests)) and 0 <= found[0].seconds < 5 and seconds < 5
    scratch, left, files, given, mode, work_mode = seen[0]
    assert 8 < left <= 9 and files == {"a.predictions": "x\n"} and given == "bundle"
    assert os.path.basename(scratch).startswith("1e-0-basic-") and mode == work_mode == 0o755
    assert os.path.dirname(scratch) == sandbox_root(RecordingSandbox.made[0])
    sandbox, = RecordingSandbox.made
    assert sandbox.closed and not sandbox.killed and len(sandbox.args["token"]) == 32
    assert sandbox.args["hidden_env"] == (bundle.HIDDEN_ENV,) and sandbox.args["preload"] == ("torch",)
    assert sandbox.args["fork"] is False and sandbox.args["tests_file"] == "/t/grader.py"
    assert os.listdir(tmp_path) == ["hand_in"]  # the private and work folders are gone


def test_the_suites_timeout_overrides_each_tests(tmp_path, monkeypatch):
    monkeypatch.setattr(suite, "Sandbox", RecordingSandbox)
    left = []
    test = GradedTest("1e-0-basic", 5.0, "basic", 900.0, "d", lambda ctx: left.append(ctx.deadline - time.monotonic()))
    (tmp_path / "hand_in").mkdir()
    suite.Suite("/t.py", str(tmp_path / "hand_in"), timeout=3).run([test])
    suite.Suite("/t.py", str(tmp_path / "hand_in")).run([test])
    assert 2 < left[0] <= 3 and 800 < left[1] <= 900
    assert suite.Suite("/t.py", "rel").submission_dir == os.path.abspath("rel")


def test_a_suite_hands_each_test_its_sandbox_snapshot_and_outputs(tmp_path, monkeypatch):
    monkeypatch.setattr(suite, "Sandbox", RecordingSandbox)
    RecordingSandbox.made = []
    write(tmp_path / "hand_in" / "m.params", "weights")
    limits, user, seen = Limits(memory_bytes=5), types.SimpleNamespace(pw_uid=1), {}

    def uses(ctx):
        private = os.path.dirname(ctx.snapshot.params["m.params"])
        seen.update(sandbox=ctx.sandbox, package=ctx.submission_dir, private=private,
                    private_mode=os.stat(private).st_mode & 0o777, work=os.path.dirname(ctx.scratch))
        ctx.outputs += ["printed", "more"]
        time.sleep(0.3)
        ctx.deadline += 0.3  # as a wait for the zygote's start would: not the test's time
        shutil.rmtree(private)  # folders a cleaner took away: the run still ends with its results
        shutil.rmtree(seen["work"])
        raise Failed("no")
    found, _ = suite.Suite("/t.py", str(tmp_path / "hand_in"), None, limits, user).run(
        [GradedTest("1e-0-basic", 5.0, "basic", 9.0, "d", uses)])
    assert (found[0].status, found[0].output) == ("fail", "printed\nmore") and found[0].seconds < 0.5
    sandbox, = RecordingSandbox.made
    assert seen["sandbox"] is sandbox and seen["package"] == str(tmp_path / "hand_in") and seen["private_mode"] == 0o700
    assert sandbox.args["limits"] is limits and sandbox.args["user"] is user and sandbox.args["fork"] is True
    assert os.path.basename(seen["private"]).startswith("grading-private-")
    assert os.path.basename(seen["work"]).startswith("grading-") and seen["work"] == sandbox.args["work_root"]


def overlapping(tmp_path, monkeypatch, jobs):
    """How many of three tests of a suite with `jobs` ran at the same time, at most."""
    monkeypatch.setattr(suite, "Sandbox", RecordingSandbox)
    (tmp_path / "hand_in").mkdir(exist_ok=True)
    running, most = [], []

    def waits(ctx):
        running.append(1)
        most.append(len(running))
        time.sleep(0.2)
        running.pop()
    tests = [GradedTest(f"1e-{i}-basic", 1.0, "basic", 9.0, "d", waits) for i in range(3)]
    run = suite.Suite("/t.py", str(tmp_path / "hand_in")) if jobs is None else \
        suite.Suite("/t.py", str(tmp_path / "hand_in"), jobs=jobs)
    run.run(tests)
    return max(most)


def test_a_suite_runs_two_tests_at_once_unless_told(tmp_path, monkeypatch):
    assert overlapping(tmp_path, monkeypatch, None) == overlapping(tmp_path, monkeypatch, 2) == 2
    assert overlapping(tmp_path, monkeypatch, 1) == overlapping(tmp_path, monkeypatch, 0) == 1


def test_an_interrupted_suite_kills_its_probes(tmp_path, monkeypatch):
    monkeypatch.setattr(suite, "Sandbox", RecordingSandbox)
    RecordingSandbox.made = []
    (tmp_path / "hand_in").mkdir()

    def interrupted(ctx):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        suite.Suite("/t.py", str(tmp_path / "hand_in")).run([GradedTest("1e-0-basic", 1.0, "basic", 9.0, "d",
                                                                        interrupted)])
    assert RecordingSandbox.made[0].killed and RecordingSandbox.made[0].closed


# ---- the command line --------------------------------------------------------------------------

class RecordingSuite:
    """Stands in for Suite in cli.main: records its arguments, passes every test."""

    made = []

    def __init__(self, *args, **kwargs):
        self.args = args
        RecordingSuite.made.append(self)

    def run(self, tests):
        return [result(t.test_id, "pass", points=t.points, description=t.description) for t in tests], 2.0


@pytest.fixture
def command_line(tmp_path, monkeypatch, registered):
    """cli.main with two registered tests, a submission package and no real runs."""
    def judged(ctx):
        """the description"""
    registry.graded("1e-0-basic", 5, "basic", 9)(judged)
    registry.graded("1f-0-hidden", 2, "hidden", 9)(judged)
    write(tmp_path / "src" / "submission" / "__init__.py", "")
    monkeypatch.setattr(cli, "Suite", RecordingSuite)
    monkeypatch.delenv(bundle.HIDDEN_ENV, raising=False)
    monkeypatch.setattr(signal, "signal", lambda *args: None)
    RecordingSuite.made = []
    return lambda *argv: cli.main(list(argv), tests_file=str(tmp_path / "grader.py"), default_thresholds=DEFAULTS,
                                  preload=("torch",))


def test_the_command_line_grades_the_selected_tests(command_line, tmp_path, monkeypatch, capsys):
    handlers = []
    monkeypatch.setattr(signal, "signal", lambda *args: handlers.append(args))
    assert command_line("1e", "--json", str(tmp_path / "r" / "results.json")) == 0
    assert handlers == [(signal.SIGTERM, signal.default_int_handler)]  # a terminated run cleans up like Ctrl-C
    out, err = capsys.readouterr()
    assert out.startswith(f"Grading {tmp_path / 'src' / 'submission'}\nhidden bundle: none (hidden tests are graded "
                          "on submission)\n\n1e-0-basic")
    assert out.endswith(f"wrote {tmp_path / 'r' / 'results.json'}\n")
    assert err == "grader: no hidden bundle: hidden tests score 0 in the results file\n"
    assert json.loads((tmp_path / "r" / "results.json").read_text())["score"] == 5.0
    (tests_file, package, given, limits, user, jobs, timeout, preload), fork = RecordingSuite.made[0].args[:8], None
    assert (tests_file, package, given, user, timeout, preload) == (str(tmp_path / "grader.py"),
                                                                    str(tmp_path / "src" / "submission"), None, None,
                                                                    None, ("torch",))
    assert limits.memory_bytes == 4096 << 20 and jobs == min(2, os.cpu_count() or 1)


def test_command_line_options_reach_the_suite(command_line, tmp_path, monkeypatch, capsys):
    made = []
    monkeypatch.setattr(cli, "Suite", lambda *args, **kwargs: made.append((args, kwargs)) or RecordingSuite())
    assert command_line("--memory-mb", "100", "--jobs", "3", "--timeout", "2.5", "--spawn", "-v") == 0
    (args, kwargs), = made
    assert args[3].memory_bytes == 100 << 20 and args[5:7] == (3, 2.5) and kwargs == {"fork": False}
    assert command_line() == 0 and made[1][1] == {"fork": True}
    assert "1f-0-hidden" in capsys.readouterr().out


def test_the_hidden_bundle_comes_from_the_option_or_the_environment(command_line, tmp_path, monkeypatch, capsys):
    root = tmp_path / "bundle"
    write(root / "thresholds.json", '{"dev": {"min_accuracy": 0.5}}')
    assert command_line("--hidden", str(root)) == 0
    given = RecordingSuite.made[-1].args[2]
    assert given.path == str(root) and given.thresholds["dev"] == {"min_accuracy": 0.5}
    assert f"hidden bundle: {root}\n" in capsys.readouterr().out
    monkeypatch.setenv(bundle.HIDDEN_ENV, str(root))
    assert command_line("--json", str(tmp_path / "r.json")) == 0
    assert RecordingSuite.made[-1].args[2].path == str(root) and capsys.readouterr().err == ""
    write(root / "grading.json", "[")
    assert command_line() == 2
    assert capsys.readouterr().err.startswith(f"grader: {root / 'grading.json'} is not valid JSON")


def test_usage_errors_exit_2(command_line, tmp_path, capsys):
    assert command_line("1z", "2a") == 2
    assert capsys.readouterr().err == ("grader: unknown test 1z, 2a; known tests:\n"
                                       "  1e-0-basic      5 pts  the description\n"
                                       "  1f-0-hidden     2 pts  the description\n")
    assert command_line("--submission", str(tmp_path)) == 2
    assert capsys.readouterr().err == f"grader: {tmp_path} is not a submission package (no __init__.py)\n"
    assert command_line("--user", "no-such-user-here") == 2
    assert capsys.readouterr().err == "grader: no user named 'no-such-user-here'\n"
    assert RecordingSuite.made == []


def test_list_prints_the_tests(command_line, capsys):
    assert command_line("--list") == 0
    assert capsys.readouterr().out == ("  1e-0-basic      5 pts  the description\n"
                                       "  1f-0-hidden     2 pts  the description\n")


def test_a_user_who_cannot_read_the_grader_is_refused(command_line, tmp_path, monkeypatch, capsys):
    user = pwd.getpwuid(os.getuid())
    checked = []
    monkeypatch.setattr(cli, "readable_by", lambda who, path: checked.append(path) or path != checked[0])
    assert command_line("--user", user.pw_name) == 2
    assert capsys.readouterr().err == (f"grader: user {user.pw_name} cannot read {os.path.dirname(os.__file__)}: "
                                       "install Python and the grader where that user can read them, or omit --user\n")
    monkeypatch.setattr(cli, "readable_by", lambda who, path: checked.append(path) or who == user)
    assert command_line("--user", user.pw_name) == 0
    assert checked[-3:] == [os.path.dirname(os.__file__), str(tmp_path / "grader.py"), os.path.dirname(cli.__file__)]
    assert RecordingSuite.made[-1].args[4] == user


def test_an_interrupted_run_exits_130(command_line, monkeypatch, capsys):
    def interrupted(self, tests):
        raise KeyboardInterrupt
    monkeypatch.setattr(RecordingSuite, "run", interrupted)
    assert command_line() == 130
    assert capsys.readouterr().err == "grader: interrupted\n"


def test_only_posix_systems_are_graded(command_line, monkeypatch, capsys):
    monkeypatch.setattr(os, "name", "nt")
    assert command_line() == 2
    assert capsys.readouterr().err == "grader: the grader needs a POSIX system: Linux, macOS, or WSL on Windows\n"


def test_the_tests_file_defaults_to_the_running_script(command_line, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "grader.py")])
    assert cli.main([], default_thresholds=DEFAULTS) == 0
    assert RecordingSuite.made[-1].args[:2] == (str(tmp_path / "grader.py"), str(tmp_path / "src" / "submission"))


class Flushes:
    """A standard output that records what was written and what of it was flushed."""

    def __init__(self):
        self.written, self.flushed = "", ""

    def write(self, text):
        self.written += text

    def flush(self):
        self.flushed = self.written


def test_the_heading_is_flushed_before_the_tests_run(command_line, monkeypatch):
    out = Flushes()
    monkeypatch.setattr(sys, "stdout", out)
    shown = []
    monkeypatch.setattr(RecordingSuite, "run", lambda self, tests: shown.append(out.flushed) or ([], 0.0))
    assert command_line() == 0
    assert shown[0].startswith("Grading ") and "hidden bundle: none" in shown[0]


def test_verbose_shows_what_failing_code_printed(command_line, monkeypatch, capsys):
    def prints(self, tests):
        return [result(status="fail", message="wrong", output="my debug line")], 1.0
    monkeypatch.setattr(RecordingSuite, "run", prints)
    assert command_line() == 0
    out = capsys.readouterr().out
    assert "my debug line" not in out and out.endswith("\n(1.0 s)\n")
    assert command_line("-v") == 0 and "      | my debug line" in capsys.readouterr().out


def test_the_help_tells_each_option(monkeypatch):
    monkeypatch.setenv("COLUMNS", "2000")
    text = " ".join(cli.parser("/sub").format_help().split())
    assert " Grade a submission: basic tests here, hidden tests with a hidden bundle. " in text
    for told in ("usage: ", "[TEST ...]",
                 "TEST test ids (e.g. 1e-0-basic), parts (e.g. 1e), or 'basic' / 'hidden'; default: all",
                 "--json PATH also write Gradescope's results.json to PATH",
                 f"--hidden DIR the instructors' hidden bundle (default: ${bundle.HIDDEN_ENV}; none: hidden tests are "
                 "graded on submission)",
                 "--submission DIR the submission package to grade (default: /sub)",
                 "--timeout SECONDS time limit for every test instead of its own",
                 "--jobs JOBS tests run at once (default: ",
                 "--memory-mb MEMORY_MB address-space limit of each test process (default: 4096)",
                 "--spawn start each test process as a new interpreter instead of forking it (slower)",
                 "--user USER run submission code as this user (the grader itself must run as root)",
                 "--list list the tests and exit",
                 "-v, --verbose show what the submission printed in failing tests"):
        assert told in text, told


def test_two_tests_run_at_once_where_two_cores_or_more_allow(monkeypatch):
    for cores, jobs in ((8, 2), (1, 1), (None, 1)):
        monkeypatch.setattr(os, "cpu_count", lambda: cores)
        assert cli.parser("/sub").parse_args([]).jobs == jobs


def test_the_parsers_defaults():
    args = cli.parser("/sub").parse_args([])
    assert (args.tests, args.json, args.submission, args.timeout, args.memory_mb, args.spawn, args.user, args.list,
            args.verbose) == ([], None, "/sub", None, 4096, False, None, False, False)


# ---- the runner: the grading process's side of a probe -----------------------------------------

def test_a_capped_buffer_keeps_the_start_and_counts_the_rest():
    buffer = CappedBuffer(5)
    buffer.add(b"abc")
    buffer.add(b"def\xc3")
    assert bytes(buffer.data) == b"abcde" and buffer.dropped == 2
    assert buffer.text() == "abcde\n[2 more bytes of output dropped]"
    whole = CappedBuffer(4)
    whole.add(b"ab\xc3\xa9")
    assert whole.text() == "abé" and whole.dropped == 0
    buffer.add(b"gh")
    assert bytes(buffer.data) == b"abcde" and buffer.dropped == 4
    broken = CappedBuffer(9)
    broken.add(b"ok\xff")
    assert broken.text() == "ok\ufffd"


def sandbox_for(tmp_path, **kwargs):
    return Sandbox(str(tmp_path / "tests.py"), str(tmp_path), "t0ken", fork=False, **kwargs)


def outcome(sandbox, raw, returncode=0, timed_out=False, dropped=0):
    buffer = CappedBuffer(1 << 10)
    buffer.add(raw)
    buffer.dropped = dropped
    return sandbox.outcome(returncode, timed_out, buffer, "printed", 1.6)


def test_only_an_answer_with_this_runs_token_is_taken(tmp_path):
    sandbox = sandbox_for(tmp_path)
    assert outcome(sandbox, b't0ken\n{"ok": true, "value": [1]}') == ProbeOutcome("ok", [1], "", "printed", 1.6)
    tampered = ProbeOutcome("error", None, "the result channel was tampered with", "printed", 1.6)
    for raw in (b'other\n{"ok": true, "value": 1}', b't0ken{"ok": true, "value": 1}', b'\nt0ken\n{"ok": true}',
                b't0ken\n{"ok": tru', b't0ken\n{"value": 1}', b't0ken\n[1]', b't0ken\n\xff'):
        assert outcome(sandbox, raw) == tampered, raw
    assert outcome(sandbox, b't0ken\n{"ok": true, "value": 1}', dropped=1) == tampered
    assert outcome(sandbox, b't0ken\n{"ok": true,\n "value": 2}\n').value == 2


def test_a_failed_answer_says_where_it_failed(tmp_path):
    sandbox = sandbox_for(tmp_path)
    for stage, words in (("import", "the submission failed to import"), ("probe", "the submission raised an error"),
                         ("grader", "the grader failed"), (None, "the grader failed")):
        message = {"ok": False, "stage": stage, "error": "Traceback"}
        found = outcome(sandbox, b"t0ken\n" + json.dumps(message).encode())
        assert found == ProbeOutcome("error", None, f"{words}:\nTraceback", "printed", 1.6)
    assert outcome(sandbox, b't0ken\n{"ok": 1, "value": 1}').reason == "the grader failed:\n"
    assert outcome(sandbox, b't0ken\n{"ok": true}').reason == "the grader failed:\n"


def test_no_answer_is_an_error_and_lateness_a_timeout(tmp_path):
    sandbox = sandbox_for(tmp_path)
    assert outcome(sandbox, b"", returncode=3) == ProbeOutcome(
        "error", None, "the submission's process ended without answering (exit code 3)", "printed", 1.6)
    late = outcome(sandbox, b't0ken\n{"ok": true, "value": 1}', timed_out=True)
    assert late == ProbeOutcome("timeout", None, "the submission did not finish within the time limit "
                                                 "(stopped after 2 s)", "printed", 1.6)


def test_exit_statuses_in_words():
    assert runner.describe_exit(None) == "exit status unknown"
    assert runner.describe_exit(0) == "exit code 0" and runner.describe_exit(2) == "exit code 2"
    assert runner.describe_exit(-9) == "killed by SIGKILL" and runner.describe_exit(-1) == "killed by SIGHUP"
    assert runner.describe_exit(-99) == "killed by signal 99"


def test_the_probe_environment_hides_the_bundle_and_pins_threads(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_DIR", "/bundle")
    monkeypatch.setenv("PYTHONPATH", "/extra")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    for name in ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"):
        monkeypatch.delenv(name, raising=False)
    env = sandbox_for(tmp_path, hidden_env=("SECRET_DIR",)).environment("/home/probe")
    grading_root = os.path.dirname(os.path.dirname(runner.__file__))
    assert "SECRET_DIR" not in env and env["PYTHONPATH"] == f"{grading_root}{os.pathsep}/extra"
    assert (env["HOME"], env["TMPDIR"], env["PYTHONDONTWRITEBYTECODE"], env["PYTHONUNBUFFERED"]) == \
        ("/home/probe", "/home/probe", "1", "1")
    assert (env["OMP_NUM_THREADS"], env["MKL_NUM_THREADS"], env["OPENBLAS_NUM_THREADS"]) == ("3", "1", "1")
    monkeypatch.delenv("PYTHONPATH")
    monkeypatch.delenv("OMP_NUM_THREADS")
    bare = sandbox_for(tmp_path).environment("/h")
    assert bare["PYTHONPATH"] == grading_root and bare["OMP_NUM_THREADS"] == "1"


def test_each_probe_gets_a_fresh_copy_without_outputs(tmp_path):
    package = tmp_path / "package"
    for name in ("__init__.py", "model.py", "m.params", "a.predictions", "__pycache__/x.pyc"):
        write(package / name, "x")
    (tmp_path / "work").mkdir()
    sandbox = Sandbox(str(tmp_path / "t.py"), str(tmp_path / "work"), "t", fork=False)
    layout = sandbox.prepare(str(package))
    assert layout["home"] == layout["top"] and layout["package"] == os.path.join(layout["top"], "submission")
    assert os.path.dirname(layout["top"]) == str(tmp_path / "work")
    assert os.path.basename(layout["top"]).startswith("probe-")
    assert sorted(os.listdir(layout["package"])) == ["__init__.py", "model.py"]
    assert sandbox.prepare(str(package))["top"] != layout["top"]
    assert sandbox.order(layout, {"r": 1}) == {"home": layout["home"], "request": {"r": 1}}


def package_with_a_link(tmp_path):
    """A package with a private subpackage, outputs, and a link to a file outside it."""
    package = tmp_path / "package"
    write(package / "sub" / "__init__.py", "x")
    write(tmp_path / "outside.py", "SECRET = 1\n")
    os.symlink(tmp_path / "outside.py", package / "link.py")
    write(package / "m.params", "p")
    os.chmod(package / "sub", 0o700)
    os.chmod(package / "sub" / "__init__.py", 0o600)
    return package


def test_the_copy_holds_files_for_links(tmp_path):
    package = package_with_a_link(tmp_path)
    (tmp_path / "work").mkdir()
    layout = Sandbox(str(tmp_path / "t.py"), str(tmp_path / "work"), "t", fork=False).prepare(str(package))
    copied = os.path.join(layout["package"], "link.py")
    assert not os.path.islink(copied) and open(copied).read() == "SECRET = 1\n"


def test_a_probe_for_another_user_is_prepared_for_the_handover(tmp_path):
    package = package_with_a_link(tmp_path)
    (tmp_path / "work").mkdir()
    user = types.SimpleNamespace(pw_uid=4321, pw_gid=8765)
    sandbox = Sandbox(str(tmp_path / "t.py"), str(tmp_path / "work"), "t", Limits(disk_bytes=77), user=user, fork=False)
    layout = sandbox.prepare(str(package))
    top = layout["top"]
    assert layout == dict(top=top, home=os.path.join(top, "home"), package=os.path.join(top, "submission"),
                          copy=os.path.join(top, "private", "submission"))
    mode = lambda path: os.stat(path).st_mode & 0o777  # noqa: E731
    assert mode(top) == 0o755 and mode(os.path.join(top, "private")) == 0o700
    assert mode(layout["home"]) == mode(layout["package"]) == 0o755 and os.listdir(layout["package"]) == []
    assert mode(os.path.join(layout["copy"], "sub")) == 0o755
    assert mode(os.path.join(layout["copy"], "sub", "__init__.py")) == 0o644
    assert sorted(os.listdir(layout["copy"])) == ["sub"]
    assert sandbox.order(layout, {}) == dict(home=layout["home"], request={}, package=layout["package"],
                                             copy=layout["copy"], disk_bytes=77, uid=4321, gid=8765)


class Exited:
    """A probe process that has ended (poll answers `code`)."""

    def __init__(self, code=0, pid=None):
        self.code, self.pid = code, pid

    def poll(self):
        return self.code


def test_collect_reads_both_pipes_until_they_close(tmp_path):
    sandbox = sandbox_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    os.write(output_write, b"printed")
    os.write(result_write, b"answer")
    os.close(output_write)
    os.close(result_write)
    output, answer = CappedBuffer(100), CappedBuffer(100)
    timed_out = sandbox.collect(Exited(None), output_read, result_read, output, answer, time.monotonic() + 5)
    assert timed_out is False and output.text() == "printed" and answer.text() == "answer"
    with pytest.raises(OSError):
        os.close(output_read)


def test_collect_times_out_only_without_an_answer(tmp_path):
    sandbox = sandbox_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    started = time.monotonic()
    assert sandbox.collect(Exited(None), output_read, result_read, CappedBuffer(9), CappedBuffer(9), started + 0.3)
    assert 0.3 <= time.monotonic() - started < 2
    output_read, output_write2 = os.pipe()
    result_read, result_write2 = os.pipe()
    os.close(result_write2)
    assert not sandbox.collect(Exited(None), output_read, result_read, CappedBuffer(9), CappedBuffer(9),
                               time.monotonic() + 0.3)
    for fd in (output_write, result_write, output_write2):
        os.close(fd)


def test_collect_stops_soon_after_the_process_is_gone(tmp_path):
    sandbox = sandbox_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    started = time.monotonic()
    assert sandbox.collect(Exited(0), output_read, result_read, CappedBuffer(9), CappedBuffer(9), started + 5) is False
    assert runner.EXIT_GRACE_SECONDS <= time.monotonic() - started < runner.EXIT_GRACE_SECONDS + 0.55
    with pytest.raises(OSError):
        os.close(result_read)
    for fd in (output_write, result_write):
        os.close(fd)


TESTS_FILE = textwrap.dedent('''
    import os, sys, time
    from grading import probe

    @probe
    def answer(sub, x):
        print("hello from the probe", flush=True)
        print("and its errors", file=sys.stderr, flush=True)
        return {"x": x, "package": sub.NAME, "cwd": os.getcwd(), "home": os.environ["HOME"],
                "leads_its_session": os.getsid(0) == os.getpid()}

    @probe
    def hang(sub):
        time.sleep(60)

    @probe
    def forge(sub):
        for fd in range(3, 64):
            try:
                os.write(fd, b"wrong\\n" + b'{"ok": true, "value": "forged"}')
            except OSError:
                pass
        os._exit(0)

    @probe
    def leave(sub):
        os._exit(4)
''')


@pytest.fixture
def spawning(tmp_path):
    """
    A sandbox that spawns probes of a small tests file against a one-line
    package. The probe processes do not see MUTANT_UNDER_TEST: under `./run.sh
    mutate` they run the grading package's original code (mutmut's bookkeeping
    fails outside its folder), so what is judged is what the grading process does.
    """
    write(tmp_path / "tests.py", TESTS_FILE)
    write(tmp_path / "package" / "__init__.py", "NAME = 'pkg'\n")
    (tmp_path / "work").mkdir()
    sandbox = Sandbox(str(tmp_path / "tests.py"), str(tmp_path / "work"), secrets_token(),
                      hidden_env=("MUTANT_UNDER_TEST",), fork=False)
    yield sandbox
    sandbox.close()


def secrets_token():
    return os.urandom(8).hex()


def test_a_spawned_probe_answers_and_is_cleaned_up(spawning, tmp_path):
    found = spawning.run(str(tmp_path / "package"), "answer", {"x": 3}, 30)
    assert found.status == "ok" and found.output == "hello from the probe\nand its errors\n"
    assert found.value["x"] == 3 and found.value["package"] == "pkg" and found.value["leads_its_session"]
    assert found.value["cwd"] == found.value["home"] and found.value["home"].startswith(str(tmp_path / "work"))
    assert os.listdir(tmp_path / "work") == [] and spawning.live_groups == set()


def test_a_forged_answer_or_a_silent_exit_is_an_error(spawning, tmp_path):
    forged = spawning.run(str(tmp_path / "package"), "forge", {}, 30)
    assert (forged.status, forged.reason) == ("error", "the result channel was tampered with")
    left = spawning.run(str(tmp_path / "package"), "leave", {}, 30)
    assert (left.status, left.reason) == ("error", "the submission's process ended without answering (exit code 4)")


def test_a_hanging_probe_is_stopped_at_its_time_limit(spawning, tmp_path):
    started = time.monotonic()
    found = spawning.run(str(tmp_path / "package"), "hang", {}, 1.5)
    assert found.status == "timeout" and 1.5 <= time.monotonic() - started < 5
    assert found.reason == "the submission did not finish within the time limit (stopped after 2 s)"


def test_end_stops_a_process_and_its_group(tmp_path):
    sandbox = sandbox_for(tmp_path)
    process = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                                "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                                "print(child.pid, flush=True); time.sleep(60)"], start_new_session=True,
                               stdout=subprocess.PIPE)
    child = int(process.stdout.readline())
    probe = runner.SpawnedProbe(process)
    sandbox.live_groups.add(process.pid)
    started = time.monotonic()
    sandbox.end(probe)
    assert probe.finish() == -signal.SIGTERM and time.monotonic() - started < runner.TERM_GRACE_SECONDS + 1
    assert sandbox.live_groups == set() and gone_or_zombie(child)
    process.stdout.close()


def gone_or_zombie(pid, seconds=2.0):
    """Whether process `pid` ends (or is left unreaped) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rpartition(")")[2].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.01)
    return False


def test_kill_all_kills_every_live_group(tmp_path):
    sandbox = sandbox_for(tmp_path)
    processes = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
                 for _ in range(2)]
    sandbox.live_groups.update(p.pid for p in processes)
    sandbox.kill_all()
    assert [p.wait(5) for p in processes] == [-signal.SIGKILL] * 2 and sandbox.live_groups == set()


def test_processes_of_lists_a_users_processes_with_their_sessions():
    found = dict(runner.processes_of(os.getuid()))
    assert found[os.getpid()] == os.getsid(0)
    assert runner.processes_of(2 ** 31 - 7) == []


@pytest.fixture
def open_folder():
    """A folder in /tmp that every user may enter (pytest's own are its owner's only)."""
    folder = tempfile.mkdtemp(prefix="readable-")
    os.chmod(folder, 0o755)
    yield Path(folder)
    shutil.rmtree(folder)


def test_readable_by_follows_the_permission_bits(open_folder):
    me = pwd.getpwuid(os.getuid())
    other = types.SimpleNamespace(pw_uid=2 ** 31 - 7, pw_gid=2 ** 31 - 7)
    group = types.SimpleNamespace(pw_uid=2 ** 31 - 7, pw_gid=os.stat(open_folder).st_gid)
    folder = open_folder / "f"
    path = write(folder / "x.py", "x")
    for mode, readers in ((0o400, [me]), (0o440, [me, group]), (0o404, [me, other]), (0o040, [group]),
                          (0o004, [other])):
        os.chmod(path, mode)
        assert [readable_by for readable_by in (me, group, other) if runner.readable_by(readable_by, path)] == readers
    os.chmod(path, 0o444)
    os.chmod(folder, 0o700)
    assert runner.readable_by(me, path) and not runner.readable_by(other, path)
    os.chmod(folder, 0o754)
    assert not runner.readable_by(other, path) and runner.readable_by(group, path)
    assert runner.readable_by(other, folder) is False
    os.chmod(folder, 0o751)
    assert runner.readable_by(other, path) and not runner.readable_by(other, folder)
    os.chmod(folder, 0o755)
    assert runner.readable_by(other, folder)


# ---- trusted probes: the reference in a process of its own -------------------------------------

REFERENCE_TESTS = textwrap.dedent('''
    import os, sys, time
    from grading import probe

    @probe
    def observe(sub, x):
        print("the reference prints")
        import stages.facts
        return {"x": x, "name": sub.NAME, "cwd": os.getcwd(), "stages": [stages.WHERE, stages.facts.WHERE],
                "env": sorted(k for k in os.environ if k.startswith("GRADER_")),
                "threads": [os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")],
                "bytecode": os.environ.get("PYTHONDONTWRITEBYTECODE"), "isolated": sys.flags.isolated}

    @probe
    def broken(sub):
        raise ValueError("the reference broke")

    @probe
    def hang(sub):
        time.sleep(60)

    @probe
    def vanish(sub):
        sys.stderr.write("going\\n")
        os._exit(3)

    def not_a_probe(sub):
        return 1
''')


def make_reference(root):
    """A reference package that imports a module of its own, and a runtime whose stages say where they are from."""
    write(root / "reference" / "__init__.py", "from .names import NAME\n")
    write(root / "reference" / "names.py", "NAME = 'reference'\n")
    write(root / "runtime" / "stages" / "__init__.py", "WHERE = 'runtime'\n")
    write(root / "runtime" / "stages" / "facts.py", "WHERE = 'runtime facts'\n")


@pytest.fixture
def reference(tmp_path, monkeypatch):
    """
    A tests file, a reference package and a runtime; the trusted process does
    not see MUTANT_UNDER_TEST (under `./run.sh mutate` it runs the original code).
    """
    write(tmp_path / "tests" / "grader.py", REFERENCE_TESTS)
    make_reference(tmp_path)
    started = subprocess.run

    def without_mutant(*args, env=None, **kwargs):
        return started(*args, env={k: v for k, v in env.items() if k != "MUTANT_UNDER_TEST"}, **kwargs)
    monkeypatch.setattr(trusted.subprocess, "run", without_mutant)
    monkeypatch.setenv("GRADER_HIDDEN_DIR", "/bundle")
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONDONTWRITEBYTECODE"):
        monkeypatch.setenv(name, "4")
    return lambda name, timeout=30, **kwargs: trusted.run_trusted(
        str(tmp_path / "tests" / "grader.py"), name, kwargs, str(tmp_path / "reference"), str(tmp_path / "runtime"),
        timeout)


def test_the_reference_answers_from_a_clean_isolated_process(reference, tmp_path):
    found = reference("observe", x=2)
    assert found == {"x": 2, "name": "reference", "cwd": str(tmp_path / "tests"),
                     "stages": ["runtime", "runtime facts"], "env": [],
                     "threads": ["1", "1"], "bytecode": "1", "isolated": 1}


def test_a_failing_reference_is_a_trusted_failure(reference):
    with pytest.raises(trusted.TrustedFailure, match=r"(?s)^Traceback.*ValueError: the reference broke\n$"):
        reference("broken")
    with pytest.raises(trusted.TrustedFailure, match=r"^no probe named 'not_a_probe'$"):
        reference("not_a_probe")
    with pytest.raises(trusted.TrustedFailure, match=r"^the reference did not finish hang within 2 s$"):
        reference("hang", timeout=1.5)
    with pytest.raises(trusted.TrustedFailure, match=r"^the reference's process ended without answering "
                                                     r"\(exit status 3\):\ngoing\n$"):
        reference("vanish")


def test_an_answer_without_an_error_is_an_unknown_error(reference, monkeypatch):
    monkeypatch.setattr(trusted.subprocess, "run", lambda args, **kwargs: subprocess.CompletedProcess(
        args, 0, stdout='{"ok": false}', stderr=""))
    with pytest.raises(trusted.TrustedFailure, match="^unknown error$"):
        reference("observe", x=1)


def test_trusted_answer_registers_the_reference_and_its_runtime(tmp_path, monkeypatch):
    write(tmp_path / "grader.py", REFERENCE_TESTS)
    make_reference(tmp_path)
    import stages.facts  # the project's own, which the reference must not see
    kept = {name: module for name, module in sys.modules.items() if name == "stages" or name.startswith("stages.")}
    for name in ("submission", "grader_tests"):
        monkeypatch.setitem(sys.modules, name, sys.modules.get(name))
    monkeypatch.setattr(sys, "path", list(sys.path))
    request = dict(tests_file=str(tmp_path / "grader.py"), reference=str(tmp_path / "reference"),
                   runtime=str(tmp_path / "runtime"), kwargs={"x": 1})
    try:
        found = trusted.answer(dict(request, probe="observe"))
        assert found["ok"] is True and found["value"]["name"] == "reference"
        assert found["value"]["stages"] == ["runtime", "runtime facts"] and not hasattr(stages.facts, "WHERE")
        assert sys.path[0] == str(tmp_path / "runtime")
        for name in ("not_a_probe", "missing"):
            assert trusted.answer(dict(request, probe=name, kwargs={})) == {
                "ok": False, "error": f"no probe named {name!r}"}
        failed = trusted.answer(dict(request, probe="broken", kwargs={}, runtime=None))
        assert failed["ok"] is False and failed["error"].endswith("ValueError: the reference broke\n")
    finally:
        for name in [n for n in sys.modules if n == "stages" or n.startswith("stages.")]:
            del sys.modules[name]
        sys.modules.update(kept)


def test_trusted_main_answers_alone_on_its_standard_output(tmp_path, monkeypatch):
    request = {"probe": "observe", "memory_bytes": 12345}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(request)))
    limits = []
    monkeypatch.setattr(trusted, "limit_resources", lambda *args: limits.append(args))

    def answer(given):
        os.write(1, b"the reference prints\n")
        return {"ok": True, "value": given["probe"]}
    monkeypatch.setattr(trusted, "answer", answer)
    saved = os.dup(1), os.dup(2)
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            trusted.main()
        finally:
            for fd, original in zip((1, 2), saved):
                os.dup2(original, fd)
                os.close(original)
    assert json.loads((tmp_path / "out").read_text()) == {"ok": True, "value": "observe"}
    assert (tmp_path / "err").read_text() == "the reference prints\n" and limits == [(12345, 1 << 30)]


# ---- the runner: forking from the zygote, the request, ending and sweeping -----------------------

class FakeZygote:
    """Stands in for ZygoteClient: records how it was started and asked; forks a sleeper, or nothing."""

    made = []
    forks = True

    def __init__(self, env, cwd, preload):
        self.env, self.cwd, self.preload, self.asked = env, cwd, preload, []
        FakeZygote.made.append(self)

    def wait_ready(self, timeout):
        self.asked.append(("ready", timeout))
        return True

    def close(self):
        self.asked.append(("close",))

    def fork(self, order, fds, timeout):
        self.asked.append(("fork", order, [os.fstat(fd).st_mode for fd in fds], timeout))
        if not self.forks:
            return None
        self.child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
        return self.child.pid

    def exit_code(self, pid, wait=None):
        self.asked.append(("exit_code", pid, wait))
        return 5


@pytest.fixture
def zygotes(monkeypatch):
    monkeypatch.setattr(runner, "ZygoteClient", FakeZygote)
    monkeypatch.setattr(runner, "CAN_FORK", True)
    FakeZygote.made = []
    return FakeZygote.made


def test_the_zygote_is_started_once_with_the_preloads(tmp_path, zygotes):
    sandbox = Sandbox(str(tmp_path / "t.py"), str(tmp_path), "t", preload=("torch",), fork=True)
    assert sandbox.forking_zygote() is None
    assert 0 <= sandbox.warm_up() < 1 and 0 <= sandbox.warm_up() < 1
    zygote, = zygotes
    assert (zygote.env, zygote.cwd, zygote.preload) == (sandbox.environment(str(tmp_path)), str(tmp_path), ["torch"])
    assert zygote.asked == [("ready", runner.ZYGOTE_READY_SECONDS)] and sandbox.forking_zygote() is zygote
    sandbox.close()


def test_a_zygote_that_never_gets_ready_means_spawning(tmp_path, zygotes, monkeypatch):
    monkeypatch.setattr(FakeZygote, "wait_ready", lambda self, timeout: False)
    sandbox = Sandbox(str(tmp_path / "t.py"), str(tmp_path), "t", fork=True)
    sandbox.warm_up()
    assert sandbox.forking_zygote() is None and sandbox.fork is False
    Sandbox(str(tmp_path / "t.py"), str(tmp_path), "t", fork=False).warm_up()
    monkeypatch.setattr(runner, "CAN_FORK", False)
    Sandbox(str(tmp_path / "t.py"), str(tmp_path), "t", fork=True).warm_up()
    assert len(zygotes) == 1


def test_a_forked_probe_is_the_zygotes_child(tmp_path, zygotes):
    sandbox = Sandbox(str(tmp_path / "t.py"), str(tmp_path), "t", fork=True)
    sandbox.warm_up()
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    probe = sandbox.start({"home": "/h"}, output_write, result_write)
    zygote = zygotes[0]
    assert isinstance(probe, runner.ForkedProbe) and probe.zygote is zygote and probe.pid == zygote.child.pid
    _, order, modes, timeout = zygote.asked[1]
    assert order == {"home": "/h"} and len(modes) == 2 and timeout == runner.FORK_REPLY_SECONDS
    for fd in (output_write, result_write):
        with pytest.raises(OSError):
            os.fstat(fd)
    assert probe.poll() == 5 and probe.finish() == 5
    assert zygote.asked[-2:] == [("exit_code", probe.pid, None), ("exit_code", probe.pid, 2.0)]
    sandbox.end(runner.SpawnedProbe(zygote.child))
    os.close(output_read)
    os.close(result_read)


def test_when_the_zygote_cannot_fork_probes_are_spawned(tmp_path, zygotes, spawning, monkeypatch):
    monkeypatch.setattr(FakeZygote, "forks", False)
    spawning.fork = True
    found = spawning.run(str(tmp_path / "package"), "answer", {"x": 1}, 30)
    assert found.status == "ok" and spawning.fork is False and len(zygotes) == 1
    assert [asked[0] for asked in zygotes[0].asked] == ["ready", "fork"]


def test_the_probe_request_holds_the_limits_and_a_process_cap_only_for_another_user(tmp_path, monkeypatch):
    write(tmp_path / "package" / "__init__.py", "")
    (tmp_path / "work").mkdir()
    orders = []

    def answers(self, order, output_write, result_write):
        """Start a sleeper for the probe, answer for it, and take its folder away (as a cleaner might)."""
        orders.append(order)
        os.write(result_write, (self.token + '\n{"ok": true, "value": 7}').encode())
        os.close(result_write)
        os.close(output_write)
        shutil.rmtree(os.path.dirname(order["home"]) if self.user else order["home"])
        return runner.SpawnedProbe(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                                    start_new_session=True))
    monkeypatch.setattr(Sandbox, "start", answers)
    monkeypatch.setattr(runner.sandbox, "namespaces_work", lambda: True)
    limits = Limits(memory_bytes=1, file_bytes=2, processes=3)
    for user, processes in ((None, None), (types.SimpleNamespace(pw_uid=2 ** 31 - 7, pw_gid=2 ** 31 - 7), 3)):
        sandbox = Sandbox(str(tmp_path / "t.py"), str(tmp_path / "work"), "tok", limits, user=user, fork=False)
        assert sandbox.run(str(tmp_path / "package"), "observe", {"k": 1}, 30).value == 7
        request = orders[-1]["request"]
        assert request == dict(token="tok", tests_file=str(tmp_path / "t.py"), probe="observe", kwargs={"k": 1},
                               package_dir=request["package_dir"], memory_bytes=1, file_bytes=2, processes=processes)
        assert request["package_dir"].endswith("submission")
    assert os.listdir(tmp_path / "work") == []


def test_sweeping_is_for_another_user_without_namespaces(tmp_path, monkeypatch):
    user = types.SimpleNamespace(pw_uid=2 ** 31 - 7, pw_gid=2 ** 31 - 7)
    for works in (True, False):
        monkeypatch.setattr(runner.sandbox, "namespaces_work", lambda: works)
        assert Sandbox(str(tmp_path / "t.py"), str(tmp_path), "t", user=user).sweeping is not works
        assert Sandbox(str(tmp_path / "t.py"), str(tmp_path), "t").sweeping is False


def sleepers(count):
    return [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
            for _ in range(count)]


def test_the_sweep_kills_the_users_processes_outside_live_probes(tmp_path, monkeypatch):
    user = types.SimpleNamespace(pw_uid=4242, pw_gid=4242)
    monkeypatch.setattr(runner.sandbox, "namespaces_work", lambda: False)
    live, stray = sleepers(2)
    asked = []

    def of_user(uid):
        asked.append(uid)
        return [(p.pid, p.pid) for p in (live, stray) if p.poll() is None]
    monkeypatch.setattr(runner, "processes_of", of_user)
    sandbox = Sandbox(str(tmp_path / "t.py"), str(tmp_path), "t", user=user)
    sandbox.live_groups.add(live.pid)
    started = time.monotonic()
    sandbox.sweep()
    assert time.monotonic() - started < 0.9 and asked[0] == 4242
    assert stray.wait(5) == -signal.SIGKILL and live.poll() is None
    sandbox.kill_all()
    assert live.wait(5) == -signal.SIGKILL


def test_the_sweep_gives_up_after_its_rounds(tmp_path, monkeypatch):
    user = types.SimpleNamespace(pw_uid=4242, pw_gid=4242)
    monkeypatch.setattr(runner.sandbox, "namespaces_work", lambda: False)
    rounds = []
    monkeypatch.setattr(runner, "processes_of", lambda uid: rounds.append(uid) or [(2 ** 22 + 17, 1)])
    Sandbox(str(tmp_path / "t.py"), str(tmp_path), "t", user=user).sweep()
    assert len(rounds) == runner.SWEEP_ROUNDS


NAMED = ("import ctypes, os, sys, time; ctypes.CDLL(None).prctl(15, 'é) 1 2 3'.encode(), 0, 0, 0); "
         "{become}; print(os.getsid(0), flush=True); time.sleep(60)")


def test_processes_of_reads_odd_names_and_the_real_user(tmp_path):
    plain, = [subprocess.Popen([sys.executable, "-c", NAMED.format(become="pass")], stdout=subprocess.PIPE,
                               start_new_session=True)]
    session = int(plain.stdout.readline())
    assert (plain.pid, session) in runner.processes_of(os.getuid())
    plain.kill()
    plain.wait()
    plain.stdout.close()
    if os.geteuid() != 0:
        pytest.skip("only root can run a process whose real and effective users differ")
    other = subprocess.Popen([sys.executable, "-c", NAMED.format(become="os.setresuid(4243, 0, 0)")],
                             stdout=subprocess.PIPE, start_new_session=True)
    other.stdout.readline()
    assert [pid for pid, _ in runner.processes_of(4243)] == [other.pid]
    other.kill()
    other.wait()
    other.stdout.close()


def test_end_waits_a_moment_for_the_probe_to_leave_on_its_own(tmp_path):
    sandbox = sandbox_for(tmp_path)
    process = subprocess.Popen([sys.executable, "-c", "import signal, sys, time; "
                                "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(0.1), sys.exit(7))); "
                                "print(flush=True); time.sleep(60)"], start_new_session=True, stdout=subprocess.PIPE)
    process.stdout.readline()
    sandbox.end(runner.SpawnedProbe(process))
    assert process.wait() == 7
    quick = subprocess.Popen([sys.executable, "-c", "import time; print(flush=True); time.sleep(60)"],
                             start_new_session=True, stdout=subprocess.PIPE)
    quick.stdout.readline()
    started = time.monotonic()
    sandbox.end(runner.SpawnedProbe(quick))
    assert time.monotonic() - started < runner.TERM_GRACE_SECONDS - 0.05 and quick.wait() == -signal.SIGTERM
    for p in (process, quick):
        p.stdout.close()


def test_a_probe_never_imports_from_the_graders_working_folder(spawning, tmp_path, monkeypatch):
    write(tmp_path / "decoy" / "grading" / "__init__.py", "raise SystemExit(9)\n")
    monkeypatch.chdir(tmp_path / "decoy")
    found = spawning.run(str(tmp_path / "package"), "answer", {"x": 1}, 30)
    assert found.status == "ok" and found.value["x"] == 1
