"""
Failures in student code, as data (src/assignment/not_written_yet.py): a
function that is not written yet (it returns None, or raises
NotImplementedError, in this process or in a loader worker) is named with
its part of the handout in one line, before any traceback; an error is
told in one line even without a message. The probes run on packages made
here and on the reference (src/submission).
"""

import importlib.util
import os
import sys
import types

import pytest

import submission
from assignment import not_written_yet
from assignment.editions import EDITIONS
from grading.handout import models


def test_an_unwritten_function_is_named_with_its_part():
    assert not_written_yet.part_of("finetune") == "part (c and f)"
    assert str(not_written_yet.unwritten("pretrain", "returned None")) == \
        "part (f): pretrain returned None: it is not written yet"
    assert not_written_yet.written(0, "pretrain") == 0
    with pytest.raises(not_written_yet.PartFailure, match=r"^part \(g\): initialize_perceiver_model returned None"):
        not_written_yet.written(None, "initialize_perceiver_model")


@pytest.mark.parametrize("edition, other, part, own", [
    ("fall2024", "initialize_rope_model", "part (h)", "part (c)"),
    ("winter2025", "DownProjectBlock.forward", "part (g)", "part (d)")])
def test_another_editions_function_is_named_with_its_part_there(monkeypatch, edition, other, part, own):
    """A starter's STUDENT_FUNCTIONS hold its own edition's functions only; the other second model's, which
    it never runs, are named with their part in the first edition that has them, and its own functions with
    its own letters (the RoPE editions' vanilla model is part (d), the earlier ones' part (c)). Kills that
    fallback dropped (a KeyError or StopIteration where the grader names the function), asked of another
    name, or taken for every function."""
    monkeypatch.setattr(not_written_yet, "STUDENT_FUNCTIONS", dict(EDITIONS[edition].parts))
    assert other not in not_written_yet.STUDENT_FUNCTIONS
    assert not_written_yet.part_of(other) == part
    assert not_written_yet.part_of("initialize_vanilla_model") == own


@pytest.mark.parametrize("error, line", [
    (ValueError(), "ValueError"),
    (RuntimeError("  \n"), "RuntimeError"),
    (RuntimeError("first\nsecond"), "RuntimeError: first"),
    (OSError("x" * 300), "OSError: " + "x" * 200),
])
def test_an_error_is_told_in_one_line_even_without_a_message(error, line):
    assert not_written_yet.error_line(error) == line


