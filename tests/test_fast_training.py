"""
The stages' training step and what plugs it in (src/runtime/training/fast_training.py),
at the edges tests/test_fast.py does not reach: length groups of a batch with
fewer target rows than groups, a row whose only target is in the first column,
a batch without any target; under several processes, each process's weight of
the global batch, so that the processes' averaged gradients and loss are the
global batch's and the schedule counts its positions, with DDP on the
process's own GPU, syncing at the last group only; under fp16, gradients
clipped once unscaled; and what plug_into sets: the overrides, this process's
share of the batches, made under the run's seed, and its length groups,
memory pinned for a GPU only, the plain loader's file order, the trainer's
device, the loss read back every 10 steps, the optimizer and batches made
before the callbacks hear of the start, and the callbacks told of each step
and each epoch's end.
"""

import contextlib
import copy
import random
import types

import pytest
import torch
from torch.nn.parallel import DistributedDataParallel

from runtime.training import fast_training
from runtime.training.batches import SeededExamples
from runtime.training.distributed import Processes
from runtime.training.fast_training import FastSteps, collate_batch, default_length_groups, plug_into, split_by_length
from submission import GPT, Trainer, TrainerConfig

pytestmark = pytest.mark.usefixtures("single_thread")

VOCAB = 12


def batch_of(targets):
    """x (B, T) of token ids, and y (B, T) with the targets given by row ({column: token}), PAD elsewhere."""
    width = 1 + max((column for row in targets for column in row), default=0)
    x = torch.arange(len(targets) * width).view(len(targets), width) % (VOCAB - 2) + 2
    y = torch.zeros(len(targets), width, dtype=torch.long)
    for number, row in enumerate(targets):
        for column, token in row.items():
            y[number, column] = token
    return x, y


def test_a_batch_with_fewer_target_rows_than_groups_makes_a_group_a_row():
    """Kills a split into as many groups as asked whatever the rows (empty groups, no width to cut at)."""
    x, y = batch_of([{5: 3}, {}, {2: 4, 3: 5}, {0: 6}, {}])
    groups = split_by_length(x, y, 8)
    assert [(x_g.tolist(), y_g.tolist(), share) for x_g, y_g, share in groups] == [
        (x[[0], :6].tolist(), y[[0], :6].tolist(), 0.25), (x[[2], :4].tolist(), y[[2], :4].tolist(), 0.5),
        (x[[3], :1].tolist(), y[[3], :1].tolist(), 0.25)]


def test_a_row_whose_only_target_is_in_the_first_column_is_trained_on():
    """Kills a row whose last target is in column 0 taken for a row without targets and left out."""
    x, y = batch_of([{0: 7}, {3: 2}])
    assert [(g[1].tolist(), g[2]) for g in split_by_length(x, y, 2)] == [([[0, 0, 0, 2]], 0.5), ([[7]], 0.5)]


def test_a_batch_without_a_target_is_kept_whole_one_column_wide():
    """Kills a batch of only PAD targets cut to no column (a model cannot run on it) or split into groups:
    it is kept whole, as the plain step keeps it, and still counts all its positions."""
    x, y = batch_of([{}, {}, {}])
    x, y = torch.cat([x, x], dim=1), torch.cat([y, y], dim=1)
    groups, positions = collate_batch(list(zip(x, y)), trim_padding=True, groups=4)
    assert positions == 6
    assert [(x_g.tolist(), y_g.tolist(), share) for x_g, y_g, share in groups] == [(x[:, :1].tolist(),
                                                                                   y[:, :1].tolist(), 1.0)]


class RecordedDDP(DistributedDataParallel):
    """DDP as batch_loss sees it, around `module` without a process group: it records, at each forward,
    whether its gradients would be averaged over the processes (outside no_sync)."""

    def __init__(self, module):
        torch.nn.Module.__init__(self)
        self.module, self.syncing, self.synced = module, True, []

    @contextlib.contextmanager
    def no_sync(self):
        self.syncing = False
        try:
            yield
        finally:
            self.syncing = True

    def forward(self, *args):
        self.synced.append(self.syncing)
        return self.module(*args)


