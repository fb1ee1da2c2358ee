"""
Writing Gradescope's results.json (grading/results.py): the file is replaced
whole or not at all, whatever stops the write (a full disk, Ctrl-C), and a
failed write leaves neither its partial file nor the folders it made; the
next write then works.
"""

import json
import os

import pytest

from grading import results

from grading_helpers import result
from runtime_helpers import DISK_FULL, leftovers, then_raising, tree


@pytest.mark.parametrize("stop", [DISK_FULL, KeyboardInterrupt()], ids=["disk full", "interrupted"])
def test_a_write_stopped_midway_leaves_the_earlier_results_alone(tmp_path, monkeypatch, stop):
    """Kills a partial file left behind by an interruption (only errors cleaned up), or results
    written in place."""
    path = tmp_path / "results.json"
    path.write_text('{"score": 1.0}')
    with monkeypatch.context() as patch, pytest.raises(type(stop)):
        patch.setattr(json, "dump", then_raising(json.dump, stop))
        results.write_results(str(path), [result()], 1)
    assert tree(tmp_path) == {"results.json": b'{"score": 1.0}'}
    assert results.write_results(str(path), [result()], 1)["score"] == 5.0
    assert json.loads(path.read_text())["score"] == 5.0 and not leftovers(tmp_path)


@pytest.mark.parametrize("stop", [DISK_FULL, KeyboardInterrupt()], ids=["disk full", "interrupted"])
def test_a_failed_write_removes_every_folder_it_made_and_only_those(tmp_path, monkeypatch, stop):
    """Kills the folders made for the results left behind, or removed top first (the top one is not
    empty then), or a folder that was there removed too."""
    (tmp_path / "kept").mkdir()
    path = tmp_path / "kept" / "a" / "b" / "c" / "results.json"
    with monkeypatch.context() as patch, pytest.raises(type(stop)):
        patch.setattr(json, "dump", then_raising(json.dump, stop))
        results.write_results(str(path), [result()], 1)
    assert tree(tmp_path) == {"kept": "/"}
    results.write_results(str(path), [result()], 1)
    assert os.listdir(path.parent) == ["results.json"]


def test_the_folders_to_make_are_those_missing_deepest_first(tmp_path):
    """Kills a symbolic link on the way taken for a folder to make (a link to nowhere is there: the
    command line refuses it as not a folder, and a failed write must never remove it)."""
    assert results.folders_to_make(str(tmp_path / "results.json")) == []
    assert results.folders_to_make(str(tmp_path / "a" / "b" / "results.json")) == [str(tmp_path / "a" / "b"),
                                                                                  str(tmp_path / "a")]
    os.symlink(tmp_path / "nowhere", tmp_path / "link")
    assert results.folders_to_make(str(tmp_path / "link" / "a" / "results.json")) == [str(tmp_path / "link" / "a")]
    assert results.folders_to_make(str(tmp_path / "link" / "results.json")) == []


def test_the_output_shows_at_most_its_last_characters():
    """Kills a tail cut one character short or long, or taken from the start of the output."""
    cap = results.OUTPUT_TAIL_CHARS
    shown = "error\n\nYour code printed (last part):\n"
    exact = "a" + "b" * (cap - 1)
    assert results.test_output(result(status="error", output=exact)) == shown + exact
    assert results.test_output(result(status="error", output="x" + exact)) == shown + exact
    assert results.test_output(result(status="timeout", message="late", output="z")) == \
        "timeout: late\n\nYour code printed (last part):\nz"
