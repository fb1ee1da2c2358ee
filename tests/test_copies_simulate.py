"""
The simulated classes of independent hand-ins (src/instructors/copies/simulate.py) that measure the
answer statistic's false positives: a class's shape and labels, about a fifth of its answers right (as
the pretrained models), and each measure counted over pairs or over classes as its name says. The
false-positive rate itself: tests/test_copies.py.
"""

import math

import numpy as np

from instructors.copies import simulate
from instructors.copies.verdicts import ALPHA_COPY, ALPHA_SUSPECT


def test_a_simulated_class_answers_about_a_fifth_rightly_and_wrongly_from_its_places():
    """Kills the difficulty and the skill swapped in the chance of a right answer (four fifths right)."""
    ids, labels = simulate.simulated_class(np.random.default_rng(0), 200, 400, places=50)
    assert ids.shape == (200, 400) and labels.tolist() == [0] * 400
    assert 0.15 < (ids == 0).mean() < 0.3
    assert ids.min() == 0 and ids.max() == 50
    skilled = (ids == 0).mean(axis=1)
    assert skilled.max() - skilled.min() > 0.3  # hand-ins of different skills


def test_each_measure_is_counted_over_pairs_or_classes(monkeypatch):
    """Kills a class with a suspect pair but no copy left out of the classes flagged, or a share taken over
    the wrong count."""
    p = iter([([0.04, 0.5, 0.5], [0.02, 0.5, 1.0]), ([0.001, 0.5, 0.5], [ALPHA_COPY / 2, 1.0, 1.0]),
              ([0.9, 0.5, 0.5], [ALPHA_SUSPECT, 1.0, 1.0])])
    monkeypatch.setattr(simulate, "flagged", lambda ids, labels: tuple(np.log10(v) for v in next(p)))
    rates = simulate.false_positives(seed=1, classes=3, size=3, questions=5)
    assert (rates["pairs"], rates["classes"]) == (9, 3)
    assert rates["unadjusted_below_0_05"] == 2 / 9 and rates["suspect_or_copy"] == 2 / 9 and rates["copy"] == 1 / 9
    assert rates["classes_flagged"] == 2 / 3 and rates["classes_copy"] == 1 / 3
    assert rates["smallest_log10_p"] == math.log10(0.001)


def test_the_command_prints_each_measure_with_and_without_labels(capsys):
    simulate.main(["--classes", "2", "--size", "5", "--questions", "40", "--seed", "3"])
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if not line.startswith("  ")] == [
        "with labels: 20 pairs in 2 classes of 5 hand-ins, 40 questions, seed 3",
        "without labels: 20 pairs in 2 classes of 5 hand-ins, 40 questions, seed 3"]
    assert lines[1].startswith("  unadjusted_below_0_05: ") and lines[1].endswith(" of 20)")
    assert lines[4].startswith("  classes_flagged: ") and lines[4].endswith(" of 2)")
    assert lines[6].startswith("  smallest unadjusted p: 10^")


def test_the_command_defaults_to_the_measured_figures_runs(monkeypatch, capsys):
    """The defaults are the runs of docs/copies.md's first rows: 200 classes of 40 hand-ins, 500 questions, seed 0."""
    asked = []
    monkeypatch.setattr(simulate, "false_positives", lambda *args: asked.append(args) or dict(
        pairs=1, classes=1, smallest_log10_p=0.0, unadjusted_below_0_05=0, suspect_or_copy=0, copy=0,
        classes_flagged=0, classes_copy=0))
    simulate.main([])
    assert asked == [(0, 200, 40, 500, True), (0, 200, 40, 500, False)]
