"""
Checks on a finished release, run before it is moved into place.

Each check returns what is wrong (an empty list or None when all is well), so
the release can refuse to hand out a starter that leaks answers or hidden
tests, ships trained outputs or does not even import, or a hidden bundle that
the grader would reject.
"""

import os
import subprocess
import sys

from . import regions

FORBIDDEN_SUFFIXES = (".params", ".predictions")
SECRET_LINE_CHARS = 30


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
    """None when every module of tree/src imports, else the error's last line."""
    src = os.path.join(tree, "src")
    modules = sorted(os.path.splitext(path)[0].replace(os.sep, ".").removesuffix(".__init__")
                     for path in tree_files(src) if path.endswith(".py") and not path.endswith("__main__.py"))
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
    failure = import_failure(tree)
    if failure:
        found.append(f"the starter does not import: {failure}")
    return found
