"""
The graders' package, shipped with grader.py (this assignment's tests): a
small autograder that imports nothing else of the project, so no code it
grades runs in its process. Tests are registered with @graded, each judged
in the grading process from plain data that @probe functions collect inside
fresh sandboxed processes, where the submission is imported. See registry.py for
how to write a test, runner.py and sandbox.py for the isolation, bundle.py
for the hidden bundle, results.py for Gradescope's results.json.
"""

from .bundle import HIDDEN_ENV, BundleError
from .cli import main
from .context import NotGraded, SubmissionError, SubmissionTimeout, TestFailure, check
from .registry import graded, probe

__all__ = ["HIDDEN_ENV", "BundleError", "NotGraded", "SubmissionError", "SubmissionTimeout", "TestFailure",
           "check", "graded", "main", "probe"]
