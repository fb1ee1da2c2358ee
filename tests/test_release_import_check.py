"""
The release's check that a starter imports (checks.import_failure): in a
child forked from this process (src/instructors/release/import_check.py)
it finds what a new interpreter finds, on small trees made here, whose
modules import nothing heavy. Each case runs both ways.
"""

import os
import site
import sys
import types

import pytest

from grading_helpers import write
from instructors.release import checks, import_check


def test_a_forked_check_counts_an_exit_at_import_as_a_failure(tmp_path, monkeypatch):
    """Kills SystemExit let through the child's handler, where it would end the child with status 0. It is
    the file's first test: a check that took this process for the child would end it here, with status 1."""
    monkeypatch.setattr(import_check, "FORK", True)
    write(tmp_path / "src" / "pkg" / "__init__.py", "import sys\nsys.exit(0)\n")
    assert checks.import_failure(str(tmp_path)) == "SystemExit: 0"


@pytest.fixture(params=[True, False], ids=["forked", "new interpreter"])
def forked(request, monkeypatch):
    """Each way of checking, the other made to fail: no new interpreter where it forks, no fork where it does not."""
    monkeypatch.setattr(import_check, "FORK", request.param)
    if request.param:
        monkeypatch.setattr(checks.subprocess, "run", lambda *args, **kwargs: pytest.fail("a new interpreter"))
    else:
        monkeypatch.setattr(import_check.os, "fork", lambda: pytest.fail("a fork"))
    return request.param


CASES = {
    "a tree that imports": ({"pkg/noisy.py": "import os, sys\nos.write(2, b'fd 2')\nsys.stderr.write('stderr')\n"}, None),
    "a module missing": ({"pkg/a.py": "import no_such_module_anywhere\n"},
                         "ModuleNotFoundError: No module named 'no_such_module_anywhere'"),
    "a module of the repository the starter lacks": ({"pkg/a.py": "import instructors.release.checks\n"},
                                                     "ModuleNotFoundError: No module named 'instructors'"),
    "an error at import": ({"pkg/a.py": "raise ValueError('not at import')\n"}, "ValueError: not at import"),
    "an error that cannot be written as it is": ({"pkg/a.py": "raise ValueError('\\udce9')\n"},
                                                 "ValueError: \\udce9"),
    "an exit without a word, after the pipes": ({"pkg/a.py": "import os, time\nos.closerange(3, 4096)\n"
                                                              "time.sleep(0.2)\nos._exit(3)\n"}, "exit status 3"),
    "the starter's own module of a name the repository uses": (
        {"assignment/__init__.py": "OWN = 'starter'\n",
         "pkg/a.py": "import assignment\nassert assignment.OWN == 'starter', assignment\n"}, None),
    "a module beside src/ found from the starter's top": ({"../grader.py": "TOP = 1\n",
                                                           "pkg/a.py": "import grader\nassert grader.TOP == 1\n"}, None),
    "the caller's environment": ({"pkg/a.py": "import os\nassert os.environ['RELEASE_CHECK'] == 'kept'\n"}, None),
}


@pytest.mark.parametrize("files, failure", CASES.values(), ids=CASES.keys())
def test_the_starter_imports_as_in_a_new_interpreter(tmp_path, forked, files, failure, monkeypatch, capfd):
    """Kills modules of this process kept or the starter's own forgotten, the starter's top or src/ not
    searched, an error missed or misreported, the environment dropped, output or bytecode left behind."""
    monkeypatch.setenv("RELEASE_CHECK", "kept")
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as in a process started without it
    write(tmp_path / "src" / "pkg" / "__init__.py", "import os, sys\nos.write(1, b'fd 1')\n"
                                                    "sys.stdout.write('stdout')\nassert __name__ == 'pkg'\n")
    for name, text in files.items():
        write(tmp_path / "src" / name, text)
    assert checks.import_failure(str(tmp_path)) == failure
    assert capfd.readouterr() == ("", "")
    assert not list(tmp_path.rglob("__pycache__"))


def test_the_forked_check_leaves_this_process_as_it_was(tmp_path, forked):
    """Kills the modules forgotten, the path or the folder changed here rather than in the child."""
    write(tmp_path / "src" / "pkg" / "__init__.py", "import sys\nsys.modules['os'] = None\n")
    modules, path, folder = dict(sys.modules), list(sys.path), os.getcwd()
    assert checks.import_failure(str(tmp_path)) is None
    assert dict(sys.modules) == modules and sys.path == path and os.getcwd() == folder


def test_the_installed_places_hold_the_standard_library_and_torch_but_not_the_repository():
    """Kills places that miss the packages a starter imports, or that take in this repository's modules."""
    import torch
    places = import_check.installed_places()
    assert import_check.is_installed(os, places) and import_check.is_installed(torch, places)
    assert import_check.is_installed(sys, places)  # built in: loaded from no file
    assert os.path.realpath(site.getusersitepackages()) in places
    namespace = types.ModuleType("namespace")  # a package of folders alone
    namespace.__path__ = [os.path.dirname(os.__file__)]
    assert import_check.is_installed(namespace, places)
    namespace.__path__.append(os.path.dirname(checks.__file__))
    assert not import_check.is_installed(namespace, places)
    assert not import_check.is_installed(checks, places)
    assert not import_check.within(os.path.dirname(os.path.dirname(checks.__file__)), places)


def test_the_child_finds_the_starter_and_the_installed_places_alone(tmp_path, monkeypatch):
    """What the child does, done here (mutation testing sees no child's calls) and undone before the asserts:
    kills a module of this process kept or an installed one forgotten, a path or folder other than the
    starter's, bytecode written."""
    write(tmp_path / "src" / "pkg" / "__init__.py", "")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    main = types.ModuleType("__main__")
    main.__file__ = str(tmp_path / "release.py")  # as the release's own __main__, of no installed place
    monkeypatch.setitem(sys.modules, "__main__", main)
    places = import_check.installed_places()
    modules, path, folder = dict(sys.modules), list(sys.path), os.getcwd()
    try:
        import_check.import_as_a_new_interpreter(str(tmp_path), ["pkg"])
        seen = dict(names=set(sys.modules), path=list(sys.path), folder=os.getcwd(), pkg=sys.modules["pkg"].__file__,
                    bytecode=not sys.dont_write_bytecode)
    finally:
        sys.modules.clear()
        sys.modules.update(modules)
        sys.path[:] = path
        os.chdir(folder)
        sys.path_importer_cache.clear()
    assert seen["folder"] == str(tmp_path) and seen["pkg"] == str(tmp_path / "src" / "pkg" / "__init__.py")
    assert seen["path"][:2] == ["", str(tmp_path / "src")] and sys.path[-1] in seen["path"][2:]
    assert all(import_check.within(entry, places) for entry in seen["path"][2:])
    assert {"torch", "os", "sys", "__main__"} <= seen["names"]
    assert not {"instructors", "assignment", "conftest"} & seen["names"]
    assert not seen["bytecode"]
