"""
What a grading run leaves: Gradescope's results.json (grading/results.py)
and the readable report (grading/report.py).
"""

import json
import os

import pytest

from grading import report, results
from grading.context import GRADED_ON_SUBMISSION

from grading_helpers import result


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
