"""
src/run.py on the student's path: a smoke run in another configuration
writes to its own folder, stamped with what differs; unwritten student code
(a function that returns None or raises NotImplementedError, in this process
or in a loader worker) is named with its part in one line; Ctrl-C's handler
is given back after training; and score_dev grades the dev files with the
hidden tests.

Outputs go to temporary folders, never to src/submission/.
"""

import os
import signal
import subprocess
from pathlib import Path

import pytest
import torch

import run
from grader_fixtures import report
from runtime import command_line
from submission import GPT, helper
from submission.dataset import CharCorruptionDataset

from run_helpers import REPO, finetune_args, inputs, nonblank_lines, run_argv, write_corpus


def test_a_smoke_stage_writes_to_its_own_folder(inputs, tmp_path, monkeypatch, capsys):
    """A graded stage in another configuration, with no --out_dir, writes to smoke/, never where
    the hand-in is collected from; its params are stamped with what differs."""
    monkeypatch.setattr(command_line, "GRADED_OUT", str(tmp_path / "submission"))
    monkeypatch.setattr(command_line, "SMOKE_OUT", str(tmp_path / "smoke"))
    (tmp_path / "submission").mkdir()
    (tmp_path / "smoke").mkdir()
    argv = ["--stage", "vanilla_finetune_without_pretrain", "--data_dir", str(inputs), "--device", "cpu",
            "--experiments_dir", str(tmp_path / "experiments"), *run_argv({})]
    assert run.main(argv) == 0
    assert list((tmp_path / "submission").iterdir()) == []
    state = torch.load(tmp_path / "smoke" / "vanilla.model.params", weights_only=True)
    assert state._metadata[""]["configuration"] == "n_layer=2 n_head=2 n_embd=32 max_epochs=1"
    assert "not the graded configuration (n_layer=2 n_head=2 n_embd=32 max_epochs=1)" in capsys.readouterr().err


def test_the_graded_configuration_is_stamped_empty_and_goes_to_the_submission():
    args = command_line.parse_args(["--stage", "vanilla_pretrain"])
    assert args.configuration == "" and args.writing_params_path == str(Path(command_line.GRADED_OUT) / "vanilla.pretrain.params")
    small = command_line.parse_args(["--stage", "vanilla_pretrain", "--small"])
    assert small.writing_params_path == str(Path(command_line.SMOKE_OUT) / "vanilla.pretrain.params")
    assert command_line.parse_args(["--stage", "vanilla_pretrain", "--pretrain_lr", "1e-3"]).configuration == "pretrain_lr=0.001"


def unwritten_run(inputs, tmp_path, capsys, function="finetune", variant="vanilla"):
    """run.main on a tiny finetuning (or pretraining) run; returns (exit status, stderr lines)."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    args = finetune_args(inputs, out, variant=variant, function=function,
                         finetune_corpus_path=None if function == "pretrain" else inputs / "birth_places_train.tsv")
    status = run.main(run_argv(args))
    return status, [line for line in capsys.readouterr().err.splitlines() if line.startswith("run.py: error")]


def written_nothing(*args, **kwargs):
    return None


UNWRITTEN = {
    "initialize_vanilla_model returns None": (
        "initialize_vanilla_model", written_nothing, "finetune", "vanilla",
        "run.py: error: part (c): initialize_vanilla_model returned None: it is not written yet"),
    "initialize_perceiver_model returns None": (
        "initialize_perceiver_model", written_nothing, "pretrain", "perceiver",
        "run.py: error: part (g): initialize_perceiver_model returned None: it is not written yet"),
    "the perceiver flag forgotten": (
        "initialize_perceiver_model", lambda mconf, bottleneck_dim=32: GPT(mconf), "pretrain", "perceiver",
        "run.py: error: part (g): initialize_perceiver_model builds a GPT without down and up blocks: "
        "set mconf.perceiver = True"),
    "pretrain returns nothing": (
        "pretrain", lambda *args, **kwargs: (None, None), "pretrain", "vanilla",
        "run.py: error: part (f): pretrain returned no TrainerConfig: it is not written yet"),
    "train still pass": (
        "train", written_nothing, "finetune", "vanilla",
        "run.py: error: part (c): train saved no parameters (it should save the model's state_dict to "
        "writing_params_path): it is not written yet"),
}


@pytest.mark.parametrize("case", list(UNWRITTEN))
def test_unwritten_student_code_is_named_in_one_line(case, inputs, tmp_path, capsys, monkeypatch):
    name, replacement, function, variant, expected = UNWRITTEN[case]
    monkeypatch.setattr(helper, name, replacement)
    status, errors = unwritten_run(inputs, tmp_path, capsys, function, variant)
    assert status == 1 and errors == [expected]
    assert list((tmp_path / "out").iterdir()) == []


def test_training_gives_ctrl_c_back_its_former_handler(inputs, tmp_path, capsys, monkeypatch):
    """Ctrl-C checkpoints while run.py trains; after training, well or not, it is what it was
    before, so a later Ctrl-C in the same process is not swallowed."""
    received = []
    before = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        assert unwritten_run(inputs, tmp_path, capsys)[0] == 0
        os.kill(os.getpid(), signal.SIGINT)
        monkeypatch.setattr(helper, "train", written_nothing)
        assert unwritten_run(inputs, tmp_path, capsys)[0] == 1
        os.kill(os.getpid(), signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
    assert received == [signal.SIGINT] * 2


def test_an_unwritten_span_corruption_is_named_before_its_traceback(inputs, tmp_path, capsys, monkeypatch):
    def __getitem__(self, idx):  # the starter's placeholder, raised in the loader's workers
        raise NotImplementedError
    monkeypatch.setattr(CharCorruptionDataset, "__getitem__", __getitem__)
    status, errors = unwritten_run(inputs, tmp_path, capsys, "pretrain")
    assert status == 1
    assert errors == ["run.py: error: part (e): CharCorruptionDataset.__getitem__ raises NotImplementedError: "
                      "it is not written yet"]


def test_score_dev_grades_the_dev_files_with_the_hidden_tests_and_their_thresholds(tmp_path):
    """score_dev is grader.py's hidden tests on the dev files, against the dev labels of DATA_DIR."""
    data = write_corpus(tmp_path / "data")
    places = [line.split("\t")[1] for line in nonblank_lines(data / "birth_dev.tsv")]
    out = tmp_path / "out"
    out.mkdir()
    (out / "vanilla.pretrain.dev.predictions").write_text("".join(p + "\n" for p in places))
    (out / "perceiver.pretrain.dev.predictions").write_text("Nowhere\n" * len(places))
    done = subprocess.run(["bash", str(REPO / "run.sh"), "score_dev"], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, DATA_DIR=str(data), OUT_DIR=str(out)))
    assert done.returncode == 0, done.stderr
    not_here = ("hidden", None)
    assert report(done.stdout) == {"1c-0-hidden": not_here, "1d-0-hidden": not_here, "1d-1-hidden": not_here,
                                   "1f-1-hidden": ("pass", 5.0), "1f-2-hidden": not_here,
                                   "1g-1-hidden": ("fail", 0.0), "1g-2-hidden": not_here}
    assert f"local check: labels {data / 'birth_dev.tsv'}" in done.stdout
    assert "perceiver.pretrain.dev.predictions: 0 of 20 correct (0.0%); needed at least 2.4%" in done.stdout
    assert f"{out / 'vanilla.nopretrain.dev.predictions'} is missing: make it with " \
           "./run.sh vanilla_eval_dev_without_pretrain" in done.stdout