def one_layer_gpt(tiny_config):
    """A one-layer GPT of 16 dimensions without dropout, from the same seed each time."""
    torch.manual_seed(0)
    return GPT(tiny_config(VOCAB, 8, n_layer=1, n_embd=16))


def random_examples(count, seed):
    """`count` (x, y) examples of 8 positions, about half the targets PAD, each row with a target."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randint(2, VOCAB, (count, 8), generator=generator)
    y = torch.randint(2, VOCAB, (count, 8), generator=generator) * (torch.rand(count, 8, generator=generator) > 0.5)
    y[:, 0] = 3
    return list(zip(x, y))


@pytest.mark.parametrize("groups", [1, 3])
def test_under_ddp_the_gradients_are_averaged_at_the_last_group_only(tiny_config, groups):
    """Kills the sync at another group than the last (DDP would average the gradients before the later
    groups added theirs) or at every group (an all-reduce a group)."""
    steps = FastSteps(torch.device("cpu"), 12, "fp32", length_groups=groups)
    model = RecordedDDP(one_layer_gpt(tiny_config))
    steps.batch_loss(model, steps.collate(random_examples(12, seed=1))[0])
    assert model.synced == [False] * (groups - 1) + [True]


def test_under_a_process_group_the_model_runs_in_ddp_on_its_own_gpu(monkeypatch):
    """Kills DDP left out under several processes, or given no device on a GPU or one on the CPU, which a
    machine without a GPU never shows: DDP is a stand-in here."""
    given = []
    monkeypatch.setattr(fast_training, "DistributedDataParallel",
                        lambda model, device_ids: given.append(device_ids) or model)
    model = torch.nn.Linear(1, 1)
    assert FastSteps(torch.device("cpu"), 8).wrap(model) is model and given == []
    monkeypatch.setattr(fast_training.dist, "is_initialized", lambda: True)
    for device in ("cuda:1", "cpu"):
        assert FastSteps(torch.device(device), 8).wrap(model) is model
    assert given == [[torch.device("cuda:1")], None]


def test_the_model_is_compiled_with_the_backend_asked_and_only_when_asked(monkeypatch):
    """Kills the backend dropped on its way to torch.compile (the course's `compile aot_eager` compiling with
    inductor), a model compiled without compile, or whole batches compiled for changing shapes (they
    have one static shape)."""
    compiled = []
    monkeypatch.setattr(fast_training.torch, "compile",
                        lambda model, backend, dynamic: compiled.append((backend, dynamic)) or model)
    model = torch.nn.Linear(1, 1)
    FastSteps(torch.device("cpu"), 8).wrap(model)
    FastSteps(torch.device("cpu"), 8, compile=True).wrap(model)
    FastSteps(torch.device("cpu"), 8, compile=True, backend="aot_eager").wrap(model)
    trainer = Trainer(model, [], None, TrainerConfig(batch_size=8))
    plug_into(trainer, torch.device("cpu"), compile=True, backend="cudagraphs", seeded_batches=False).steps.wrap(model)
    FastSteps(torch.device("cpu"), 8, compile=True, trim_padding=False).wrap(model)
    assert compiled == [("inductor", None), ("aot_eager", None), ("cudagraphs", None), ("inductor", False)]


class TwoProcesses:
    """torch.distributed as this process of two sees it: all_reduce adds what the other process gives
    (its values, in the order it reduces them)."""

    def __init__(self, monkeypatch, others):
        self.others = list(others)
        monkeypatch.setattr(fast_training.dist, "is_initialized", lambda: True)
        monkeypatch.setattr(fast_training.dist, "get_world_size", lambda: 2)
        monkeypatch.setattr(fast_training.dist, "all_reduce", self.all_reduce)

    def all_reduce(self, tensor):
        tensor.add_(self.others.pop(0))


def process_step(model, examples, others, monkeypatch):
    """One step of a process of two on its `examples`: (the loss and positions it returns, the gradients
    it leaves for DDP to average), the other process's all_reduce inputs being `others`."""
    steps = FastSteps(torch.device("cpu"), len(examples), "fp32", length_groups=2)
    steps.step_model = model  # under a process group wrap() would put the model in DDP
    trainer = types.SimpleNamespace(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.0),
                                    config=types.SimpleNamespace(grad_norm_clip=1e9))
    with monkeypatch.context() as patch:
        TwoProcesses(patch, others)
        loss, positions = steps(trainer, steps.collate(examples))
    return float(loss), positions, [p.grad.clone() for p in model.parameters()]


