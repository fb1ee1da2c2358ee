"""
The hand-in zip (src/stages/collect_submission.py): the 18 deliverables
under their bare names, params not of the graded configuration (and the
predictions made from them) refused, and a failure midway (a mode refused,
Ctrl-C, a rename refused) leaving the earlier zip as it was. Each test's
docstring says what it kills.
"""

import collections
import datetime
import errno
import itertools
import os
import re
import zipfile

import pytest
import torch

from assignment.facts import DELIVERABLES
from runtime import params
from stages import collect_submission

from runtime_helpers import raising, tiny_model, tree


# ---- collect_submission: the hand-in zip---------------------------------------------------------------

def graded_params(path):
    """A params file stamped as the graded configuration."""
    state = collections.OrderedDict({'tok_emb.weight': torch.zeros(2, 2)})
    state._metadata = {'': {'configuration': '', 'vocabulary': 'ab'}}
    torch.save(state, path)


@pytest.fixture
def submission(tmp_path):
    """A folder with every deliverable, params stamped graded."""
    folder = tmp_path / "submission"
    folder.mkdir()
    for name in DELIVERABLES:
        if name.endswith('.params'):
            graded_params(folder / name)
        else:
            (folder / name).write_text(f"{name}\n")
    return folder


def collected(submission, out, capsys):
    """collect_submission.main's exit status and stderr."""
    status = collect_submission.main(['--submission-dir', str(submission), '--out', str(out)])
    return status, capsys.readouterr().err


def test_collect_zips_every_deliverable_under_its_bare_name(submission, tmp_path, capsys):
    """Kills a deliverable left out, renamed or stored with its folder."""
    out = tmp_path / "hand_in.zip"
    assert collected(submission, out, capsys) == (0, "")
    with zipfile.ZipFile(out) as archive:
        assert archive.namelist() == list(DELIVERABLES)
        assert archive.read('model.py') == b"model.py\n"
    assert sorted(os.listdir(tmp_path)) == ["hand_in.zip", "submission"]


def test_a_deliverable_that_is_a_folder_is_missing(submission, tmp_path, capsys):
    """Kills a folder zipped as if it were the deliverable."""
    (submission / "model.py").unlink()
    (submission / "model.py").mkdir()
    status, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert status == 1 and "1 of 18 deliverables missing" in err and "model.py (your code)" in err
    assert not (tmp_path / "hand_in.zip").exists()


def test_a_missing_deliverable_names_the_stage_that_makes_it(submission, tmp_path, capsys):
    """Kills a wrong maker named, or a zip written all the same."""
    (submission / "vanilla.pretrain.params").unlink()
    status, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert status == 1 and "vanilla.pretrain.params (./run.sh vanilla_pretrain)" in err


def test_smoke_params_and_their_predictions_are_refused(submission, tmp_path, capsys):
    """Kills params of another configuration, and predictions made from them, zipped."""
    params.stamp(model := tiny_model(), 'ab', 'n_layer=1')
    torch.save(model.state_dict(), submission / "vanilla.model.params")
    status, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert status == 1 and "3 files are not for grading" in err
    assert "vanilla.model.params is from a run of another configuration (n_layer=1): rerun ./run.sh " \
           "vanilla_finetune_without_pretrain" in err
    assert "vanilla.nopretrain.test.predictions was made from vanilla.model.params" in err


def test_unstamped_params_are_judged_by_their_size(submission, tmp_path, capsys):
    """Kills the size check of unstamped params."""
    torch.save(tiny_model(perceiver=True, n_layer=3).state_dict(), submission / "perceiver.pretrain.params")
    (submission / "vanilla.pretrain.params").write_text("no params")
    status, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert "perceiver.pretrain.params is from a model of another size (n_layer 3, n_embd 8)" in err
    assert "vanilla.pretrain.params is not a parameters file that can be read (" in err and status == 1


def unstamped(path, blocks, width, perceiver=False):
    """Unstamped params of `blocks` blocks (a perceiver's down and up blocks besides) and width `width`."""
    state = {f'blocks.{i}.ln1.weight': torch.zeros(1) for i in range(blocks)}
    if perceiver:
        state.update({'down_block.ln1.weight': torch.zeros(1), 'up_block.ln1.weight': torch.zeros(1)})
    torch.save(dict(state, **{'tok_emb.weight': torch.zeros(2, width)}), path)


