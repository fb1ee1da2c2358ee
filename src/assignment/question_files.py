"""
Question files, and the one reader of them (read_question_file) that the
stages, the grader, the release and the demo share. A question file holds a
question a line: "question<TAB>place" where the file gives the answers
(birth_places_train.tsv, birth_dev.tsv, the test labels), the question alone
where it does not (birth_test_inputs.tsv). Its rules, which read the course's
files as the course's evaluate_places does:

  - the file is UTF-8 text; a byte order mark at its start is dropped;
  - a line ends at \\n, \\r\\n or a lone \\r (as Python's text mode, and so
    evaluate_places, reads it), and its end is no part of it;
  - a blank line (white space alone, tabs included) is skipped, as
    evaluate_places skips it, and still counts in the line numbers;
  - a file gives places on every line or on none: a labelled line is a
    question, one tab and a place, and no tab or a second tab is refused; a
    file of questions alone has no tab (where the caller lets the file say,
    its first question does);
  - the question is kept as it is (the model reads it character for
    character), the place without the white space around it (it is only
    compared); an empty one of either is refused, since an empty place
    would mark every empty prediction right;
  - a file without a question is refused.

A refusal is an InputError: one line naming the file and, for a fault of a
line, its number from 1.
"""

import re
from typing import NamedTuple, Optional

LINE_END = re.compile(r'\r\n|\r|\n')
BOM = '\ufeff'
SHOWN = 70  # the characters of a refused line that its message shows


class InputError(Exception):
    """A bad command line or input file: reported as one line on stderr, exit status 1."""


class Line(NamedTuple):
    """A question of a question file."""
    number: int  # its line in the file, from 1
    text: str  # the line, without its end
    question: str
    place: Optional[str]  # None in a file of questions alone


def question_lines(path):
    """(number, text) of each line of the file at `path` that is not blank."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError as error:
        raise InputError(f"cannot read {path} ({error.strerror or type(error).__name__})") from None
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as error:
        number = len(LINE_END.split(data[:error.start].decode('utf-8')))
        raise InputError(f"{path} line {number}: not UTF-8 text (byte {error.start})") from None
    lines = LINE_END.split(text.removeprefix(BOM))
    return [(number, line) for number, line in enumerate(lines, start=1) if line.strip()]


def parsed(path, number, text, labelled, first):
    """The Line of `text`, line `number` of the file at `path`; InputError where it breaks a rule.
    `first` is the line of the first question where that question said whether the file is labelled."""
    tabs = text.count('\t')
    if labelled and tabs != 1:
        raise InputError(f"{path} line {number}: expected 'question<TAB>place', found "
                         f"{'no tab' if tabs == 0 else f'{tabs} tabs'}: {text[:SHOWN]!r}")
    if not labelled and tabs and first:
        raise InputError(f"{path} line {number} has a tab, but line {first} has none: either every line is "
                         f"'question<TAB>place' or none is")
    if not labelled and tabs:
        raise InputError(f"{path} line {number}: expected a question alone, found a tab: {text[:SHOWN]!r}")
    question, _, place = text.partition('\t')
    if not question.strip():
        raise InputError(f"{path} line {number}: the question is empty")
    if labelled and not place.strip():
        raise InputError(f"{path} line {number}: the place is empty")
    return Line(number, text, question, place.strip() if labelled else None)


def read_question_file(path, labelled=None):
    """
    The questions of the question file at `path`, in file order, as Lines.
    `labelled` True: every line gives its place; False: none does; None: the
    first question says which, and every other line must say the same.
    """
    lines = question_lines(path)
    if not lines:
        raise InputError(f"{path} has no questions")
    first = None
    if labelled is None:
        first, text = lines[0]
        labelled = '\t' in text
    return [parsed(path, number, text, labelled, first) for number, text in lines]
