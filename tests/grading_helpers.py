"""
Helpers of the grading machinery's tests: writing a file, a TestResult
made up for the report and the command line, the context of a hidden
prediction test scoring a stage's file, and a probe runner that spawns.
"""

from grading.bundle import HiddenBundle
from grading.context import Context
from grading.registry import GradedTest
from grading.runner import ProbeRunner
from grading.suite import TestResult as Result

STAGE_FILE = "vanilla.pretrain.dev.predictions"  # made by vanilla_eval_dev_with_pretrain, scored on birth_dev.tsv


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


def scoring_context(snapshot, labels, mode="files", thresholds=None):
    """A grading context of `snapshot`, whose hidden birth_dev.tsv holds `labels`, with the test's thresholds."""
    test = GradedTest("1f-1-hidden", 5.0, "hidden", 50.0, "d", None, thresholds or {})
    bundle = HiddenBundle("/bundle", {"birth_dev.tsv": labels}, {}, reference="/ref", predictions=mode)
    return Context(test, None, "/package", snapshot, bundle, "/scratch", 0.0)


def runner_for(tmp_path, **kwargs):
    return ProbeRunner(str(tmp_path), "t0ken", fork=False, **kwargs)
