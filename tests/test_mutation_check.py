"""
`./run.sh mutate --check` (instructors/mutation_check.py) on small trees
made here: a consistent one has no problem, and each way the mutation
tools' tables can drift from the tree is told in a line of its own. The
tree's own tables are checked by the command itself, as CI runs it; that
it holds every catalogue of tests/mutants/ against the tree is checked
here.
"""

import dataclasses
from pathlib import Path

import pytest

from instructors import mutate
from instructors.mutation_check import (MUTMUT_HEADER, PLAUSIBLE_HEADER, Configuration, has_code, main, owner,
                                        problems)
from instructors.plausible import Module, Mutant

REPO = Path(__file__).resolve().parents[1]

CALC = "def double(x):\n    return x * 2\n"
CALC_TESTS = "def test_double():\n    assert True\n"
DOUBLING = Mutant("doubles by adding", "x * 2", "x + 2")
MUTMUT_ROW = "| `src/pkg/calc.py` | 10 | 9 | 1 | 100% | 2026-11-27 | `./run.sh mutate src/pkg/calc.py` |"
PLAUSIBLE_ROW = "| `src/pkg/calc.py` | 1 | 1 | 100% | 2026-11-27 | `./run.sh mutate --plausible src/pkg/calc.py` |"


def doc(mutmut_rows=(MUTMUT_ROW,), plausible_rows=(PLAUSIBLE_ROW,)):
    """A docs page with the two tables, holding the given rows."""
    def markdown(header, rows):
        return "\n".join([header, "| --- " * header.count("|") + "|", *rows])
    return f"# Mutation testing\n\n{markdown(MUTMUT_HEADER, mutmut_rows)}\n\nText.\n\n" \
           f"{markdown(PLAUSIBLE_HEADER, plausible_rows)}\n"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def config(tmp_path):
    """A tree of one module with code and its tests, and tables that agree with it."""
    write(tmp_path / "src" / "pkg" / "__init__.py", '"""A package."""\nfrom .calc import double\n')
    write(tmp_path / "src" / "pkg" / "calc.py", CALC)
    write(tmp_path / "tests" / "test_calc.py", CALC_TESTS)
    write(tmp_path / "run.sh", "#!/bin/sh\n")
    write(tmp_path / "docs" / "mutation-testing.md", doc())
    return Configuration(
        root=tmp_path, modules={"src/pkg/calc.py": ("tests/test_calc.py",)},
        equivalent={"pkg.calc.x_double__mutmut_1": "the same"}, gpu_only={"pkg.calc.x_double__mutmut_2": "cuda"},
        catalogue={"src/pkg/calc.py": Module("src/pkg/calc.py", ("tests/test_calc.py::test_double",), (DOUBLING,))},
        written_apart=(), module_tests={"src/pkg/calc.py": ("tests/test_calc.py",), "run.sh": ("tests/test_calc.py",)})


def test_a_consistent_tree_has_no_problem(config):
    assert problems(config) == []


def test_a_stale_find_text_is_told(config):
    write(config.root / "src" / "pkg" / "calc.py", CALC.replace("x * 2", "2 * x"))
    assert problems(config) == ["src/pkg/calc.py: the find text of 'doubles by adding' occurs 0 times: "
                                "rewrite it for the current code"]


def test_a_find_text_in_its_module_twice_is_told_in_every_catalogue(config):
    write(config.root / "src" / "pkg" / "calc.py", CALC + "\n\ndef also(x):\n    return x * 2\n")
    apart = {"src/pkg/calc.py": Module("src/pkg/calc.py", ("tests/test_calc.py",), (Mutant("other", "x * 2", "x"),))}
    told = problems(dataclasses.replace(config, written_apart=(apart,)))
    assert told == [f"src/pkg/calc.py: the find text of {bug!r} occurs 2 times: rewrite it for the current code"
                    for bug in ("doubles by adding", "other")]


def test_a_mutant_that_changes_nothing_is_told(config):
    same = Module("src/pkg/calc.py", ("tests/test_calc.py",), (Mutant("nothing", "x * 2", "x * 2"),))
    assert problems(dataclasses.replace(config, written_apart=({"src/pkg/calc.py": same},))) == [
        "src/pkg/calc.py: 'nothing' replaces its find text with itself"]


