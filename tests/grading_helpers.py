"""
Helpers of the grading machinery's tests: writing a file, and a TestResult
made up for the report and the command line.
"""

from grading.registry import GradedTest
from grading.suite import TestResult as Result


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def result(test_id="1e-0-basic", status="pass", score=None, message="", output="", seconds=1.25, points=5,
           description="span corruption: truncation length"):
    visibility = test_id.rsplit("-", 1)[1]
    test = GradedTest(test_id, float(points), visibility, 60.0, description, None)
    return Result(test, status, float(points if score is None and status == "pass" else score or 0), message,
                  output, seconds)
