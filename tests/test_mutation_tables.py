"""
The two mutation tools' configuration and docs/mutation-testing.md stay in
step with the tree, without a mutation run: every module that MODULES
(mutate.py, mutmut) and the plausible catalogue (plausible_mutants.py) name
exists, and so does every test they select; each plausible mutant's find
text (of the catalogue and of the sets written apart from the tests) is in
its module exactly once; each key of EQUIVALENT and GPU_ONLY
names a module of MODULES; and the two tables of the docs have one row for
each module of MODULES and of the catalogue, no other, each with its date,
the command that measures it and figures that agree with each other (and,
for the plausible table, with the catalogue's count of mutants). And
module_tests.py, the map of which tests guard which module, covers every
module with code, grader.py and run.sh, and names only files that exist.
"""

import ast
import re
from pathlib import Path

import pytest

from instructors.module_tests import MODULE_TESTS
from instructors.mutate import EQUIVALENT, GPU_ONLY, MODULES, load_catalogue
from instructors.plausible_mutants import CATALOGUE

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "mutation-testing.md"
MUTMUT_HEADER = "| module | mutants | killed | equivalent | score | measured | command |"
PLAUSIBLE_HEADER = "| module | mutants | killed | score | measured | command |"
SELECTIONS = sorted({(module, test) for module, tests in MODULES.items() for test in tests}
                    | {(path, test) for path, module in CATALOGUE.items() for test in module.tests})
UNSEEN = [load_catalogue(file) for file in sorted((REPO / "src" / "instructors").glob("unseen_mutants*.py"))]
MUTANTS = [(path, mutant) for catalogue in [CATALOGUE, *UNSEEN] for path, module in catalogue.items()
           for mutant in module.mutants]


