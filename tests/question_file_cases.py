"""
Question files for the tests of read_question_file's callers
(src/assignment/question_files.py): one that its rules accept at their
edges, and files that break one rule each. A caller that reads question
files by the one reader reads the first as the reader does and refuses
each of the others with the reader's own message; a caller with rules of
its own differs on at least one of them.
"""

import pytest

from assignment.question_files import InputError, read_question_file

# A byte order mark, a blank first line, \r\n and a lone \r, a line of white space and a tab, a place with
# spaces around it.
ACCEPTED = b"\xef\xbb\xbf\r\nWhere was Ada born?\t London \r\n \t \rWhere was Bo born?\tLisbon\n"
REFUSED = {
    "no tab": b"Where was Ada born?\tLondon\n\nWhere was Bo born?\n",
    "a second tab": b"Where was Ada born?\tLondon\nWhere was Bo born?\tLisbon\t\n",
    "an empty place": b"Where was Ada born?\tLondon\r\nWhere was Bo born?\t \r\n",
    "an empty question": b"Where was Ada born?\tLondon\n \tLisbon\n",
    "not UTF-8": b"Where was Ada born?\tLondon\rWhere was Bo born?\tZ\xebrich\n",
    "no question": b"\xef\xbb\xbf \r\n\t\n",
}
QUESTIONS_ALONE = b"Where was Ada born?\nWhere was Bo born?\n"  # refused where the places are needed


def refusal(read, *args, error=InputError):
    """The message of the `error` that read(*args) raises."""
    with pytest.raises(error) as refused:
        read(*args)
    return str(refused.value)


def reader_refusal(path, labelled=True):
    """The message with which read_question_file refuses the file at `path`."""
    return refusal(read_question_file, path, labelled)
