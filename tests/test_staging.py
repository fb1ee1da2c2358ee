"""
The all-or-none staging (src/instructors/staging.py) of the commands that
fill an out folder: the release (instructors/release) and the copy report
(instructors/copies). Each is made to fail midway (an exception at a stage
of its staging, Ctrl-C, a full disk, a rename refused) and then checked: no
staging folder remains, an out folder it made itself is gone again, what
was there before is as it was, and the next run works. Then the edges of an
out folder: empty, holding files, a file, a symbolic link. Everything runs
in-process on tiny inputs; failures are injected with monkeypatch.
"""

import os
import shutil
import sys

import pytest

from instructors.copies import __main__ as copies_main
from instructors.copies import report as copies_report
from instructors.release import __main__ as release_main
from instructors.release import autograder, checks, student
from instructors.staging import holds

from runtime_helpers import DISK_FULL, leftovers, raising, then_raising, tree, write_data

RELEASED = ("student", "autograder", "autograder.zip")
REPORTED = ("report.md", "pairs.csv", "agreement.png")


def renaming_fails_onto(name, error):
    """os.replace, but a rename onto a path named `name` raises `error`."""
    replace = os.replace

    def fail(source, target, **kwargs):
        if os.path.basename(target) == name:
            raise error
        return replace(source, target, **kwargs)
    return fail


def out_folder(kind, tmp_path, outputs):
    """OUT as the test starts: 'made' (missing, and its parent too: the command makes both), 'empty',
    or 'forced' (an earlier run's `outputs`, folders for names without a suffix, and an instructor's
    notes.txt)."""
    if kind == "made":
        return tmp_path / "made" / "out"
    out = tmp_path / "out"
    out.mkdir()
    if kind == "forced":
        for name in outputs:
            earlier = out / name / "earlier.txt" if "." not in name else out / name
            earlier.parent.mkdir(exist_ok=True)
            earlier.write_text(f"the earlier {name}")
        (out / "notes.txt").write_text("keep me")
    return out


# ---- the release ------------------------------------------------------------------------------

@pytest.fixture
def release(tmp_path, make_corpus, registered, monkeypatch, capsys):
    """release's main on a tiny course's data in tmp_path/course: release(OUT, *options) gives its exit
    status and stderr. The checks that start processes pass (tests/test_release_main_end_to_end.py runs
    them); the path that reading grader.py's thresholds puts src/ on is put back afterwards."""
    write_data(tmp_path / "course", make_corpus(seed=3, count=12), train=4, dev=4)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(checks, "problems", lambda *args: [])
    monkeypatch.setattr(checks, "student_file_problems", lambda *args: [])
    monkeypatch.setattr(checks, "bundle_failure", lambda *args: None)

    def released(out, *options):
        status = release_main.main(["--out", str(out), "--data", str(tmp_path / "course"), *options])
        return status, capsys.readouterr().err
    return released


# the failures injected: {what happens: (owner, attribute, what stands in for it)}
RELEASE_FAILURES = {
    "disk full writing the student README": (student, "write_readme", raising(DISK_FULL)),
    "Ctrl-C writing the hidden bundle": (autograder, "write_hidden_bundle", raising(KeyboardInterrupt())),
    "disk full as the zip is closed": (shutil, "make_archive", then_raising(shutil.make_archive, DISK_FULL)),
    "a rename into OUT refused": (os, "replace", renaming_fails_onto("autograder.zip", DISK_FULL)),
    "Ctrl-C at a rename into OUT": (os, "replace", renaming_fails_onto("autograder.zip", KeyboardInterrupt())),
}


# ---- the copy report --------------------------------------------------------------------------

@pytest.fixture
def copies(tmp_path, capsys):
    """The copy report's main on a tiny class in tmp_path/class (three hand-ins of one prediction
    file): copies(OUT, *options) gives its exit status and stderr."""
    for number, name in enumerate(("ann", "ben", "cat"), start=1):
        hand_in = tmp_path / "class" / name
        hand_in.mkdir(parents=True)
        answers = "".join(f"Place {i * number % 5}\n" for i in range(20))
        (hand_in / "vanilla.pretrain.dev.predictions").write_text(answers, encoding="utf-8")

    def reported(out, *options):
        status = copies_main.main(["--submissions", str(tmp_path / "class"), "--out", str(out), *options])
        return status, capsys.readouterr().err
    return reported


COPIES_FAILURES = {
    "disk full after report.md": (copies_report, "write_csv", raising(DISK_FULL)),
    "Ctrl-C drawing the heat map": (copies_main, "draw_agreement", raising(KeyboardInterrupt())),
    "a rename into OUT refused": (os, "replace", renaming_fails_onto("agreement.png", DISK_FULL)),
    "Ctrl-C at a rename into OUT": (os, "replace", renaming_fails_onto("agreement.png", KeyboardInterrupt())),
}

# ---- both: OUT as it was after a failure, and its edges -----------------------------------------

# each command's outputs, its failures, and where it stages them: beside OUT's folder or inside it
STAGED = {"release": (RELEASED, RELEASE_FAILURES, "beside"), "copies": (REPORTED, COPIES_FAILURES, "inside")}


