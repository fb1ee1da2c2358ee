"""
The one reader of question files (src/assignment/question_files.py): each
of its rules on a file that keeps it and on one that breaks it (line ends,
a byte order mark, blank lines, tabs, empty questions and places, files of
questions alone, bytes that are not UTF-8), every refusal one line naming
the file and the line, and the course's files read as the course's
evaluate_places reads them. Each test's docstring says what it kills.
"""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignment import question_files
from assignment.question_files import Line, read_question_file
from submission.utils import evaluate_places

from question_file_cases import ACCEPTED, refusal
from runtime_helpers import EDGE, joined, line_ends, raising, written

REPO = Path(__file__).resolve().parents[1]


def read(tmp_path, text, labelled=None):
    """[(number, question, place)] of `text` written to a file and read."""
    return [(line.number, line.question, line.place)
            for line in read_question_file(written(tmp_path, text), labelled)]


def refused(tmp_path, text, labelled=None):
    """(the path of `text` written to a file, the message that refuses it)."""
    path = written(tmp_path, text)
    return path, refusal(read_question_file, path, labelled)


def test_line_ends_of_every_kind_end_a_line_and_are_no_part_of_it(tmp_path):
    """Kills a \\r kept in a question or a place, a lone \\r read as part of its line, a \\r\\n counted
    as two line ends, and lines read out of order, numbered from 0 or split into other fields."""
    path = written(tmp_path, b"Q1\tA\r\nQ2\tB\rQ3\tC\nQ4\tD")
    assert read_question_file(path, True) == [Line(1, "Q1\tA", "Q1", "A"), Line(2, "Q2\tB", "Q2", "B"),
                                              Line(3, "Q3\tC", "Q3", "C"), Line(4, "Q4\tD", "Q4", "D")]


def test_unicode_line_separators_are_characters_not_line_ends(tmp_path):
    """Kills lines split as str.splitlines splits them (at \\x85, \\u2028 and others), which neither
    Python's text mode nor evaluate_places does."""
    assert read(tmp_path, "Where was Ada\x85 born?\tLon\u2028don\n") == [(1, "Where was Ada\x85 born?", "Lon\u2028don")]


def test_a_byte_order_mark_at_the_start_is_dropped(tmp_path):
    """Kills a BOM kept in the first question (outside the vocabulary, and not the question the labels
    ask), a first line that a BOM alone makes a question, and a BOM dropped elsewhere."""
    assert read(tmp_path, b"\xef\xbb\xbfWhere was Ada born?\tLondon\n") == [(1, "Where was Ada born?", "London")]
    assert read(tmp_path, b"\xef\xbb\xbfWhere was Ada born?\n") == [(1, "Where was Ada born?", None)]
    assert read(tmp_path, b"\xef\xbb\xbf\nQ1\n\xef\xbb\xbfQ2\n") == [(2, "Q1", None), (3, "\ufeffQ2", None)]


def test_blank_lines_are_skipped_but_counted(tmp_path):
    """Kills a blank line (spaces, a tab) taken for a question or an empty labelled line, and line numbers
    that leave the blank lines out."""
    text = "\n  \n\t\n Where was Ada born? \tLondon\n\r\n \t \nWhere was Bo born?\tLisbon\n\n"
    assert read(tmp_path, text) == [(4, " Where was Ada born? ", "London"), (7, "Where was Bo born?", "Lisbon")]


def test_the_place_loses_the_white_space_around_it_and_the_question_keeps_its_own(tmp_path):
    """Kills a place compared with its spaces (" London" matching no prediction), and a question changed
    from what the model is asked."""
    assert read(tmp_path, "  Where was Ada born? \t London \n", True) == [(1, "  Where was Ada born? ", "London")]


@pytest.mark.parametrize("text", ["", "\n", " \r\n\t\r", "\ufeff\n\t\n"])
def test_a_file_without_a_question_is_refused(tmp_path, text):
    """Kills a file of blank lines read as no questions (an IndexError later, or nothing graded)."""
    for labelled in (None, True, False):
        path, message = refused(tmp_path, text, labelled)
        assert message == f"{path} has no questions"


