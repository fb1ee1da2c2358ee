"""
The runner of plausible mutants (src/instructors/plausible.py), on a small
tree made here: a mutant the tests catch is killed, one they miss survives
(with the catalogue's reason, or a call for a test), one whose text is gone
no longer applies and fails the run; a module whose tests fail unchanged
fails it too; the table gives each module's score, and the tree measured is
never changed.
"""

import pytest

from instructors import mutate
from instructors.plausible import Module, Mutant, measure_all

CALC = '''def add(a, b):
    return a + b


def half(a):
    return a / 2
'''

ADD = Mutant("add subtracts", "return a + b", "return a - b")
HALF = Mutant("half doubles", "return a / 2", "return a * 2", uncaught="no test calls half")
UNTESTED = Mutant("half returns 2", "return a / 2", "return 2")
GONE = Mutant("mul multiplies by zero", "return a * b", "return 0")


def tree(root, test="assert add(2, 3) == 5"):
    """A tree with src/calc.py and a test of it (pytest finds src/ by pyproject.toml); its root."""
    (root / "src").mkdir()
    (root / "src" / "calc.py").write_text(CALC)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(f"from calc import add\n\n\ndef test_add():\n    {test}\n")
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    return root


def test_killed_surviving_and_no_longer_applying_mutants(tmp_path, capsys):
    root = tree(tmp_path)
    module = Module("src/calc.py", ("tests/test_calc.py",), (ADD, HALF, UNTESTED, GONE))
    assert measure_all([module], root) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in lines[:6]] == [
        "[  1/4] src/calc.py: killed", "[  2/4] src/calc.py: survived", "    not caught here: no test calls half",
        "[  3/4] src/calc.py: survived",
        "    no test catches it: write one, or give the reason none can in the catalogue",
        "[  4/4] src/calc.py: no longer applies"]
    assert lines[0].endswith("add subtracts") and lines[5].endswith("mul multiplies by zero")
    assert lines[-1] == "| `src/calc.py` | 3 | 1 | 33% (1 no longer apply) |"
    assert (root / "src" / "calc.py").read_text() == CALC


def test_a_module_whose_mutants_are_all_killed_passes(tmp_path, capsys):
    assert measure_all([Module("src/calc.py", ("tests/test_calc.py",), (ADD,))], tree(tmp_path)) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "| `src/calc.py` | 1 | 1 | 100% |"


def test_tests_that_fail_unchanged_fail_the_run(tmp_path, capsys):
    assert measure_all([Module("src/calc.py", ("tests/test_calc.py",), (ADD,))], tree(tmp_path, "assert False")) == 1
    out = capsys.readouterr().out
    assert "src/calc.py: its tests fail on the unchanged tree: fix them first\n" in out
    assert out.splitlines()[-1] == "| `src/calc.py` | 1 | - | its tests fail unchanged |"


def test_a_catalogue_file_is_read_and_measured_in_place_of_the_projects(tmp_path, monkeypatch):
    """Kills --catalogue ignored (the project's own catalogue measured instead), or accepted without
    --plausible."""
    (tmp_path / "set.py").write_text('from .plausible import Module, Mutant\n\nMODULES = (Module(\n'
                                     '    "src/calc.py", ("tests/test_calc.py",), (Mutant("x", "a", "b"),)),)\n')
    assert list(mutate.load_catalogue(tmp_path / "set.py")) == ["src/calc.py"]
    measured = []
    monkeypatch.setattr(mutate.plausible, "measure_all", lambda modules: measured.extend(modules) or 0)
    with pytest.raises(SystemExit) as ended:
        mutate.main(["--plausible", "--catalogue", str(tmp_path / "set.py")])
    assert ended.value.code == 0 and [module.path for module in measured] == ["src/calc.py"]
    with pytest.raises(SystemExit) as refused:
        mutate.main(["--catalogue", str(tmp_path / "set.py")])
    assert refused.value.code == 2