@pytest.mark.parametrize("kind", ["made", "empty", "forced"])
@pytest.mark.parametrize("command, failure", [(c, f) for c, (_, failures, _) in STAGED.items() for f in failures])
def test_a_run_that_fails_midway_leaves_out_as_it_was_and_the_next_one_works(request, tmp_path, monkeypatch,
                                                                           command, failure, kind):
    """Kills a staging folder left behind, an OUT (or its parent) that the run made left behind, a
    pre-existing empty OUT removed, and outputs moved in one by one, so that a failure among the moves
    leaves OUT half new and half old, or without the earlier outputs it was replacing."""
    outputs, failures, _ = STAGED[command]
    staged_run = request.getfixturevalue(command)
    out = out_folder(kind, tmp_path, outputs)
    before = tree(tmp_path)
    with monkeypatch.context() as patch, pytest.raises((OSError, KeyboardInterrupt)):
        patch.setattr(*failures[failure])
        staged_run(out, "--force")
    assert tree(tmp_path) == before
    assert staged_run(out, "--force")[0] == 0
    assert sorted(os.listdir(out)) == sorted(outputs + (("notes.txt",) if kind == "forced" else ()))
    assert not leftovers(tmp_path)


@pytest.mark.parametrize("kind, message", [("a file", "is a file, not a folder"),
                                           ("a link to nothing", "is a symbolic link to nothing"),
                                           ("a folder of other files", "is not empty; pass --force")])
@pytest.mark.parametrize("command", list(STAGED))
def test_an_out_that_cannot_be_filled_is_refused_in_one_line_and_left_as_it_was(request, tmp_path, command, kind,
                                                                                message):
    """Kills an OUT that is a file, a link to nothing or a folder of other files written over, followed
    or found out only once the outputs are made (a traceback then, or outputs beside the link)."""
    staged_run, out = request.getfixturevalue(command), tmp_path / "out"
    if kind == "a file":
        out.write_text("an instructor's file")
    elif kind == "a link to nothing":
        out.symlink_to(tmp_path / "nowhere")
    else:
        out.mkdir()
        (out / "notes.txt").write_text("keep me")
    before = tree(tmp_path)
    status, stderr = staged_run(out)
    assert status == 1 and message in stderr and stderr.count("\n") == 1, stderr
    assert tree(tmp_path) == before


@pytest.mark.parametrize("command", list(STAGED))
def test_a_link_to_a_folder_is_filled_through_renames_within_that_folders_file_system(request, tmp_path,
                                                                                      monkeypatch, command):
    """Kills staging beside the link rather than beside (or in) the folder it leads to: where that folder
    is on another file system, no output can be renamed into it. The link stays a link."""
    staged_run, (outputs, _, where) = request.getfixturevalue(command), STAGED[command]
    target = tmp_path / "elsewhere" / "out"
    target.mkdir(parents=True)
    (tmp_path / "out").symlink_to(target)
    renamed, replace = [], os.replace
    monkeypatch.setattr(os, "replace", lambda source, *rest, **kwargs: renamed.append(source) or
                        replace(source, *rest, **kwargs))
    assert staged_run(tmp_path / "out")[0] == 0
    assert (tmp_path / "out").is_symlink() and sorted(os.listdir(target)) == sorted(outputs)
    staging_home = str(target.parent if where == "beside" else target)
    assert renamed and {os.path.dirname(os.path.dirname(os.path.realpath(s))) for s in renamed} == {staging_home}
    assert not leftovers(tmp_path)


@pytest.mark.parametrize("command", list(STAGED))
def test_an_earlier_output_that_is_a_link_to_nothing_is_replaced_and_put_back_after_a_failure(request, tmp_path,
                                                                                             monkeypatch, command):
    """Kills an earlier output looked for through its link (a link to nothing taken for no output): it is
    neither moved aside nor put back, and a folder cannot be renamed onto it."""
    staged_run, (outputs, _, _) = request.getfixturevalue(command), STAGED[command]
    out = tmp_path / "out"
    out.mkdir()
    for name in outputs:
        (out / name).symlink_to(tmp_path / "nowhere" / name)
    before = tree(tmp_path)
    with monkeypatch.context() as patch, pytest.raises(OSError):
        patch.setattr(os, "replace", renaming_fails_onto(outputs[-1], DISK_FULL))
        staged_run(out, "--force")
    assert tree(tmp_path) == before
    assert staged_run(out, "--force")[0] == 0
    assert not [name for name in outputs if (out / name).is_symlink() or not (out / name).exists()]
    assert not leftovers(tmp_path)


@pytest.mark.parametrize("folder, path, held", [
    ("/a", "/a", True), ("/a", "/a/b", True), ("/", "/a", True), ("/", "/", True),
    ("/a", "/ab", False), ("/a/b", "/a", False), ("/a/", "/a/b", True)])
def test_a_folder_holds_itself_and_what_lies_below_it_the_root_everything(folder, path, held):
    assert holds(folder, path) is held
