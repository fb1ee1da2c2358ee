"""
The training runtime (src/runtime/training/): seeded examples and their
order (batches.py), and whole-or-nothing checkpoints, runs refused and
resumes (checkpoint.py). Each test's docstring says what it kills.
"""

import os
import random
import signal
import types

import numpy as np
import pytest
import torch
import torch.distributed as dist

from runtime.inputs import InputError
from runtime.training import checkpoint
from runtime.training.batches import EpochBatches, SeededExamples, ShardOrder, example_seed


# ---- batches: seeded examples and their order ---------------------------------------------------

class Draws:
    """A dataset whose item is what python's, numpy's and torch's generators draw for it."""

    def __len__(self):
        return 10

    def __getitem__(self, index):
        return index, random.random(), float(np.random.rand()), float(torch.rand(1))


def test_example_seeds_are_63_bit_and_pinned():
    """Kills another seed formula (a resumed run would see other span corruptions)."""
    assert example_seed(0, 0, 0) == 0 and example_seed(0, 0, 1) == 1
    assert example_seed(1, 2, 3) == ((1 * 1_000_003 + 2) * 1_000_000_007 + 3) % 2 ** 63
    assert example_seed(10 ** 12, 1, 1) == ((10 ** 12 * 1_000_003 + 1) * 1_000_000_007 + 1) % 2 ** 63


def test_a_seeded_example_is_the_same_whenever_it_is_made_and_leaves_the_generators_alone():
    """Kills an example that depends on what was drawn before it, or that moves the global generators."""
    examples = SeededExamples(Draws(), seed=5)
    assert len(examples) == 10
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    first = examples[(2, 7)]
    after = random.random(), float(np.random.rand()), float(torch.rand(1))
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == after
    random.seed(9), np.random.seed(9), torch.manual_seed(9)
    assert examples[(2, 7)] == first
    seed = example_seed(5, 2, 7)
    random.seed(seed), np.random.seed(seed % 2 ** 32), torch.manual_seed(seed)
    assert first == (7, random.random(), float(np.random.rand()), float(torch.rand(1)))
    assert len({examples[(epoch, 7)] for epoch in range(3)} | {examples[(2, 8)]}) == 4


def test_an_example_seeds_no_gpus_generator(monkeypatch):
    """Kills torch.manual_seed in an example: it seeds every GPU's generator too, so with no loader
    worker each example would reseed the training's dropout on a GPU (and cost a third of the loader)."""
    seeded_gpus = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", seeded_gpus.append)
    monkeypatch.setattr(torch.cuda, "manual_seed", seeded_gpus.append)
    SeededExamples(Draws(), seed=5)[(0, 3)]
    assert seeded_gpus == []


def test_loader_workers_make_the_examples_of_the_main_process():
    """Kills a worker's example left unseeded or seeded otherwise (its generators are not put back)."""
    alone, workers = (EpochBatches(Draws(), 4, list, num_workers, seed=2) for num_workers in (0, 2))
    assert [list(alone) for _ in range(2)] == [list(workers) for _ in range(2)]


def test_each_process_takes_every_worlds_example_of_each_global_batch():
    """Kills another order than the file's, another shard or skip."""
    order = list(range(10))
    shards = [ShardOrder(10, 4, rank=rank, world=2) for rank in (0, 1)]
    for shard in shards:
        shard.epoch, shard.skip = 2, 1
    assert list(shards[0]) == [(2, index) for index in order[4:8:2] + order[8::2]]
    assert list(shards[1]) == [(2, index) for index in order[5:8:2] + order[9::2]]
    assert len(shards[0]) == 3


@pytest.mark.parametrize("size, batch_size, world, message", [
    (8, 3, 2, "the batch size 3 is not a multiple of the 2 processes"),
    (9, 4, 2, "the last batch of an epoch holds 1 examples, fewer than the 2 processes"),
])
def test_batches_that_processes_cannot_share_are_refused(size, batch_size, world, message):
    """Kills a batch the processes would split unevenly."""
    with pytest.raises(ValueError, match=message):
        EpochBatches(list(range(size)), batch_size, None, 0, world=world)


def test_epoch_batches_count_their_position_and_resume_mid_epoch():
    """Kills a wrong position, epoch or length after a pass or a resume."""
    batches = EpochBatches(Draws(), 4, lambda items: [item[0] for item in items], 0, seed=3, world=2, rank=1)
    assert len(batches) == 3 and batches.batches_an_epoch == 3
    positions = [batches.position for _ in batches]
    assert positions == [1, 2, 3] and (batches.order.epoch, batches.position) == (1, 0)
    batches.start_at(4, 2)
    assert len(batches) == 1
    assert [batch for batch in batches] == [[9]]
    assert (batches.order.epoch, batches.order.skip, len(batches)) == (5, 0, 3)
    EpochBatches(list(range(9)), 4, None, 0, world=1)  # a last batch of 1 for one process is fine
    EpochBatches(list(range(8)), 4, None, 0, world=2)  # and so is no short batch


