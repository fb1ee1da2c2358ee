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

The tests are those of the grading edition (assignment/editions.py): the
checkout's own (a starter's facts name it), else $GRADER_EDITION, else the
seed's. A test declared for one second model (second_model='perceiver' or
'rope') is graded in that model's editions only. In an edition other than
the seed's, a test whose function is named after a judge of the edition's
table takes that test's id, points and thresholds there: grader.py's
decorators give the seed's (the RoPE tests, the latest RoPE cohort's).
"""

import contextlib
import inspect
import math
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from assignment.editions import EDITIONS, SEED_EDITION
from assignment.facts import EDITION as CHECKOUT_EDITION
from assignment.not_written_yet import error_line

from .sandbox import load_module

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
DECLARED = []  # (the decorator's arguments, the function) of every test declared, in order
EDITION_ENV = "GRADER_EDITION"
GRADING = {"edition": CHECKOUT_EDITION or os.environ.get(EDITION_ENV) or SEED_EDITION}
if GRADING["edition"] not in EDITIONS:  # an unknown $GRADER_EDITION: the command line says so in one line
    GRADING["edition"] = SEED_EDITION


def source_of(function):
    """The file that defines `function`, under any decorators (for a probe: the module the sandbox loads)."""
    return os.path.abspath(inspect.unwrap(function).__code__.co_filename)


def graded(test_id, points, visibility, timeout, second_model=None, **thresholds):
    """Declare a test function under `test_id`, worth `points`, limited to `timeout` seconds (for the
    editions of `second_model` only, when given); it is registered as the grading edition grades it."""
    if not TEST_ID.match(test_id):
        raise BadTest(f"test id {test_id!r} should look like '1e-0-basic'")
    if visibility not in VISIBILITIES or not test_id.endswith(visibility):
        raise BadTest(f"test {test_id}: visibility must be one of {VISIBILITIES} and end its id")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in thresholds.values()):
        raise BadTest(f"test {test_id}: thresholds must be numbers")

    def declare(function):
        doc = (function.__doc__ or "").strip()
        if not doc:
            raise BadTest(f"test {test_id} needs a docstring: its first line is the description")
        declared = dict(test_id=test_id, points=points, timeout=timeout, second_model=second_model,
                        thresholds=thresholds)
        DECLARED.append((declared, function))
        register(function, in_edition(declared, function, GRADING["edition"]))
        return function

    return declare


def in_edition(declared, function, edition):
    """A declared test's arguments as `edition` grades it: for a function of grader.py named after one of
    the edition's judges, its table's id, points and thresholds (a hidden bundle's test keeps its own);
    None where the test is another second model's."""
    this = EDITIONS[edition]
    if declared["second_model"] not in (None, this.second_model):
        return None
    table = {t.judges: t for t in this.tests}
    entry = table.get(function.__name__)
    if entry is None or edition == SEED_EDITION or source_of(function) in BUNDLE_FILES:
        return declared
    return dict(declared, test_id=entry.id, points=entry.points, thresholds=dict(entry.thresholds))


def use_edition(edition):
    """Grade `edition` (a name of EDITIONS): the tests declared so far registered anew under it."""
    if edition not in EDITIONS:
        raise KeyError(edition)
    GRADING["edition"] = edition
    TESTS.clear()
    for declared, function in DECLARED:
        register(function, in_edition(declared, function, edition))


@contextlib.contextmanager
def grading(edition):
    """Grade `edition` inside the block, and the edition graded before it after."""
    before = GRADING["edition"]
    use_edition(edition)
    try:
        yield
    finally:
        use_edition(before)


def register(function, arguments):
    """Put `function` in TESTS with its `arguments` as in_edition gives them (none: not in this edition);
    a bundle's test may replace grader.py's."""
    if arguments is None:
        return
    test_id, points, timeout, thresholds = (arguments[name] for name in ("test_id", "points", "timeout", "thresholds"))
    visibility = test_id.rsplit("-", 1)[1]
    doc = function.__doc__.strip()
    source = source_of(function)
    earlier = TESTS.get(test_id)
    replaces = None
    if earlier is not None and earlier.source != source:
        if source not in BUNDLE_FILES or earlier.source in BUNDLE_FILES:
            raise BadTest(f"test id {test_id} is registered twice")
        replaces = earlier
    TESTS[test_id] = GradedTest(test_id, float(points), visibility, float(timeout), doc.splitlines()[0].strip(),
                                function, dict(thresholds), source, replaces)


def probe(function):
    """Mark a function as runnable inside the sandbox, as function(submission, **kwargs)."""
    function.is_probe = True
    return function


def load_bundle_tests(paths):
    """
    Import each of a hidden bundle's test files, whose @graded tests join
    TESTS (replacing the test of grader.py with the same id), compiled from
    its text (sandbox.load_module). Raises ValueError with one line naming the
    file that registers a bad test or does not import.
    """
    for number, path in enumerate(paths):
        BUNDLE_FILES.append(os.path.abspath(path))
        try:
            load_module(f"hidden_tests_{number}", path)
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
