"""
The runner of plausible mutants (src/instructors/plausible.py), on a small
tree made here: a mutant the tests catch is killed, one they miss survives
(with the catalogue's reason, or a call for a test), one whose text is gone
no longer applies and fails the run; a module whose tests fail unchanged
fails it too; the table gives each module's score, a module passes from 90%
on, each mutant's run is limited to five times the tests' time plus a
minute, the tree measured is never changed and its copies are removed. The
copy of the tree (src/instructors/tree_copy.py) leaves outputs and caches
out, and its tests run without the work tree's PYTHONPATH. A catalogue is
loaded by its path: tests/mutants/written_with_the_tests.py, or the file
--catalogue names; a path that holds none is one line and exit 1.
"""

import ast
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from instructors import mutate, plausible, tree_copy
from instructors.plausible import KILLED, NO_LONGER_APPLIES, SURVIVED, Module, Mutant, measure_all

REPO = Path(__file__).resolve().parents[1]

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


def test_a_module_whose_mutants_are_all_killed_passes_and_its_copies_are_removed(tmp_path, capsys, monkeypatch):
    (tmp_path / "temporary").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temporary"))
    (tmp_path / "root").mkdir()
    assert measure_all([Module("src/calc.py", ("tests/test_calc.py",), (ADD,))], tree(tmp_path / "root")) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "| `src/calc.py` | 1 | 1 | 100% |"
    assert os.listdir(tmp_path / "temporary") == []


def test_tests_that_fail_unchanged_fail_the_run(tmp_path, capsys):
    assert measure_all([Module("src/calc.py", ("tests/test_calc.py",), (ADD,))], tree(tmp_path, "assert False")) == 1
    out = capsys.readouterr().out
    assert "src/calc.py: its tests fail on the unchanged tree: fix them first\n" in out
    assert out.splitlines()[-1] == "| `src/calc.py` | 1 | - | its tests fail unchanged |"