def test_epoch_batches_default_to_one_process_and_keep_torchs_generator(monkeypatch):
    """Kills other defaults, loader settings lost, or a loader that draws from torch's own generator."""
    batches = EpochBatches(Draws(), 4, lambda items: [item[0] for item in items], 0)
    assert batches.position == 0
    loader = batches.loader
    assert (loader.num_workers, loader.persistent_workers, loader.pin_memory) == (0, False, False)
    torch.manual_seed(0)
    state = torch.get_rng_state()
    assert list(batches) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert torch.equal(torch.get_rng_state(), state)
    loader = EpochBatches(Draws(), 4, None, 1, seed=1, pin_memory=True).loader
    assert (loader.num_workers, loader.persistent_workers, loader.pin_memory) == (1, True, True)

# ---- checkpoint: whole-or-nothing saves, runs refused, resumes ----------------------------------------

class FailsToPickle:
    """An object whose pickling fails, so that a save fails midway."""

    def __reduce__(self):
        raise RuntimeError("failed mid-save")


def test_a_save_that_fails_midway_leaves_the_old_checkpoint_and_no_temporary(tmp_path, monkeypatch):
    """Kills writing in place, a temporary left behind or put elsewhere."""
    path = tmp_path / "checkpoint.pt"
    checkpoint.save_atomically({'step': 1}, str(path))
    with pytest.raises(RuntimeError, match="mid-save"):
        checkpoint.save_atomically({'step': 2, 'x': FailsToPickle()}, str(path))
    assert torch.load(path) == {'step': 1} and os.listdir(tmp_path) == ["checkpoint.pt"]
    renamed = []
    replace = os.replace
    monkeypatch.setattr(os, 'replace', lambda source, target: renamed.append(source) or replace(source, target))
    checkpoint.save_atomically({'step': 3}, str(path))
    assert torch.load(path) == {'step': 3} and os.listdir(tmp_path) == ["checkpoint.pt"]
    assert os.path.dirname(renamed[0]) == str(tmp_path) and os.path.basename(renamed[0]).startswith(
        ".checkpoint.pt.")


def test_generator_states_come_back():
    """Kills a generator left out of the saved or restored states."""
    states = checkpoint.rng_states()
    drawn = random.random(), float(np.random.rand()), float(torch.rand(1))
    checkpoint.set_rng_states(states)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == drawn
    assert states['cuda'] == [] and checkpoint.every_process(5, ONE_PROCESS) == [5]


TWO_PROCESSES = types.SimpleNamespace(world=2, rank=0, main=True)


def test_processes_share_their_values_and_their_interrupts(monkeypatch, tmp_path, sigint_kept):
    """Kills a wrong gather of every process's value, or an interrupt not agreed on (the MAX of the flags)."""
    def gather(values, value):
        """all_gather_object with a second process whose value is 'rank 1'."""
        values[:] = [value, 'rank 1']
    others = []

    def reduce(flag, op):
        """all_reduce with a second process whose flag is the last of `others`."""
        assert op is dist.ReduceOp.MAX
        flag.copy_(torch.maximum(flag, torch.tensor([others[-1]])))
    monkeypatch.setattr(dist, 'all_gather_object', gather)
    monkeypatch.setattr(dist, 'all_reduce', reduce)
    assert checkpoint.every_process('rank 0', TWO_PROCESSES) == ['rank 0', 'rank 1']
    saver = checkpoint.Checkpointer(str(tmp_path / "checkpoint.pt"), IDENTITY, 10, TWO_PROCESSES)
    others.append(0.0)
    assert saver.stop_now() is False
    others.append(1.0)
    assert saver.stop_now() is True
    assert checkpoint.Checkpointer(str(tmp_path / "checkpoint.pt"), IDENTITY, 10, ONE_PROCESS).stop_now() is False


ONE_PROCESS = types.SimpleNamespace(world=1, rank=0, main=True)
IDENTITY = {'stage': 'vanilla_pretrain', 'vocabulary': 'x' * 70}


