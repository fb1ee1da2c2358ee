"""
The registry of graded tests and probes.

A graded test is one function decorated with @graded, naming its id, points,
visibility, time limit and, for a test that compares a score with a bound,
its thresholds (e.g. min_accuracy=0.10, which a hidden bundle's
thresholds.json may override for that test); its docstring's first line is
its description. It runs in the grading process and never touches student
code itself: it asks for observations through ctx.run(probe, ...), where a
probe is a function decorated with @probe that runs in a fresh sandboxed
process with the submission imported, and returns plain data (numbers,
strings, lists, dicts); ctx.run_reference(probe, ...) runs the same probe on
the hidden bundle's reference in a trusted process (trusted.py). The test
then judges that data.

grader.py registers the assignment's tests; a hidden bundle's tests/*.py
(load_bundle_tests) add tests, or replace a test of grader.py with the same id.
"""

import importlib.util
import inspect
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

from assignment.not_written_yet import error_line

VISIBILITIES = ("basic", "hidden")
TEST_ID = re.compile(r"^(\d+)([a-z]+)-(\d+)-(basic|hidden)$")


@dataclass(frozen=True)
class GradedTest:
    test_id: str
    points: float
    visibility: str
    timeout: float
    description: str
    function: Callable
    thresholds: dict = field(default_factory=dict)  # name -> number, as the decorator gives them
    source: str = ""  # the file that defines it
    replaces: Optional["GradedTest"] = None  # the test of grader.py that a bundle's test of the same id replaces

    @property
    def part(self):
        """The handout part the test belongs to, e.g. '1e' for '1e-0-basic'."""
        return self.test_id.split("-")[0]


class BadTest(ValueError):
    """A test the registry refuses: a bad id, visibility, thresholds or docstring, or an id given twice."""


TESTS = {}
BUNDLE_FILES = []  # the hidden bundle's test files, once imported; the last one's tests may replace grader.py's


def source_of(function):
    """The file that defines `function`, under any decorators (for a probe: the module the sandbox loads)."""
    return os.path.abspath(inspect.unwrap(function).__code__.co_filename)


def graded(test_id, points, visibility, timeout, **thresholds):
    """Register a test function under `test_id`, worth `points`, limited to `timeout` seconds."""
    if not TEST_ID.match(test_id):
        raise BadTest(f"test id {test_id!r} should look like '1e-0-basic'")
    if visibility not in VISIBILITIES or not test_id.endswith(visibility):
        raise BadTest(f"test {test_id}: visibility must be one of {VISIBILITIES} and end its id")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in thresholds.values()):
        raise BadTest(f"test {test_id}: thresholds must be numbers")

    def register(function):
        doc = (function.__doc__ or "").strip()
        if not doc:
            raise BadTest(f"test {test_id} needs a docstring: its first line is the description")
        source = source_of(function)
        earlier = TESTS.get(test_id)
        replaces = None
        if earlier is not None and earlier.source != source:
            if source not in BUNDLE_FILES or earlier.source in BUNDLE_FILES:
                raise BadTest(f"test id {test_id} is registered twice")
            replaces = earlier
        TESTS[test_id] = GradedTest(test_id, float(points), visibility, float(timeout), doc.splitlines()[0].strip(),
                                    function, dict(thresholds), source, replaces)
        return function

    return register


def probe(function):
    """Mark a function as runnable inside the sandbox, as function(submission, **kwargs)."""
    function.is_probe = True
    return function


def load_bundle_tests(paths):
    """
    Import each of a hidden bundle's test files, whose @graded tests join
    TESTS (replacing the test of grader.py with the same id). Raises ValueError
    with one line naming the file that registers a bad test or does not import.
    """
    for number, path in enumerate(paths):
        BUNDLE_FILES.append(os.path.abspath(path))
        try:
            spec = importlib.util.spec_from_file_location(f"hidden_tests_{number}", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        except BadTest as refused:
            raise ValueError(f"{path}: {refused}") from None
        except Exception as error:
            raise ValueError(f"{path} does not import: {error_line(error, limit=None)}") from None


def order(test):
    """Tests sort by part number, part letter, then test number: 1c-1 before 1d-0 before 1f-10."""
    number, letters, index, _ = TEST_ID.match(test.test_id).groups()
    return int(number), letters, int(index)


def select(selectors):
    """
    The tests named by `selectors`, in id order: each selector is a test id,
    a part such as '1e', or 'basic' / 'hidden'; none selects all.
    Raises KeyError with the unknown selectors.
    """
    tests = sorted(TESTS.values(), key=order)
    if not selectors:
        return tests
    unknown = [s for s in selectors
               if s not in VISIBILITIES and not any(s in (t.test_id, t.part) for t in tests)]
    if unknown:
        raise KeyError(unknown)
    return [t for t in tests if any(s in (t.test_id, t.part, t.visibility) for s in selectors)]
