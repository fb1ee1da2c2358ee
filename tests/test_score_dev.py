"""
./run.sh score_dev (src/stages/score.py) at the edge: a dev file exactly at
its threshold meets it, as the hidden test counts it (at least, not more
than).
"""

from stages import score

QUESTIONS = 500  # makes every threshold a whole number of right answers


def test_a_file_exactly_at_its_threshold_meets_it(tmp_path, capsys):
    places = [f"Place {number}" for number in range(QUESTIONS)]
    dev = tmp_path / "birth_dev.tsv"
    dev.write_text("".join(f"Where was Person {number} born?\t{place}\n" for number, place in enumerate(places)))
    for stem, threshold in score.THRESHOLDS.items():
        right = threshold.get("min_correct") or round(threshold["min_accuracy"] * QUESTIONS)
        assert right / QUESTIONS >= threshold.get("min_accuracy", 0) and right >= threshold.get("min_correct", 0)
        assert (right - 1) / QUESTIONS < threshold.get("min_accuracy", 0) or right - 1 < threshold["min_correct"]
        answers = places[:right] + ["Nowhere"] * (QUESTIONS - right)
        (tmp_path / f"{stem}.predictions").write_text("".join(answer + "\n" for answer in answers))
    assert score.main(["--out_dir", str(tmp_path), "--dev_path", str(dev)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(line.endswith(": met") for line in lines[:3])
