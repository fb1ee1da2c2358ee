"""
The copy report's hand-in reader (src/instructors/copies/handins.py) reads
the parameters and prediction files of a class's hand-ins, folders or zips:
a deliverable that is a link, or is reached through a folder that is one,
or a zip member that is one, is left out with one line saying so, and what
it leads to is never read. A file is read up to the grader's size limit and
refused one byte past it; a hand-in's deliverable is taken flat before
src/submission/; hidden entries are no hand-ins, known ones are named with
their folder, and two hand-ins of one name are told apart. (run_autograder's own filter is
tests/test_release_autograder_attacks.py's "links" attack; the grader's snapshot of a
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


def test_a_file_at_the_graders_size_limit_is_read_and_one_byte_more_is_refused(tmp_path, monkeypatch):
    """Kills the limit itself refused, or a file over it read, in a folder and in a zip."""
    monkeypatch.setattr(handins, "MAX_BYTES", {".params": 8, ".predictions": 6})
    folder = tmp_path / "class"
    (folder / "at").mkdir(parents=True)
    (folder / "at" / PARAMS).write_bytes(b"8 bytes!")
    (folder / "at" / PREDICTIONS).write_bytes(b"Quito\n")
    (folder / "over").mkdir()
    (folder / "over" / PARAMS).write_bytes(b"9 bytes!!")
    (folder / "over" / PREDICTIONS).write_bytes(b"Lisbon\n")
    with zipfile.ZipFile(folder / "zipped.zip", "w") as archive:
        archive.writestr(PARAMS, b"8 bytes!")
        archive.writestr(PREDICTIONS, b"Lisbon\n")
    problems, read = read_everything(folder)
    assert read == {"at": {PARAMS: b"8 bytes!", PREDICTIONS: b"Quito\n"}, "zipped": {PARAMS: b"8 bytes!"}}
    assert problems == ["over: vanilla.model.params is too large to be a params file: not read",
                        "over: vanilla.pretrain.dev.predictions is too large to be a predictions file: not read",
                        "over: no parameters or prediction files (the deliverables, flat or under src/submission/): "
                        "not compared",
                        "zipped: vanilla.pretrain.dev.predictions is too large to be a predictions file: not read"]


def test_a_deliverable_both_flat_and_under_src_submission_is_read_flat(tmp_path):
    """Kills src/submission/ looked in first: collect_submission's flat layout is the one handed in."""
    folder = tmp_path / "class"
    (folder / "both" / "src" / "submission").mkdir(parents=True)
    (folder / "both" / PREDICTIONS).write_text("flat\n")
    (folder / "both" / "src" / "submission" / PREDICTIONS).write_text("nested\n")
    with zipfile.ZipFile(folder / "zipped.zip", "w") as archive:
        archive.writestr(f"src/submission/{PREDICTIONS}", "nested\n")
        archive.writestr(PREDICTIONS, "flat\n")
    problems, read = read_everything(folder)
    assert problems == [] and read == {"both": {PREDICTIONS: b"flat\n"}, "zipped": {PREDICTIONS: b"flat\n"}}


def test_hidden_entries_the_metadata_and_stray_files_are_no_hand_ins(tmp_path):
    """Kills .DS_Store or .git read as hand-ins, and a stray file taken silently."""
    folder = class_folder(tmp_path)
    (folder / ".git").mkdir()
    (folder / ".git" / PREDICTIONS).write_text("Lima\n")
    (folder / ".DS_Store").write_bytes(b"\0")
    (folder / "notes.txt").write_text("a note")
    problems, read = read_everything(folder)
    assert problems == ["notes.txt: neither a folder nor a zip: not a hand-in"]
    assert read == {"honest": {PREDICTIONS: b"Lisbon\n"}}


def test_known_hand_ins_are_named_with_their_folder_and_two_of_one_name_are_told_apart(tmp_path):
    """Kills a known hand-in named as a classmate would be, a suffix on the first of two names or none, and a
    suffixed name that another hand-in already bears ('bo [2]' handed in as such)."""
    folder = class_folder(tmp_path / "public")
    (folder / "honest.zip").write_bytes(b"")
    hand_ins, problems = handins.read_hand_ins(str(folder), known=str(folder))
    assert [(h.name, h.known) for h in hand_ins] == [("class/honest", str(folder))]
    assert problems == ["class/honest: not a readable zip (File is not a zip file): not compared"]
    twins = [handins.HandIn(name, "") for name in ("ann", "bo", "ann", "ann", "bo [2]", "bo")]
    assert [h.name for h in handins.named_apart(twins)] == ["ann", "bo", "ann [2]", "ann [3]", "bo [2]", "bo [3]"]


def test_a_zip_member_that_cannot_be_read_leaves_no_copy_on_disk(tmp_path):
    """Kills the copy for the regeneration made before the member is read: an empty file would be left in
    the scratch folder, which the report then cannot remove."""
    folder = class_folder(tmp_path)
    with zipfile.ZipFile(folder / "zipped.zip", "w") as archive:
        archive.writestr(PARAMS, b"parameters")
    hand_ins, _ = handins.read_hand_ins(str(folder))
    zipped = next(hand_in for hand_in in hand_ins if hand_in.name == "zipped")
    assert zipped.on_disk(PARAMS, str(tmp_path / "copy.params")) == str(tmp_path / "copy.params")
    assert (tmp_path / "copy.params").read_bytes() == b"parameters"
    (tmp_path / "copy.params").unlink()
    (folder / "zipped.zip").write_bytes(b"no longer a zip")
    with pytest.raises(handins.Unreadable, match=r"^zipped: vanilla.model.params cannot be read \(BadZipFile: "):
        zipped.on_disk(PARAMS, str(tmp_path / "copy.params"))
    assert not (tmp_path / "copy.params").exists()


def test_gradescopes_export_names_folders_and_zips_by_their_submitters(tmp_path):
    """Kills a zip's '.zip' kept in the name looked up, the metadata file read as a hand-in, or a
    submission the metadata does not name losing its folder's name."""
    folder = tmp_path / "export"
    for submission in ("submission_101", "submission_103"):
        (folder / submission).mkdir(parents=True)
        (folder / submission / PREDICTIONS).write_text("Lima\n")
    with zipfile.ZipFile(folder / "submission_102.zip", "w") as archive:
        archive.writestr(f"src/submission/{PREDICTIONS}", "Quito\n")
    (folder / handins.METADATA).write_text("submission_101:\n  :submitters:\n  - :name: Ann Lee\n"
                                           "submission_102:\n  :submitters:\n  - :name: Bo Chen\n  - :name: Di Ruiz\n"
                                           "submission_104:\n  :submitters: []\n", encoding="utf-8")
    hand_ins, problems = handins.read_hand_ins(str(folder), known=str(folder))
    assert problems == []
    assert [h.name for h in hand_ins] == ["export/Ann Lee (submission_101)",
                                          "export/Bo Chen & Di Ruiz (submission_102)", "export/submission_103"]
