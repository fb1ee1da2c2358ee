"""
The test labels a release puts into the hidden bundle
(src/instructors/release/autograder.py): they must ask the test inputs'
questions, each at its own line. A matching count is not enough: shuffled
labels, or another set's labels of the same size, would grade every student
against the wrong answers.
"""

import pytest

from instructors.release.autograder import check_test_labels
from instructors.release.student import ReleaseError

QUESTIONS = [f"Where was Person {number} born?" for number in range(5)]


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.fixture
def inputs(tmp_path):
    return write_lines(tmp_path / "birth_test_inputs.tsv", QUESTIONS)


def labelled(questions):
    return [f"{question}\tPlace {number}" for number, question in enumerate(questions)]


def test_the_labels_of_the_inputs_questions_in_order_are_taken(tmp_path, inputs):
    assert check_test_labels(write_lines(tmp_path / "labels.tsv", labelled(QUESTIONS)), inputs) is None


OTHER_QUESTIONS = {"shuffled": QUESTIONS[1:] + QUESTIONS[:1],
                   "another set of the same size": [q.replace("Person", "Painter") for q in QUESTIONS],
                   "one short": QUESTIONS[:-1]}


@pytest.mark.parametrize("questions", OTHER_QUESTIONS.values(), ids=OTHER_QUESTIONS.keys())
def test_labels_of_other_questions_or_in_another_order_are_refused(tmp_path, inputs, questions):
    labels = write_lines(tmp_path / "labels.tsv", labelled(questions))
    with pytest.raises(ReleaseError, match=r"labels\.tsv does not ask the questions of .*birth_test_inputs\.tsv, "
                                           r"in the same order$"):
        check_test_labels(labels, inputs)
