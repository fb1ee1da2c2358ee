"""
Tests that kill mutants of the grading machinery that the rest of the suite
let live: the hidden labels are read with the whitespace around an answer
and around a line taken off, blank lines skipped.
"""

from grading.bundle import read_labels


def test_hidden_labels_lose_the_whitespace_around_each_answer(tmp_path):
    path = tmp_path / "birth_dev.tsv"
    path.write_bytes(b"Where was Ada born?\t London \r\n\nWhere was Kofi born?\tKumasi  \n  \nWhere was Frida born?\tCoyoacan")
    assert [answer for _, answer in read_labels(str(path))] == ["London", "Kumasi", "Coyoacan"]
