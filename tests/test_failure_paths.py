"""
Failure leaves nothing behind. Every command that stages files is made to
fail midway (an exception at a stage of its staging, Ctrl-C, a full disk, a
rename refused) and then checked: no staging folder or temporary file
remains, an out folder it made itself is gone again, what was there before
is as it was, and the next run works. The commands: the release
(instructors/release), the copy report (instructors/copies),
collect_submission, training's checkpoints and records, the parameters,
predictions and seed that run.py writes (runtime/atomic_files.py), and the
grader's results.json. Then the edges of an out folder: empty, holding
files, a file, a symbolic link. Everything runs in-process on tiny inputs;
failures are injected with monkeypatch.
"""

import errno
import itertools
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import run
from assignment.facts import BLOCK_SIZE, DELIVERABLES
from instructors.copies import __main__ as copies_main
from instructors.copies import report as copies_report
from instructors.release import __main__ as release_main
from instructors.release import autograder, checks, student
from runtime import atomic_files, seeds
from runtime.inputs import InputError, pretraining_dataset
from runtime.training import checkpoint, records
from stages import collect_submission
from submission import GPT, GPTConfig, helper

from test_grading_cli import RecordingSuite, command_line  # noqa: F401 (command_line is a fixture)
from test_records import record
from test_release import write_data

DISK_FULL = OSError(errno.ENOSPC, "No space left on device")
RELEASED = ("student", "autograder", "autograder.zip")
REPORTED = ("report.md", "pairs.csv", "agreement.png")
TINY = ["--small", "--n_layer=2", "--n_head=2", "--n_embd=32", "--max_epochs=1", "--device=cpu", "--seed=0"]


def tree(folder):
    """Everything under `folder`, hidden names too: {relative path: its bytes, '/' for a folder,
    '-> target' for a symbolic link}."""
    found = {}
    for parent, folders, files in os.walk(folder):
        for name in folders + files:
            path = os.path.join(parent, name)
            found[os.path.relpath(path, folder)] = ("-> " + os.readlink(path) if os.path.islink(path) else
                                                    "/" if os.path.isdir(path) else Path(path).read_bytes())
    return found


def leftovers(folder):
    """The hidden or temporary files and folders under `folder`: staging folders, temporaries."""
    return [str(p) for p in Path(folder).rglob("*") if p.name.startswith(".") or p.suffix in (".tmp", ".partial")]


def raising(error):
    """A stand-in that raises `error` whatever it is called with."""
    def fail(*args, **kwargs):
        raise error
    return fail


def then_raising(function, error):
    """`function`, which does its work (half a file, say), then raises `error`."""
    def fail(*args, **kwargs):
        function(*args, **kwargs)
        raise error
    return fail


def raising_at(function, call, error):
    """`function`, but its call number `call` (1 for the first) raises `error` instead."""
    calls = itertools.count(1)

    def fail(*args, **kwargs):
        if next(calls) == call:
            raise error
        return function(*args, **kwargs)
    return fail


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
    status and stderr. The checks that start processes pass (tests/test_release.py runs them); the path
    that reading grader.py's thresholds puts src/ on is put back afterwards."""
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


# ---- collect_submission -----------------------------------------------------------------------

@pytest.fixture
def collect(tmp_path, monkeypatch, capsys):
    """collect_submission's main from a folder of every deliverable (a line of text each) into
    tmp_path/hand_in/submission.zip, which holds an earlier zip; returns its exit status and stderr.
    Which params are graded is tests/test_stages.py's business: all are, here."""
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


COLLECT_FAILURES = {
    "the zip's mode refused": (os, "chmod", raising(PermissionError(errno.EPERM, "Operation not permitted"))),
    "Ctrl-C at the fifth deliverable": (zipfile.ZipFile, "write",
                                        raising_at(zipfile.ZipFile.write, 5, KeyboardInterrupt())),
    "the rename refused": (os, "replace", raising(OSError(errno.EXDEV, "Invalid cross-device link"))),
}


