"""
The registry of graded tests and probes.

A graded test is one function decorated with @graded, naming its id, points,
visibility and time limit; its docstring's first line is its description.
It runs in the grading process and never touches student code itself: it
asks for observations through ctx.run(probe, ...), where a probe is a
function decorated with @probe that runs in a fresh sandboxed process with
the submission imported, and returns plain data (numbers, strings, lists,
dicts); ctx.run_reference(probe, ...) runs the same probe on the hidden
bundle's reference in a trusted process (trusted.py). The test then judges
that data.
"""

import re
from dataclasses import dataclass
from typing import Callable

VISIBILITIES = ("basic", "hidden")
TEST_ID = re.compile(r"^\d+[a-z]+-\d+-(basic|hidden)$")


@dataclass(frozen=True)
class GradedTest:
    test_id: str
    points: float
    visibility: str
    timeout: float
    description: str
    function: Callable

    @property
    def part(self):
        """The handout part the test belongs to, e.g. '1e' for '1e-0-basic'."""
        return self.test_id.split("-")[0]


TESTS = {}


def graded(test_id, points, visibility, timeout):
    """Register a test function under `test_id`, worth `points`, limited to `timeout` seconds."""
    if not TEST_ID.match(test_id):
        raise ValueError(f"test id {test_id!r} should look like '1e-0-basic'")
    if visibility not in VISIBILITIES or not test_id.endswith(visibility):
        raise ValueError(f"test {test_id}: visibility must be one of {VISIBILITIES} and end its id")

    def register(function):
        earlier = TESTS.get(test_id)
        if earlier and earlier.function.__code__.co_filename != function.__code__.co_filename:
            raise ValueError(f"test id {test_id} is registered twice")
        doc = (function.__doc__ or "").strip()
        if not doc:
            raise ValueError(f"test {test_id} needs a docstring: its first line is the description")
        TESTS[test_id] = GradedTest(test_id, float(points), visibility, float(timeout),
                                    doc.splitlines()[0].strip(), function)
        return function

    return register


def probe(function):
    """Mark a function of the tests module as runnable inside the sandbox, as function(submission, **kwargs)."""
    function.is_probe = True
    return function


def select(selectors):
    """
    The tests named by `selectors`, in registration order: each selector is a
    test id, a part such as '1e', or 'basic' / 'hidden'; none selects all.
    Raises KeyError with the unknown selectors.
    """
    tests = list(TESTS.values())
    if not selectors:
        return tests
    unknown = [s for s in selectors
               if s not in VISIBILITIES and not any(s in (t.test_id, t.part) for t in tests)]
    if unknown:
        raise KeyError(unknown)
    return [t for t in tests if any(s in (t.test_id, t.part, t.visibility) for s in selectors)]
