"""
Simulated classes of independent hand-ins, to measure how often the answer
statistic (statistic.py) flags an independent pair:

    python3 -m instructors.copies.simulate [--classes 200] [--size 40] [--questions 500] [--seed 0]

A simulated question has a right answer, a difficulty d_q ~ N(1.5, 1) and
`places` wrong answers of Zipf-like popularity (probability proportional to
1 / rank^1.1, in an order of the question's own). A hand-in has a skill
s_h ~ N(0, 1), answers q rightly with probability 1 / (1 + exp(d_q - s_h))
(about 20% right on average, as the pretrained models), and otherwise draws
a wrong answer from q's popularity, every answer independently. Every pair
of a class is compared as the report compares them, with the labels and
without; the p-values are adjusted by Holm over the class. Printed: the
share of pairs whose unadjusted p-value is below 0.05 (a valid p-value keeps
it below 0.05), the shares of pairs flagged suspect and copy, and the share
of classes with any flagged pair (kept below ALPHA_SUSPECT and ALPHA_COPY
by the adjustment).
"""

import argparse
import math

import numpy as np

from .statistic import holm, pair_statistics
from .verdicts import ALPHA_COPY, ALPHA_SUSPECT

ZIPF_EXPONENT = 1.1


def simulated_class(generator, size, questions, places=200):
    """(answer ids, size x questions; label ids): the right answer is id 0, wrong ones 1..places."""
    popularity = 1.0 / np.arange(1, places + 1) ** ZIPF_EXPONENT
    popularity /= popularity.sum()
    difficulty = generator.normal(1.5, 1.0, questions)
    skill = generator.normal(0.0, 1.0, size)
    right = generator.random((size, questions)) < 1 / (1 + np.exp(difficulty[None, :] - skill[:, None]))
    ranks = generator.choice(places, size=(size, questions), p=popularity)
    orders = np.argsort(generator.random((questions, places)), axis=1)  # each question's own order of places
    wrong = orders[np.arange(questions)[None, :], ranks] + 1
    return np.where(right, 0, wrong), np.zeros(questions, dtype=np.int64)


def flagged(ids, labels):
    """Unadjusted and Holm-adjusted log10 p-values of every pair of rows of one class."""
    first, second = np.triu_indices(len(ids), k=1)
    log_p = pair_statistics(ids, labels, np.ones(len(ids), dtype=bool), first, second).log_p
    return log_p / math.log(10), holm(log_p) / math.log(10)


def false_positives(seed, classes, size, questions, with_labels=True):
    """{measure: share} over `classes` simulated classes of independent hand-ins."""
    generator = np.random.default_rng(seed)
    counts = dict(pairs=0, unadjusted_below_0_05=0, suspect_or_copy=0, copy=0, classes_flagged=0, classes_copy=0)
    smallest = 0.0
    for _ in range(classes):
        ids, labels = simulated_class(generator, size, questions)
        raw, adjusted = flagged(ids, labels if with_labels else None)
        smallest = min(smallest, float(raw.min()))
        counts['pairs'] += len(raw)
        counts['unadjusted_below_0_05'] += int((raw < math.log10(0.05)).sum())
        counts['suspect_or_copy'] += int((adjusted < math.log10(ALPHA_SUSPECT)).sum())
        counts['copy'] += int((adjusted < math.log10(ALPHA_COPY)).sum())
        counts['classes_flagged'] += bool((adjusted < math.log10(ALPHA_SUSPECT)).any())
        counts['classes_copy'] += bool((adjusted < math.log10(ALPHA_COPY)).any())
    pairs = counts.pop('pairs')
    rates = {name: value / (classes if name.startswith('classes') else pairs) for name, value in counts.items()}
    return dict(rates, pairs=pairs, classes=classes, smallest_log10_p=smallest)


def main(argv=None):
    parser = argparse.ArgumentParser(description="The answer statistic's false-positive rate on simulated "
                                                 "classes of independent hand-ins.")
    parser.add_argument('--classes', type=int, default=200)
    parser.add_argument('--size', type=int, default=40, help="hand-ins a class")
    parser.add_argument('--questions', type=int, default=500)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    for with_labels in (True, False):
        rates = false_positives(args.seed, args.classes, args.size, args.questions, with_labels)
        print(f"{'with labels' if with_labels else 'without labels'}: {rates['pairs']} pairs in {rates['classes']} "
              f"classes of {args.size} hand-ins, {args.questions} questions, seed {args.seed}")
        for name in ('unadjusted_below_0_05', 'suspect_or_copy', 'copy', 'classes_flagged', 'classes_copy'):
            total = rates['classes' if name.startswith('classes') else 'pairs']
            print(f"  {name}: {rates[name]:.6f} ({round(rates[name] * total)} of {total})")
        print(f"  smallest unadjusted p: 10^{rates['smallest_log10_p']:.2f}")


if __name__ == '__main__':
    main()