def test_a_catalogue_file_is_read_and_measured_in_place_of_the_projects(tmp_path, monkeypatch):
    """Kills --catalogue ignored (the project's own catalogue measured instead), or accepted without
    --plausible."""
    (tmp_path / "set.py").write_text('from instructors.plausible import Module, Mutant\n\nMODULES = (Module(\n'
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


def test_without_catalogue_the_set_written_with_the_tests_is_loaded_from_tests_mutants(monkeypatch):
    """Kills --plausible measuring another set than tests/mutants/written_with_the_tests.py, or part of it."""
    measured = []
    monkeypatch.setattr(mutate.plausible, "measure_all", lambda modules: measured.extend(modules) or 0)
    with pytest.raises(SystemExit) as ended:
        mutate.main(["--plausible"])
    catalogue = mutate.load_catalogue(REPO / "tests" / "mutants" / "written_with_the_tests.py")
    assert ended.value.code == 0 and measured == list(catalogue.values())


@pytest.mark.parametrize("name, text, why", [("gone.py", None, "no such .py file"),
                                             ("set.txt", "MODULES = ()\n", "no such .py file"),
                                             ("other.py", "LIMIT = 3\n", "it defines no MODULES")])
def test_a_catalogue_path_that_holds_none_is_one_line_and_exit_1(tmp_path, monkeypatch, capsys, name, text, why):
    """Kills a traceback, or a run of another catalogue, for a --catalogue missing, not a .py file, or
    defining no MODULES."""
    if text is not None:
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(mutate.plausible, "measure_all", lambda modules: pytest.fail("a catalogue was measured"))
    with pytest.raises(SystemExit) as refused:
        mutate.main(["--plausible", "--catalogue", str(tmp_path / name)])
    assert refused.value.code == 1
    assert capsys.readouterr().err.splitlines() == [f"mutate: no catalogue at {tmp_path / name}: {why}"]


@pytest.mark.parametrize("outcomes, failing", [
    ([KILLED] * 9 + [SURVIVED], False), ([KILLED] * 8 + [SURVIVED] * 2, True), ([], False), (None, True),
    ([KILLED] * 10 + [NO_LONGER_APPLIES], True)])
def test_a_module_passes_from_ninety_percent_killed(outcomes, failing):
    """Kills a score of exactly 90% failing the run, or a stale mutant passing it."""
    assert plausible.fails(outcomes) == failing


def test_a_module_whose_mutants_all_no_longer_apply_has_no_score():
    module = Module("src/calc.py", ("tests/test_calc.py",), (GONE,))
    assert plausible.table_row(module, [NO_LONGER_APPLIES]) == "| `src/calc.py` | 0 | 0 | n/a (1 no longer apply) |"


def test_a_mutant_whose_text_is_there_twice_no_longer_applies(tmp_path):
    """Kills a find text that is not there exactly once applied anyway (every place replaced)."""
    root = tree(tmp_path)
    (root / "src" / "calc.py").write_text(CALC + "\n\ndef add2(a, b):\n    return a + b\n")
    assert plausible.outcome(Module("src/calc.py", ("tests/test_calc.py",), (ADD,)), ADD, root, 60) == \
        (NO_LONGER_APPLIES, 0.0)


def test_each_mutants_limit_is_five_times_the_tests_time_plus_a_minute(monkeypatch, capsys):
    limits = []
    monkeypatch.setattr(plausible, "tests_pass", lambda module, root, timeout: (True, 3.5))
    monkeypatch.setattr(plausible, "outcome", lambda module, mutant, root, timeout: limits.append(timeout)
                        or (KILLED, 1.0))
    module = Module("src/calc.py", ("tests/test_calc.py",), (ADD, HALF))
    assert plausible.measure(module, "root", (0, 2)) == [KILLED, KILLED] and limits == [60 + 5 * 3.5] * 2


def test_tests_that_run_past_their_limit_are_stopped(tmp_path):
    root = tree(tmp_path, "import time; time.sleep(120)")
    status, seconds = plausible.run_tests(root, ("tests/test_calc.py",), timeout=1)
    assert status is None and seconds < 60


def test_the_tree_copy_leaves_outputs_and_caches_out_and_its_tests_run_without_pythonpath(tmp_path, monkeypatch):
    (tmp_path / "root").mkdir()
    root = tree(tmp_path / "root")
    for name in ("src/vanilla.model.params", "src/a.predictions", "src/__pycache__/calc.cpython-311.pyc",
                 "src/old.pyc", "tests/notes.txt", "data/wiki.txt"):
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(name)
    copy = tree_copy.tree_copy(root, prefix="tree-copy-test-")
    try:
        found = sorted(os.path.relpath(os.path.join(folder, name), copy) for folder, _, names in os.walk(copy)
                       for name in names)
        assert found == ["data/wiki.txt", "pyproject.toml", "src/calc.py", "tests/notes.txt", "tests/test_calc.py"]
    finally:
        shutil.rmtree(copy)
    monkeypatch.setenv("PYTHONPATH", str(root / "src"))
    environment = tree_copy.copy_environment()
    assert "PYTHONPATH" not in environment and environment["OMP_NUM_THREADS"] == environment["MKL_NUM_THREADS"] == "1"


@pytest.mark.parametrize("path", sorted((REPO / "tests" / "mutants").glob("*.py")), ids=lambda path: path.name)
def test_each_set_says_who_wrote_it_when_from_what_and_its_first_and_latest_scores(path):
    """Kills a set of plausible bugs whose docstring miscounts its mutants or modules, leaves out who wrote
    it (the tests' authors, or a reader of neither tests nor mutants), when (the date its name gives, for a
    set written apart), from what, or its first or latest score, or gives a score whose share is not its
    count's, or a latest count that is not the set's own."""
    said = " ".join(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))).split())
    catalogue = mutate.load_catalogue(path)
    count = sum(len(module.mutants) for module in catalogue.values())
    assert f"{count} hand-written mutants over {len(catalogue)} modules" in said
    written = re.search(r"written on (\d{4}-\d\d-\d\d)", said).group(1)
    assert path.stem == "written_with_the_tests" or path.stem.endswith(written.replace("-", "_"))
    assert re.search(r"by (the authors of the tests|a reader who had read neither)", said)
    assert "from the code" in said
    scores = [re.search(rf"{when} on (\d{{4}}-\d\d-\d\d)[^.]*?(\d+) of (\d+) killed \((\d+)%\)", said)
              for when in (r"First \w+", "Latest")]
    assert all(scores) and written <= scores[0].group(1) <= scores[1].group(1)
    for score in scores:
        killed, of, share = map(int, score.group(2, 3, 4))
        assert killed <= of and round(100 * killed / of) == share
    assert int(scores[1].group(3)) == count
