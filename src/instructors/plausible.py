"""
Plausible bugs: hand-written mutants, each a change a developer could make
in good faith, measured against the tests of the module it changes.

    ./run.sh mutate --plausible [module ...]     # none given: every module of the catalogue
    ./run.sh mutate --plausible --catalogue tests/mutants/FILE.py [module ...]

A catalogue, a file of tests/mutants/ (written_with_the_tests.py unless
--catalogue names another), gives, for each module that holds a promise,
the tests that guard it and its mutants: a find/replace on the module's
source text and one line naming the bug it stands for. Before its
mutants, a module's tests run once on an unchanged copy of the tree: they
must pass, and their time sets the limit of each mutant's run (five times
it, plus a minute). Then, for each mutant, the tree is copied to a
temporary folder (the work tree is never changed), the replacement is made
there and the tests run there with pytest: a failing test, or the limit,
kills the mutant; passing tests let it survive.

A mutant whose find text is not in its module exactly once no longer
applies (the module changed since it was written): it is reported as such,
apart from the survivors, and fails the run. A line is printed per mutant as
it goes (a survivor with the reason the catalogue gives why no test can
catch it here, or a call for one), then a table of mutants, killed and score
per module; the exit status is 1 when a mutant no longer applies, a module's
tests fail unchanged, or a module scores under 90%.
"""

import datetime
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from .tree_copy import ROOT, copy_environment, tree_copy

PASSING_SCORE = 0.9
KILLED, SURVIVED, NO_LONGER_APPLIES = 'killed', 'survived', 'no longer applies'


@dataclass(frozen=True)
class Mutant:
    bug: str  # one line: the bug it stands for
    find: str  # text of the module, there exactly once
    replace: str  # what the bug writes in its place
    uncaught: str = ''  # a known survivor's reason that no test can catch it here (GPU-only, crash-only)


@dataclass(frozen=True)
class Module:
    path: str  # relative to the tree's root
    tests: tuple  # the pytest arguments that select its tests
    mutants: tuple


def run_tests(folder, tests, timeout):
    """pytest on `tests` in `folder`, stopping at the first failure; (its exit status, or None when it
    ran past `timeout` seconds and was killed, and the seconds it took)."""
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, '-m', 'pytest', '-q', '-x', '-p', 'no:cacheprovider', *tests],
                               cwd=folder, env=copy_environment(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        status = process.wait(timeout)
    except subprocess.TimeoutExpired:
        status = None
    try:
        os.killpg(process.pid, signal.SIGKILL)  # pytest, if it ran too long, and anything it left behind
    except ProcessLookupError:
        pass
    process.wait()
    return status, time.monotonic() - started


def tests_pass(module, root, timeout, mutant=None):
    """(whether `module`'s tests pass in a copy of the tree at `root`, with `mutant` made there if given;
    the seconds they took)."""
    folder = tree_copy(root, prefix='plausible-')
    try:
        if mutant is not None:
            path = folder / module.path
            path.write_text(path.read_text(encoding='utf-8').replace(mutant.find, mutant.replace), encoding='utf-8')
        status, seconds = run_tests(folder, module.tests, timeout)
        return status == 0, seconds
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def outcome(module, mutant, root, timeout):
    """(KILLED, SURVIVED or NO_LONGER_APPLIES, seconds) for `mutant` of `module` in the tree at `root`."""
    if (root / module.path).read_text(encoding='utf-8').count(mutant.find) != 1:
        return NO_LONGER_APPLIES, 0.0
    passed, seconds = tests_pass(module, root, timeout, mutant)
    return (SURVIVED if passed else KILLED), seconds


def survivor_note(mutant):
    """What a survivor's line adds: why no test can catch it here, or that one is wanted."""
    if mutant.uncaught:
        return f"    not caught here: {mutant.uncaught}"
    return "    no test catches it: write one, or give the reason none can in the catalogue"


def measure(module, root, progress):
    """Run `module`'s mutants, printing a line for each; returns their outcomes, or None when the
    module's tests fail on the unchanged tree. `progress` numbers the lines: (done so far, total)."""
    passed, seconds = tests_pass(module, root, timeout=3600)
    if not passed:
        print(f"{module.path}: its tests fail on the unchanged tree: fix them first", flush=True)
        return None
    timeout = 60 + 5 * seconds
    outcomes = []
    for mutant in module.mutants:
        found, seconds = outcome(module, mutant, root, timeout)
        outcomes.append(found)
        done, total = progress[0] + len(outcomes), progress[1]
        print(f"[{done:>3}/{total}] {module.path}: {found} ({seconds:.0f} s): {mutant.bug}", flush=True)
        if found == SURVIVED:
            print(survivor_note(mutant), flush=True)
    return outcomes


def table_row(module, outcomes):
    """The module's row of the table: | module | mutants | killed | score |."""
    if outcomes is None:
        return f"| `{module.path}` | {len(module.mutants)} | - | its tests fail unchanged |"
    applied = [found for found in outcomes if found != NO_LONGER_APPLIES]
    killed = applied.count(KILLED)
    score = f"{killed / len(applied):.0%}" if applied else "n/a"
    stale = len(outcomes) - len(applied)
    score += f" ({stale} no longer apply)" if stale else ""
    return f"| `{module.path}` | {len(applied)} | {killed} | {score} |"


def fails(outcomes):
    """Whether a module's outcomes fail the run: tests failing unchanged, a stale mutant, a score under 90%."""
    if outcomes is None or NO_LONGER_APPLIES in outcomes:
        return True
    return bool(outcomes) and outcomes.count(KILLED) / len(outcomes) < PASSING_SCORE


def measure_all(modules, root=ROOT):
    """Measure each Module of `modules` in the tree at `root`, print the table; returns the exit status."""
    started = time.monotonic()
    total = sum(len(module.mutants) for module in modules)
    results = []
    for module in modules:
        results.append((module, measure(module, root, (sum(len(m.mutants) for m, _ in results), total))))
    print(f"\nplausible mutants, measured {datetime.date.today()} in {(time.monotonic() - started) / 60:.1f} minutes:")
    print("| module | mutants | killed | score |\n| --- | --- | --- | --- |")
    for module, outcomes in results:
        print(table_row(module, outcomes))
    return 1 if any(fails(outcomes) for _, outcomes in results) else 0
