"""
Checks on a finished release, run before it is moved into place.

Each check returns what is wrong (an empty list or None when all is well), so
the release can refuse to hand out a starter that leaks answers or hidden
tests, ships trained outputs or does not even import, student files that no
longer read as the handout describes them, or a hidden bundle that the
grader would reject.
"""

import ast
import os
import re
import subprocess
import sys

from assignment.editions import EDITIONS, SEED_EDITION
from assignment.facts import GIVEN_FOR_PARTS, OTHER_STAGES

from . import import_check, regions

FORBIDDEN_SUFFIXES = (".params", ".predictions")
SECRET_LINE_CHARS = 30
STUDENT_FILES = os.path.join("src", "submission")
# The line every student file carries, saying where its code comes from; the notice it points to.
ORIGIN_LINE = "Part of a fork of Andrej Karpathy's minGPT (MIT licence; see LICENSE)."
LICENSE = "LICENSE"
# What a student file never speaks of: the grading, the reference solution, the stages' machinery.
UNSAID = ("grader", "reference", "runtime", "hooks")


def tree_files(tree):
    """Every file under `tree`, as paths relative to it, sorted."""
    return sorted(os.path.relpath(os.path.join(folder, name), tree)
                  for folder, _, names in os.walk(tree) for name in names)


def label_lines(labels_path):
    """The non-empty lines of a labels file, without their line endings."""
    with open(labels_path, encoding="utf-8") as f:
        return [line.rstrip("\r\n") for line in f if line.strip()]