def table(text, header):
    """The rows, as lists of cells, of the Markdown table of `text` under the line `header`."""
    lines = text.splitlines()
    assert lines.count(header) == 1, f"no single table headed {header!r}"
    rows = []
    for line in lines[lines.index(header) + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def percent(killed, measured):
    """killed / measured as the tools print it ('97%')."""
    return f"{killed / measured:.0%}"


def checked_rows(text, header, command, problems, named):
    """The rows of the table under `header` whose cell count, date and command (`command` with the
    module in its braces) are right, as (module, the cells between it and the date); every wrong row
    adds its problem to `problems`, every row its module to `named`."""
    for row in table(text, header):
        if len(row) != header.count("|") - 1:
            problems.append(f"a row of {len(row)} cells: {row}")
            continue
        module, *counts, measured, given = row
        module = module.strip("`")
        named.append(module)
        if not re.fullmatch(r"\d{4}-\d\d-\d\d", measured):
            problems.append(f"{module}: measured {measured!r} is no date")
        if given != command.format(module):
            problems.append(f"{module}: the command {given} does not measure it")
        yield module, counts


def mutmut_problems(text):
    """What is wrong with the mutmut table of `text` against MODULES: a list of lines."""
    problems, named = [], []
    for module, (mutants, killed, equivalent, score) in checked_rows(text, MUTMUT_HEADER, "`./run.sh mutate {}`",
                                                                     problems, named):
        if not all(n.isdigit() for n in (mutants, killed, equivalent)):
            problems.append(f"{module}: counts {mutants}, {killed}, {equivalent}")
            continue
        mutants, killed, equivalent = int(mutants), int(killed), int(equivalent)
        if killed + equivalent > mutants or score != percent(killed, mutants - equivalent):
            problems.append(f"{module}: {killed} killed and {equivalent} equivalent of {mutants} is not {score}")
        listed = sum(owner(name) == module for name in EQUIVALENT)
        if equivalent != listed:
            problems.append(f"{module}: {equivalent} equivalent in the table, {listed} in EQUIVALENT")
    return problems + coverage_problems(named, MODULES, "MODULES")


def plausible_problems(text):
    """What is wrong with the plausible table of `text` against the catalogue: a list of lines."""
    problems, named = [], []
    for module, (mutants, killed, score) in checked_rows(text, PLAUSIBLE_HEADER, "`./run.sh mutate --plausible {}`",
                                                         problems, named):
        if not (mutants.isdigit() and killed.isdigit()):
            problems.append(f"{module}: counts {mutants}, {killed}")
            continue
        if module in CATALOGUE and int(mutants) != len(CATALOGUE[module].mutants):
            problems.append(f"{module}: {mutants} mutants in the table, {len(CATALOGUE[module].mutants)} in the "
                            f"catalogue")
        if int(killed) > int(mutants) or score != percent(int(killed), int(mutants)):
            problems.append(f"{module}: {killed} killed of {mutants} is not {score}")
    return problems + coverage_problems(named, CATALOGUE, "the catalogue")


def coverage_problems(named, modules, where):
    """The modules of `modules` that the table's rows (`named`) leave out, the rows of no module of
    `modules`, and the modules with more than one row."""
    return ([f"{module}: in {where}, not in the table" for module in modules if module not in named]
            + [f"{module}: in the table, not in {where}" for module in named if module not in modules]
            + [f"{module}: {named.count(module)} rows" for module in set(named) if named.count(module) > 1])


def dotted(module):
    """The name mutmut gives `module`'s mutants before the function: src/a/b.py -> a.b, src/a/__init__.py -> a."""
    parts = Path(module).relative_to("src").with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def owner(name):
    """The module of MODULES whose mutant mutmut names `name` (module.x_function__mutmut_N or
    module.xǁClassǁmethod__mutmut_N); None if none."""
    prefix = re.match(r"(.*?)\.xǁ|(.*?)\.x_", name)
    prefix = prefix and (prefix.group(1) or prefix.group(2))
    return next((module for module in MODULES if dotted(module) == prefix), None)


def test_every_module_of_mutmut_and_of_the_catalogue_exists():
    missing = [module for module in [*MODULES, *CATALOGUE] if not (REPO / module).is_file()]
    assert not missing, f"configured for mutation, but not in the tree: {missing}"


@pytest.mark.parametrize("module, test", SELECTIONS, ids=[f"{module}-{test}" for module, test in SELECTIONS])
def test_every_test_a_module_selects_exists(module, test):
    """Each test a module's mutants run against: its file, and the test function a `::name` names."""
    file, _, name = test.partition("::")
    assert (REPO / file).is_file(), f"{module} selects {test}, whose file does not exist"
    if name:
        assert re.search(rf"^def {re.escape(name)}\(", (REPO / file).read_text(encoding="utf-8"), re.M), \
            f"{module} selects {test}, which {file} does not define"


@pytest.mark.parametrize("path, mutant", MUTANTS, ids=[f"{path}-{mutant.bug}" for path, mutant in MUTANTS])
def test_each_plausible_mutant_applies_to_its_module_once(path, mutant):
    source = (REPO / path).read_text(encoding="utf-8")
    assert source.count(mutant.find) == 1, (f"{path}: the find text of {mutant.bug!r} occurs "
                                            f"{source.count(mutant.find)} times: rewrite it for the current code")
    assert mutant.replace != mutant.find


def has_code(path):
    """Whether the module at `path` does anything beyond a docstring, imports and `__all__`; the
    catalogues of mutants are data, not code."""
    if re.fullmatch(r"(plausible|unseen)_mutants(_\d+)?\.py", path.name):
        return False
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        names = [target.id for target in getattr(node, "targets", []) if isinstance(target, ast.Name)]
        if not (isinstance(node, (ast.Import, ast.ImportFrom)) or names == ["__all__"]
                or isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            return True
    return False


def test_every_module_with_code_has_the_tests_that_guard_it():
    modules = {str(path.relative_to(REPO)) for path in (REPO / "src").rglob("*.py") if has_code(path)}
    modules |= {"grader.py", "run.sh"}
    assert sorted(modules - set(MODULE_TESTS)) == [], "modules without a row in instructors/module_tests.py"
    assert sorted(set(MODULE_TESTS) - modules) == [], "rows of instructors/module_tests.py for no module"


def test_the_code_test_tells_code_from_re_exports(tmp_path):
    (tmp_path / "exports.py").write_text('"""Doc."""\nfrom .a import b\n__all__ = ["b"]\n')
    (tmp_path / "code.py").write_text('"""Doc."""\nfrom .a import b\nLIMIT = 3\n')
    (tmp_path / "unseen_mutants_2.py").write_text('MODULES = ()\n')
    assert [has_code(tmp_path / name) for name in ("exports.py", "code.py", "unseen_mutants_2.py")] == [
        False, True, False]


@pytest.mark.parametrize("module", sorted(MODULE_TESTS))
def test_every_test_the_map_names_exists(module):
    tests = MODULE_TESTS[module]
    assert tests and len(set(tests)) == len(tests), f"{module}: no tests, or one named twice"
    for test in tests:
        file, _, name = test.partition("::")
        assert file.startswith("tests/test_") and (REPO / file).is_file(), f"{module}: {test} is not a test file"
        if name:
            assert re.search(rf"^def {re.escape(name)}\(", (REPO / file).read_text(encoding="utf-8"), re.M), \
                f"{module} names {test}, which {file} does not define"


def test_each_key_of_equivalent_and_gpu_only_names_a_module_of_modules_and_one_list():
    assert not [name for name in [*EQUIVALENT, *GPU_ONLY] if owner(name) is None]
    assert not set(EQUIVALENT) & set(GPU_ONLY)


def test_the_docs_mutmut_table_has_a_consistent_row_for_each_module_of_modules():
    assert mutmut_problems(DOC.read_text(encoding="utf-8")) == []


def test_the_docs_plausible_table_has_a_consistent_row_for_each_module_of_the_catalogue():
    assert plausible_problems(DOC.read_text(encoding="utf-8")) == []


def test_a_table_that_drifted_from_the_code_is_told():
    """The checks above can fail: a row of a module that is gone, a module without a row, a row whose
    command measures another module, a score that is not its counts', a plausible count not the catalogue's."""
    text = DOC.read_text(encoding="utf-8")
    first, second = next(iter(MODULES)), next(iter(CATALOGUE))
    lines = text.splitlines()
    mutmut_rows = [line for line in lines if line.startswith(f"| `{first}` |") and "--plausible" not in line]
    plausible_rows = [line for line in lines if line.startswith(f"| `{second}` |") and "--plausible" in line]
    assert len(mutmut_rows) == 1 and len(plausible_rows) == 1
    gone = "| `grader.py` | 10 | 10 | 0 | 100% | 2026-11-23 | `./run.sh mutate grader.py` |"
    wrong = text.replace(mutmut_rows[0], gone)
    assert mutmut_problems(wrong) == [f"{first}: in MODULES, not in the table",
                                      "grader.py: in the table, not in MODULES"]
    cells = mutmut_rows[0].split(" | ")
    cells[4] = "1%"
    assert [line.split(":")[1] for line in mutmut_problems(text.replace(mutmut_rows[0], " | ".join(cells)))] == [
        f" {cells[2]} killed and {cells[3]} equivalent of {cells[1]} is not 1%"]
    moved = mutmut_rows[0].replace(f"mutate {first}`", "mutate`")
    assert mutmut_problems(text.replace(mutmut_rows[0], moved)) == [
        f"{first}: the command `./run.sh mutate` does not measure it"]
    cells = plausible_rows[0].split(" | ")
    cells[1] = str(int(cells[1]) + 1)
    assert any("in the table" in problem and "in the catalogue" in problem
               for problem in plausible_problems(text.replace(plausible_rows[0], " | ".join(cells))))
