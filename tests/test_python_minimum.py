"""
The oldest Python the project runs on, stated once (PYTHON_MINIMUM of
src/assignment/facts.py): the code of src/ and grader.py parses on it and
uses no name it lacks, it is the Python that requirements.txt's torch is
built for, every document that states a minimum states it, and run.sh
refuses an older Python in one line before any stage starts.
"""

import ast
import importlib.metadata
import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from assignment.facts import PYTHON_MINIMUM

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "src").rglob("*.py"), ROOT / "grader.py"])
MINIMUM = "%d.%d" % PYTHON_MINIMUM
# What later Pythons added, by the Python that added it: modules, modules' names, builtins, methods of any value
# but a module ('.walk' is Path.walk, not os.walk) and keyword arguments ('process_group=' of subprocess).
ADDED = {
    (3, 11): ("asyncio.TaskGroup", "asyncio.timeout", "contextlib.chdir", "datetime.UTC", "enum.StrEnum",
              "hashlib.file_digest", "logging.getLevelNamesMapping", "operator.call", "sys.exception", "tomllib",
              "typing.LiteralString", "typing.Never", "typing.NotRequired", "typing.Required", "typing.Self",
              "typing.assert_never", "typing.reveal_type", "BaseExceptionGroup", "ExceptionGroup", ".add_note",
              "process_group="),
    (3, 12): ("itertools.batched", "math.sumprod", "os.setns", "os.unshare", "typing.override", ".walk",
              ".is_junction", "onexc=", "delete_on_close=", "walk_up="),
    (3, 13): ("copy.replace", "os.process_cpu_count", "warnings.deprecated", "PythonFinalizationError"),
}
# The files that state the minimum to their readers; the release copies run.sh and environment.yml into the
# starter and writes its README from the template.
STATING = ("run.sh", "environment.yml", "README.md", "src/instructors/release/templates/README.student.md")
DOCUMENTS = sorted({ROOT / "run.sh", ROOT / "grader.py", *ROOT.glob("*.md"), *ROOT.glob("*.yml"),
                    *ROOT.glob("*.toml"), *(ROOT / "docs").rglob("*.md"), *(ROOT / "src").rglob("*.py"),
                    *(ROOT / "src").rglob("*.md"), *(ROOT / "src/instructors/release/templates").iterdir()})
TRY_STAR, TYPE_ALIAS = getattr(ast, "TryStar", ()), getattr(ast, "TypeAlias", ())  # 3.11's and 3.12's nodes
STATEMENT = re.compile(r"Python (\d+\.\d+)(?:\+| or newer| or later)")
PRETENDING = """#!/bin/bash
# Python {version} to run.sh's own checks (the -c code runs with that sys.version_info); the help runs, and any
# other call records its arguments in $CALLED
if [[ "$1" == -c ]]; then
    exec "{python}" -c "import sys; sys.version_info = ({version}, 0, 'final', 0)
$2" "${@:3}"
elif [[ "$1 $2" == "-m stages.help" ]]; then
    exec "{python}" "$@"
fi
printf '%s\\n' "$@" > "$CALLED"
"""


def syntax(nodes):
    """(line, construct, the Python that added it) for the constructs among `nodes` that ast.parse's
    feature_version lets through on some Pythons."""
    for node in nodes:
        if isinstance(node, ast.Subscript):
            index = node.slice
            if isinstance(index, ast.Starred) or isinstance(index, ast.Tuple) and any(
                    isinstance(item, ast.Starred) for item in index.elts):
                yield node.lineno, "a starred index", (3, 11)
        elif isinstance(node, ast.arg) and isinstance(node.annotation, ast.Starred):
            yield node.lineno, "a starred annotation", (3, 11)
        elif isinstance(node, TRY_STAR):
            yield node.lineno, "except*", (3, 11)
        elif isinstance(node, TYPE_ALIAS):
            yield node.lineno, "a type statement", (3, 12)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and getattr(
                node, "type_params", None):
            yield node.lineno, "type parameters", (3, 12)


