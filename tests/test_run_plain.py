"""
`./run.sh <stage> --plain` (run.py --plain), in-process on a small
finetuning run: the student's Trainer trains exactly as written (its
DataLoader, its AdamW, its train_step), where the stages' path replaces all
three. That the two train the same numbers is tests/test_fast.py's
test_the_stages_training_trains_as_the_plain_loop.
"""

import pytest
import torch
from torch.utils.data import DataLoader

import run
from submission.trainer import Trainer

from run_helpers import finetune_args, inputs, run_argv
from runtime_helpers import raising

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture
def steps(monkeypatch):
    """What each call of the student's Trainer.train_step saw: (its optimizer, its batches)."""
    seen = []
    written = Trainer.train_step

    def watched(self, batch):
        seen.append((self.optimizer, self.batches))
        return written(self, batch)
    monkeypatch.setattr(Trainer, "train_step", watched)
    return seen


def small_run(inputs, tmp_path, *options):
    """A finetuning run of 4 steps (60 questions, batches of 16) into tmp_path/out/kept.params."""
    out = tmp_path / "out"
    out.mkdir()
    return run_argv(finetune_args(inputs, out, batch_size=16)) + ["--small", *options], out / "kept.params"


def test_plain_trains_with_the_students_own_step_optimizer_and_loader(inputs, tmp_path, monkeypatch, steps, capsys):
    """Kills --plain that still plugs in the stages' training, or trains another step, optimizer or loader
    than trainer.py's."""
    monkeypatch.setattr(run, "plug_into", raising(AssertionError("the stages' training plugged in")))
    argv, params = small_run(inputs, tmp_path, "--plain")
    assert run.main(argv) == 0, capsys.readouterr().err
    assert len(steps) == 4 and params.is_file()
    for optimizer, batches in steps:
        assert type(optimizer) is torch.optim.AdamW and not optimizer.defaults["fused"]
        assert type(batches) is DataLoader and batches.batch_size == 16
    assert "trained 4 steps" in capsys.readouterr().out


def test_without_plain_the_stages_take_each_step(inputs, tmp_path, steps, capsys):
    """What --plain is for: an edit to trainer.py's train_step changes nothing in the stages' run."""
    argv, params = small_run(inputs, tmp_path)
    assert run.main(argv) == 0, capsys.readouterr().err
    assert steps == [] and params.is_file()


@pytest.mark.parametrize("option, line", [
    ("--resume", "error: --plain takes no checkpoints, so there is none to --resume"),
    ("--nproc", "error: --plain trains in one process: run it without NPROC")])
def test_plain_refuses_a_resume_and_several_processes(inputs, tmp_path, monkeypatch, capsys, option, line):
    argv, params = small_run(inputs, tmp_path, "--plain")
    if option == "--resume":
        with pytest.raises(SystemExit) as exit:
            run.main(argv + [option])
        assert exit.value.code == 2
    else:
        monkeypatch.setattr(run.distributed, "start", lambda device: (run.distributed.Processes(0, 2), "cpu"))
        assert run.main(argv) == 1
    assert capsys.readouterr().err.splitlines()[-1].endswith(": " + line)  # argparse names the program as run
    assert not params.exists()
