"""
The test labels a release puts into the hidden bundle
(src/instructors/release/autograder.py): they must be 'question<TAB>answer'
lines asking the test inputs' questions, each at its own line. A matching
count is not enough: shuffled labels, or another set's labels of the same
size, would grade every student against the wrong answers. Blank lines and
the line ends of either file do not count. The bundle then holds the labels
given, not the data folder's.
"""

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from instructors.release.autograder import TEST_LABELS, check_test_labels, write_hidden_bundle
from instructors.release.student import ReleaseError

from runtime_helpers import EDGE, joined, line_ends, path_of

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


@pytest.mark.parametrize("line", ["Where was Person 2 born?", "Where was Person 2 born? Place 2"])
def test_a_label_line_without_its_answer_is_refused(tmp_path, inputs, line):
    """Kills a label line of one column taken: its question matches the inputs', but it gives no answer to
    grade against."""
    lines = labelled(QUESTIONS)
    lines[2] = line
    with pytest.raises(ReleaseError, match=r"labels\.tsv, line 3: expected 'question<TAB>answer'$"):
        check_test_labels(write_lines(tmp_path / "labels.tsv", lines), inputs)


@settings(EDGE, max_examples=30)
@given(data=st.data(), blank=st.sampled_from(["", " ", "\t", " \t "]))
def test_labels_are_taken_whatever_the_line_ends_and_blank_lines_of_either_file(tmp_path_factory, data, blank):
    """Kills a blank (or whitespace-only) line of the labels refused or counted as a question, and a \\r\\n,
    a lone \\r or a missing last line end of either file making its questions differ."""
    folder = tmp_path_factory.mktemp("labels")
    labels = labelled(QUESTIONS)
    at = data.draw(st.integers(0, len(labels)), label="blank line at")
    labels = labels[:at] + [blank] + labels[at:]
    labels_path = path_of(folder, "labels.tsv", joined(labels, *data.draw(line_ends(len(labels)))))
    inputs_path = path_of(folder, "inputs.tsv", joined(QUESTIONS, *data.draw(line_ends(len(QUESTIONS)))))
    assert check_test_labels(labels_path, inputs_path) is None
