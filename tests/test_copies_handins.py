"""
The copy report's hand-in reader (src/instructors/copies/handins.py) reads
the parameters and prediction files of a class's hand-ins, folders or zips:
a deliverable that is a link, or is reached through a folder that is one,
or a zip member that is one, is left out with one line saying so, and what
it leads to is never read. (run_autograder's own filter is
tests/test_adversarial.py's "links" attack; the grader's snapshot of a
hand-in, tests/test_grading_context.py; the limits on submitted code,
tests/test_sandbox_limits.py.)
"""

import stat
import zipfile

import pytest

from instructors.copies import handins


SECRET = b"what a link leads to, outside the hand-in"
PARAMS, PREDICTIONS = "vanilla.model.params", "vanilla.pretrain.dev.predictions"


@pytest.fixture
def outside(tmp_path):
    """A folder outside the class's hand-ins holding a parameters file, flat and under src/submission/."""
    folder = tmp_path / "outside"
    (folder / "src" / "submission").mkdir(parents=True)
    for path in (folder / PARAMS, folder / "src" / "submission" / PARAMS):
        path.write_bytes(SECRET)
    return folder


def class_folder(tmp_path):
    """The class's folder of hand-ins, with one honest hand-in."""
    (tmp_path / "class" / "honest").mkdir(parents=True)
    (tmp_path / "class" / "honest" / PREDICTIONS).write_text("Lisbon\n")
    return tmp_path / "class"


def read_everything(folder):
    """(problems, {hand-in: {deliverable: its bytes}}) of the class at `folder`, every file read."""
    hand_ins, problems = handins.read_hand_ins(str(folder))
    return problems, {h.name: {name: h.read(name) for name in h.files} for h in hand_ins}


def test_a_deliverable_that_is_a_link_is_left_out_in_one_line(tmp_path, outside):
    """Kills a hand-in folder whose linked deliverable is read (its target's bytes compared as the
    student's): it is left out, with one line naming it."""
    folder = class_folder(tmp_path)
    (folder / "linked").mkdir()
    (folder / "linked" / PREDICTIONS).write_text("Quito\n")
    (folder / "linked" / PARAMS).symlink_to(outside / PARAMS)
    problems, read = read_everything(folder)
    assert problems == [f"linked: {PARAMS} is a symbolic link or not a file: not read"]
    assert read["linked"] == {PREDICTIONS: b"Quito\n"}


@pytest.mark.parametrize("link", ["src", "src/submission"])
def test_a_deliverable_under_a_linked_folder_is_left_out_in_one_line(tmp_path, outside, link):
    """Kills a hand-in folder read through a linked src/ or src/submission/: the deliverable found
    there is left out, with one line naming it, and nothing of it is read."""
    folder = class_folder(tmp_path)
    (folder / "linked" / link).parent.mkdir(parents=True, exist_ok=True)
    (folder / "linked" / link).symlink_to(outside / link)
    (folder / "linked" / PREDICTIONS).write_text("Quito\n")
    problems, read = read_everything(folder)
    assert problems == [f"linked: src/submission/{PARAMS} is a symbolic link or not a file: not read"]
    assert read == {"honest": {PREDICTIONS: b"Lisbon\n"}, "linked": {PREDICTIONS: b"Quito\n"}}


def test_a_link_in_a_zip_is_left_out_in_one_line(tmp_path, outside):
    """Kills a hand-in zip whose member that is a symbolic link is taken as a deliverable (the path it
    holds compared as parameters, and extracted for the regeneration): it is left out, with one line."""
    folder = class_folder(tmp_path)
    link = zipfile.ZipInfo(PARAMS)
    link.create_system = 3  # Unix, whose mode bits say it is a link
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(folder / "zipped.zip", "w") as archive:
        archive.writestr(link, str(outside / PARAMS))
        archive.writestr(PREDICTIONS, "Quito\n")
    problems, read = read_everything(folder)
    assert problems == [f"zipped: {PARAMS} is a symbolic link: not read"]
    assert read["zipped"] == {PREDICTIONS: b"Quito\n"}
