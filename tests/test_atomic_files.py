"""
Whole-or-nothing writes (src/runtime/atomic_files.py), and the files run.py
writes through them: a file is written to a hidden temporary beside it and
renamed into place only once whole, so that a write that fails midway (an
exception, Ctrl-C while run.py writes parameters or predictions, a rename
refused) leaves the earlier file and no temporary, and the next run writes
it. Everything runs in-process on tiny inputs and tiny models; failures are
injected with monkeypatch.
"""

import os
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import run
from assignment.facts import BLOCK_SIZE
from runtime import atomic_files
from runtime.inputs import pretraining_dataset
from submission import GPT, GPTConfig, helper

from runtime_helpers import DISK_FULL, leftovers, raising, tree, write_data

TINY = ["--small", "--n_layer=2", "--n_head=2", "--n_embd=32", "--max_epochs=1", "--device=cpu", "--seed=0"]


# ---- files: whole or nothing ------------------------------------------------------------------

def failing_predictions(count):
    """Predictions that raise after `count` of them have been written."""
    for i in range(count):
        yield f"place {i}"
    raise RuntimeError("failed mid-write")


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path):
    """Kills writing in place (a partial file) and a temporary left behind."""
    path = tmp_path / "dev.predictions"
    path.write_text("old\n")
    with pytest.raises(RuntimeError, match="mid-write"):
        atomic_files.write_predictions(str(path), failing_predictions(3))
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["dev.predictions"]


def test_predictions_are_utf8_one_a_line_with_line_breaks_made_spaces(tmp_path, ascii_locale):
    """Kills another encoding (the locale's), a changed separator or a line break kept inside a prediction."""
    path = tmp_path / "dev.predictions"
    path.write_text("older and longer\n" * 5)
    atomic_files.write_predictions(str(path), ["Zürich", "New\nYork", "Ca\rir\r\no"])
    assert path.read_bytes() == "Zürich\nNew York\nCa ir  o\n".encode('utf-8')
    assert os.listdir(tmp_path) == ["dev.predictions"]


def lines_as_graded(path):
    """The lines of a predictions file as the grader reads them: each ends at \\n, \\r\\n or a lone \\r."""
    lines = path.read_bytes().decode('utf-8').replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


@settings(max_examples=60, deadline=None, derandomize=True)
@given(predictions=st.lists(st.text(" a\u00e9\r\n\t\x85\u2028", max_size=5), max_size=6))
def test_every_prediction_is_one_line_as_it_was_whatever_it_holds(tmp_path_factory, predictions):
    """Kills an empty prediction written as no line (the answers after it move up a question), a
    prediction stripped or otherwise changed beyond its line breaks, and a file of no predictions
    that is not empty."""
    path = tmp_path_factory.mktemp("predictions") / "dev.predictions"
    atomic_files.write_predictions(str(path), predictions)
    assert lines_as_graded(path) == [p.replace("\r", " ").replace("\n", " ") for p in predictions]
    assert path.read_bytes().endswith(b"\n") or not predictions


def test_the_temporary_file_is_hidden_beside_the_output_and_named_by_process(tmp_path):
    """Kills a temporary in another folder, or one another process could share."""
    temporary = atomic_files.temporary_path_beside(str(tmp_path / "a.params"))
    assert temporary == str(tmp_path / f".a.params.{os.getpid()}.tmp")


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


# ---- what run.py writes: parameters and predictions --------------------------------------------

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