def test_a_selected_test_that_does_not_exist_is_told(config):
    gone = dataclasses.replace(config, modules={"src/pkg/calc.py": ("tests/test_calc.py", "tests/test_gone.py")},
                               catalogue={"src/pkg/calc.py": Module("src/pkg/calc.py", (
                                   "tests/test_calc.py::test_gone",), (DOUBLING,))})
    assert problems(gone) == ["src/pkg/calc.py selects tests/test_gone.py, but tests/test_gone.py does not exist",
                              "src/pkg/calc.py selects tests/test_calc.py::test_gone, but tests/test_calc.py "
                              "defines no test_gone"]


def test_a_configured_module_that_is_not_in_the_tree_is_told(config):
    (config.root / "src" / "pkg" / "calc.py").unlink()
    assert problems(config)[0] == "src/pkg/calc.py: configured for mutation, but not in the tree"


def test_a_module_with_code_and_no_row_of_module_tests_is_told(config):
    write(config.root / "src" / "pkg" / "more.py", "LIMIT = 3\n")
    write(config.root / "src" / "pkg" / "exports.py", '"""Only names."""\nfrom .calc import double\n'
                                                        '__all__ = ["double"]\n')
    assert problems(config) == ["src/pkg/more.py: no row in module_tests.py"]


def test_a_row_of_module_tests_for_no_module_or_of_no_test_is_told(config):
    rows = {**config.module_tests, "src/pkg/gone.py": ("tests/test_calc.py",),
            "run.sh": ("tests/test_calc.py", "tests/test_calc.py", "tests/helpers.py")}
    assert problems(dataclasses.replace(config, module_tests=rows)) == [
        "src/pkg/gone.py: a row of module_tests.py, but no module with code",
        "run.sh: tests/test_calc.py is twice in its row of module_tests.py",
        "run.sh: tests/helpers.py of module_tests.py is not under tests/test_",
        "run.sh selects tests/helpers.py, but tests/helpers.py does not exist"]


def test_a_quick_test_file_of_module_tests_that_mutmut_does_not_run_is_told(config):
    for name in ("test_more", "test_slow", "test_named"):
        write(config.root / "tests" / f"{name}.py", CALC_TESTS)
    write(config.root / "tests" / "conftest.py", 'SLOW_FILES = (\n    "test_slow.py",)\n')
    rows = {**config.module_tests, "src/pkg/calc.py": (
        "tests/test_calc.py", "tests/test_more.py", "tests/test_slow.py", "tests/test_named.py::test_double")}
    assert problems(dataclasses.replace(config, module_tests=rows)) == [
        "src/pkg/calc.py: MODULES selects no test of tests/test_more.py, a quick test file of its row of "
        "module_tests.py", "src/pkg/calc.py: MODULES selects no test of tests/test_named.py, a quick test file of "
        "its row of module_tests.py"]
    modules = {"src/pkg/calc.py": ("tests/test_calc.py", "tests/test_more.py::test_double", "tests/test_named.py")}
    assert problems(dataclasses.replace(config, module_tests=rows, modules=modules)) == []


def test_the_code_test_tells_code_from_re_exports(tmp_path):
    write(tmp_path / "exports.py", '"""Doc."""\nfrom .a import b\n__all__ = ["b"]\n')
    write(tmp_path / "code.py", '"""Doc."""\nfrom .a import b\nLIMIT = 3\n')
    assert [has_code(tmp_path / name) for name in ("exports.py", "code.py")] == [False, True]


def test_a_mutant_name_of_no_module_or_in_both_lists_is_told(config):
    names = dataclasses.replace(config, equivalent={**config.equivalent, "pkg.gone.x_f__mutmut_1": "why"},
                                gpu_only={**config.gpu_only, "pkg.calc.x_double__mutmut_1": "cuda"})
    assert problems(names) == ["pkg.gone.x_f__mutmut_1: in EQUIVALENT, but no mutant of a module of MODULES",
                               "pkg.calc.x_double__mutmut_1: in both EQUIVALENT and GPU_ONLY"]


def test_mutmuts_names_of_functions_methods_and_packages_have_their_owner():
    modules = ["src/pkg/calc.py", "src/pkg/__init__.py"]
    assert [owner(name, modules) for name in ("pkg.calc.x_double__mutmut_3", "pkg.calc.xǁSumǁadd__mutmut_1",
                                              "pkg.x_f__mutmut_1", "other.x_f__mutmut_1")] == [
        "src/pkg/calc.py", "src/pkg/calc.py", "src/pkg/__init__.py", None]


