"""
Naming the student's code that is not written yet, or that does the wrong
thing, in one line: which function, and which part of the handout it belongs
to (facts.STUDENT_FUNCTIONS). The stages (run.py) and the grader's probes
both say it this way, first, before any traceback:

    part (g): initialize_perceiver_model returned None: it is not written yet
    part (e): CharCorruptionDataset.__getitem__ raises NotImplementedError: it is not written yet

Standard library only: the grader's probes use it inside the sandbox.
"""

import functools
import os
import traceback

from .editions import EDITIONS
from .facts import STUDENT_FUNCTIONS


class PartFailure(Exception):
    """Student code of one part that is unwritten or does the wrong thing; the message is one line."""


def part_of(function):
    """'part (c)' for a function of STUDENT_FUNCTIONS; for another edition's (whose code a starter never
    runs), its part in the first edition that has it."""
    letters = STUDENT_FUNCTIONS.get(function) or next(e.parts[function] for e in EDITIONS.values()
                                                       if function in e.parts)
    return f"part ({letters})"


def error_line(error, limit=200):
    """'Type: the first line of its message' (at most `limit` characters of it), or 'Type' for an empty message."""
    lines = str(error).strip().splitlines()
    return type(error).__name__ + (f": {lines[0][:limit]}" if lines else "")


def unwritten(function, what):
    """The PartFailure of `function` that `what` (e.g. 'returned None'): it is not written yet."""
    return PartFailure(f"{part_of(function)}: {function} {what}: it is not written yet")


# What each second model's initializer must build, and the flag that builds it.
SECOND_MODELS = {'perceiver': ('initialize_perceiver_model', "down and up blocks", "mconf.perceiver = True"),
                 'rope': ('initialize_rope_model', "rotary position embeddings", "mconf.rope = True")}


def not_the_model(variant):
    """The message for an initializer of the second model `variant` that builds a plain GPT."""
    function, missing, flag = SECOND_MODELS[variant]
    return f"{part_of(function)}: {function} builds a GPT without {missing}: set {flag}"


def written(value, function, what='returned None'):
    """`value`, or PartFailure naming `function` when it is None (its region still holds the placeholder)."""
    if value is None:
        raise unwritten(function, what)
    return value


def unimplemented_function(error, package_dir=None):
    """
    The innermost student function in the traceback of a NotImplementedError
    (only frames of files under `package_dir`, when given), or one named in the
    error's text (a loader worker's traceback comes back as text); None if none.
    """
    frames = [frame for frame, _ in traceback.walk_tb(error.__traceback__)
              if package_dir is None or os.path.abspath(frame.f_code.co_filename).startswith(package_dir)]
    names = [getattr(frame.f_code, 'co_qualname', frame.f_code.co_name) for frame in frames]
    names += [name for name in STUDENT_FUNCTIONS if f"in {name.split('.')[-1]}\n" in str(error)]
    found = [name for name in names if name in STUDENT_FUNCTIONS]
    return found[-1] if found else None


def unimplemented_line(error, package_dir=None):
    """The one line that names the unwritten function behind a NotImplementedError."""
    function = unimplemented_function(error, package_dir)
    if function is None:
        return "some of your code raises NotImplementedError: it is not written yet"
    return f"{part_of(function)}: {function} raises NotImplementedError: it is not written yet"


def reported(body):
    """
    A grader probe body whose failures in student code come back as data:
    {"value": ...}, or {"failure": one line naming the function and the part,
    "traceback": the last frames, or "" for a PartFailure}.
    """
    @functools.wraps(body)
    def run(sub, **kwargs):
        try:
            return {"value": body(sub, **kwargs)}
        except PartFailure as failure:
            return {"failure": str(failure), "traceback": ""}
        except NotImplementedError as error:
            package_dir = os.path.dirname(os.path.abspath(sub.__file__))
            return {"failure": unimplemented_line(error, package_dir), "traceback": traceback.format_exc(limit=-2)}
    return run