def student_package(tmp_path):
    """A package whose functions, named as the handout's, raise NotImplementedError; imported as a module object."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .helper import finetune, pretrain, unknown\n")
    (package / "helper.py").write_text("def finetune():\n    train()\n\n\n"
                                       "def train():\n    raise NotImplementedError\n\n\n"
                                       "def pretrain():\n    inner()\n\n\n"
                                       "def inner():\n    raise NotImplementedError\n\n\n"
                                       "def unknown():\n    raise NotImplementedError\n\n\n"
                                       "class DownProjectBlock:\n"
                                       "    def forward(self):\n        raise NotImplementedError\n")
    spec = importlib.util.spec_from_file_location("pkg_under_test", package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["pkg_under_test"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["pkg_under_test"], sys.modules["pkg_under_test.helper"]
    return module


def test_the_unwritten_function_is_the_innermost_student_function_of_the_package(tmp_path):
    sub = student_package(tmp_path)
    package_dir = str(tmp_path / "pkg")
    for call, innermost in ((sub.pretrain, "pretrain"), (sub.finetune, "train"),
                            (sub.helper.DownProjectBlock().forward, "DownProjectBlock.forward")):
        with pytest.raises(NotImplementedError) as caught:
            call()
        assert not_written_yet.unimplemented_function(caught.value, package_dir) == innermost
        assert not_written_yet.unimplemented_function(caught.value, str(tmp_path / "elsewhere")) is None
        assert not_written_yet.unimplemented_function(caught.value) == innermost
    with pytest.raises(NotImplementedError) as caught:
        sub.unknown()
    assert not_written_yet.unimplemented_function(caught.value, package_dir) is None


def test_a_loader_workers_traceback_text_names_the_function():
    error = NotImplementedError("Caught NotImplementedError in DataLoader worker process 0.\n"
                                "  File \"dataset.py\", line 9, in __getitem__\n    raise NotImplementedError\n")
    assert not_written_yet.unimplemented_function(error) == "CharCorruptionDataset.__getitem__"
    assert not_written_yet.unimplemented_line(error) == ("part (e): CharCorruptionDataset.__getitem__ raises "
                                                   "NotImplementedError: it is not written yet")
    assert not_written_yet.unimplemented_line(NotImplementedError("elsewhere")) == \
        "some of your code raises NotImplementedError: it is not written yet"


def raised_outside(tmp_path, source, call):
    """The NotImplementedError that `call`, a function of `source` compiled as a file outside every package
    (tmp_path/elsewhere.py), raises."""
    namespace = {}
    exec(compile(source, str(tmp_path / "elsewhere.py"), "exec"), namespace)
    with pytest.raises(NotImplementedError) as caught:
        eval(call, namespace)
    return caught.value


def test_a_function_of_a_student_functions_name_outside_the_package_is_not_named(tmp_path):
    """Kills the package's folder not passed on to unimplemented_function (by unimplemented_line and
    forward_failure): a frame of another file whose function has a student function's name is not the student's."""
    error = raised_outside(tmp_path, "def pretrain():\n    raise NotImplementedError\n", "pretrain()")
    package_dir = os.path.dirname(os.path.abspath(submission.__file__))
    assert not_written_yet.unimplemented_line(error) == \
        "part (f): pretrain raises NotImplementedError: it is not written yet"
    assert not_written_yet.unimplemented_line(error, package_dir) == \
        "some of your code raises NotImplementedError: it is not written yet"
    error = raised_outside(tmp_path, "class UpProjectBlock:\n    def forward(self):\n        raise NotImplementedError\n",
                           "UpProjectBlock().forward()")
    assert str(models.forward_failure(error, submission, "forward pass")) == \
        "part (g): the perceiver's forward pass at block size raises NotImplementedError"


def test_a_python_without_co_qualname_names_the_function_by_co_name(monkeypatch):
    """Kills the fallback to co_name lost (Python before 3.11 has no co_qualname)."""
    code = types.SimpleNamespace(co_name="pretrain", co_filename=os.path.abspath(submission.__file__))
    monkeypatch.setattr(not_written_yet.traceback, "walk_tb", lambda tb: [(types.SimpleNamespace(f_code=code), 1)])
    assert not_written_yet.unimplemented_function(NotImplementedError()) == "pretrain"


def test_reported_turns_unwritten_code_into_one_line(tmp_path):
    sub = student_package(tmp_path)

    def probe_pretrain(sub, twice):
        return {"twice": 2 * twice} if twice else sub.pretrain()

    run = not_written_yet.reported(probe_pretrain)
    assert run.__name__ == "probe_pretrain"
    assert run(sub, twice=3) == {"value": {"twice": 6}}
    failed = run(sub, twice=0)
    assert failed["failure"] == "part (f): pretrain raises NotImplementedError: it is not written yet"
    assert "NotImplementedError" in failed["traceback"] and "probe_pretrain" not in failed["traceback"]
    named = not_written_yet.reported(lambda sub: sub.unknown())
    assert named(sub)["failure"] == "some of your code raises NotImplementedError: it is not written yet"
    sub.helper.unknown.__code__ = sub.helper.unknown.__code__.replace(co_name="pretrain", co_qualname="pretrain")
    assert named(sub)["failure"] == "part (f): pretrain raises NotImplementedError: it is not written yet"
    refused = not_written_yet.reported(lambda sub: not_written_yet.written(None, "train"))(sub)
    assert refused == {"failure": "part (c): train returned None: it is not written yet", "traceback": ""}
