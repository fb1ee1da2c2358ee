"""
The test labels a release puts into the hidden bundle
(src/instructors/release/autograder.py): read by the one reader of question
files, they must be 'question<TAB>answer' lines asking the test inputs'
questions, each at its own line, and the test inputs (which students get)
questions alone. A matching count is not enough: shuffled labels, or another
set's labels of the same size, would grade every student against the wrong
answers. Blank lines and the line ends of either file do not count. The
bundle then holds the labels given, not the data folder's.
"""

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from assignment.question_files import InputError
from instructors.release.autograder import TEST_LABELS, check_test_labels, write_hidden_bundle
from instructors.release.student import ReleaseError

from question_file_cases import ACCEPTED, QUESTIONS_ALONE, REFUSED, reader_refusal, refusal
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
    with pytest.raises(InputError, match=r"labels\.tsv line 3: expected 'question<TAB>place', found 2 tabs: "):
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
    with pytest.raises(InputError, match=rf"labels\.tsv line 3: expected 'question<TAB>place', found no tab: "
                                         rf"{re.escape(repr(line))}$"):
        check_test_labels(write_lines(tmp_path / "labels.tsv", lines), inputs)


def test_labels_of_questions_alone_are_refused(tmp_path):
    """Kills labels read as the file says: questions without answers that ask the inputs' questions taken,
    leaving nothing to grade against."""
    labels = path_of(tmp_path, "labels.tsv", QUESTIONS_ALONE)
    inputs = path_of(tmp_path, "birth_test_inputs.tsv", QUESTIONS_ALONE)
    assert refusal(check_test_labels, labels, inputs) == reader_refusal(labels)


def test_test_inputs_that_carry_answers_are_refused(tmp_path):
    """Kills test inputs read for their first column only: the students get that file, answers and all."""
    labels = write_lines(tmp_path / "labels.tsv", labelled(QUESTIONS))
    with pytest.raises(InputError, match=r"birth_test_inputs\.tsv line 1: expected a question alone, found a tab: "):
        check_test_labels(labels, write_lines(tmp_path / "birth_test_inputs.tsv", labelled(QUESTIONS)))


@pytest.mark.parametrize("case", REFUSED)
def test_both_files_are_read_by_the_one_reader(tmp_path, case):
    """Kills labels or test inputs read by rules of their own (a BOM kept in the first question, an empty
    place or question taken): labels read_question_file accepts are taken, and labels it refuses are
    refused with its message."""
    inputs = write_lines(tmp_path / "birth_test_inputs.tsv", ["Where was Ada born?", "Where was Bo born?"])
    assert check_test_labels(path_of(tmp_path, "labels.tsv", ACCEPTED), inputs) is None
    assert check_test_labels(write_lines(tmp_path / "labels.tsv", labelled(QUESTIONS)),
                             path_of(tmp_path, "inputs.tsv", b"\xef\xbb\xbf" + "\r\n".join(QUESTIONS).encode())) is None
    labels = path_of(tmp_path, "labels.tsv", REFUSED[case])
    assert refusal(check_test_labels, labels, inputs) == reader_refusal(labels)


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
