"""
What a checkpoint (src/runtime/training/checkpoint.py) promises beyond a resumed run's
parameters, each of which a run on one process without a crash cannot show:
its data reaches the disk before the rename, also for a checkpoint named
without a folder; it holds every process's random generators (its GPUs'
too), gathered from every process and written by the main process alone,
and gives each process its own back; Ctrl-C is the checkpointer's only while
it trains; a save that fails (Ctrl-C, a full disk, a rename refused) leaves
the earlier checkpoint to resume from and no temporary; only a file is a
checkpoint to resume from, through a symbolic link too; and by default a run
saves one every 500 steps.
"""

import os
import random
import signal
import types

import numpy as np
import pytest
import torch

from runtime.command_line import parse_args
from runtime.training import checkpoint

from runtime_helpers import DISK_FULL, leftovers, raising


def test_the_temporary_checkpoint_is_fsynced_before_it_is_renamed(tmp_path, monkeypatch):
    """After a crash a rename can be on disk while the data renamed is not: the file is synced
    first, then renamed, then its folder (which holds the rename) is synced."""
    events = []
    fsync, replace = os.fsync, os.replace

    def spied_fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        fsync(fd)

    def spied_replace(source, target):
        events.append(("replace", os.path.realpath(source)))
        replace(source, target)
    monkeypatch.setattr(os, "fsync", spied_fsync)
    monkeypatch.setattr(os, "replace", spied_replace)
    checkpoint.save_atomically({"step": 1}, str(tmp_path / "checkpoint.pt"))
    assert len(events) == 3
    temporary = events[1][1]
    assert events == [("fsync", temporary), ("replace", temporary), ("fsync", os.path.realpath(tmp_path))]
    assert torch.load(tmp_path / "checkpoint.pt") == {"step": 1}


@pytest.fixture
def generators_kept():
    """The random generators as they were before the test, after it."""
    states = checkpoint.rng_states()
    yield
    checkpoint.set_rng_states(states)


def draws():
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def seeded_states(seed):
    """(the generators' states after seeding them with `seed`, what they draw next)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return checkpoint.rng_states(), draws()


def resumed(rank, state):
    """A two-process run's process `rank` resumed from `state`: a Checkpointer's start on a toy trainer."""
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.AdamW(model.parameters())
    trainer = types.SimpleNamespace(model=model, optimizer=optimizer,
                                    batches=types.SimpleNamespace(start_at=lambda epoch, position: None))
    state = dict(state, model=model.state_dict(), optimizer=optimizer.state_dict())
    processes = types.SimpleNamespace(world=2, rank=rank, main=rank == 0)
    with checkpoint.Checkpointer("unused.pt", {}, 10, processes, state) as saver:
        saver(trainer, 'start')


def test_each_process_gets_its_own_generators_back(generators_kept):
    """Under dropout each process draws its own masks: rank 1 restoring rank 0's generators trains
    other parameters than the uninterrupted run."""
    (rank0, drawn0), (rank1, drawn1) = seeded_states(10), seeded_states(11)
    state = dict(scaler=None, tokens=0, step=3, epoch=0, position=3, rng=[rank0, rank1])
    resumed(1, state)
    assert draws() == drawn1
    resumed(0, state)
    assert draws() == drawn0


def test_a_checkpoint_named_without_a_folder_is_saved_in_the_current_one(tmp_path, monkeypatch):
    """Kills the folder taken from the name as given: '' for a bare name, which no temporary can be made in
    nor synced."""
    monkeypatch.chdir(tmp_path)
    checkpoint.save_atomically({"step": 1}, checkpoint.CHECKPOINT_NAME)
    checkpoint.save_atomically({"step": 2}, checkpoint.CHECKPOINT_NAME)
    assert os.listdir(tmp_path) == [checkpoint.CHECKPOINT_NAME]
    assert checkpoint.read_checkpoint(checkpoint.CHECKPOINT_NAME, {})["step"] == 2


def test_a_checkpoint_holds_each_processs_own_generators(tmp_path, monkeypatch):
    """The main process writes every process's generators, gathered, not its own once a process."""
    monkeypatch.setattr(checkpoint.dist, "all_gather_object", lambda values, value: values.__setitem__(
        slice(None), [value, "rank 1's generators"]))
    model = torch.nn.Linear(1, 1)
    trainer = types.SimpleNamespace(model=model, optimizer=torch.optim.AdamW(model.parameters()), tokens=0, step=1)
    processes = types.SimpleNamespace(world=2, rank=0, main=True)
    ours = checkpoint.rng_states()
    with checkpoint.Checkpointer(str(tmp_path / "checkpoint.pt"), {}, 10, processes) as saver:
        saver.save(trainer, 0, 1)
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=False)["rng"]
    assert saved[1] == "rank 1's generators" and torch.equal(saved[0]["torch"], ours["torch"])


