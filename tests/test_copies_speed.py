"""
The copy report's timing (src/instructors/copies/speed.py) on a class of three: the simulated class it
times holds a folder of the six prediction files a hand-in, of the bundle's dev and test counts, with
a bundle of their labels, and one timed report runs to the end in a folder of its own. (The figures
themselves: docs/copies.md; no speed is asserted.)
"""

import os

from instructors.copies import speed
from instructors.copies.class_regeneration import OUTPUTS


def test_the_timed_class_and_one_timed_report(tmp_path):
    bundle = speed.write_class(str(tmp_path), 3, seed=1)
    hand_ins = sorted(os.listdir(tmp_path / "class"))
    assert hand_ins == ["student000", "student001", "student002"]
    for name in hand_ins:
        assert sorted(os.listdir(tmp_path / "class" / name)) == sorted(output.file for output in OUTPUTS)
    for output in OUTPUTS:
        count = speed.QUESTIONS[output.labels]
        lines = (tmp_path / "class" / "student001" / output.file).read_text(encoding="utf-8").splitlines()
        assert len(lines) == count and all(line.startswith("Place ") for line in lines)
        assert len((tmp_path / "labels" / output.labels).read_text(encoding="utf-8").splitlines()) == count
    assert bundle == str(tmp_path / "labels")
    before = set(os.listdir(tmp_path))
    assert speed.report_seconds(str(tmp_path), "--hidden", bundle) > 0
    (made,) = set(os.listdir(tmp_path)) - before
    assert sorted(os.listdir(tmp_path / made)) == ["agreement.png", "pairs.csv", "report.md"]
