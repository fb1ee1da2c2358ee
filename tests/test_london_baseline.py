"""
The london_baseline stage (src/stages/london_baseline.py): the dev accuracy
of always answering "London" and of always answering the most frequent
training place (the first in file order among equals), each one line; its
files read by the one reader of question files, as evaluate_places reads
them (blank lines skipped, any line end), and a file it cannot score
refused in one line naming the line.
"""

import pytest

from assignment import question_files
from assignment.question_files import read_question_file
from stages import london_baseline

from question_file_cases import ACCEPTED, QUESTIONS_ALONE, REFUSED, reader_refusal
from runtime_helpers import raising, written

DEV = "Where was Ada born?\tParis\nWhere was Bo born?\tLondon\nWhere was Cy born?\tParis\n"


def baseline(tmp_path, capsys, train, dev=DEV):
    """london_baseline's exit status, stdout lines and stderr on the given training and dev texts."""
    status = london_baseline.main(["--train_path", written(tmp_path, train, "train.tsv"),
                                   "--dev_path", written(tmp_path, dev, "dev.tsv")])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


def test_both_constant_answers_are_scored_on_dev(tmp_path, capsys):
    """Kills another constant, a count of the training answers, or an accuracy computed otherwise."""
    train = "Where was Di born?\tParis\nWhere was Ed born?\tLondon\nWhere was Fa born?\tParis\n"
    assert baseline(tmp_path, capsys, train) == (0, [
        'Always "London": Correct: 1.0 out of 3.0: 33.33333333333333%',
        'Always "Paris" (2 of 3 training answers): Correct: 2.0 out of 3.0: 66.66666666666666%'], "")


@pytest.mark.parametrize("train, first", [("Q\tParis\nQ\tLondon\nQ\tLondon\nQ\tParis\n", "Paris"),
                                          ("Q\tLondon\nQ\tParis\nQ\tParis\nQ\tLondon\n", "London")])
def test_a_tie_for_the_most_frequent_place_goes_to_the_first_in_file_order(tmp_path, capsys, train, first):
    """Kills a tie broken by the alphabet, or by the last place of the file."""
    status, lines, _ = baseline(tmp_path, capsys, train)
    assert status == 0 and lines[1].startswith(f'Always "{first}" (2 of 4 training answers): ')


def test_line_ends_spaces_and_blank_lines_are_read_as_evaluate_places_reads_them(tmp_path, capsys):
    """Kills a \\r or the spaces around a place kept in it (a constant "Paris " that matches
    nothing), and blank lines counted as questions."""
    train = b"\r\n Where was Di born?\tParis  \r\n  \r\nWhere was Ed born?\t Paris"
    dev = b"Where was Ada born?\tParis\r\n\r\nWhere was Bo born?\tLondon\rWhere was Cy born?\tParis\r\n"
    assert baseline(tmp_path, capsys, train, dev)[:2] == (0, [
        'Always "London": Correct: 1.0 out of 3.0: 33.33333333333333%',
        'Always "Paris" (2 of 2 training answers): Correct: 2.0 out of 3.0: 66.66666666666666%'])


@pytest.mark.parametrize("bad, told", [
    ("Where was Bo born?", "expected 'question<TAB>place', found no tab: 'Where was Bo born?'"),
    ("Where\twas Bo\tborn", "expected 'question<TAB>place', found 2 tabs: 'Where\\twas Bo\\tborn'"),
    ("Where was Bo born?\tParis\t", "expected 'question<TAB>place', found 2 tabs: 'Where was Bo born?\\tParis\\t'")])
def test_a_line_without_exactly_one_tab_is_refused_naming_its_line(tmp_path, capsys, bad, told):
    """Kills a line with two tabs scored by its second column, a tab at the end of a line stripped before
    the tabs are counted (as evaluate_places strips it), and lines counted from 0 or without the blank
    ones."""
    status, lines, err = baseline(tmp_path, capsys, f"Where was Ada born?\tParis\n\n{bad}\n")
    assert (status, lines) == (1, [])
    assert err == f"london_baseline: error: {tmp_path}/train.tsv line 3: {told}\n"


@pytest.mark.parametrize("train", ["", "\n \n\r\n"])
def test_a_file_without_questions_is_refused_in_one_line(tmp_path, capsys, train):
    """Kills an empty training file that reaches the count of its places (an IndexError)."""
    assert baseline(tmp_path, capsys, train) == (1, [], f"london_baseline: error: {tmp_path}/train.tsv has no "
                                                        f"questions\n")


def test_an_unreadable_file_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    """Kills a traceback for a file that is there but cannot be read (its permissions, an I/O error)."""
    train = written(tmp_path, DEV, "train.tsv")
    monkeypatch.setattr(question_files, "open", raising(PermissionError(13, "Permission denied")), raising=False)
    assert london_baseline.main(["--train_path", train, "--dev_path", train]) == 1
    assert capsys.readouterr().err == f"london_baseline: error: cannot read {train} (Permission denied)\n"


def test_a_missing_file_is_refused_in_one_line(tmp_path, capsys):
    """Kills a missing dev file that reaches open()."""
    status = london_baseline.main(["--train_path", written(tmp_path, DEV, "train.tsv"),
                                   "--dev_path", str(tmp_path / "none.tsv")])
    assert status == 1 and capsys.readouterr().err == \
        f"london_baseline: error: cannot read {tmp_path}/none.tsv (No such file or directory)\n"


def test_baseline_answers_in_another_encoding_are_one_line(tmp_path, capsys):
    """Kills the traceback of a non-UTF-8 answer (the bug fixed in labelled_places)."""
    train = written(tmp_path, "Where was Ada born?\tLisbon\n", "train.tsv")
    dev = written(tmp_path, b"Where was Ada born?\tLisbon\nWhere was Bo born?\tZ\xebrich\n", "dev.tsv")
    assert london_baseline.main(['--train_path', train, '--dev_path', dev]) == 1
    err = capsys.readouterr().err
    assert err == f"london_baseline: error: {dev} line 2: not UTF-8 text (byte 47)\n"


@pytest.mark.parametrize("case", REFUSED)
def test_question_files_are_read_by_the_one_reader(tmp_path, capsys, case):
    """Kills the baseline reading its files by rules of its own (a trailing tab or an empty place taken, a
    place's leading spaces kept): it counts the places of the file read_question_file accepts as that
    reads them, and refuses each file it refuses with its message."""
    train = written(tmp_path, ACCEPTED, "train.tsv")
    assert london_baseline.labelled_places(train) == [line.place for line in read_question_file(train, True)]
    dev = written(tmp_path, REFUSED[case], "dev.tsv")
    assert london_baseline.main(["--train_path", train, "--dev_path", dev]) == 1
    assert capsys.readouterr().err == f"london_baseline: error: {reader_refusal(dev)}\n"


def test_a_file_of_questions_alone_is_refused(tmp_path, capsys):
    """Kills training questions without places read as the file says, which leaves no place to count."""
    train = written(tmp_path, QUESTIONS_ALONE, "train.tsv")
    assert london_baseline.main(["--train_path", train, "--dev_path", written(tmp_path, DEV, "dev.tsv")]) == 1
    assert capsys.readouterr().err == f"london_baseline: error: {reader_refusal(train)}\n"
