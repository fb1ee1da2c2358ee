"""
How ./run.sh test hands out the files (tests/conftest.py): every name in
SLOW_FILES is a test file here, named once, and pytest-xdist keeps the
collected order (the slow files first, heaviest first) rather than starting
the files with the most tests first.
"""

from pathlib import Path

from conftest import SLOW_FILES


def test_every_slow_file_is_a_test_file_named_once():
    here = Path(__file__).parent
    assert [name for name in SLOW_FILES if not (here / name).is_file()] == []
    assert len(set(SLOW_FILES)) == len(SLOW_FILES)


def test_xdist_hands_out_the_files_in_the_collected_order(request):
    assert request.config.option.loadscopereorder is False
