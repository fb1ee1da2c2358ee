"""
The pairs compared, their evidence and their verdicts. Every two hand-ins
of the class are a pair, and so is every hand-in of the class with every
known one (known ones are not compared with each other). The evidence:

- identical parameters files: copy;
- parameters close for their comparison (parameters.py): one training run,
  or one trained from the other's parameters, is a copy; closer than
  SUSPECT_RATIO of the median distance, suspect;
- for each prediction file, the strongest comparison of the two hand-ins'
  rows by the statistic (statistic.py), its p-value adjusted by Holm over
  every comparison of the run: p < ALPHA_COPY is a copy (answers the
  statistic cannot explain), p < ALPHA_SUSPECT suspect.

A pair's verdict is the strongest of its evidence's: copy, suspect, else
independent. Pairs are ranked by verdict, then identical parameters files,
then the smallest p-value, then the smallest ratio r, then the share of
identical answers.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from .answers import first_rows
from .statistic import holm, pair_statistics

ALPHA_COPY = 1e-3
ALPHA_SUSPECT = 0.05
VERDICTS = ('copy', 'suspect', 'independent')


@dataclass(eq=False)
class Pair:
    """Two hand-ins (their numbers), the evidence against them as (verdict, text), and their figures:
    identical parameters files, the smallest parameters ratio r, the smallest adjusted log10 p, and
    over the prediction files they both answer (first rows) the identical answers, the questions, and
    the shared wrong answers (None without labels)."""
    first: int
    second: int
    evidence: list = field(default_factory=list)
    identical_params: list = field(default_factory=list)
    ratio: float = None
    log10_p: float = 0.0
    identical: int = 0
    compared: int = 0
    shared_wrong: int = None

    @property
    def verdict(self):
        return min((verdict for verdict, _ in self.evidence), key=VERDICTS.index, default='independent')

    def rank(self):
        return (VERDICTS.index(self.verdict), -len(self.identical_params), self.log10_p,
                math.inf if self.ratio is None else self.ratio, -self.identical / max(self.compared, 1))


def compared_pairs(hand_ins):
    """{(i, j): Pair} of every pair compared, i < j."""
    return {(i, j): Pair(i, j) for i in range(len(hand_ins)) for j in range(i + 1, len(hand_ins))
            if hand_ins[i].known is None or hand_ins[j].known is None}


def shown_p(log10_p):
    """An adjusted p-value for the report: '0.012', or '< 1e-41'."""
    return f"{10 ** log10_p:.2g}" if log10_p > -3 else f"< 1e{math.floor(log10_p) + 1}"


def row_pairs(table, hand_ins):
    """The row pairs of an AnswerTable compared: rows of two hand-ins that make a pair."""
    first, second = np.triu_indices(len(table.hand_ins), k=1)
    a, b = table.hand_ins[first], table.hand_ins[second]
    known = np.array([hand_in.known is not None for hand_in in hand_ins], dtype=bool)
    keep = (a != b) & ~(known[a] & known[b])
    return first[keep], second[keep]


def answer_text(table, names, a, b, stats, k, log10_p, tests):
    """One comparison of two rows, in words."""
    rows = f"{table.file} ({table.how[a]} of {names[a]}, {table.how[b]} of {names[b]})"
    odds = f"p {shown_p(log10_p)} after Holm's correction over {tests} comparisons"
    questions = table.ids.shape[1]
    if table.labels is None:
        return (f"{rows}: on the {stats.domain[k]} questions both answer uncommonly, {stats.shared[k]} answers are "
                f"the same, where independent hand-ins would share about {stats.expected[k]:.1f}; "
                f"{stats.identical[k]} of {questions} answers identical; {odds}")
    return (f"{rows}: on the {stats.domain[k]} questions both answer wrongly, {stats.shared[k]} wrong answers "
            f"are the same, where independent hand-ins would share about {stats.expected[k]:.1f}; "
            f"{stats.identical[k]} of {questions} answers identical; {odds}")


def add_answer_evidence(pairs, tables, hand_ins):
    """Add each prediction file's comparisons to the pairs: figures, and evidence where p < ALPHA_SUSPECT."""
    compared = [(table, *row_pairs(table, hand_ins)) for table in tables]
    statistics = [pair_statistics(table.ids, table.labels, table.counted, a, b) for table, a, b in compared]
    tests = sum(len(stats.log_p) for stats in statistics)
    adjusted = np.split(holm(np.concatenate([s.log_p for s in statistics])) / math.log(10) if tests else np.zeros(0),
                        np.cumsum([len(s.log_p) for s in statistics])[:-1])
    for (table, a, b), stats, log10_p in zip(compared, statistics, adjusted):
        first, owners = first_rows(table.hand_ins), table.hand_ins
        strongest = {}  # pair -> the row pair of its smallest p
        for k in range(len(a)):
            pair = pairs[tuple(sorted((owners[a[k]], owners[b[k]])))]
            if first[a[k]] and first[b[k]]:
                pair.identical += int(stats.identical[k])
                pair.compared += table.ids.shape[1]
                if table.labels is not None:
                    pair.shared_wrong = (pair.shared_wrong or 0) + int(stats.shared[k])
            if log10_p[k] < pair.log10_p:
                pair.log10_p = float(log10_p[k])
            if log10_p[k] < math.log10(ALPHA_SUSPECT) and (pair not in strongest
                                                            or log10_p[k] < log10_p[strongest[pair]]):
                strongest[pair] = k
        names = [hand_ins[owner].name for owner in owners]
        for pair, k in strongest.items():
            verdict = 'copy' if log10_p[k] < math.log10(ALPHA_COPY) else 'suspect'
            pair.evidence.append((verdict, answer_text(table, names, a[k], b[k], stats, k, log10_p[k], tests)))