def files_leaking(tree, lines):
    """The files of `tree` whose text contains any of `lines`."""
    leaking = []
    for path in tree_files(tree):
        with open(os.path.join(tree, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        if any(line in text for line in lines):
            leaking.append(path)
    return leaking


def solution_lines(package_dir):
    """
    The telling lines of the solution's regions: stripped, not comments, at
    least SECRET_LINE_CHARS long, and found nowhere outside the regions (so
    given code such as `self.ln1 = nn.LayerNorm(config.n_embd)` does not count).
    """
    inside, outside = set(), ""
    for name in sorted(os.listdir(package_dir)):
        if name.endswith(".py"):
            with open(os.path.join(package_dir, name), encoding="utf-8") as f:
                text = f.read()
            inside.update(line.strip() for body in regions.regions(text, name) for line in body.splitlines())
            outside += regions.cut(text, name)
    return sorted(line for line in inside
                  if len(line) >= SECRET_LINE_CHARS and not line.startswith("#") and line not in outside)


def trained_outputs(tree):
    """The params and predictions files in `tree`."""
    return [path for path in tree_files(tree) if path.endswith(FORBIDDEN_SUFFIXES)]


def python_failure(tree, code, *args):
    """None when `python -c code args` succeeds in `tree` with tree/src on the path, else its error's last line."""
    env = dict(os.environ, PYTHONPATH=os.path.join(tree, "src"), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode == 0:
        return None
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


def import_failure(tree):
    """None when every module of tree/src imports, else the error's last line: asked of a child forked from
    this process where it can be (import_check.py), else of a new interpreter."""
    src = os.path.join(tree, "src")
    modules = sorted(os.path.splitext(path)[0].replace(os.sep, ".").removesuffix(".__init__")
                     for path in tree_files(src) if path.endswith(".py") and not path.endswith("__main__.py"))
    if import_check.FORK:
        return import_check.forked_failure(tree, modules)
    return python_failure(tree, "import " + ", ".join(modules))


BUNDLE_CHECK = "import runpy, sys\nsys.argv[:] = ['grader.py', '--list', '--hidden', sys.argv[1]]\n" \
               "runpy.run_path('grader.py', run_name='__main__')\n"


def bundle_failure(tree, hidden_dir):
    """None when the starter's grader accepts the hidden bundle at hidden_dir (its tests too), else its complaint."""
    return python_failure(tree, BUNDLE_CHECK, hidden_dir)


def hidden_test_lines(tree, test_paths):
    """The @graded lines of the hidden tests that the starter's grader.py does not hold: they name hidden tests."""
    lines = set()
    for path in test_paths:
        with open(path, encoding="utf-8") as f:
            lines.update(line.strip() for line in f if line.strip().startswith("@graded("))
    if lines:
        with open(os.path.join(tree, "grader.py"), encoding="utf-8") as f:
            lines -= {line.strip() for line in f}
    return sorted(lines)


def part_labels(part):
    """The labels of a part of an edition's parts: ['[part c]', '[part f]'] for 'c and f'."""
    return [f"[part {letter}]" for letter in part.split(" and ")]


def definitions(path, text):
    """{qualified name: (its node, the top-level node it is in)} of the functions and classes of a
    source file, methods as 'Class.method'."""
    found = {}
    for node in ast.parse(text, path).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = (node, node)
        if isinstance(node, ast.ClassDef):
            found.update({f"{node.name}.{item.name}": (item, node) for item in node.body
                          if isinstance(item, ast.FunctionDef)})
    return found


def student_file_problems(tree, edition=SEED_EDITION):
    """
    What keeps the student files of the starter `tree` (src/submission/*.py)
    from reading as the handout describes them, one line each: a file that
    does not compile, does not carry ORIGIN_LINE, or speaks of one of UNSAID;
    a function `edition`'s students write missing, without a region to write
    in, or without its part's label in that edition ('[part e]') between the
    start of its definition (or its class) and its region; given code of
    facts.GIVEN_FOR_PARTS for a part of the edition without its label; the
    LICENSE that ORIGIN_LINE points to missing from the starter.
    """
    found, places = [], {}
    folder = os.path.join(tree, STUDENT_FILES)
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not name.endswith(".py"):
            continue
        path = os.path.join(STUDENT_FILES, name)
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            text = f.read()
        try:
            compile(text, path, "exec")
            spans = regions.locate(text, path)
        except SyntaxError as error:
            found.append(f"{path} does not compile: {error}")
            continue
        except regions.RegionError as error:
            found.append(str(error))
            continue
        if ORIGIN_LINE not in text:
            found.append(f"{path} does not say where its code comes from ({ORIGIN_LINE!r})")
        for word in UNSAID:
            match = re.search(re.escape(word), text, re.IGNORECASE)
            if match:
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path}:{line} speaks of the {word}")
        lines = text.splitlines()
        for qualname, (node, outer) in definitions(path, text).items():
            starts = [start for start, _ in spans if node.lineno <= start < node.end_lineno]
            places[qualname] = (path, "\n".join(lines[outer.lineno - 1:starts[0] if starts else node.end_lineno]),
                                bool(starts))
    parts = EDITIONS[edition].parts
    labelled = [(name, part, True) for name, part in parts.items()]
    labelled += [(name, part, False) for name, part in GIVEN_FOR_PARTS.items() if part in parts.values()]
    for name, part, needs_region in labelled:
        if name not in places:
            found.append(f"{name}, of part ({part}), is missing from {STUDENT_FILES}")
            continue
        path, before_region, has_region = places[name]
        if needs_region and not has_region:
            found.append(f"{path}: {name} has no region to write in")
        found += [f"{path}: {name} lacks its label {label}" for label in part_labels(part) if label not in before_region]
    if not os.path.isfile(os.path.join(tree, LICENSE)):
        found.append(f"{LICENSE} is missing, and every student file points to it")
    return found


DOC_PAGE = re.compile(r"\bdocs/[\w.-]+\.md\b")
INSTRUCTORS_STAGE = re.compile(r"\./run\.sh (%s)\b" % "|".join(
    name for name, (audience, _) in OTHER_STAGES.items() if audience == "instructors"))
TEXT_SUFFIXES = (".py", ".md", ".sh", ".txt", ".yml")


def references_elsewhere(tree):
    """'file:line' for each line of the starter's text files (the course's data aside) that sends the
    reader to a docs/ page the starter lacks, or to an instructors' stage of run.sh, which the starter
    cannot run."""
    found = []
    for path in tree_files(tree):
        if not path.endswith(TEXT_SUFFIXES) or path.startswith("data" + os.sep):
            continue
        with open(os.path.join(tree, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, start=1):
                pages = [page for page in DOC_PAGE.findall(line) if not os.path.isfile(os.path.join(tree, page))]
                if pages or INSTRUCTORS_STAGE.search(line):
                    found.append(f"{path}:{number}")
    return found


def problems(tree, labels_path, package_dir, test_paths=()):
    """
    Every reason not to hand out the starter tree cut from the solution package at package_dir, one line each;
    `test_paths` are the hidden bundle's tests.
    """
    found = [f"{path} contains a line of the test labels" for path in files_leaking(tree, label_lines(labels_path))]
    found += [f"{path} names a hidden test" for path in files_leaking(tree, hidden_test_lines(tree, test_paths))]
    found += [f"{path} contains a line of the solution's regions"
              for path in files_leaking(tree, solution_lines(package_dir))]
    found += [f"{path} is a trained output" for path in trained_outputs(tree)]
    found += [f"{place} points to a page or stage the starter does not have" for place in references_elsewhere(tree)]
    failure = import_failure(tree)
    if failure:
        found.append(f"the starter does not import: {failure}")
    return found
