"""
The test labels a release puts into the hidden bundle
(src/instructors/release/autograder.py): they must be 'question<TAB>answer'
lines asking the test inputs' questions, each at its own line. A matching
count is not enough: shuffled labels, or another set's labels of the same
size, would grade every student against the wrong answers. The bundle then
holds the labels given, not the data folder's.
"""

import shutil
from pathlib import Path

import pytest

from instructors.release.autograder import TEST_LABELS, check_test_labels, write_hidden_bundle
from instructors.release.student import ReleaseError

REPO = Path(__file__).resolve().parents[1]

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


def test_a_label_line_with_a_third_column_is_refused(tmp_path, inputs):
    lines = labelled(QUESTIONS)
    lines[2] += "\tan aside"
    with pytest.raises(ReleaseError, match=r"labels\.tsv, line 3: expected 'question<TAB>answer'$"):
        check_test_labels(write_lines(tmp_path / "labels.tsv", lines), inputs)


def test_the_bundle_holds_the_labels_given(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("wiki.txt", "birth_dev.tsv"):
        shutil.copyfile(REPO / "data" / name, data / name)
    write_lines(data / TEST_LABELS, labelled(QUESTIONS[::-1]))  # the data folder's own, not to be used
    given = write_lines(tmp_path / "labels.tsv", labelled(QUESTIONS))
    write_hidden_bundle(str(REPO), str(data), given, {}, str(tmp_path / "hidden"))
    assert (tmp_path / "hidden" / TEST_LABELS).read_text(encoding="utf-8") == Path(given).read_text(encoding="utf-8")
