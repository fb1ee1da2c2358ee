"""
The answers compared: one table a prediction file, a row of answers a
hand-in, a column a question, each distinct answer (stripped, as the
grader compares them) encoded as an integer id, so that comparing answers
is comparing integers.

A hand-in's first row is its answers regenerated from its parameters when
they were, else its file as submitted. When it has both and they differ,
the submitted file is a second row: a file its parameters did not make
(copied, perhaps) is compared too. Only first rows of the class's
hand-ins make the class's answer frequencies; known hand-ins' never do.
A file with another number of answers than the questions (the bundle's,
or without one most of the class's files) is left out, one line.
"""

from collections import Counter
from dataclasses import dataclass

import numpy as np

from grading.context import prediction_lines

from .handins import COMPARED, Unreadable

PREDICTION_FILES = tuple(name for name in COMPARED if name.endswith('.predictions'))


@dataclass
class AnswerTable:
    """One prediction file's rows: whose (hand-in numbers), how made ('regenerated' or
    'submitted'), their answers' ids (rows x questions), the labels' ids (None without labels),
    and which rows make the class's frequencies."""
    file: str
    hand_ins: np.ndarray
    how: list
    ids: np.ndarray
    labels: np.ndarray
    counted: np.ndarray


def submitted_answers(hand_in, name):
    """The answers of a hand-in's prediction file, one a line as the grader reads them, stripped."""
    return [line.strip() for line in prediction_lines(hand_in.read(name).decode('utf-8', errors='replace'))]


def encoded(rows, labels):
    """(ids of the rows' answers, ids of the labels or None): equal answers, equal ids."""
    index = {}
    ids = np.array([[index.setdefault(answer, len(index)) for answer in row] for row in rows], dtype=np.int64)
    if labels is None:
        return ids, None
    return ids, np.array([index.setdefault(answer, len(index)) for answer in labels], dtype=np.int64)


def answer_table(name, hand_ins, regenerated, labels, problems):
    """The AnswerTable of prediction file `name` (None when no hand-in has answers to it)."""
    submitted = {}
    for index, hand_in in enumerate(hand_ins):
        try:
            if name in hand_in.files:
                submitted[index] = submitted_answers(hand_in, name)
        except Unreadable as error:
            problems.append(str(error))
    lengths = [len(answers) for index, answers in submitted.items() if hand_ins[index].known is None]
    questions = len(labels) if labels is not None else Counter(lengths or [0]).most_common(1)[0][0]
    for index in [index for index, answers in submitted.items() if len(answers) != questions]:
        problems.append(f"{hand_ins[index].name}: {name} has {len(submitted.pop(index))} answers for "
                        f"{questions} questions: not compared as submitted")
    rows, owners, how = [], [], []
    for index in range(len(hand_ins)):
        made = [(answers, kind) for answers, kind in ((regenerated.get((index, name)), 'regenerated'),
                                                      (submitted.get(index), 'submitted')) if answers is not None]
        if len(made) == 2 and made[0][0] == made[1][0]:
            made.pop()
        rows += [answers for answers, _ in made]
        how += [kind for _, kind in made]
        owners += [index] * len(made)
    if not rows or not questions:
        return None
    owners = np.array(owners)
    in_class = np.array([hand_ins[index].known is None for index in owners])
    ids, label_ids = encoded(rows, labels)
    return AnswerTable(name, owners, how, ids, label_ids, first_rows(owners) & in_class)


def first_rows(owners):
    """Which rows are their hand-in's first (rows of one hand-in are next to each other)."""
    return np.r_[True, owners[1:] != owners[:-1]]


def answer_tables(hand_ins, regenerated, labels_of, problems):
    """The AnswerTable of each prediction file some hand-in answers; `labels_of` maps a file to its
    labels, where the bundle has them."""
    tables = [answer_table(name, hand_ins, regenerated, labels_of.get(name), problems) for name in PREDICTION_FILES]
    return [table for table in tables if table is not None]
