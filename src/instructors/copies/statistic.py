"""
How unlikely the answers two hand-ins share are if they answered
independently: a statistic in the spirit of exam answer-copying indices
(the K-index, omega), measured against the class's own answers.

A prediction file's answers are rows of integer ids (equal answers, equal
ids), one column a question. With labels, the evidence is the wrong answers
two rows share: over the questions W where both are wrong, X = the number
where they give the same wrong answer. Without labels "wrong" is unknown,
and "uncommon" stands in for it: an answer to q is common when, besides the
pair, at least COMMON_SHARE of the class and at least COMMON_LEAST hand-ins
give it (c_a - 2 >= max(COMMON_SHARE (N - 2), COMMON_LEAST), from its count
c_a among the N answers of the class's hand-ins).
The right answer, on which the better models agree, is common on nearly
every question, so the evidence is the uncommon answers two rows share:
rare shared answers.

Two independent rows, both wrong (uncommon) on q, agree with probability
kappa_q, the chance that two such answers drawn from the class's coincide.
From the counts c_a of the class's other wrong (uncommon) answers a to q,
the pair itself left out, N_q = sum_a c_a, it is the mean under a
Dirichlet-process prior of concentration THETA, with a floor:

    kappa_q = max( (sum_a c_a^2 + N_q + THETA) / ((N_q + THETA)(N_q + THETA + 1)), KAPPA_MIN )

which is 1 / (1 + THETA) with no other answer and near sum_a (c_a / N_q)^2 in
a large class. The floor is there because models trained on the same data
share more wrong answers than their class's frequencies say: of ten real
independent hand-ins, a pair shared up to 24 of 500 dev answers, wrong, that
none of the eight others gave. Two wrong answers are taken to agree at least
one time in ten.

X is then a sum of independent Bernoulli(kappa_q) over q in W, of mean
mu = sum_q kappa_q, and its upper tail is bounded by Chernoff's bound

    P(X >= x) <= exp(-(x ln(x / mu) - x + mu))    for x > mu (1 otherwise),

which overstates the chance. The p-values of every comparison of a run are
adjusted by Holm's step-down method, so that the chance of flagging any
independent pair at level alpha is at most alpha.
"""

from dataclasses import dataclass

import numpy as np

THETA = 1.0
KAPPA_MIN = 0.1
COMMON_SHARE = 0.05
COMMON_LEAST = 2
CHUNK = 2048  # row pairs computed at once


@dataclass
class PairStatistics:
    """For each row pair: identical answers, the size of W, X, mu and ln of the bound on P(X >= x)."""
    identical: np.ndarray
    domain: np.ndarray
    shared: np.ndarray
    expected: np.ndarray
    log_p: np.ndarray


def class_counts(ids, counted):
    """c[r, q], the number of counted entries of column q equal to ids[r, q]; and per question the
    sum of the counted answers' squared counts and the number of counted entries."""
    questions = ids.shape[1]
    width = int(ids.max()) + 1 if ids.size else 1
    keys = np.arange(questions, dtype=np.int64)[None, :] * width + ids
    unique, counts = np.unique(keys[counted], return_counts=True)
    if not len(unique):
        return np.zeros(ids.shape, dtype=np.int64), np.zeros(questions), np.zeros(questions)
    at = np.minimum(np.searchsorted(unique, keys), len(unique) - 1)
    c = np.where(unique[at] == keys, counts[at], 0)
    column = unique // width
    squares = np.bincount(column, weights=counts.astype(np.float64) ** 2, minlength=questions)
    return c, squares, np.bincount(column, weights=counts, minlength=questions).astype(np.float64)


def common_answers(ids, counted_rows):
    """Which entries are common answers: besides a pair that both gave them, at least COMMON_SHARE of
    the class's answers (those of `counted_rows`) and at least COMMON_LEAST of them."""
    c, _, total = class_counts(ids, np.broadcast_to(counted_rows[:, None], ids.shape))
    return c - 2 >= np.maximum(COMMON_SHARE * (total[None, :] - 2), COMMON_LEAST)


def chernoff_log_p(shared, expected):
    """ln of Chernoff's bound on P(X >= shared) for a sum of independent Bernoullis of mean `expected`."""
    shared, expected = np.asarray(shared, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    with np.errstate(divide='ignore', invalid='ignore'):
        bound = -(shared * np.log(shared / expected) - shared + expected)
    return np.where(shared > expected, bound, 0.0)


def pair_statistics(ids, labels, counted_rows, first, second):
    """PairStatistics of the row pairs (first[k], second[k]) of `ids` (rows x questions); `labels`
    are the right answers' ids (None without labels: uncommon answers stand for wrong ones),
    `counted_rows` the rows that make the class's answer frequencies."""
    wrong = ids != labels[None, :] if labels is not None else ~common_answers(ids, counted_rows)
    counted = counted_rows[:, None] & wrong
    c, squares, total = class_counts(ids, counted)
    parts = []
    for start in range(0, len(first), CHUNK):
        a, b = first[start:start + CHUNK], second[start:start + CHUNK]
        same, domain = ids[a] == ids[b], wrong[a] & wrong[b]
        in_a, in_b = counted[a], counted[b]
        left_squares = squares - in_a * (2 * c[a] - 1)
        left_squares = left_squares - in_b * (2 * (c[b] - (in_a & same)) - 1)
        left = total - in_a - in_b
        kappa = np.maximum((left_squares + left + THETA) / ((left + THETA) * (left + THETA + 1)), KAPPA_MIN)
        parts.append((same.sum(1), domain.sum(1), (same & domain).sum(1), (kappa * domain).sum(1)))
    columns = [np.concatenate(column) for column in zip(*parts)] if parts else [np.zeros(0)] * 4
    identical, domain, shared, expected = columns
    return PairStatistics(identical, domain, shared, expected, chernoff_log_p(shared, expected))


def holm(log_p):
    """Holm's adjusted p-values (as ln), for p-values given as ln, in their order."""
    log_p = np.asarray(log_p, dtype=np.float64)
    count = len(log_p)
    order = np.argsort(log_p, kind='stable')
    adjusted = np.minimum(np.maximum.accumulate(np.log(count - np.arange(count)) + log_p[order]), 0.0)
    result = np.empty(count)
    result[order] = adjusted
    return result