def test_a_checkpoint_of_another_run_or_none_is_refused_in_one_line(tmp_path):
    """Kills a checkpoint of another run accepted, or a garbled message."""
    path = tmp_path / "checkpoint.pt"
    with pytest.raises(InputError, match=r"^no checkpoint to resume from at .*checkpoint.pt: start the stage "
                                         r"without --resume$"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match=r"^cannot read the checkpoint .*checkpoint.pt \(UnpicklingError\)$"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    torch.save({'identity': dict(IDENTITY, vocabulary='y' * 70), 'step': 4}, path)
    with pytest.raises(InputError, match=rf"is of another run: its vocabulary is '{'y' * 57}\.\.\.', this run's is "
                                         rf"'{'x' * 57}\.\.\.'$"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    torch.save({'identity': dict(IDENTITY, vocabulary='x' * 59)}, path)
    with pytest.raises(InputError, match=rf"its vocabulary is '{'x' * 59}', this"):
        checkpoint.read_checkpoint(str(path), dict(IDENTITY, vocabulary='x' * 58))
    torch.save({'identity': dict(IDENTITY, vocabulary='y' * 60)}, path)
    with pytest.raises(InputError, match=rf"its vocabulary is '{'y' * 57}\.\.\.', this"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    torch.save({'step': 4}, path)
    with pytest.raises(InputError, match=r"its stage is None, this run's is 'vanilla_pretrain'$"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    torch.save([1], path)
    with pytest.raises(InputError, match=r"its stage is None, this run's is 'vanilla_pretrain'$"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    torch.save({'identity': IDENTITY, 'step': 4}, path)
    assert checkpoint.read_checkpoint(str(path), IDENTITY)['step'] == 4


@pytest.fixture
def sigint_kept():
    """SIGINT's handler as it was before the test."""
    handler = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, handler)


def toy_trainer():
    """What a Checkpointer reads and sets of a Trainer: a model, an optimizer, counters, a loader; and,
    as `scaler`, a grad scaler for the Checkpointer."""
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.5)
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    scaler = types.SimpleNamespace(state={'scale': 8.0}, state_dict=lambda: {'scale': 8.0})
    scaler.load_state_dict = lambda state: scaler.state.update(loaded=state)
    loader = types.SimpleNamespace(position=3, start_at=lambda epoch, position: started.append((epoch, position)))
    started = []
    return types.SimpleNamespace(model=model, optimizer=optimizer, scaler=scaler,
                                 tokens=100, step=6, epoch=2, batches=loader, lr=None, started=started)


def test_a_checkpoint_is_saved_every_so_many_steps_and_each_epoch(tmp_path, sigint_kept):
    """Kills a save missed or made at the wrong step, epoch or position."""
    path = tmp_path / "checkpoint.pt"
    trainer = toy_trainer()
    saver = checkpoint.Checkpointer(str(path), IDENTITY, 3, ONE_PROCESS, scaler=trainer.scaler)
    trainer.step = 5
    saver(trainer, 'step')
    assert not path.exists()
    trainer.step = 6
    saver(trainer, 'step')
    state = torch.load(path, weights_only=False)
    assert (state['step'], state['epoch'], state['position'], state['tokens']) == (6, 2, 3, 100)
    assert state['identity'] == IDENTITY and state['scaler'] == {'scale': 8.0}
    saver(trainer, 'epoch_end')
    state = torch.load(path, weights_only=False)
    assert (state['epoch'], state['position']) == (3, 0)
    saver(trainer, 'start')  # nothing to resume
    checkpoint.Checkpointer(str(path), IDENTITY, 3, ONE_PROCESS)(trainer, 'epoch_end')  # a run without a scaler
    assert torch.load(path, weights_only=False)['scaler'] is None


def test_ctrl_c_saves_then_stops_and_a_second_one_stops_at_once(tmp_path, sigint_kept):
    """Kills an interrupt that does not save, does not stop, or cannot be forced."""
    path = tmp_path / "checkpoint.pt"
    saver = checkpoint.Checkpointer(str(path), IDENTITY, 1000, ONE_PROCESS)
    os.kill(os.getpid(), signal.SIGINT)
    assert saver.interrupted and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    trainer = toy_trainer()
    with pytest.raises(checkpoint.Interrupted):
        saver(trainer, 'step')
    assert torch.load(path, weights_only=False)['step'] == 6


def test_a_resume_restores_every_part_of_the_run(tmp_path, sigint_kept):
    """Kills a part of the state left out of the resume."""
    path = tmp_path / "checkpoint.pt"
    trainer = toy_trainer()
    checkpoint.Checkpointer(str(path), IDENTITY, 1, ONE_PROCESS, scaler=trainer.scaler).save(trainer, 4, 7)
    drawn = random.random(), float(np.random.rand()), float(torch.rand(1))
    fresh = toy_trainer()
    with torch.no_grad():
        fresh.model.weight.zero_()
    fresh.tokens, fresh.step, fresh.epoch = 0, 0, 0
    fresh.optimizer.param_groups[0]['lr'] = 0.25
    resume = checkpoint.read_checkpoint(str(path), IDENTITY)
    fresh.optimizer.param_groups[0]['lr'] = 0.125
    checkpoint.Checkpointer(str(path), IDENTITY, 1, ONE_PROCESS, resume, fresh.scaler)(fresh, 'start')
    assert torch.equal(fresh.model.weight, trainer.model.weight)
    assert fresh.optimizer.state_dict()['state'][0]['step'] == 1 and fresh.lr == 0.5
    assert (fresh.tokens, fresh.step, fresh.epoch, fresh.started) == (100, 6, 4, [(4, 7)])
    assert fresh.scaler.state['loaded'] == {'scale': 8.0}
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == drawn

