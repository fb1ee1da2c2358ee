"""
The copy report's answer tables (src/instructors/copies/answers.py), on hand-ins made here: a
prediction file's answers are its lines stripped, whatever their line ends and with or without a final
newline; the number of questions is the labels', or without them the count most of the class's files
give (known hand-ins' files do not vote); a file of another count is left out in one line; a hand-in's
regenerated answers come first and its submitted file is a second row only where it differs; only the
class's first rows make the class's frequencies; equal answers, labels included, share one id.
"""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from instructors.copies import answers
from instructors.copies.handins import HandIn

from runtime_helpers import EDGE, joined, line_ends

FILE = "vanilla.pretrain.dev.predictions"


def hand_in(tmp_path, name, text, known=None):
    """A hand-in folder holding FILE with `text` (bytes or str); its HandIn."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / FILE).write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return HandIn(name, str(folder), known, {FILE: str(folder / FILE)})


@pytest.mark.parametrize("text, expected", [
    (b"", []), (b"\n", [""]), (b"Lima", ["Lima"]), (b"Lima\n", ["Lima"]), (b" Lima \r\nQuito\r\n", ["Lima", "Quito"]),
    (b"Lima\n\nQuito", ["Lima", "", "Quito"]), (b"Lima\n\n", ["Lima", ""]), (b"Lim\xff\n", ["Lim\ufffd"]),
    (b"Lima\rQuito\r", ["Lima", "Quito"]), (b"Lima\r\rQuito", ["Lima", "", "Quito"]),
])
def test_a_files_answers_are_its_lines_stripped(tmp_path, text, expected):
    """Kills the last answer of a file without a final newline dropped, an empty answer dropped, a \\r or
    spaces kept (the grader strips answers), a lone \\r not ending a line (the grader's files end lines
    so: a copy could hide behind it), and bytes that are not UTF-8 ending the report."""
    assert answers.submitted_answers(hand_in(tmp_path, "ann", text), FILE) == expected


@EDGE
@given(data=st.data(), places=st.lists(st.text(alphabet="Lim aQuito", min_size=1, max_size=6), min_size=1,
                                       max_size=8))
def test_a_files_answers_are_its_lines_stripped_whatever_their_line_ends(tmp_path_factory, data, places):
    """Any mix of \\n, \\r\\n and lone \\r, with or without a last line end, as the grader reads them."""
    text = joined(places, *data.draw(line_ends(len(places))))
    read = answers.submitted_answers(hand_in(tmp_path_factory.mktemp("answers"), "ann", text), FILE)
    assert read == [place.strip() for place in places]


def test_without_labels_the_questions_are_the_count_most_of_the_class_give(tmp_path):
    """Kills the known hand-ins' files voting on the count, and a file of another count compared."""
    hand_ins = [hand_in(tmp_path, "ann", "a\nb\nc\n"), hand_in(tmp_path, "ben", "a\nb\nx\n"),
                hand_in(tmp_path, "cy", "a\nb\n"), hand_in(tmp_path, "dan", "a\nb\nc\nd\n")]
    hand_ins += [hand_in(tmp_path, f"known{k}", "a\nb\n", known="elsewhere") for k in range(3)]
    problems = []
    table = answers.answer_table(FILE, hand_ins, {}, None, problems)
    assert problems == [f"cy: {FILE} has 2 answers for 3 questions: not compared as submitted",
                        f"dan: {FILE} has 4 answers for 3 questions: not compared as submitted"] + \
        [f"known{k}: {FILE} has 2 answers for 3 questions: not compared as submitted" for k in range(3)]
    assert table.hand_ins.tolist() == [0, 1] and table.how == ["submitted", "submitted"]
    assert table.ids.tolist() == [[0, 1, 2], [0, 1, 3]] and table.labels is None


def test_with_labels_the_questions_are_the_labels(tmp_path):
    """Kills the class's count taken over the labels', and labels given ids of their own where an
    answer equals them."""
    hand_ins = [hand_in(tmp_path, "ann", "a\nb\n"), hand_in(tmp_path, "ben", "a\nb\n"),
                hand_in(tmp_path, "cy", "a\nz\nq\n")]
    problems = []
    table = answers.answer_table(FILE, hand_ins, {}, ["z", "b", "q"], problems)
    assert problems == [f"{name}: {FILE} has 2 answers for 3 questions: not compared as submitted"
                        for name in ("ann", "ben")]
    assert table.ids.tolist() == [[0, 1, 2]] and table.labels.tolist() == [1, 3, 2]


def test_a_submitted_file_is_a_second_row_only_where_it_differs_from_the_regenerated_answers(tmp_path):
    """Kills a submitted file equal to the regenerated answers compared twice (its pair would share
    every answer with itself), a differing one left out, and second rows or known hand-ins' rows
    making the class's frequencies."""
    hand_ins = [hand_in(tmp_path, "ann", "a\nb\n"), hand_in(tmp_path, "ben", "a\nc\n"),
                hand_in(tmp_path, "cy", "x\ny\n"), hand_in(tmp_path, "pub", "a\nb\n", known="elsewhere")]
    regenerated = {(0, FILE): ["a", "b"], (1, FILE): ["a", "b"], (3, FILE): ["p", "q"]}
    table = answers.answer_table(FILE, hand_ins, regenerated, None, [])
    assert table.hand_ins.tolist() == [0, 1, 1, 2, 3, 3]
    assert table.how == ["regenerated", "regenerated", "submitted", "submitted", "regenerated", "submitted"]
    assert table.ids.tolist() == [[0, 1], [0, 1], [0, 2], [3, 4], [5, 6], [0, 1]]
    assert table.counted.tolist() == [True, True, False, True, False, False]


def test_files_no_hand_in_answers_make_no_table(tmp_path):
    hand_ins = [hand_in(tmp_path, "ann", "a\n")]
    tables = answers.answer_tables(hand_ins, {}, {}, [])
    assert [table.file for table in tables] == [FILE]
    assert answers.answer_table("vanilla.pretrain.test.predictions", hand_ins, {}, None, []) is None
    assert answers.answer_table(FILE, [hand_in(tmp_path, "empty", "")], {}, None, []) is None


def test_equal_answers_have_equal_ids_and_first_rows_are_each_hand_ins_first():
    ids, labels = answers.encoded([["a", "b"], ["b", "a"]], ["c", "a"])
    assert ids.tolist() == [[0, 1], [1, 0]] and labels.tolist() == [2, 0]
    assert answers.first_rows(np.array([0, 0, 1, 2, 2, 2])).tolist() == [True, False, True, True, False, False]
