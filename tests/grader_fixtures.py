"""
Helpers for tests/test_grader.py: copies of the reference solution, hidden
bundles with made-up labels, prediction files with a chosen number of
correct answers, and running grader.py as a separate process.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRADER = ROOT / "grader.py"
REFERENCE = ROOT / "src" / "submission"
COPY_IGNORED = shutil.ignore_patterns("__pycache__", "*.params", "*.predictions")

QUESTIONS = {"dev": 60, "test": 50}
PLACES = ["London", "Paris", "Lagos", "Lima", "Kyoto", "Dublin", "Warsaw", "Tangier"]
PREDICTION_STEMS = ("vanilla.nopretrain", "vanilla.pretrain", "perceiver.pretrain")
# Correct answers that just meet the default thresholds (at least one correct;
# vanilla >= 10% dev and >= 9% test; perceiver >= 6% dev and >= 5% test).
JUST_ENOUGH = {
    ("vanilla.nopretrain", "dev"): 1, ("vanilla.nopretrain", "test"): 1,
    ("vanilla.pretrain", "dev"): 6, ("vanilla.pretrain", "test"): 5,
    ("perceiver.pretrain", "dev"): 4, ("perceiver.pretrain", "test"): 3,
}
REPORT_LINE = re.compile(r"^(\d+[a-z]+-\d+-(?:basic|hidden))\s.*?\s(\S+)/(\S+)\s+(pass|fail|error|timeout|hidden)\b")


def copy_reference(destination):
    """A copy of the reference package (without params or predictions) at `destination`."""
    shutil.copytree(REFERENCE, destination, ignore=COPY_IGNORED)
    return Path(destination)


def make_bundle(directory, reference=True, thresholds=None):
    """A hidden bundle with made-up labels; returns (bundle path, {split: answers})."""
    bundle = Path(directory)
    bundle.mkdir(parents=True)
    answers = {}
    for number, (split, count) in enumerate(QUESTIONS.items()):
        answers[split] = [PLACES[(i * 3 + number) % len(PLACES)] for i in range(count)]
        lines = [f"Where was Person {split} {i} born?\t{a}\n" for i, a in enumerate(answers[split])]
        (bundle / f"birth_{split}.tsv").write_text("".join(lines), encoding="utf-8")
    if reference:
        copy_reference(bundle / "reference")
    if thresholds is not None:
        (bundle / "thresholds.json").write_text(json.dumps(thresholds), encoding="utf-8")
    return bundle, answers


def write_predictions(package, answers, correct=None):
    """Prediction files whose first correct[(stem, split)] answers are right and the rest wrong."""
    correct = correct or JUST_ENOUGH
    for stem in PREDICTION_STEMS:
        for split, truth in answers.items():
            right = correct[(stem, split)]
            lines = [a if i < right else "Atlantis" for i, a in enumerate(truth)]
            (Path(package) / f"{stem}.{split}.predictions").write_text("".join(p + "\n" for p in lines),
                                                                      encoding="utf-8")


def run_grader(*args, grader=GRADER, timeout=300):
    """grader.py with `args`, as a separate process, without any hidden bundle from the environment."""
    env = {k: v for k, v in os.environ.items() if k != "GRADER_HIDDEN_DIR"}
    return subprocess.run([sys.executable, str(grader), *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def statuses(stdout):
    """{test id: status} from the report lines of grader.py's output."""
    found = {}
    for line in stdout.splitlines():
        match = REPORT_LINE.match(line)
        if match:
            found[match.group(1)] = match.group(4)
    return found


def grade(package, tests, *options):
    """Grade `package` on `tests`, checking the run completed; returns (statuses, stdout)."""
    completed = run_grader("--submission", package, *options, *tests)
    assert completed.returncode == 0, completed.stderr
    found = statuses(completed.stdout)
    assert set(found) == set(tests), completed.stdout
    return found, completed.stdout
