"""
The mutation tools' tables held against the tree, without a mutation run:

    ./run.sh mutate --check

Every module that mutmut's MODULES (mutate.py) and the catalogues of
plausible bugs name exists, and so does every test they select; each
plausible mutant's find text is in its module exactly once; each name of
EQUIVALENT and GPU_ONLY is a mutant of a module of MODULES, and in one of
the two only; module_tests.py has a row for every module with code,
grader.py and run.sh, and no other, each naming tests that exist; each row
of MODULES selects tests of every quick test file (one not in
tests/conftest.py's SLOW_FILES) of its module's row of module_tests.py;
and the two tables of docs/mutation-testing.md have one row for each
module of MODULES and of the catalogue, no other, each with its date,
the command that measures it and figures that agree with each other
(and, for the plausible table, with the catalogue's count of mutants).

Each check takes what it checks as arguments (the tree's root, the tables,
the catalogues, the docs' text); `main` prints one line per problem, or
one line saying all is consistent, and returns the exit status.
"""

import ast
import re
from dataclasses import dataclass
from pathlib import Path

DOC = 'docs/mutation-testing.md'
MUTMUT_HEADER = '| module | mutants | killed | equivalent | score | measured | command |'
PLAUSIBLE_HEADER = '| module | mutants | killed | score | measured | command |'
MUTMUT_COMMAND = '`./run.sh mutate {}`'
PLAUSIBLE_COMMAND = '`./run.sh mutate --plausible {}`'
ENTRY_POINTS = ('grader.py', 'run.sh')  # modules outside src/ that module_tests.py covers too
CONFTEST = 'tests/conftest.py'  # defines SLOW_FILES, the test files left out of the quick tier


@dataclass(frozen=True)
class Configuration:
    """What the check holds against the tree at `root`."""
    root: Path
    modules: dict  # mutate.py's MODULES: module -> the tests mutmut runs against it
    equivalent: dict  # mutate.py's EQUIVALENT: mutmut's name of a mutant -> why it is equivalent
    gpu_only: dict  # mutate.py's GPU_ONLY: mutmut's name of a mutant -> why only a GPU could kill it
    catalogue: dict  # the plausible bugs written with the tests in view: module -> plausible.Module
    written_apart: tuple  # the other catalogues of plausible bugs, written apart from the tests, each as `catalogue`
    module_tests: dict  # module_tests.py's MODULE_TESTS: module -> the tests that guard it


def missing_test(root, test):
    """Why the pytest argument `test` (a file, or file::function) names no test of the tree at `root`;
    None when it names one."""
    file, _, name = test.partition('::')
    path = Path(root) / file
    if not path.is_file():
        return f"{file} does not exist"
    if name and not re.search(rf'^def {re.escape(name)}\(', path.read_text(encoding='utf-8'), re.M):
        return f"{file} defines no {name}"
    return None


def module_problems(root, modules):
    """The modules of `modules` (paths from `root`) that are not files of the tree."""
    return [f"{module}: configured for mutation, but not in the tree"
            for module in dict.fromkeys(modules) if not (Path(root) / module).is_file()]


def selection_problems(root, selections):
    """The tests of `selections` (pairs of a module and the tests it selects) that do not exist at `root`."""
    return [f"{module} selects {test}, but {why}" for module, tests in selections
            for test in dict.fromkeys(tests) for why in [missing_test(root, test)] if why]


def find_text_problems(root, catalogue):
    """The mutants of `catalogue` ({module: plausible.Module}) whose find text is not in their module
    at `root` exactly once, or that replace it with itself."""
    problems = []
    for path, module in catalogue.items():
        if not (Path(root) / path).is_file():
            continue
        source = (Path(root) / path).read_text(encoding='utf-8')
        for mutant in module.mutants:
            if source.count(mutant.find) != 1:
                problems.append(f"{path}: the find text of {mutant.bug!r} occurs {source.count(mutant.find)} "
                                f"times: rewrite it for the current code")
            if mutant.replace == mutant.find:
                problems.append(f"{path}: {mutant.bug!r} replaces its find text with itself")
    return problems


def dotted(module):
    """The name mutmut gives `module`'s mutants before the function: src/a/b.py -> a.b, src/a/__init__.py -> a."""
    parts = Path(module).with_suffix('').parts
    parts = parts[1:] if parts[0] == 'src' else parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def owner(name, modules):
    """The module of `modules` whose mutant mutmut names `name` (module.x_function__mutmut_N or
    module.xǁClassǁmethod__mutmut_N); None if none."""
    prefix = re.match(r'(.*?)\.xǁ|(.*?)\.x_', name)
    prefix = prefix and (prefix.group(1) or prefix.group(2))
    return next((module for module in modules if dotted(module) == prefix), None)


