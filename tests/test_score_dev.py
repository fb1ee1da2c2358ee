"""
./run.sh score_dev (src/stages/score.py) at the edges: a dev file exactly at
its threshold meets it, as the hidden test counts it (at least, not more
than), and a file with more lines than questions is refused, not scored on
its first lines.
"""

from stages import score

QUESTIONS = 500  # makes every threshold a whole number of right answers


def dev_file(folder):
    """A dev file of QUESTIONS labelled questions; (its path, its places)."""
    places = [f"Place {number}" for number in range(QUESTIONS)]
    dev = folder / "birth_dev.tsv"
    dev.write_text("".join(f"Where was Person {number} born?\t{place}\n" for number, place in enumerate(places)))
    return dev, places


def test_a_file_exactly_at_its_threshold_meets_it(tmp_path, capsys):
    dev, places = dev_file(tmp_path)
    for stem, threshold in score.THRESHOLDS.items():
        right = threshold.get("min_correct") or round(threshold["min_accuracy"] * QUESTIONS)
        assert right / QUESTIONS >= threshold.get("min_accuracy", 0) and right >= threshold.get("min_correct", 0)
        assert (right - 1) / QUESTIONS < threshold.get("min_accuracy", 0) or right - 1 < threshold["min_correct"]
        answers = places[:right] + ["Nowhere"] * (QUESTIONS - right)
        (tmp_path / f"{stem}.predictions").write_text("".join(answer + "\n" for answer in answers))
    assert score.main(["--out_dir", str(tmp_path), "--dev_path", str(dev)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(line.endswith(": met") for line in lines[:3])


def test_a_file_with_more_predictions_than_questions_is_refused(tmp_path, capsys):
    dev, places = dev_file(tmp_path)
    (tmp_path / "vanilla.pretrain.dev.predictions").write_text("".join(place + "\n" for place in places + ["Extra"]))
    assert score.main(["--out_dir", str(tmp_path), "--dev_path", str(dev)]) == 1
    assert (f"vanilla.pretrain.dev: {QUESTIONS + 1} predictions for {QUESTIONS} questions: rerun ./run.sh "
            f"vanilla_eval_dev_with_pretrain") in capsys.readouterr().out.splitlines()