def test_the_processes_averaged_gradients_and_loss_are_the_global_batchs(tiny_config, monkeypatch):
    """Two processes of a global batch of 12, 6 examples each, with unequal numbers of targets. Kills a
    process weighing its groups by its own targets (DDP's average of the processes' gradients is then not
    the global batch's gradient), a schedule counting only this process's positions, and a logged loss
    that is the processes' sum."""
    examples = random_examples(12, seed=2)
    shares = [examples[0::2], examples[1::2]]
    targets = [sum(int((y != 0).sum()) for _, y in share) for share in shares]
    assert targets[0] != targets[1]
    whole = one_layer_gpt(tiny_config)
    x, y = torch.stack([e[0] for e in examples]), torch.stack([e[1] for e in examples])
    global_loss = whole(x, y)[1]
    global_loss.backward()
    counts = [torch.tensor([float(t), 48.0], dtype=torch.float64) for t in targets]
    weighted = [float(FastSteps(torch.device("cpu"), 6, "fp32").batch_loss(
        copy.deepcopy(whole), [(torch.stack([e[0] for e in share]), torch.stack([e[1] for e in share]), 1.0)],
        2 * t / sum(targets))) for share, t in zip(shares, targets)]
    runs = [process_step(one_layer_gpt(tiny_config), shares[rank], [counts[1 - rank], weighted[1 - rank]],
                         monkeypatch) for rank in (0, 1)]
    for loss, positions, _ in runs:
        assert positions == 96
        assert loss == pytest.approx(global_loss.item(), abs=1e-5)
    for number, p in enumerate(whole.parameters()):
        torch.testing.assert_close((runs[0][2][number] + runs[1][2][number]) / 2, p.grad, atol=1e-6, rtol=1e-5)


class Positions(torch.utils.data.Dataset):
    """Example i is x = y = [i + 2], so a batch shows which examples it holds."""

    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return torch.tensor([index + 2]), torch.tensor([index + 2])


def plugged(batch_size=8, size=10, device="cpu", **settings):
    """A Trainer of a tiny model over Positions(size) with the stages' training plugged in: (trainer, training)."""
    model = torch.nn.Linear(1, 1)
    trainer = Trainer(model, Positions(size), None, TrainerConfig(max_epochs=2, batch_size=batch_size))
    return trainer, plug_into(trainer, torch.device(device), **settings)


def examples_of(batches):
    """The examples of each batch of collated length groups."""
    return [sorted(int(i) - 2 for x, _, _ in groups for i in x[:, 0]) for groups, _ in batches]