def add_params_evidence(pairs, identical, close, comparisons, hand_ins):
    """Add identical parameters files and close ones (parameters.py) to the pairs."""
    for one, other in identical:
        pair = pairs[tuple(sorted((one.hand_in, other.hand_in)))]
        same_name = one.name if one.name == other.name else f"{one.name} = {other.name}"
        seeds = {str((found.stamp or {}).get('seed')) for found in (one, other)} - {'None'}
        seed = f", both stamped seed {seeds.pop()}" if len(seeds) == 1 else ""
        pair.identical_params.append(same_name)
        pair.evidence.append(('copy', f"identical parameters: {hand_ins[one.hand_in].name}'s {one.name} and "
                                      f"{hand_ins[other.hand_in].name}'s {other.name} (SHA-256 {one.digest[:16]}"
                                      f"{seed})"))
    for found in close:
        one, other = found.first, found.second
        if one.digest == other.digest:  # said above
            continue
        pair = pairs[tuple(sorted((one.hand_in, other.hand_in)))]
        pair.ratio = found.ratio if pair.ratio is None else min(pair.ratio, found.ratio)
        comparison = comparisons[(one.name, other.name)]
        figures = (f"{found.distance:.3f} apart, {found.ratio:.2f} of the median {comparison.median:.3f} of such "
                   f"distances in this run")
        mine, theirs = hand_ins[one.hand_in].name, hand_ins[other.hand_in].name
        if one.name == other.name:
            text = f"{one.name} of {mine} and of {theirs}: {figures}"
        else:
            own = ("" if comparison.own_median is None else
                   f", where a finetuning is {comparison.own_median:.3f} from its own pretraining (median)")
            text = f"{mine}'s {one.name} and {theirs}'s {other.name}: {figures}{own}: finetuned from {theirs}'s?"
        pair.evidence.append((found.verdict, text))


def ranked(pairs):
    """The pairs, strongest evidence first."""
    return sorted(pairs.values(), key=Pair.rank)