@pytest.mark.parametrize("failure", list(COLLECT_FAILURES))
def test_a_zip_that_fails_midway_leaves_the_earlier_zip_alone_and_the_next_one_works(collect, tmp_path, monkeypatch,
                                                                                   failure):
    """Kills a temporary zip left beside the earlier one (the temporary made before the cleanup that
    removes it was armed), or the earlier zip replaced by a partial one."""
    with monkeypatch.context() as patch, pytest.raises((OSError, KeyboardInterrupt)):
        patch.setattr(*COLLECT_FAILURES[failure])
        collect()
    assert tree(tmp_path / "hand_in") == {"submission.zip": b"the earlier zip"}
    assert collect() == (0, "")
    with zipfile.ZipFile(tmp_path / "hand_in" / "submission.zip") as archive:
        assert archive.namelist() == list(DELIVERABLES)
    assert os.listdir(tmp_path / "hand_in") == ["submission.zip"]


# ---- training: checkpoints and records ----------------------------------------------------------

def half_saved(state, f, *args, **kwargs):
    """torch.save that writes part of a file, then is stopped by Ctrl-C."""
    f.write(b"PK\x03\x04 half a checkpoint")
    raise KeyboardInterrupt


CHECKPOINT_FAILURES = {
    "Ctrl-C while saving": (torch, "save", half_saved),
    "disk full at the sync": (os, "fsync", raising(DISK_FULL)),
    "the rename refused": (os, "replace", raising(DISK_FULL)),
}


@pytest.mark.parametrize("failure", list(CHECKPOINT_FAILURES))
def test_a_checkpoint_save_that_fails_leaves_the_earlier_one_to_resume_from(tmp_path, monkeypatch, failure):
    """Kills a checkpoint written in place (a resume then reads half a file, or none), and a temporary
    left beside it at any exit of the save, Ctrl-C included."""
    path, identity = str(tmp_path / checkpoint.CHECKPOINT_NAME), {"run": "vanilla_pretrain"}
    checkpoint.save_atomically({"identity": identity, "step": 500}, path)
    with monkeypatch.context() as patch, pytest.raises((OSError, KeyboardInterrupt)):
        patch.setattr(*CHECKPOINT_FAILURES[failure])
        checkpoint.save_atomically({"identity": identity, "step": 1000}, path)
    assert os.listdir(tmp_path) == [checkpoint.CHECKPOINT_NAME]
    assert checkpoint.read_checkpoint(path, identity)["step"] == 500
    checkpoint.save_atomically({"identity": identity, "step": 1000}, path)
    assert checkpoint.read_checkpoint(path, identity)["step"] == 1000 and not leftovers(tmp_path)


class HalfWriter:
    """A csv writer whose writerows writes the first row, then finds the disk full."""

    def __init__(self, f, *args, **kwargs):
        self.f = f

    def writerows(self, rows):
        self.f.write(",".join(map(str, rows[0])) + "\r\n")
        raise DISK_FULL


def test_a_resumed_run_whose_records_cannot_be_rewritten_keeps_their_earlier_rows(tmp_path, monkeypatch):
    """Kills metrics.csv truncated in place when a resumed run starts it afresh: a disk that is full at
    that moment loses the rows up to the checkpoint, which no later run can write again."""
    with records.RunRecorder(str(tmp_path), use_tensorboard=False) as interrupted:
        for step in (10, 20, 30):
            record(interrupted, step, loss=1.0)
    before = tree(tmp_path)
    resumed = records.RunRecorder(str(tmp_path), use_tensorboard=False)
    resumed.resume_from(20)
    with monkeypatch.context() as patch, pytest.raises(OSError):
        patch.setattr(records.csv, "writer", HalfWriter)
        record(resumed, 30, loss=0.5)
    assert tree(tmp_path) == before
    with records.RunRecorder(str(tmp_path), use_tensorboard=False) as again:
        again.resume_from(20)
        record(again, 30, loss=0.5)
    rows = records.read_metrics(tmp_path / records.CSV_NAME)
    assert [(row["step"], row["loss"]) for row in rows] == [(10, 1.0), (20, 1.0), (30, 0.5)]