def f_strings(source):
    """(line, 'an f-string ...', (3, 12)) for each f-string of `source` that only Python 3.12 reads: one that does
    not end at its first closing quote, or with a backslash or '#' between its braces. An older Python's parser
    refuses these itself."""
    if not hasattr(tokenize, "FSTRING_START"):
        return
    offsets = [0]
    for line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    depth = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.FSTRING_START and depth == 0:
            start = token
        elif (depth > 1 or depth == 1 and token.type != tokenize.FSTRING_MIDDLE) and re.search(r"[\\#]", token.string):
            yield token.start[0], "an f-string with a backslash or '#' between its braces", (3, 12)
        depth += (token.type == tokenize.FSTRING_START) - (token.type == tokenize.FSTRING_END)
        if token.type == tokenize.FSTRING_END and depth == 0:
            text = source[offsets[start.start[0] - 1] + start.start[1]:offsets[token.end[0] - 1] + token.end[1]]
            plain = re.sub("[fF]", "", start.string) + text[len(start.string):]
            try:
                whole = next(tokenize.generate_tokens(io.StringIO(plain).readline)).string == plain
            except (tokenize.TokenError, SyntaxError):
                whole = False
            if not whole:
                yield start.start[0], "an f-string that does not end at its first closing quote", (3, 12)