def test_a_labelled_line_without_a_tab_is_refused_naming_it(tmp_path):
    """Kills a labelled line of one column taken (evaluate_places would read the file as unlabelled), and a
    message naming another line or showing the line otherwise than cut at 70 characters."""
    path, message = refused(tmp_path, "Where was Ada born?\tLondon\n\nWhere was Bo born?\n", True)
    assert message == f"{path} line 3: expected 'question<TAB>place', found no tab: 'Where was Bo born?'"
    long = "Where was " + "B" * 80
    path, message = refused(tmp_path, f"{long}\n", True)
    assert message == f"{path} line 1: expected 'question<TAB>place', found no tab: {long[:70]!r}"


@pytest.mark.parametrize("line, tabs", [("Where was Bo born?\tLisbon\tPortugal", 2),
                                        ("Where was Bo born?\tLisbon\t", 2), ("\tWhere was Bo born?\tLisbon", 2),
                                        ("a\tb\tc\td", 3)])
def test_a_second_tab_is_refused_even_at_either_end_of_the_line(tmp_path, line, tabs):
    """Kills a third column dropped or taken as the place, and tabs stripped from the ends of a line before
    they are counted (as evaluate_places strips them, reading 'Q<TAB>A<TAB>' as 'Q<TAB>A')."""
    path, message = refused(tmp_path, f"Where was Ada born?\tLondon\n{line}\n")
    assert message == f"{path} line 2: expected 'question<TAB>place', found {tabs} tabs: {line!r}"


@pytest.mark.parametrize("line, name", [("Where was Bo born?\t", "place"), ("Where was Bo born?\t  ", "place"),
                                        ("\tLisbon", "question"), ("  \tLisbon", "question")])
def test_an_empty_place_or_question_is_refused(tmp_path, line, name):
    """Kills an empty (or white space) place taken, which would mark every empty prediction right, and an
    empty question taken, which evaluate_places reads as a line of one column."""
    for labelled in (None, True):
        path, message = refused(tmp_path, f"Where was Ada born?\tLondon\r\n{line}\r\n", labelled)
        assert message == f"{path} line 2: the {name} is empty"


def test_a_file_of_questions_alone_gives_no_places(tmp_path):
    """Kills questions alone read as labelled, or places made up for them."""
    text = "Where was Ada born?\nWhere was Bo born? \n"
    expected = [(1, "Where was Ada born?", None), (2, "Where was Bo born? ", None)]
    assert read(tmp_path, text) == read(tmp_path, text, False) == expected


def test_a_file_of_questions_alone_carries_no_place(tmp_path):
    """Kills test inputs that carry answers taken as questions alone (the students get that file)."""
    path, message = refused(tmp_path, "Where was Ada born?\nWhere was Bo born?\tLisbon\n", False)
    assert message == f"{path} line 2: expected a question alone, found a tab: 'Where was Bo born?\\tLisbon'"
    path, message = refused(tmp_path, "\nWhere was Ada born?\tLondon\n", False)
    assert message == f"{path} line 2: expected a question alone, found a tab: 'Where was Ada born?\\tLondon'"


def test_a_file_of_questions_alone_is_refused_where_places_are_needed(tmp_path):
    """Kills the first line deciding where the caller needs the places (finetuning, labels)."""
    path, message = refused(tmp_path, "Where was Ada born?\nWhere was Bo born?\n", True)
    assert message == f"{path} line 1: expected 'question<TAB>place', found no tab: 'Where was Ada born?'"


def test_where_the_file_says_its_first_question_decides_for_every_line(tmp_path):
    """Kills a file that mixes questions alone and labelled lines taken either way, and a message naming
    line 1 when blank lines come first."""
    path, message = refused(tmp_path, "\n \r\nWhere was Ada born?\nWhere was Bo born?\tLisbon\n")
    assert message == (f"{path} line 4 has a tab, but line 3 has none: either every line is 'question<TAB>place' "
                       f"or none is")
    path, message = refused(tmp_path, "Where was Ada born?\tLondon\nWhere was Bo born?\n")
    assert message == f"{path} line 2: expected 'question<TAB>place', found no tab: 'Where was Bo born?'"


@pytest.mark.parametrize("text, number, byte", [(b"Z\xfcrich\tSwitzerland\n", 1, 1),
                                                (b"Q1\tA\r\nQ2\tB\r\rQ3\tZ\xfcrich\n", 4, 16),
                                                (b"\xef\xbb\xbfQ1\tA\nQ2\t\xff\n", 2, 11)])