def mutant_name_problems(equivalent, gpu_only, modules):
    """The names of `equivalent` and `gpu_only` that are no mutant of a module of `modules`, and those in both."""
    return ([f"{name}: in {where}, but no mutant of a module of MODULES"
             for where, names in (('EQUIVALENT', equivalent), ('GPU_ONLY', gpu_only))
             for name in names if owner(name, modules) is None]
            + [f"{name}: in both EQUIVALENT and GPU_ONLY" for name in equivalent if name in gpu_only])


def has_code(path):
    """Whether the module at `path` does anything beyond a docstring, imports and `__all__`."""
    for node in ast.parse(Path(path).read_text(encoding='utf-8')).body:
        names = [target.id for target in getattr(node, 'targets', []) if isinstance(target, ast.Name)]
        if not (isinstance(node, (ast.Import, ast.ImportFrom)) or names == ['__all__']
                or isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            return True
    return False


def modules_with_code(root):
    """The modules of the tree at `root` that module_tests.py must cover: those of src/ with code, and the
    entry points outside src/."""
    root = Path(root)
    return ({path.relative_to(root).as_posix() for path in (root / 'src').rglob('*.py') if has_code(path)}
            | {name for name in ENTRY_POINTS if (root / name).is_file()})


def module_tests_problems(root, module_tests):
    """What is wrong with `module_tests` (module_tests.py's map) against the tree at `root`."""
    modules = modules_with_code(root)
    problems = ([f"{module}: no row in module_tests.py" for module in sorted(modules - set(module_tests))]
                + [f"{module}: a row of module_tests.py, but no module with code"
                   for module in sorted(set(module_tests) - modules)])
    for module, tests in module_tests.items():
        if not tests:
            problems.append(f"{module}: its row of module_tests.py names no test")
        problems += [f"{module}: {test} is twice in its row of module_tests.py"
                     for test in dict.fromkeys(tests) if tests.count(test) > 1]
        problems += [f"{module}: {test} of module_tests.py is not under tests/test_"
                     for test in dict.fromkeys(tests) if not test.startswith('tests/test_')]
    return problems + selection_problems(root, module_tests.items())


def slow_files(root):
    """The names of the test files that tests/conftest.py at `root` marks slow (its SLOW_FILES); none if absent."""
    path = Path(root) / CONFTEST
    if not path.is_file():
        return ()
    for node in ast.parse(path.read_text(encoding='utf-8')).body:
        if isinstance(node, ast.Assign) and [getattr(target, 'id', None) for target in node.targets] == ['SLOW_FILES']:
            return ast.literal_eval(node.value)
    return ()


def quick_tests_left_out(root, modules, module_tests):
    """The quick test files of module_tests.py's row of each module of `modules` (MODULES) of which its row
    of MODULES selects no test: mutmut would count a mutant they kill as surviving. A row may select some
    tests of a file by name, those that run in a mutmut run's time."""
    slow = set(slow_files(root))
    return [f"{module}: MODULES selects no test of {file}, a quick test file of its row of module_tests.py"
            for module, selected in modules.items()
            for file in dict.fromkeys(test.partition('::')[0] for test in module_tests.get(module, ()))
            if Path(file).name not in slow and file not in {test.partition('::')[0] for test in selected}]


def table(text, header, problems):
    """The rows, as lists of cells, of the Markdown table of `text` under the line `header`; none, with
    the problem added to `problems`, where the text has no single such table."""
    lines = text.splitlines()
    if lines.count(header) != 1:
        problems.append(f"{DOC}: {lines.count(header)} tables headed {header}, not one")
        return []
    rows = []
    for line in lines[lines.index(header) + 2:]:
        if not line.startswith('|'):
            break
        rows.append([cell.strip() for cell in line.strip().strip('|').split('|')])
    return rows


def score(killed, measured):
    """killed / measured as the tools print it ('97%'; 'n/a' for nothing measured)."""
    return f"{killed / measured:.0%}" if measured else 'n/a'


def checked_rows(text, header, command, problems, named):
    """The rows of the table under `header` whose cell count, date and command (`command` with the
    module in its braces) are right, as (module, the cells between it and the date); every wrong row
    adds its problem to `problems`, every row its module to `named`."""
    for row in table(text, header, problems):
        if len(row) != header.count('|') - 1:
            problems.append(f"{DOC}: a row of {len(row)} cells: {row}")
            continue
        module, *counts, measured, given = row
        module = module.strip('`')
        named.append(module)
        if not re.fullmatch(r'\d{4}-\d\d-\d\d', measured):
            problems.append(f"{module}: measured {measured!r} is no date")
        if given != command.format(module):
            problems.append(f"{module}: the command {given} does not measure it")
        yield module, counts


def coverage_problems(named, modules, where):
    """The modules of `modules` that the table's rows (`named`) leave out, the rows of no module of
    `modules`, and the modules with more than one row."""
    return ([f"{module}: in {where}, not in the table" for module in modules if module not in named]
            + [f"{module}: in the table, not in {where}" for module in named if module not in modules]
            + [f"{module}: {named.count(module)} rows" for module in dict.fromkeys(named) if named.count(module) > 1])


def mutmut_table_problems(text, modules, equivalent):
    """What is wrong with the mutmut table of the docs' `text` against `modules` and `equivalent`."""
    problems, named = [], []
    for module, (mutants, killed, equivalents, shown) in checked_rows(text, MUTMUT_HEADER, MUTMUT_COMMAND,
                                                                      problems, named):
        if not all(count.isdigit() for count in (mutants, killed, equivalents)):
            problems.append(f"{module}: counts {mutants}, {killed}, {equivalents}")
            continue
        mutants, killed, equivalents = int(mutants), int(killed), int(equivalents)
        if killed + equivalents > mutants or shown != score(killed, mutants - equivalents):
            problems.append(f"{module}: {killed} killed and {equivalents} equivalent of {mutants} is not {shown}")
        listed = sum(owner(name, modules) == module for name in equivalent)
        if equivalents != listed:
            problems.append(f"{module}: {equivalents} equivalent in the table, {listed} in EQUIVALENT")
    return problems + coverage_problems(named, modules, 'MODULES')


def plausible_table_problems(text, catalogue):
    """What is wrong with the plausible table of the docs' `text` against `catalogue`."""
    problems, named = [], []
    for module, (mutants, killed, shown) in checked_rows(text, PLAUSIBLE_HEADER, PLAUSIBLE_COMMAND, problems, named):
        if not (mutants.isdigit() and killed.isdigit()):
            problems.append(f"{module}: counts {mutants}, {killed}")
            continue
        if module in catalogue and int(mutants) != len(catalogue[module].mutants):
            problems.append(f"{module}: {mutants} mutants in the table, {len(catalogue[module].mutants)} in the "
                            f"catalogue")
        if int(killed) > int(mutants) or shown != score(int(killed), int(mutants)):
            problems.append(f"{module}: {killed} killed of {mutants} is not {shown}")
    return problems + coverage_problems(named, catalogue, 'the catalogue')


def problems(config):
    """Every problem of `config` against its tree, one line each."""
    root, catalogues = Path(config.root), [config.catalogue, *config.written_apart]
    doc = root / DOC
    text = doc.read_text(encoding='utf-8') if doc.is_file() else ''
    selections = [*config.modules.items(), *((path, module.tests) for catalogue in catalogues
                                             for path, module in catalogue.items())]
    found = (module_problems(root, [*config.modules, *(path for catalogue in catalogues for path in catalogue)])
             + selection_problems(root, selections)
             + [problem for catalogue in catalogues for problem in find_text_problems(root, catalogue)]
             + mutant_name_problems(config.equivalent, config.gpu_only, config.modules)
             + module_tests_problems(root, config.module_tests)
             + quick_tests_left_out(root, config.modules, config.module_tests)
             + mutmut_table_problems(text, config.modules, config.equivalent)
             + plausible_table_problems(text, config.catalogue))
    return list(dict.fromkeys(found))  # a test two tables select is told once


def main(config):
    """Print each problem of `config`, or one line saying there is none; the exit status (1: problems)."""
    found = problems(config)
    for problem in found:
        print(problem)
    if found:
        return 1
    mutants = sum(len(module.mutants) for catalogue in [config.catalogue, *config.written_apart]
                  for module in catalogue.values())
    print(f"all consistent: {len(config.modules)} modules of MODULES, {mutants} plausible mutants in "
          f"{1 + len(config.written_apart)} catalogues, {len(config.module_tests)} rows of module_tests.py, "
          f"the two tables of {DOC}")
    return 0
