"""
./run.sh score_dev at the edges (grader.py --labels, the hidden tests' own
scoring): a dev file exactly at its test's threshold meets it, one answer
fewer does not, and a file with more lines than questions is refused, not
scored on its first lines.
"""

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from grader_fixtures import GRADER, report
from grading import registry

QUESTIONS = 500  # makes every threshold a whole number of right answers
DEV_TESTS = {"1d-0-hidden": "vanilla.nopretrain.dev.predictions", "1f-1-hidden": "vanilla.pretrain.dev.predictions"}


@pytest.fixture(scope="module")
def thresholds():
    """The thresholds grader.py gives the vanilla dev prediction tests."""
    runpy.run_path(str(GRADER), run_name="thresholds")
    return {test: registry.TESTS[test].thresholds for test in DEV_TESTS}


def dev_file(folder):
    """A dev file of QUESTIONS labelled questions; (its path, its places)."""
    places = [f"Place {number}" for number in range(QUESTIONS)]
    dev = Path(folder) / "birth_dev.tsv"
    dev.write_text("".join(f"Where was Person {number} born?\t{place}\n" for number, place in enumerate(places)))
    return dev, places


def just_enough(threshold):
    """The fewest right answers of QUESTIONS that meet `threshold`."""
    return max(threshold.get("min_correct", 0), round(threshold.get("min_accuracy", 0) * QUESTIONS))


def score_dev(folder, dev):
    """grader.py as ./run.sh score_dev runs it, on the vanilla dev tests; {test: (status, points)} and the output."""
    done = subprocess.run([sys.executable, str(GRADER), "--labels", str(dev), "--files", str(folder), *DEV_TESTS],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return report(done.stdout), done.stdout


@pytest.mark.parametrize("short", [0, 1])
def test_a_file_exactly_at_its_threshold_meets_it(tmp_path, thresholds, short):
    dev, places = dev_file(tmp_path)
    for test, name in DEV_TESTS.items():
        right = just_enough(thresholds[test]) - short
        answers = places[:right] + ["Nowhere"] * (QUESTIONS - right)
        (tmp_path / name).write_text("".join(answer + "\n" for answer in answers))
    found, _ = score_dev(tmp_path, dev)
    assert {test: status for test, (status, _) in found.items()} == dict.fromkeys(DEV_TESTS, "fail" if short else "pass")


def test_a_file_with_more_predictions_than_questions_is_refused(tmp_path):
    dev, places = dev_file(tmp_path)
    (tmp_path / "vanilla.pretrain.dev.predictions").write_text("".join(place + "\n" for place in places + ["Extra"]))
    found, stdout = score_dev(tmp_path, dev)
    assert found["1f-1-hidden"] == ("fail", 0.0)
    assert (f"vanilla.pretrain.dev.predictions has {QUESTIONS + 1} predictions for {QUESTIONS} questions in "
            "birth_dev.tsv: rerun ./run.sh vanilla_eval_dev_with_pretrain") in stdout