def test_each_process_takes_its_share_of_the_batches_in_groups_of_its_size():
    """Kills every process given rank 0's share (each global batch trained twice over), and length groups
    chosen for the global batch rather than this process's share of it."""
    trainer, training = plugged(processes=Processes(1, 2), seed=4)
    assert examples_of(training.batches(trainer)) == [[1, 3, 5, 7], [9]]
    for batch_size, world in ((64, 2), (128, 4), (64, 1)):
        trainer, training = plugged(batch_size, processes=Processes(0, world))
        expected = default_length_groups(torch.device("cpu"), batch_size // world)
        assert training.steps.collate.keywords["groups"] == expected


class Drawn(Positions):
    """Example i is x = [i + 2] and a target drawn from python's generator, as span corruption draws."""

    def __getitem__(self, index):
        return torch.tensor([index + 2]), torch.tensor([random.randrange(2, 10 ** 6)])


def test_the_batches_are_made_under_the_runs_seed():
    """Kills the run's seed left out of its batches: every run would train on the same corruptions."""
    dataset = Drawn(10)
    for seed in (4, 5):
        trainer = Trainer(torch.nn.Linear(1, 1), dataset, None, TrainerConfig(batch_size=8))
        training = plug_into(trainer, torch.device("cpu"), seed=seed)
        drawn = [int(t) for groups, _ in training.batches(trainer) for _, y, _ in groups for t in y[:, 0]]
        assert drawn == [int(SeededExamples(dataset, seed)[(0, index)][1]) for index in range(10)]


def test_the_plain_loader_keeps_file_order_in_whole_batches():
    """Kills shuffled or resized batches where the run asks for no seeded batches (the demo's loader)."""
    trainer, training = plugged(batch_size=4, seeded_batches=False)
    assert examples_of(training.batches(trainer)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_the_trainer_runs_on_the_device_and_pins_memory_for_a_gpu_only():
    """Kills the trainer left on the device it picked itself, and pinned memory left out on CUDA (slower
    copies to the GPU) or asked for on the CPU."""
    for device, pinned in (("cuda", True), ("cpu", False)):
        trainer, training = plugged(device=device)
        assert trainer.device == torch.device(device)
        assert training.batches(trainer).loader.pin_memory is pinned


def test_the_overrides_are_set_on_the_config_and_nothing_else_of_it():
    """Kills a smoke run's max_epochs and batch size left out, or other settings changed."""
    trainer = Trainer(torch.nn.Linear(1, 1), Positions(10), None, TrainerConfig(max_epochs=2, batch_size=8))
    before = dict(vars(trainer.config))
    plug_into(trainer, torch.device("cpu"), max_epochs=1, batch_size=4)
    assert vars(trainer.config) == dict(before, max_epochs=1, batch_size=4)


def test_at_the_start_the_callbacks_find_the_optimizer_and_batches_and_the_loss_is_read_every_10_steps():
    """Kills the callbacks told of the start before the fused optimizer and the batches are put in (a
    resume restores into them), and the loss read back at every step (which waits for the device)."""
    trainer, training = plugged()
    seen = []
    training.callbacks.append(lambda trainer, event: seen.append((event, trainer.optimizer, trainer.batches)))
    trainer.trigger_callbacks('on_train_start')
    assert [event for event, _, _ in seen] == ['start']
    assert seen[0][1].defaults['fused'] and seen[0][2] is trainer.batches and len(trainer.batches) == 2
    assert trainer.report_every == 10


def test_the_callbacks_are_told_of_each_step_and_each_epochs_end(tiny_config):
    """Kills an event missed or named otherwise: a checkpoint is saved at 'step' events every so many steps
    and at each 'epoch_end', where the next epoch starts from its first batch."""
    torch.manual_seed(0)
    model = GPT(tiny_config(16, 1, n_layer=1, n_embd=8))
    trainer = Trainer(model, Positions(10), None, TrainerConfig(max_epochs=2, batch_size=8))
    training = plug_into(trainer, torch.device("cpu"))
    seen = []
    training.callbacks.append(lambda trainer, event: seen.append((event, trainer.step, trainer.epoch)))
    trainer.train()
    assert seen == [('start', 0, 0), ('step', 1, 0), ('step', 2, 0), ('epoch_end', 2, 0), ('step', 3, 1),
                    ('step', 4, 1), ('epoch_end', 4, 1)]


def clipped_update(tiny_config, precision):
    """The parameters' change in one step at `precision`: SGD at rate 1, the gradient clipped to norm 0.5."""
    model = one_layer_gpt(tiny_config)
    before = [p.detach().clone() for p in model.parameters()]
    steps = FastSteps(torch.device("cpu"), 12, precision)
    trainer = types.SimpleNamespace(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=1.0),
                                    config=types.SimpleNamespace(grad_norm_clip=0.5))
    steps(trainer, steps.collate(random_examples(12, seed=3)))
    return torch.cat([(p.detach() - b).flatten() for p, b in zip(model.parameters(), before)])


def test_under_fp16_the_gradients_are_clipped_unscaled(tiny_config):
    """Kills the clip applied to the grad scaler's scaled gradients (65536 times the true ones under fp16):
    the step would be that much too short."""
    assert float(clipped_update(tiny_config, "fp32").norm()) == pytest.approx(0.5, rel=1e-4)
    assert float(clipped_update(tiny_config, "fp16").norm()) == pytest.approx(0.5, rel=1e-2)
