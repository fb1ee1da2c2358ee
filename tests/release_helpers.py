"""
Helpers of the release's tests: the reference solution's sources (as an
edition's starter has them before its regions are cut), python run with
src/ on the path, the release command run in this process
(tests/test_release_main_inputs.py starts it as a command), a starter's
grader.py run to its results, a small generated course's data folder (the
`data_dir` fixture), hidden tests to hand the release, and a tiny model's
parameters stamped as run.py stamps them.
"""

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from assignment.editions import EDITIONS, SEED_EDITION
from instructors.release.__main__ import main as release_main
from instructors.release.edition_blocks import for_edition, relabel
from instructors.release.student import with_initializer
from runtime.params import stamp
from submission import GPT, GPTConfig

from runtime_helpers import write_data


REPO = Path(__file__).resolve().parents[1]
SOLUTION = REPO / "src" / "submission"


def solution_sources():
    """{file name: text} of the reference solution's .py files, read byte for byte."""
    return {path.name: path.read_bytes().decode("utf-8") for path in sorted(SOLUTION.glob("*.py"))}


def seed_sources():
    """solution_sources() as the seed edition has them: the other editions' blocks left out."""
    second_model = EDITIONS[SEED_EDITION].second_model
    return {name: for_edition(text, second_model, name) for name, text in solution_sources().items()}


def edition_sources(edition):
    """solution_sources() as `edition`'s starter has them before its regions are cut: its second model's
    blocks alone, its part letters, its second model's initializer's signature."""
    second_model = EDITIONS[edition].second_model
    return {name: with_initializer(relabel(for_edition(text, second_model, name), edition), edition)
            for name, text in solution_sources().items()}


def run_python(args, cwd=REPO, env=None, timeout=300):
    """Run `python3 args` with src/ on the path; returns the CompletedProcess."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def release_here(out, data, *extra):
    """`python3 -m instructors.release --out OUT [--data DATA] extra...` run in this process (data None: the
    default, the repository's data/); returns (exit status, its stderr)."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        status = release_main(["--out", str(out), *(["--data", str(data)] if data else []), *extra])
    return status, stderr.getvalue()


def grader_results(tree, tmp_path, *args):
    """Run `python grader.py --json ... args` in `tree`; returns (process, {test id: test entry})."""
    results = tmp_path / "grader.json"
    done = run_python(["grader.py", "--json", str(results), *args], cwd=tree, env={"PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr
    return done, {test["number"]: test for test in json.loads(results.read_text())["tests"]}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, make_corpus):
    folder = tmp_path_factory.mktemp("course") / "data"
    write_data(folder, make_corpus(seed=7, count=90), train=40, dev=25)
    return folder


def files_under(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


HIDDEN_TESTS = {
    "stricter.py": ("from grading import graded\nfrom grading.handout.predictions import score_predictions\n\n\n"
                    "@graded(\"1f-1-hidden\", points=5, visibility=\"hidden\", timeout=300, min_accuracy=0.5)\n"
                    "def vanilla_dev(ctx):\n    \"\"\"vanilla pretrained: dev accuracy, this term\"\"\"\n"
                    "    return score_predictions(ctx, \"vanilla.pretrain.dev.predictions\")\n"),
    "extra.py": ("from grading import check, graded\n\n\n"
                 "@graded(\"1i-0-hidden\", points=1, visibility=\"hidden\", timeout=60)\n"
                 "def extra(ctx):\n    \"\"\"an extra hidden test\"\"\"\n    check(True, \"never\")\n"),
}


def write_hidden_tests(folder, files=HIDDEN_TESTS):
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def write_params(path, configuration="", perceiver=False):
    """A tiny model's parameters at `path`, stamped as run.py stamps them with `configuration`
    ('' for the graded one; None for no stamp)."""
    torch.manual_seed(len(str(path)))
    extra = dict(perceiver=True, bottleneck_dim=4) if perceiver else {}
    model = GPT(GPTConfig(12, 16, n_layer=2, n_head=2, n_embd=8, **extra))
    if configuration is not None:
        stamp(model, "".join(chr(97 + i) for i in range(12)), configuration)
    torch.save(model.state_dict(), path)
