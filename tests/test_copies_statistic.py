"""
The copy report's answer statistic (src/instructors/copies/statistic.py) against its definition,
computed here the slow way, pair by pair and question by question, on seeded random classes of every
small shape (with labels and without, rows that count for the class's frequencies or not, the pairs
computed in chunks that split them anywhere): the questions both rows answer wrongly (uncommonly), the
wrong answers they share, their expected number (kappa_q from the class's other wrong answers, the
pair left out, with its floor) and Chernoff's bound. Then the edges of "common" and of the bound. The
bound's validity and Holm's correction: tests/test_copies.py.
"""

import math
from collections import Counter

import numpy as np
import pytest

from instructors.copies import statistic
from instructors.copies.statistic import COMMON_LEAST, COMMON_SHARE, KAPPA_MIN, THETA


def wrong_by_definition(ids, labels, counted_rows):
    """Which answers are wrong: unlike the label; without labels, uncommon: besides a pair that gives it,
    fewer than COMMON_SHARE of the counted rows' answers, or fewer than COMMON_LEAST of them, give it."""
    if labels is not None:
        return ids != labels[None, :]
    counted = np.flatnonzero(counted_rows)
    wrong = np.zeros(ids.shape, dtype=bool)
    for row, question in np.ndindex(ids.shape):
        givers = sum(ids[other, question] == ids[row, question] for other in counted)
        wrong[row, question] = givers - 2 < max(COMMON_SHARE * (len(counted) - 2), COMMON_LEAST)
    return wrong


def pair_by_definition(ids, wrong, counted_rows, a, b):
    """(identical, questions both wrong, wrong answers shared, expected shared) of rows a and b."""
    domain = [q for q in range(ids.shape[1]) if wrong[a, q] and wrong[b, q]]
    expected = 0.0
    for q in domain:
        others = Counter(ids[r, q] for r in np.flatnonzero(counted_rows) if r not in (a, b) and wrong[r, q])
        n = sum(others.values())
        kappa = (sum(c * c for c in others.values()) + n + THETA) / ((n + THETA) * (n + THETA + 1))
        expected += max(kappa, KAPPA_MIN)
    shared = sum(ids[a, q] == ids[b, q] for q in domain)
    return int((ids[a] == ids[b]).sum()), len(domain), shared, expected


def random_class(generator, rows, questions, answers, labelled):
    ids = generator.integers(0, answers, (rows, questions))
    labels = generator.integers(0, answers, questions) if labelled else None
    return ids, labels, generator.random(rows) < 0.8


def check_against_the_definition(ids, labels, counted_rows):
    first, second = np.triu_indices(len(ids), k=1)
    found = statistic.pair_statistics(ids, labels, counted_rows, first, second)
    wrong = wrong_by_definition(ids, labels, counted_rows)
    expected = [pair_by_definition(ids, wrong, counted_rows, a, b) for a, b in zip(first, second)]
    identical, domain, shared, mean = (np.array(column, dtype=float).reshape(-1) for column in zip(*expected))
    assert found.identical.tolist() == identical.tolist()
    assert found.domain.tolist() == domain.tolist()
    assert found.shared.tolist() == shared.tolist()
    assert np.allclose(found.expected, mean, rtol=1e-12, atol=1e-12)
    assert np.allclose(found.log_p, statistic.chernoff_log_p(shared, mean))
    return mean.tolist()


@pytest.mark.parametrize("chunk", [statistic.CHUNK, 5])
def test_the_pair_statistics_are_their_definition_on_small_random_classes(monkeypatch, chunk):
    """Kills the pair not left out of the class's counts (or its second row left out regardless of the
    first), kappa without its floor or with another prior, "common" at the wrong edge, the pairs of a
    chunk's seam skipped, and counts taken over rows that do not count."""
    monkeypatch.setattr(statistic, "CHUNK", chunk)
    generator = np.random.default_rng(2024)
    expected = []
    for case in range(40):
        rows, questions, answers = generator.integers(2, 13), generator.integers(1, 9), generator.integers(1, 7)
        expected += check_against_the_definition(*random_class(generator, rows, questions, answers, case % 2 == 0))
    assert len(set(expected)) > 100  # many distinct expectations: the cases reach many counts


def test_the_statistic_of_a_large_class_is_its_definition():
    """A class of 62 rows, where COMMON_SHARE of the 60 besides a pair (3) rather than COMMON_LEAST makes an
    answer common, and kappa often meets its floor."""
    generator = np.random.default_rng(7)
    for labelled in (True, False):
        ids, labels, _ = random_class(generator, 62, 3, 40, labelled)
        ids[:, 0] = np.repeat(np.arange(16), 4)[:62]  # 4 givers: COMMON_LEAST besides a pair, not 5% of 60
        ids[:, 1] = np.repeat(np.arange(13), 5)[:62]  # 5 givers: 5% of 60 besides a pair, not 5% of 62
        check_against_the_definition(ids, labels, np.ones(62, dtype=bool))


def test_an_answer_is_common_from_common_least_givers_besides_the_pair():
    """Kills the edge of COMMON_LEAST moved: two givers besides the pair make an answer common."""
    ids = np.array([[0, 0], [0, 0], [0, 0], [0, 1], [1, 1], [2, 2]])
    common = statistic.common_answers(ids, np.ones(6, dtype=bool))
    assert common[:, 0].tolist() == [True, True, True, True, False, False]
    assert common[:, 1].tolist() == [False, False, False, False, False, False]
    assert not statistic.common_answers(ids, np.array([False, True, True, True, True, True]))[:, 0].any()


def test_with_no_other_wrong_answer_two_wrong_answers_agree_half_the_time():
    """kappa is 1 / (1 + THETA) when the class gives no other wrong answer to the question."""
    ids, labels = np.array([[1, 1], [1, 2]]), np.array([0, 0])
    stats = statistic.pair_statistics(ids, labels, np.ones(2, dtype=bool), np.array([0]), np.array([1]))
    assert stats.expected.tolist() == [2 / (1 + THETA)] and stats.shared.tolist() == [1]
    assert (stats.identical.tolist(), stats.domain.tolist()) == ([1], [2])


def test_the_bound_is_one_unless_more_are_shared_than_expected():
    assert statistic.chernoff_log_p([0, 2, 2.5], [2, 2, 2]).tolist()[:2] == [0.0, 0.0]
    assert statistic.chernoff_log_p(3, 1.5) == pytest.approx(-(3 * math.log(2) - 3 + 1.5))


def test_no_pairs_give_empty_statistics():
    ids = np.zeros((1, 3), dtype=np.int64)
    stats = statistic.pair_statistics(ids, None, np.ones(1, dtype=bool), np.zeros(0, int), np.zeros(0, int))
    assert stats.log_p.shape == stats.shared.shape == (0,)
    assert statistic.holm(np.zeros(0)).shape == (0,)
