"""
The copy report's pairs, evidence and verdicts (src/instructors/copies/verdicts.py), on hand-ins and
answer tables made here: which hand-ins make pairs and which rows are compared, the figures counted
over each hand-in's first rows, the verdict at each p-value's edge (p below ALPHA_COPY is a copy,
below ALPHA_SUSPECT suspect, not at them), the parameters' evidence in words, the ranking, and
p-values as the report shows them.
"""

import math

import numpy as np
import pytest

from instructors.copies import verdicts
from instructors.copies.answers import AnswerTable
from instructors.copies.handins import HandIn
from instructors.copies.parameters import Close, Comparison, ParamsFile
from instructors.copies.statistic import PairStatistics
from instructors.copies.verdicts import ALPHA_COPY, ALPHA_SUSPECT, Pair

FILE = "vanilla.pretrain.dev.predictions"


def class_of(*names, known=()):
    return [HandIn(name, f"/hand-ins/{name}") for name in names] + \
        [HandIn(f"known/{name}", f"/known/{name}", "/known") for name in known]


def table(owners, ids, labels=None, file=FILE):
    owners = np.array(owners)
    first = np.r_[True, owners[1:] != owners[:-1]]
    how = ["regenerated" if f else "submitted" for f in first]
    return AnswerTable(file, owners, how, np.array(ids), None if labels is None else np.array(labels), first)


def test_every_two_of_the_class_and_each_of_the_class_with_each_known_one_are_pairs():
    """Kills known hand-ins compared with each other, or the class not compared with them."""
    pairs = verdicts.compared_pairs(class_of("ann", "ben", "cy", known=("a", "b")))
    assert sorted(pairs) == [(0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4), (2, 3), (2, 4)]
    assert all((p.first, p.second) == key for key, p in pairs.items())


def test_rows_of_one_hand_in_and_of_two_known_ones_are_not_compared():
    """Kills a hand-in's regenerated row compared with its own submitted one (they share most answers)."""
    hand_ins = class_of("ann", "ben", known=("a", "b"))
    first, second = verdicts.row_pairs(table([0, 0, 1, 2, 3], np.zeros((5, 2))), hand_ins)
    assert list(zip(first.tolist(), second.tolist())) == [(0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4), (2, 3),
                                                           (2, 4)]


def test_the_figures_are_counted_over_first_rows_and_every_file_both_answer():
    """Kills second rows counted into a pair's identical answers, or a file's questions counted once per row
    pair, and wrong answers counted without labels."""
    hand_ins = class_of("ann", "ben", "cy")
    pairs = verdicts.compared_pairs(hand_ins)
    dev = table([0, 0, 1, 2], [[1, 2, 3], [1, 2, 3], [1, 5, 3], [7, 8, 9]], labels=[1, 6, 6])
    test = table([0, 1], [[4, 4], [4, 5]], file="vanilla.pretrain.test.predictions")
    verdicts.add_answer_evidence(pairs, [dev, test], hand_ins)
    ann_ben, ann_cy, ben_cy = pairs[(0, 1)], pairs[(0, 2)], pairs[(1, 2)]
    assert (ann_ben.identical, ann_ben.compared, ann_ben.shared_wrong) == (2 + 1, 3 + 2, 1)
    assert (ann_cy.identical, ann_cy.compared, ann_cy.shared_wrong) == (0, 3, 0)
    assert (ben_cy.identical, ben_cy.compared, ben_cy.shared_wrong) == (0, 3, 0)
    no_labels = verdicts.compared_pairs(hand_ins)
    verdicts.add_answer_evidence(no_labels, [test], hand_ins)
    assert no_labels[(0, 1)].shared_wrong is None and no_labels[(0, 2)].compared == 0


@pytest.mark.parametrize("alpha, verdict", [(ALPHA_COPY, "suspect"), (ALPHA_SUSPECT, "independent")])
def test_a_p_value_at_an_alpha_is_not_below_it(monkeypatch, alpha, verdict):
    """Kills `<=` for `<`: an adjusted p exactly at ALPHA_COPY is suspect, exactly at ALPHA_SUSPECT no evidence."""
    hand_ins = class_of("ann", "ben")
    log_p = np.array([math.log10(alpha) * math.log(10)])
    monkeypatch.setattr(verdicts, "pair_statistics", lambda *args: PairStatistics(
        np.array([2]), np.array([2]), np.array([2]), np.array([0.2]), log_p))
    pairs = verdicts.compared_pairs(hand_ins)
    verdicts.add_answer_evidence(pairs, [table([0, 1], [[1, 2], [1, 2]])], hand_ins)
    assert pairs[(0, 1)].verdict == verdict and pairs[(0, 1)].log10_p == math.log10(alpha)
    nudged = verdicts.compared_pairs(hand_ins)
    log_p[0] = math.nextafter(log_p[0], -math.inf)
    verdicts.add_answer_evidence(nudged, [table([0, 1], [[1, 2], [1, 2]])], hand_ins)
    assert nudged[(0, 1)].verdict == {"suspect": "copy", "independent": "suspect"}[verdict]


