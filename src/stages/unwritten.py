"""
Naming the student's code that is not written yet. A stage that reaches a
region still holding its placeholder (a None result, a trainer that saved
nothing, a NotImplementedError) says first, in one line, which function it
is and which part of the handout it belongs to (facts.STUDENT_FUNCTIONS).
"""

import traceback

from .facts import STUDENT_FUNCTIONS
from .inputs import InputError


class Unwritten(InputError):
    """Student code that is not written yet: reported as one line, exit status 1."""


def part_of(function):
    return f"part ({STUDENT_FUNCTIONS[function]})"


def require(value, function, what='returned None'):
    """`value`, or Unwritten naming `function` when it is None."""
    if value is None:
        raise Unwritten(f"{part_of(function)}: {function} {what}: it is not written yet")
    return value


def unimplemented_function(error):
    """The innermost student function in the traceback of a NotImplementedError, or None."""
    names = [getattr(frame.f_code, 'co_qualname', frame.f_code.co_name)
             for frame, _ in traceback.walk_tb(error.__traceback__)]
    names += [name for name in STUDENT_FUNCTIONS if f"in {name.split('.')[-1]}\n" in str(error)]  # from a worker
    found = [name for name in names if name in STUDENT_FUNCTIONS]
    return found[-1] if found else None


def unimplemented_line(error):
    """The one line that names the unwritten function behind a NotImplementedError."""
    function = unimplemented_function(error)
    if function is None:
        return "some of your code raises NotImplementedError: it is not written yet"
    return f"{part_of(function)}: {function} raises NotImplementedError: it is not written yet"