def test_unstamped_params_of_the_graded_size_are_zipped(submission, tmp_path, capsys):
    """Kills refusing unstamped params of the graded size."""
    unstamped(submission / "vanilla.model.params", 4, 256)
    assert collected(submission, tmp_path / "hand_in.zip", capsys) == (0, "")


def test_unstamped_params_of_the_graded_depth_and_another_width_are_refused(submission, tmp_path, capsys):
    """Kills unstamped params judged by their depth alone."""
    unstamped(submission / "vanilla.pretrain.params", 4, 128)
    status, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert status == 1 and "vanilla.pretrain.params is from a model of another size (n_layer 4, n_embd 128)" in err


def test_an_unstamped_perceiver_of_the_graded_size_is_zipped(submission, tmp_path, capsys):
    """Kills a perceiver's down and up blocks counted as one layer, or not at all, in its depth."""
    unstamped(submission / "perceiver.finetune.params", 2, 256, perceiver=True)
    assert collected(submission, tmp_path / "hand_in.zip", capsys) == (0, "")


@pytest.mark.parametrize("where, message", [
    ("none/hand_in.zip", "the folder of --out does not exist"),
    (".", "--out is a directory, not a zip file"),
])
def test_a_zip_that_cannot_be_written_there_is_refused(submission, tmp_path, capsys, where, message):
    """Kills writing into a missing folder or over a folder."""
    status, err = collected(submission, tmp_path / where, capsys)
    assert status == 1 and message in err


def test_a_zip_named_without_a_folder_goes_to_the_current_folder(submission, tmp_path, capsys, monkeypatch):
    """Kills --out hand_in.zip (no folder) refused as in a folder that does not exist."""
    monkeypatch.chdir(tmp_path)
    assert collect_submission.main(['--submission-dir', str(submission), '--out', "hand_in.zip"]) == 0
    assert zipfile.is_zipfile(tmp_path / "hand_in.zip") and capsys.readouterr().err == ""


def test_collect_without_a_submission_folder_fails(tmp_path, capsys):
    """Kills a missing submission folder reported as missing files."""
    status, err = collected(tmp_path / "none", tmp_path / "hand_in.zip", capsys)
    assert status == 1 and "no such directory" in err


def test_collect_by_default_zips_src_submission_to_the_top_of_the_repository(submission, tmp_path, monkeypatch,
                                                                             capsys):
    """Kills other default folders, and a silent success."""
    monkeypatch.setattr(collect_submission, 'SRC_DIR', str(tmp_path))
    monkeypatch.setattr(collect_submission, 'REPO_DIR', str(submission))
    assert collect_submission.main([]) == 0
    assert capsys.readouterr().out == f"wrote {submission / 'submission.zip'} with the 18 deliverables\n"


def test_collects_help_says_what_it_does_and_its_defaults(capsys):
    """Kills a lost or garbled help text."""
    with pytest.raises(SystemExit):
        collect_submission.main(['--help'])
    help_text = ' '.join(capsys.readouterr().out.split())
    for said in ("Zip the 18 deliverables of src/submission for upload.",
                 "where the deliverables are (default: src/submission)",
                 "the zip to write (default: submission.zip at the top of the repository)"):
        assert re.search(rf"(^|\s){re.escape(said)}(\s|$)", help_text), said


def test_every_missing_deliverable_and_refused_file_is_listed(submission, tmp_path, capsys):
    """Kills the lists joined otherwise."""
    (submission / "model.py").unlink()
    (submission / "utils.py").unlink()
    _, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert "missing from " in err and err.endswith(": model.py (your code), utils.py (your code)\n")
    (submission / "model.py").write_text("")
    (submission / "utils.py").write_text("")
    (submission / "vanilla.model.params").write_text("no params")
    _, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert "rerun ./run.sh vanilla_finetune_without_pretrain; vanilla.nopretrain.dev.predictions was made" in err


def test_params_that_hold_objects_are_not_unpickled(submission, tmp_path, capsys):
    """Kills loading params with weights_only=False, and the error's name lost."""
    torch.save({'tok_emb.weight': torch.zeros(1), 'when': datetime.date(2020, 1, 1)},
               submission / "vanilla.model.params")
    _, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert "vanilla.model.params is not a parameters file that can be read (UnpicklingError)" in err