def test_bytes_that_are_not_utf8_are_refused_naming_their_line(tmp_path, ascii_locale, text, number, byte):
    """Kills the locale's encoding, a UnicodeDecodeError traceback, and a line counted otherwise than the
    reader counts lines (a \\r\\n counted twice, a lone \\r not at all, the BOM's bytes left out)."""
    path, message = refused(tmp_path, text)
    assert message == f"{path} line {number}: not UTF-8 text (byte {byte})"
    assert read(tmp_path, text.decode("latin-1").encode("utf-8"))  # the same text in UTF-8 is read


def test_an_unreadable_file_is_refused_in_one_line(tmp_path, monkeypatch):
    """Kills a traceback for a missing file, a folder, or an OSError without a reason."""
    assert refusal(read_question_file, str(tmp_path / "none.tsv")) == \
        f"cannot read {tmp_path / 'none.tsv'} (No such file or directory)"
    assert refusal(read_question_file, str(tmp_path)) == f"cannot read {tmp_path} (Is a directory)"
    path = written(tmp_path, "Where was Ada born?\tLondon\n")
    monkeypatch.setattr(question_files, "open", raising(OSError()), raising=False)
    assert refusal(read_question_file, path) == f"cannot read {path} (OSError)"


@pytest.mark.parametrize("line", ["Where\x85was Bo born?", "Where was Bo born?\u2028", "Where\x0bwas\x0cBo\x1c"])
def test_a_refusal_is_one_line_whatever_the_line_it_shows(tmp_path, line):
    """Kills a refused line shown as it is, whose own line separators would break the message into lines."""
    path, message = refused(tmp_path, f"Where was Ada born?\tLondon\n{line}\n")
    assert message.startswith(f"{path} line 2: ") and len(message.splitlines()) == 1


@pytest.mark.parametrize("folder", ["data", "shared"])
def test_the_course_files_read_as_evaluate_places_reads_them(request, folder):
    """Kills a reading of the course's files (this repository's world, and the course's own data where the
    checkout has it) that differs from evaluate_places's in a count or a place: the graded numbers would
    change."""
    data = REPO / "data" if folder == "data" else request.getfixturevalue("shared_data")
    for name in ("birth_places_train.tsv", "birth_dev.tsv", "birth_test.tsv"):
        if (data / name).is_file():
            places = [line.place for line in read_question_file(str(data / name), labelled=True)]
            assert evaluate_places(str(data / name), places) == (len(places), len(places))
    questions = read_question_file(str(data / "birth_test_inputs.tsv"), labelled=False)
    with open(data / "birth_test_inputs.tsv", encoding="utf-8") as f:
        assert [line.question for line in questions] == [line.rstrip("\n") for line in f if line.strip()]


@EDGE
@given(data=st.data(), labelled=st.booleans(), bom=st.booleans())
def test_a_file_reads_the_same_whatever_its_line_ends_blank_lines_and_bom(tmp_path_factory, data, labelled, bom):
    """Kills a line end of one kind mishandled where the others are not, a missing last line end losing a
    question, and blank lines or a BOM shifting the line numbers."""
    words = st.text("ABab ?é\x85", min_size=1, max_size=8).filter(str.strip)
    pairs = data.draw(st.lists(st.tuples(words, words), min_size=1, max_size=5))
    lines, expected = [], []
    for question, place in pairs:
        lines += data.draw(st.lists(st.sampled_from(["", " ", "\t", " \t "]), max_size=2))
        lines.append(f"{question}\t{place}" if labelled else question)
        expected.append((len(lines), question, place.strip() if labelled else None))
    text = joined(lines, *data.draw(line_ends(len(lines))))
    path = written(tmp_path_factory.mktemp("questions"), ("\ufeff" if bom else "") + text)
    assert [(line.number, line.question, line.place) for line in read_question_file(path)] == expected


def test_the_accepted_case_of_the_callers_tests_is_read_as_its_comment_says(tmp_path):
    """Kills the callers' tests resting on a file the reader refuses, or reads as something else."""
    assert read(tmp_path, ACCEPTED, True) == [(2, "Where was Ada born?", "London"), (4, "Where was Bo born?", "Lisbon")]