def test_the_strongest_comparison_of_a_file_is_its_evidence_in_words(monkeypatch):
    hand_ins = class_of("ann", "ben")
    monkeypatch.setattr(verdicts, "pair_statistics", lambda ids, labels, counted, a, b: PairStatistics(
        np.array([3, 3]), np.array([4, 2]), np.array([3, 2]), np.array([0.5, 0.25]), np.array([-20.0, -30.0])))
    pairs = verdicts.compared_pairs(hand_ins)
    verdicts.add_answer_evidence(pairs, [table([0, 0, 1], [[1, 2, 3]] * 3, labels=[0, 0, 0])], hand_ins)
    (verdict, text), = pairs[(0, 1)].evidence
    assert verdict == "copy" and pairs[(0, 1)].log10_p == pytest.approx(-30 / math.log(10) + math.log10(2))
    assert text == (f"{FILE} (submitted of ann, regenerated of ben): on the 2 questions both answer wrongly, 2 wrong "
                    f"answers are the same, where independent hand-ins would share about 0.2; 3 of 3 answers "
                    f"identical; p < 1e-12 after Holm's correction over 2 comparisons")
    unlabelled = verdicts.compared_pairs(hand_ins)
    verdicts.add_answer_evidence(unlabelled, [table([0, 0, 1], [[1, 2, 3]] * 3)], hand_ins)
    assert unlabelled[(0, 1)].evidence[0][1].startswith(
        f"{FILE} (submitted of ann, regenerated of ben): on the 2 questions both answer uncommonly, 2 answers are "
        f"the same, where independent hand-ins would share about 0.2; 3 of 3 answers identical; p < 1e-12")


def params(hand_in, name, digest, seed=None):
    return ParamsFile(hand_in, name, digest, stamp=None if seed is None else {"seed": seed})


def test_identical_and_close_parameters_are_evidence_in_words():
    """Kills the seed said when the two files' stamps differ, the larger of two ratios kept, and a close
    pair that is also identical said twice."""
    hand_ins = class_of("ann", "ben", "cy")
    pairs = verdicts.compared_pairs(hand_ins)
    a = params(0, "vanilla.pretrain.params", "aa" * 32, seed=5)
    b = params(1, "vanilla.pretrain.params", "aa" * 32, seed=5)
    c = params(2, "vanilla.finetune.params", "cc" * 32, seed=6)
    d = params(2, "vanilla.pretrain.params", "dd" * 32, seed=5)
    f = params(1, "vanilla.finetune.params", "ff" * 32)
    comparisons = {("vanilla.pretrain.params", "vanilla.pretrain.params"): Comparison(1.4, 3),
                   ("vanilla.finetune.params", "vanilla.pretrain.params"): Comparison(1.4, 6, own_median=0.3)}
    close = [Close(a, b, 0.0, 0.0, "copy"), Close(a, d, 0.7, 0.5, "suspect"), Close(d, b, 0.56, 0.4, "copy"),
             Close(c, a, 0.2, 0.14, "copy"), Close(f, d, 0.9, 0.64, "suspect")]
    verdicts.add_params_evidence(pairs, [(a, b), (c, a)], close, comparisons, hand_ins)
    assert pairs[(0, 1)].evidence == [("copy", f"identical parameters: ann's vanilla.pretrain.params and ben's "
                                               f"vanilla.pretrain.params (SHA-256 {'a' * 16}, both stamped seed 5)")]
    assert pairs[(0, 1)].identical_params == ["vanilla.pretrain.params"] and pairs[(0, 1)].ratio is None
    assert pairs[(0, 2)].evidence[0][1].endswith(f"(SHA-256 {'c' * 16})")
    assert pairs[(0, 2)].identical_params == ["vanilla.finetune.params = vanilla.pretrain.params"]
    assert pairs[(0, 2)].ratio == 0.14
    assert pairs[(0, 2)].evidence[2] == ("copy", "cy's vanilla.finetune.params and ann's vanilla.pretrain.params: "
                                                 "0.200 apart, 0.14 of the median 1.400 of such distances in this "
                                                 "run, where a finetuning is 0.300 from its own pretraining "
                                                 "(median): finetuned from ann's?")
    assert pairs[(1, 2)].ratio == 0.4 and pairs[(1, 2)].verdict == "copy"
    assert pairs[(1, 2)].evidence[0] == ("copy", "vanilla.pretrain.params of cy and of ben: 0.560 apart, 0.40 of the "
                                                 "median 1.400 of such distances in this run")


def test_pairs_rank_by_verdict_identical_files_p_ratio_and_identical_answers():
    """Kills any key of the ranking reversed or dropped."""
    def pair(name, verdict=None, files=0, log10_p=0.0, ratio=None, identical=0):
        made = Pair(0, 1, [(verdict, name)] if verdict else [], ["x"] * files, ratio, log10_p, identical, 10)
        made.name = name
        return made
    order = [pair("copy, 2 files", "copy", files=2), pair("copy, 1 file, p", "copy", files=1, log10_p=-9),
             pair("copy, 1 file", "copy", files=1, log10_p=-2), pair("suspect, p", "suspect", log10_p=-5),
             pair("suspect", "suspect", log10_p=-1.5, ratio=0.7), pair("independent, ratio", ratio=0.9),
             pair("independent, r 1", ratio=1.0, identical=9), pair("independent, 9", identical=9),
             pair("independent, 3", identical=3)]
    shuffled = {k: order[i] for k, i in enumerate([4, 8, 0, 6, 2, 7, 1, 3, 5])}
    assert [p.name for p in verdicts.ranked(shuffled)] == [p.name for p in order]


@pytest.mark.parametrize("log10_p, shown", [(0.0, "1"), (-1.0, "0.1"), (-2.999, "0.001"), (-3.0, "< 1e-2"),
                                            (-3.5, "< 1e-3"), (-41.2, "< 1e-41")])
def test_a_p_value_is_shown_as_a_number_down_to_a_thousandth_and_as_a_bound_below(log10_p, shown):
    assert verdicts.shown_p(log10_p) == shown