def test_the_zip_is_deflated_written_beside_its_place_and_as_readable_as_the_umask_says(submission, tmp_path,
                                                                                       monkeypatch):
    """Kills a stored zip, a temporary elsewhere (a rename across file systems), and a wrong mode."""
    renamed = []
    replace = os.replace
    monkeypatch.setattr(os, 'replace', lambda source, target: renamed.append(source) or replace(source, target))
    umask = os.umask(0o022)
    try:
        collect_submission.write_zip(str(submission), str(tmp_path / "hand_in.zip"))
    finally:
        os.umask(umask)
    assert [os.path.dirname(path) for path in renamed] == [str(tmp_path)]
    assert os.stat(tmp_path / "hand_in.zip").st_mode & 0o777 == 0o644
    with zipfile.ZipFile(tmp_path / "hand_in.zip") as archive:
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_DEFLATED}


def test_a_zip_that_fails_midway_leaves_the_old_zip_and_no_temporary(submission, tmp_path):
    """Kills a temporary zip left behind, or the old zip replaced by a partial one."""
    (tmp_path / "hand_in.zip").write_text("old zip")
    (submission / "utils.py").unlink()
    with pytest.raises(FileNotFoundError):
        collect_submission.write_zip(str(submission), str(tmp_path / "hand_in.zip"))
    assert sorted(os.listdir(tmp_path)) == ["hand_in.zip", "submission"]
    assert (tmp_path / "hand_in.zip").read_text() == "old zip"


# ---- collect_submission failing midway: the earlier zip kept -------------------------------------

def raising_at(function, call, error):
    """`function`, but its call number `call` (1 for the first) raises `error` instead."""
    calls = itertools.count(1)

    def fail(*args, **kwargs):
        if next(calls) == call:
            raise error
        return function(*args, **kwargs)
    return fail


@pytest.fixture
def collect(tmp_path, monkeypatch, capsys):
    """collect_submission's main from a folder of every deliverable (a line of text each) into
    tmp_path/hand_in/submission.zip, which holds an earlier zip; returns its exit status and stderr.
    Which params are graded is the business of the tests above: all are, here."""
    (tmp_path / "submission").mkdir()
    for name in DELIVERABLES:
        (tmp_path / "submission" / name).write_text(f"{name}\n")
    (tmp_path / "hand_in").mkdir()
    (tmp_path / "hand_in" / "submission.zip").write_bytes(b"the earlier zip")
    monkeypatch.setattr(collect_submission, "refused", lambda folder: [])

    def collected():
        status = collect_submission.main(["--submission-dir", str(tmp_path / "submission"),
                                          "--out", str(tmp_path / "hand_in" / "submission.zip")])
        return status, capsys.readouterr().err
    return collected


# Each failure's patch, made anew for every run (a counted one must count from its first call each time).
COLLECT_FAILURES = {
    "the zip's mode refused": lambda: (os, "chmod", raising(PermissionError(errno.EPERM, "Operation not permitted"))),
    "Ctrl-C at the fifth deliverable": lambda: (zipfile.ZipFile, "write",
                                                raising_at(zipfile.ZipFile.write, 5, KeyboardInterrupt())),
    "the rename refused": lambda: (os, "replace", raising(OSError(errno.EXDEV, "Invalid cross-device link"))),
}


@pytest.mark.parametrize("failure", list(COLLECT_FAILURES))
def test_a_zip_that_fails_midway_leaves_the_earlier_zip_alone_and_the_next_one_works(collect, tmp_path, monkeypatch,
                                                                                   failure):
    """Kills a temporary zip left beside the earlier one (the temporary made before the cleanup that
    removes it was armed), or the earlier zip replaced by a partial one."""
    with monkeypatch.context() as patch, pytest.raises((OSError, KeyboardInterrupt)):
        patch.setattr(*COLLECT_FAILURES[failure]())
        collect()
    assert tree(tmp_path / "hand_in") == {"submission.zip": b"the earlier zip"}
    assert collect() == (0, "")
    with zipfile.ZipFile(tmp_path / "hand_in" / "submission.zip") as archive:
        assert archive.namelist() == list(DELIVERABLES)
    assert os.listdir(tmp_path / "hand_in") == ["submission.zip"]