# ---- what run.py writes: parameters, predictions, the seed ---------------------------------------

@pytest.fixture
def stage(tmp_path, make_corpus, capsys, single_thread):
    """run.py's main on a tiny course's data (tmp_path/course), a tiny model (its untrained parameters in
    tmp_path/model.params) and one epoch: stage(function) gives its exit status. Its outputs go to
    tmp_path/out, which holds those of an earlier run."""
    write_data(tmp_path / "course", make_corpus(seed=3, count=12), train=4, dev=4)
    vocabulary = pretraining_dataset(str(tmp_path / "course" / "wiki.txt")).vocab_size
    torch.save(GPT(GPTConfig(vocabulary, BLOCK_SIZE, n_layer=2, n_head=2, n_embd=32)).state_dict(),
               tmp_path / "model.params")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "vanilla.params").write_bytes(b"earlier parameters")
    (tmp_path / "out" / "dev.predictions").write_text("earlier predictions\n")
    options = {"finetune": [f"--finetune_corpus_path={tmp_path}/course/birth_places_train.tsv",
                            f"--writing_params_path={tmp_path}/out/vanilla.params"],
               "evaluate": [f"--reading_params_path={tmp_path}/model.params",
                            f"--eval_corpus_path={tmp_path}/course/birth_dev.tsv",
                            f"--outputs_path={tmp_path}/out/dev.predictions"]}

    def staged(function):
        status = run.main([f"--function={function}", "--variant=vanilla", *options[function], *TINY,
                           f"--pretrain_corpus_path={tmp_path}/course/wiki.txt",
                           f"--experiments_dir={tmp_path}/experiments"])
        capsys.readouterr()
        return status
    return staged


def half_saved_params(model, path, trainer):
    """The student's train(), stopped by Ctrl-C as it saves: half a parameters file."""
    Path(path).write_bytes(b"PK\x03\x04 half the parameters")
    raise KeyboardInterrupt


def answers_then_ctrl_c(*args, **kwargs):
    """predict_places stopped by Ctrl-C after two answers have been written."""
    yield from ("Lisbon", "Osaka")
    raise KeyboardInterrupt


# {output: (the function that writes it, its file in OUT, the Ctrl-C injected, whether the next one is whole)}
RUN_OUTPUTS = {
    "parameters": ("finetune", "vanilla.params", (helper, "train", half_saved_params),
                   lambda path: "tok_emb.weight" in torch.load(path, weights_only=True)),
    "predictions": ("evaluate", "dev.predictions", (run, "predict_places", answers_then_ctrl_c),
                    lambda path: len(path.read_text().splitlines()) == 4),
}


@pytest.mark.parametrize("output", list(RUN_OUTPUTS))
def test_ctrl_c_while_run_py_writes_leaves_the_earlier_output_and_the_next_run_writes_it(stage, tmp_path,
                                                                                        monkeypatch, output):
    """Kills parameters or predictions written in place (half a file, or the first answers, where the
    earlier file was: a file that looks finished), or their temporary left in the outputs' folder."""
    function, name, failure, whole = RUN_OUTPUTS[output]
    before = tree(tmp_path / "out")
    with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
        patch.setattr(*failure)
        stage(function)
    assert tree(tmp_path / "out") == before
    assert stage(function) == 0 and whole(tmp_path / "out" / name)
    assert not leftovers(tmp_path)