def names(nodes):
    """(line, name) for each name that `nodes` use, spelt as ADDED spells them."""
    modules = {alias.asname or alias.name.split(".")[0]: alias.name if alias.asname else alias.name.split(".")[0]
               for node in nodes if isinstance(node, ast.Import) for alias in node.names}
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield from ((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Attribute):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            yield node.lineno, f"{modules[owner]}.{node.attr}" if owner in modules else f".{node.attr}"
        elif isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.lineno, f"{node.arg}="


def past_the_minimum(source):
    """'line N: what (Python X.Y)' for each construct or name of `source` that X.Y added after PYTHON_MINIMUM, or
    the one line of the error where a Python of the minimum cannot parse it."""
    try:
        nodes = list(ast.walk(ast.parse(source, feature_version=PYTHON_MINIMUM)))
    except SyntaxError as error:
        return [f"line {error.lineno}: {error.msg}"]
    used = [(line, name, version) for line, name in names(nodes) for version, added in ADDED.items() if name in added]
    return [f"line {line}: {what} (Python {version[0]}.{version[1]})"
            for line, what, version in sorted([*syntax(nodes), *f_strings(source), *used]) if version > PYTHON_MINIMUM]


def test_the_code_needs_nothing_newer_than_the_minimum():
    """Kills a file of src/ or grader.py that a Python of the minimum cannot run: newer syntax
    (except*, a type statement, an f-string with its own quotes inside) or a newer name (datetime.UTC,
    itertools.batched, Path.walk)."""
    found = {str(path.relative_to(ROOT)): problems for path in SOURCES
             if (problems := past_the_minimum(path.read_text(encoding="utf-8")))}
    assert found == {}


@pytest.mark.parametrize("source, added", [
    ("try:\n    pass\nexcept* ValueError:\n    pass\n", (3, 11)),
    ("a[*b]\n", (3, 11)),
    ("def f(*a: *b): pass\n", (3, 11)),
    ("type X = int\n", (3, 12)),
    ("def f[T](x: T): pass\n", (3, 12)),
    ('f"{d["k"]}"\n', (3, 12)),
    ("f'{\"\\\\n\".join(x)}'\n", (3, 12)),
    ('f"""{x  # a comment\n}"""\n', (3, 12)),
    ("import datetime\ndatetime.UTC\n", (3, 11)),
    ("import hashlib as h\nh.file_digest(f, 'sha256')\n", (3, 11)),
    ("from itertools import batched\n", (3, 12)),
    ("import tomllib\n", (3, 11)),
    ("raise ExceptionGroup('', [])\n", (3, 11)),
    ("Path('.').walk()\n", (3, 12)),
    ("subprocess.run(x, process_group=0)\n", (3, 11)),
    ("match x:\n    case 1:\n        pass\n", (3, 10)),
    ("with (open(a) as b, open(c) as d):\n    pass\n", (3, 10)),
    ("zip(a, b, strict=True)\n", (3, 10)),
    ("traceback.print_exception(error)\n", (3, 10)),
    ("import os\nos.walk('.')\n", (3, 0)),
    ("f\"{d['k']}\" f'{x:#x}' f\"\"\"{d[\"k\"]}\"\"\"\n", (3, 6)),
])
def test_the_check_finds_what_the_minimum_lacks_and_only_that(source, added):
    """Kills a check of the sources that lets through what the minimum lacks (and so passes whatever they hold),
    or that refuses what it has: os.walk for Path.walk, an f-string's format spec or other quotes for its own."""
    assert bool(past_the_minimum(source)) == (added > PYTHON_MINIMUM)


def test_the_minimum_is_the_one_requirements_txts_torch_is_built_for():
    """Kills a minimum below the Python that requirements.txt's torch has wheels for (3.9 beside torch 2.13.0,
    where pip finds no torch at all), or above it."""
    pin = re.search(r"^torch==(\S+)$", (ROOT / "requirements.txt").read_text(encoding="utf-8"), re.M).group(1)
    installed = importlib.metadata.metadata("torch")
    if installed["Version"].split("+")[0] != pin:
        pytest.skip(f"torch {installed['Version']} is installed, not requirements.txt's {pin}")
    assert re.fullmatch(r">=\s*(\d+)\.(\d+)", installed["Requires-Python"]).groups() == tuple(map(str, PYTHON_MINIMUM))


def test_every_statement_of_a_minimum_is_the_constant():
    """Kills a README, run.sh, environment.yml or starter README that states no minimum, and any document or
    source that states another one than facts.py's (the 3.9 they stated beside torch 2.13.0, which needs 3.10)."""
    stated = {str(path.relative_to(ROOT)): STATEMENT.findall(path.read_text(encoding="utf-8")) for path in DOCUMENTS}
    assert {path: versions for path, versions in stated.items() if set(versions) - {MINIMUM}} == {}
    assert [path for path in STATING if not stated[path]] == []


def test_the_packaging_metadata_requires_the_minimum():
    """Kills a pyproject.toml whose requires-python is another Python than facts.py's, or that has none."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # read without tomllib, which 3.10 lacks
    project = text.split("[project]\n", 1)[1].split("\n[", 1)[0]
    assert re.findall(r'^requires-python = "(.*)"$', project, re.M) == [">=" + MINIMUM]


def run_sh(tmp_path, version, *args):
    """run.sh with `args` and a PYTHON that is `version` (major, minor) to its checks: (exit status, stdout,
    stderr, whether a stage's command ran)."""
    python, called = tmp_path / "python", tmp_path / "called"
    python.write_text(PRETENDING.replace("{python}", sys.executable).replace("{version}", "%d, %d" % version))
    python.chmod(0o755)
    done = subprocess.run(["bash", str(ROOT / "run.sh"), *args], env=dict(os.environ, PYTHON=str(python),
                          CALLED=str(called)), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    return done.returncode, done.stdout, done.stderr, called.exists()


@pytest.mark.parametrize("stage", ["help", "collect_submission", "vanilla_pretrain", "test"])
def test_run_sh_refuses_an_older_python_in_one_line_before_any_stage(tmp_path, stage):
    """Kills an older Python let through to a stage (where pip finds no torch for it, or a traceback is the
    first thing a student reads), a refusal in more than one line or with exit status 0, and a check against
    another minimum than facts.py's."""
    major, minor = PYTHON_MINIMUM
    assert run_sh(tmp_path, (major, minor - 1), stage) == (
        1, "", f"run.sh: {tmp_path}/python is Python {major}.{minor - 1}: the assignment needs Python {MINIMUM} or "
               f"newer; install it, or set PYTHON\n", False)


def test_run_sh_runs_the_stages_on_the_minimum(tmp_path):
    """Kills a check that refuses the minimum itself, and with it every stage."""
    status, out, err, _ = run_sh(tmp_path, PYTHON_MINIMUM, "help")
    assert (status, err) == (0, "") and out.startswith("usage: ./run.sh")
    assert run_sh(tmp_path, PYTHON_MINIMUM, "vanilla_pretrain")[::3] == (0, True)