@pytest.mark.parametrize("row, told", [
    (MUTMUT_ROW.replace("100%", "90%"), "src/pkg/calc.py: 9 killed and 1 equivalent of 10 is not 90%"),
    (MUTMUT_ROW.replace("| 9 | 1 |", "| 8 | 2 |"), "src/pkg/calc.py: 2 equivalent in the table, 1 in EQUIVALENT"),
    (MUTMUT_ROW.replace("2026-11-27", "last week"), "src/pkg/calc.py: measured 'last week' is no date"),
    (MUTMUT_ROW.replace("mutate src/pkg/calc.py`", "mutate`"),
     "src/pkg/calc.py: the command `./run.sh mutate` does not measure it"),
])
def test_a_mutmut_row_whose_figures_disagree_is_told(config, row, told):
    write(config.root / "docs" / "mutation-testing.md", doc(mutmut_rows=[row]))
    assert problems(config) == [told]


@pytest.mark.parametrize("row, told", [
    (PLAUSIBLE_ROW.replace("100%", "50%"), "src/pkg/calc.py: 1 killed of 1 is not 50%"),
    (PLAUSIBLE_ROW.replace("| 1 | 1 | 100% |", "| 2 | 2 | 100% |"),
     "src/pkg/calc.py: 2 mutants in the table, 1 in the catalogue"),
])
def test_a_plausible_row_whose_figures_disagree_is_told(config, row, told):
    write(config.root / "docs" / "mutation-testing.md", doc(plausible_rows=[row]))
    assert problems(config) == [told]


def test_a_table_without_a_modules_row_or_with_another_or_with_two_is_told(config):
    other = MUTMUT_ROW.replace("src/pkg/calc.py", "src/pkg/gone.py")
    write(config.root / "docs" / "mutation-testing.md", doc(mutmut_rows=[other], plausible_rows=[PLAUSIBLE_ROW] * 2))
    assert problems(config) == ["src/pkg/gone.py: 1 equivalent in the table, 0 in EQUIVALENT",
                                "src/pkg/calc.py: in MODULES, not in the table",
                                "src/pkg/gone.py: in the table, not in MODULES",
                                "src/pkg/calc.py: 2 rows"]


def test_a_page_without_the_tables_is_told(config):
    (config.root / "docs" / "mutation-testing.md").unlink()
    assert problems(config) == ["docs/mutation-testing.md: 0 tables headed " + MUTMUT_HEADER + ", not one",
                                "src/pkg/calc.py: in MODULES, not in the table",
                                "docs/mutation-testing.md: 0 tables headed " + PLAUSIBLE_HEADER + ", not one",
                                "src/pkg/calc.py: in the catalogue, not in the table"]


def test_main_prints_one_line_a_problem_and_returns_1_or_one_line_and_0(config, capsys):
    assert main(config) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("all consistent: 1 modules of MODULES, 1 plausible mutants")
    write(config.root / "src" / "pkg" / "calc.py", "def double(x):\n    return x + x\n")
    write(config.root / "src" / "pkg" / "more.py", "LIMIT = 3\n")
    assert main(config) == 1
    assert capsys.readouterr().out.splitlines() == problems(config) and len(problems(config)) == 2


def test_the_command_exits_1_on_problems_and_0_otherwise(config, monkeypatch, capsys):
    monkeypatch.setattr(mutate, "configuration", lambda: config)
    with pytest.raises(SystemExit) as consistent:
        mutate.main(["--check"])
    write(config.root / "src" / "pkg" / "more.py", "LIMIT = 3\n")
    with pytest.raises(SystemExit) as drifted:
        mutate.main(["--check"])
    assert (consistent.value.code, drifted.value.code) == (0, 1)
    assert capsys.readouterr().out.splitlines()[1:] == ["src/pkg/more.py: no row in module_tests.py"]


def test_the_command_checks_every_catalogue_of_tests_mutants_loaded_by_its_path():
    """Kills a set of tests/mutants/ left out of --check, or the set written with the tests checked as one
    written apart."""
    sets = {path.name: mutate.load_catalogue(path) for path in sorted((REPO / "tests" / "mutants").glob("*.py"))}
    config = mutate.configuration()
    assert config.catalogue == sets.pop("written_with_the_tests.py")
    assert list(config.written_apart) == list(sets.values()) and sets


@pytest.mark.parametrize("argv", [["--check", "src/pkg/calc.py"], ["--check", "--plausible"]])
def test_the_check_takes_no_module_and_no_other_option(argv, capsys):
    with pytest.raises(SystemExit) as refused:
        mutate.main(argv)
    assert refused.value.code == 2 and "--check takes no module" in capsys.readouterr().err