def test_only_the_main_process_writes_and_every_process_joins_the_gather(tmp_path, monkeypatch):
    """Kills a checkpoint written by every process (two processes renaming over one file), and a process
    other than the main one leaving before the gather of the generators, which the main process would
    then wait for forever."""
    gathered = []

    def all_gather_object(values, value):
        gathered.append(value)
        values[:] = [value] * len(values)
    monkeypatch.setattr(checkpoint.dist, "all_gather_object", all_gather_object)
    model = torch.nn.Linear(1, 1)
    trainer = types.SimpleNamespace(model=model, optimizer=torch.optim.AdamW(model.parameters()), tokens=0, step=1)
    for rank in (1, 2):
        processes = types.SimpleNamespace(world=3, rank=rank, main=False)
        with checkpoint.Checkpointer(str(tmp_path / "checkpoint.pt"), {}, 10, processes) as saver:
            saver.save(trainer, 0, 1)
    assert len(gathered) == 2 and os.listdir(tmp_path) == []
    with checkpoint.Checkpointer(str(tmp_path / "checkpoint.pt"), {}, 10,
                                 types.SimpleNamespace(world=3, rank=0, main=True)) as saver:
        saver.save(trainer, 0, 1)
    assert len(gathered) == 3 and len(torch.load(tmp_path / "checkpoint.pt", weights_only=False)["rng"]) == 3


def test_the_gpus_generators_are_saved_and_given_back_where_there_are_gpus(monkeypatch, generators_kept):
    """Kills the CUDA generators left out of a checkpoint or of a resume (dropout on a GPU draws from
    them), which a machine without a GPU never shows: its GPUs are stand-ins here."""
    given_back = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: ["GPU 0's state", "GPU 1's state"])
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", given_back.append)
    states = checkpoint.rng_states()
    assert states["cuda"] == ["GPU 0's state", "GPU 1's state"]
    checkpoint.set_rng_states(states)
    assert given_back == [["GPU 0's state", "GPU 1's state"]]


@pytest.fixture
def former_sigint():
    """SIGINT handled, for the test, by a handler that lists the signals it gets; the real one after."""
    received = []
    before = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    yield received
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_is_the_checkpointers_only_while_it_trains(tmp_path, former_sigint):
    """After training, well or not, a Ctrl-C reaches the handler from before it (not swallowed)."""
    path = str(tmp_path / "checkpoint.pt")
    one = types.SimpleNamespace(world=1, rank=0, main=True)
    with checkpoint.Checkpointer(path, {}, 10, one) as saver:
        assert signal.getsignal(signal.SIGINT) == saver.interrupt
    with pytest.raises(RuntimeError, match="training failed"):
        with checkpoint.Checkpointer(path, {}, 10, one):
            raise RuntimeError("training failed")
    os.kill(os.getpid(), signal.SIGINT)
    assert former_sigint == [signal.SIGINT]


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


def test_only_a_file_is_a_checkpoint_to_resume_from_through_a_link_too(tmp_path):
    """Kills a folder, or a link to nothing, at the checkpoint's path taken for a checkpoint (then refused
    as unreadable, which sends the student looking for a broken file rather than a run to start), and a
    link to a checkpoint refused."""
    identity = {"run": "vanilla_pretrain"}
    missing = "^no checkpoint to resume from at .*: start the stage without --resume$"
    (tmp_path / "folder.pt").mkdir()
    (tmp_path / "dangling.pt").symlink_to(tmp_path / "nowhere.pt")
    for name in ("folder.pt", "dangling.pt"):
        with pytest.raises(checkpoint.InputError, match=missing):
            checkpoint.read_checkpoint(str(tmp_path / name), identity)
    checkpoint.save_atomically({"identity": identity, "step": 7}, str(tmp_path / "saved.pt"))
    (tmp_path / "linked.pt").symlink_to(tmp_path / "saved.pt")
    assert checkpoint.read_checkpoint(str(tmp_path / "linked.pt"), identity)["step"] == 7


def test_a_checkpoint_without_a_scaler_leaves_the_runs_scaler_as_it_is(generators_kept):
    """Kills a run's grad scaler given the None of a checkpoint saved without one (an fp16 scaler refuses
    it)."""
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0)
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.AdamW(model.parameters())
    trainer = types.SimpleNamespace(model=model, optimizer=optimizer,
                                    batches=types.SimpleNamespace(start_at=lambda epoch, position: None))
    state = dict(model=model.state_dict(), optimizer=optimizer.state_dict(), scaler=None, tokens=0, step=3,
                 epoch=0, position=3, rng=[checkpoint.rng_states()])
    one = types.SimpleNamespace(world=1, rank=0, main=True)
    with checkpoint.Checkpointer("unused.pt", {}, 10, one, state, scaler) as saver:
        saver(trainer, 'start')
    assert scaler.get_scale() == 4.0


def test_by_default_a_checkpoint_is_saved_every_500_steps():
    """Kills another default than the one the guide states (a graded pretraining saves a checkpoint in
    well under a second, and a kill loses at most 500 steps)."""
    args = parse_args(["--function", "pretrain", "--variant", "vanilla"])
    assert args.checkpoint_every == checkpoint.CHECKPOINT_EVERY == 500