def test_a_seed_that_cannot_be_written_whole_is_not_recorded_at_all(tmp_path, monkeypatch):
    """Kills seed.txt written in place: the first digits of a seed are a seed too, which a resumed run
    would take without a word."""
    def disk_fills(path, mode="r", **kwargs):
        with open(path, mode, **kwargs) as f:
            f.write("123")
        raise DISK_FULL
    with monkeypatch.context() as patch, pytest.raises(OSError):
        patch.setattr(seeds, "open", disk_fills, raising=False)
        seeds.record_seed(str(tmp_path), 1234567)
    assert os.listdir(tmp_path) == []
    with pytest.raises(InputError, match="no seed is recorded"):
        seeds.recorded_seed(str(tmp_path))
    seeds.record_seed(str(tmp_path), 1234567)
    assert seeds.recorded_seed(str(tmp_path)) == 1234567 and os.listdir(tmp_path) == [seeds.SEED_FILE]


def test_a_rename_that_fails_leaves_the_earlier_file_and_no_temporary(tmp_path, monkeypatch):
    """Kills a temporary left when the write succeeded but the rename into place did not (another
    process's file there, a full disk on some file systems)."""
    path = tmp_path / "test.predictions"
    path.write_text("earlier\n")
    with monkeypatch.context() as patch, pytest.raises(OSError):
        patch.setattr(os, "replace", raising(DISK_FULL))
        atomic_files.write_predictions(str(path), ["Lisbon", "Osaka"])
    assert tree(tmp_path) == {"test.predictions": b"earlier\n"}
    atomic_files.write_predictions(str(path), ["Lisbon", "Osaka"])
    assert tree(tmp_path) == {"test.predictions": b"Lisbon\nOsaka\n"}


# ---- the grader's results.json -----------------------------------------------------------------

def test_an_interrupted_grading_leaves_the_earlier_results_and_the_next_one_writes_them(command_line, tmp_path,
                                                                                       monkeypatch):
    """Kills results.json written (or emptied) before the tests end: Ctrl-C or SIGTERM must leave the
    earlier file, which run_autograder replaces by a score of 0 only when there is none."""
    results = tmp_path / "results" / "results.json"
    results.parent.mkdir()
    results.write_text('{"score": 1.0}')
    with monkeypatch.context() as patch:
        patch.setattr(RecordingSuite, "run", raising(KeyboardInterrupt()))
        assert command_line("--json", str(results)) == 130
    assert tree(results.parent) == {"results.json": b'{"score": 1.0}'}
    assert command_line("--json", str(results)) == 0
    assert json.loads(results.read_text())["score"] == 7.0 and os.listdir(results.parent) == ["results.json"]


@pytest.mark.parametrize("kind", ["earlier results", "folders made"])
def test_results_that_cannot_be_written_leave_what_was_there_and_the_next_run_writes_them(command_line, tmp_path,
                                                                                         monkeypatch, kind):
    """Kills results.json written in place (half a document where the earlier one was), its
    .partial file left, or the folders made for it left behind empty."""
    results = tmp_path / ("made/results" if kind == "folders made" else "results") / "results.json"
    if kind == "earlier results":
        results.parent.mkdir()
        results.write_text('{"score": 1.0}')
    before = tree(tmp_path)
    with monkeypatch.context() as patch, pytest.raises(OSError):
        patch.setattr(json, "dump", then_raising(json.dump, DISK_FULL))
        command_line("--json", str(results))
    assert tree(tmp_path) == before
    assert command_line("--json", str(results)) == 0
    assert json.loads(results.read_text())["score"] == 7.0 and not leftovers(tmp_path)


@pytest.mark.parametrize("where", ["a folder", "under a file"])
def test_a_results_path_that_cannot_be_written_is_refused_before_the_tests_run(command_line, tmp_path, capsys,
                                                                               where):
    """Kills a --json path found unwritable only once every test has run (a traceback, and the whole
    grading lost), or a folder there replaced by the results."""
    (tmp_path / "taken").mkdir() if where == "a folder" else (tmp_path / "taken").write_text("a file")
    results = tmp_path / "taken" / ("" if where == "a folder" else "results.json")
    before = tree(tmp_path)
    assert command_line("--json", str(results)) == 2
    assert RecordingSuite.made == [] and tree(tmp_path) == before
    err = capsys.readouterr().err
    assert err.startswith(f"grader: --json {results}: ") and err.count("\n") == 1, err
