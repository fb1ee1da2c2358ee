"""
The copy report's text files (src/instructors/copies/report.py) from pairs made here: report.md says
how the run was made (one hand-in, not "1 hand-ins"), counts each verdict, lists each flagged pair with
its evidence strongest first (or "None."), shows the CLOSEST_SHOWN closest independent pairs and no
more, numbers the hand-ins from 0 as agreement.png does, and lists the inputs not compared;
pairs.csv has a row a pair, in the order given, its empty cells empty rather than 0.
"""

import csv
from types import SimpleNamespace

import pytest

from instructors.copies import report
from instructors.copies.handins import HandIn
from instructors.copies.parameters import Comparison
from instructors.copies.verdicts import Pair


def hand_ins(count, known=0):
    return [HandIn(f"h{i}", f"/class/h{i}") for i in range(count)] + \
        [HandIn(f"known/k{i}", f"/known/k{i}", "/known") for i in range(known)]


def independent_pairs(count):
    """Independent pairs of hand-ins 0 and 1.. with 10 - k identical answers of 10."""
    return [Pair(0, k + 1, identical=10 - k, compared=10) for k in range(count)]


def written(tmp_path, run, pairs, people, comparisons=None, problems=()):
    report.write_texts(str(tmp_path), run, pairs, people, comparisons or {}, list(problems))
    with open(tmp_path / "pairs.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return (tmp_path / "report.md").read_text(encoding="utf-8"), rows


def section(text, title):
    """The lines of report.md's section `title`, up to the next."""
    lines = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in lines.splitlines() if line]


@pytest.mark.parametrize("count", [report.CLOSEST_SHOWN, report.CLOSEST_SHOWN + 2])
def test_the_closest_independent_pairs_are_the_first_closest_shown(tmp_path, count):
    """Kills a pair fewer or more shown than CLOSEST_SHOWN, or the last ones shown instead of the first."""
    people = hand_ins(count + 1)
    text, rows = written(tmp_path, report.Run("/class", []), independent_pairs(count), people)
    table = section(text, "The closest independent pairs")[2:]
    assert table == [f"| h0 | h{k + 1} | {10 - k} of 10 | - | 1 | - |" for k in range(report.CLOSEST_SHOWN)]
    assert section(text, "Flagged pairs, strongest evidence first") == ["None."]
    assert len(rows) == count and [row["b"] for row in rows] == [f"h{k + 1}" for k in range(count)]


def test_flagged_pairs_list_their_evidence_strongest_first_and_the_csv_its_figures(tmp_path):
    """Kills evidence listed in the order found, shared wrong answers written 0 without labels, and a
    known hand-in's folder left unnamed."""
    people = hand_ins(2, known=1)
    flagged = Pair(0, 2, [("suspect", "close parameters"), ("copy", "shared answers")], ["vanilla.model.params"],
                   0.3, -5.0, 7, 10, shared_wrong=3)
    plain = Pair(0, 1, identical=4, compared=8)
    text, rows = written(tmp_path, report.Run("/class", ["/known"]), [flagged, plain], people)
    assert section(text, "Flagged pairs, strongest evidence first") == [
        "### 1. copy: h0 and known/k0 (known, from `/known/k0`)", "- copy: shared answers",
        "- suspect: close parameters", "- answers (regenerated where they were, else as submitted): 7 of 10 identical, "
                                       "3 of them the same wrong answer"]
    assert rows[0] == {"a": "h0", "b": "known/k0", "verdict": "copy", "identical_answers": "0.700", "shared_wrong": "3",
                       "identical_params": "vanilla.model.params", "answers_compared": "10", "log10_p": "-5.0",
                       "params_ratio": "0.30", "known_source": "/known/k0",
                       "evidence": "close parameters | shared answers"}
    assert (rows[1]["shared_wrong"], rows[1]["params_ratio"], rows[1]["known_source"]) == ("", "", "")
    assert (rows[1]["identical_answers"], rows[1]["log10_p"]) == ("0.500", "0.0")
    no_answers = Pair(0, 1, shared_wrong=0)
    _, rows = written(tmp_path, report.Run("/class", []), [no_answers], people)
    assert (rows[0]["identical_answers"], rows[0]["shared_wrong"]) == ("", "0")


def test_the_opening_counts_hand_ins_in_the_singular_and_plural_and_says_how_answers_were_made(tmp_path):
    run = report.Run("/class", ["/known"], hidden="/bundle", labels=True,
                     regenerated=SimpleNamespace(files=1, hand_ins=1, seconds=2.4))
    opening = report.how_made(run, 1, 2)
    assert opening.startswith("Made on ") and "from 1 hand-in of the class (`/class`) and 2 known hand-ins " \
                                                 "(`/known`)." in opening
    assert "(1 parameters file of 1 hand-in in 2 s)" in opening and "the wrong answers two hand-ins share" in opening
    plain = report.how_made(report.Run("/class", []), 2, 0)
    assert "from 2 hand-ins of the class (`/class`)." in plain and "known" not in plain
    assert "Answers were compared as submitted (no hidden bundle)." in plain and "Without labels" in plain
    not_regenerated = report.Run("/class", [], hidden="/bundle", not_regenerated="the bundle has no reference/")
    opening = report.how_made(not_regenerated, 2, 0)
    assert "Answers were compared as submitted (the bundle has no reference/)." in opening


def test_the_hand_ins_are_numbered_from_0_as_the_heat_map_numbers_them_and_problems_are_listed(tmp_path):
    people = hand_ins(2, known=1)
    comparisons = {("vanilla.finetune.params", "vanilla.pretrain.params"): Comparison(1.4, 6, own_median=0.3)}
    text, _ = written(tmp_path, report.Run("/class", ["/known"]), [], people, comparisons, ["h1: a bad zip"])
    assert section(text, "Hand-ins") == ["0. h0: `/class/h0`", "1. h1: `/class/h1`", "2. known/k0 (known): `/known/k0`"]
    assert section(text, "Inputs not compared") == ["- h1: a bad zip"]
    assert section(text, "Parameters: median distances (independent runs, mostly)") == [
        "- vanilla.finetune.params against vanilla.pretrain.params: 1.400 over 6 pairs; one run, or one trained "
        "from the other, below 0.700 (a finetuning is 0.300 from its own pretraining)"]
    assert "| copy | 0 |" in text and "| independent | 0 |" in text
    empty, _ = written(tmp_path, report.Run("/class", []), [], people)
    assert section(empty, "Inputs not compared") == ["None."]
    assert section(empty, "Parameters: median distances (independent runs, mostly)")[0].startswith("- too few ")
