"""
The stages' training: the student's Trainer, with FastTraining plugged into
its callbacks, which makes the batches and takes each step, computing the
same loss and gradients as the plain loop up to floating-point rounding, and
runs the stage's own callbacks (checkpoints, the duration estimate).

- Length groups: the rows of a batch are sorted by their last non-PAD
  target and cut into groups, each cut after its own last target column.
  Attention is causal and PAD targets are ignored, so with share_g the
  group's fraction of the batch's non-PAD targets

      loss(batch) = sum_g share_g * loss(group g)

  and the same holds for the gradients; `tokens` still counts the uncut
  batch (B * T), so the learning-rate schedule is unchanged.
- Fused AdamW on cuda and cpu.
- On CUDA, with precision 'tf32' (the default): fp32 with TF32 matrix
  products; 'fp32' computes them in full fp32, as the course's code does.
  Optionally torch.compile, and bf16 autocast or fp16 autocast with a grad
  scaler: under bf16 the graded vanilla pretraining (learning rate 6e-3)
  diverged on an H200 where fp32's loss kept falling.
"""

import contextlib
import functools

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data.dataloader import DataLoader, default_collate

from submission.trainer import optimizer_groups

from .batches import EpochBatches
from .distributed import Processes


def collate_trimmed(examples):
    """Stack (x, y) examples and cut every column after the last non-PAD target.
    Returns x (B, W), y (B, W) and the number of positions before the cut (B * T)."""
    x, y = default_collate(examples)  # (B, T) each
    target_columns = (y != 0).any(dim=0).nonzero()  # (K, 1) columns with a non-PAD target
    width = int(target_columns.max()) + 1 if len(target_columns) else 1
    return x[:, :width].contiguous(), y[:, :width].contiguous(), y.numel()


def split_by_length(x, y, groups):
    """
    Sort the rows of x, y (B, W) by their last non-PAD target and split them
    into up to `groups` groups, each cut after its own last non-PAD target
    column; rows without a target are left out. Returns a list of
    (x_g (B_g, W_g), y_g (B_g, W_g), share_g), share_g as above.
    """
    columns = torch.arange(y.size(1))
    last = torch.where(y != 0, columns, -1).max(dim=1).values  # (B,) last target column, -1 for none
    targets = int((y != 0).sum())
    if targets == 0:  # nothing to learn from: keep the batch whole, as the plain step does
        return [(x, y, 1.0)]
    order = torch.argsort(last, descending=True, stable=True)
    order = order[last[order] >= 0]
    split = []
    for rows in order.tensor_split(min(groups, len(order))):
        width = int(last[rows[0]]) + 1
        y_g = y[rows, :width]
        split.append((x[rows, :width], y_g, int((y_g != 0).sum()) / targets))
    return split


def collate_batch(examples, trim_padding, groups):
    """Stack (x, y) examples into a list of (x_g, y_g, share_g) groups (without
    trim_padding one group, the whole batch) and the number of positions B * T."""
    if not trim_padding:
        x, y = default_collate(examples)
        return [(x, y, 1.0)], y.numel()
    x, y, positions = collate_trimmed(examples)
    return split_by_length(x, y, groups), positions


def default_length_groups(device, batch_size):
    """One group on a GPU, where a step's time hardly depends on the width; on
    a CPU about 16 rows a group, at most 8 groups (smaller groups cost more in
    per-call overhead than they save in padding)."""
    if device.type in ('cuda', 'mps'):
        return 1
    return max(1, min(8, batch_size // 16))


@contextlib.contextmanager
def tf32_matmuls(enabled):
    """TF32 matrix products on CUDA inside when `enabled`; the flags as they were after, so that
    what runs next in the process (decoding, which checks its batched logits against the model's
    own within 1e-4) computes in full fp32."""
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    if enabled:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def autocast_dtype(precision):
    """The dtype to autocast to for a precision setting; None for fp32."""
    return {'tf32': None, 'fp32': None, 'bf16': torch.bfloat16, 'fp16': torch.float16}[precision]


class FastSteps:
    """
    The step and the batch collation of a fast run on `device`: batches cut into
    length groups, autocast at `precision` ('tf32' and 'fp32': none, 'bf16',
    'fp16'; on CUDA every precision but 'fp32' allows TF32 matrix products),
    a grad scaler for fp16, the model compiled if `compile` (the stages never
    ask: eager was measured faster on an H200); whole
    batches (trim_padding False) are compiled for their one static shape.
    Under several processes the model runs in DistributedDataParallel, and each
    process weights its groups by their share of the global batch's targets,
    so that DDP's average of the processes' gradients is the global batch's
    gradient.
    """

    def __init__(self, device, batch_size, precision='tf32', compile=False, trim_padding=True, length_groups=None,
                 backend='inductor', dynamic=None):
        self.device = device
        self.dtype = autocast_dtype(precision)
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.dtype == torch.float16)
        self.compile, self.backend = compile, backend
        # torch.compile's dynamic: whole batches have one static shape (and the last batch's); trimmed widths
        # are made symbolic when they change, or from the first compile with dynamic=True
        self.dynamic = False if not trim_padding else dynamic
        self.step_model = None  # the module the steps run: the trainer's model, or its compiled form
        groups = length_groups or default_length_groups(device, batch_size)
        self.collate = functools.partial(collate_batch, trim_padding=trim_padding, groups=groups)
        self.tf32 = device.type == 'cuda' and precision != 'fp32'

    def batch_loss(self, model, groups, scale=1.0):
        """The batch's loss scale * sum_g share_g * loss_g (on the device), backpropagated group by
        group, with TF32 matrix products on CUDA; under DDP the gradients are averaged over the
        processes at the last group only."""
        total = 0.0
        for number, (x, y, share) in enumerate(groups):
            x = x.to(self.device, non_blocking=True)  # (B_g, W_g)
            y = y.to(self.device, non_blocking=True)  # (B_g, W_g)
            synced = number == len(groups) - 1 or not isinstance(model, DistributedDataParallel)
            with contextlib.nullcontext() if synced else model.no_sync(), tf32_matmuls(self.tf32):
                with torch.autocast(self.device.type, dtype=self.dtype or torch.float32,
                                    enabled=self.dtype is not None):
                    logits, loss = model(x, y)
                    loss = loss * (share * scale)
                self.scaler.scale(loss).backward()
            total = total + loss.detach()
        return total

    def wrap(self, model):
        """The module the steps run: the model, in DDP under several processes, compiled if asked."""
        if dist.is_initialized():
            model = DistributedDataParallel(model, device_ids=[self.device] if self.device.type == 'cuda' else None)
        return torch.compile(model, backend=self.backend, dynamic=self.dynamic) if self.compile else model

    def global_batch(self, groups, positions):
        """(this process's weight, the global batch's positions): the weight is N * t / T for t of
        the T targets of the global batch here, 1 in one process."""
        if not dist.is_initialized():
            return 1.0, positions
        targets = sum(int((y != 0).sum()) for _, y, _ in groups)
        counts = torch.tensor([targets, positions], dtype=torch.float64, device=self.device)
        dist.all_reduce(counts)
        return dist.get_world_size() * targets / float(counts[0]), int(counts[1])

    def __call__(self, trainer, batch):
        """One optimizer step of `trainer` on a collated batch; returns its loss and the global
        batch's uncut positions."""
        if self.step_model is None:
            self.step_model = self.wrap(trainer.model)
        groups, positions = batch
        scale, positions = self.global_batch(groups, positions)
        trainer.optimizer.zero_grad(set_to_none=True)
        loss = self.batch_loss(self.step_model, groups, scale)
        if dist.is_initialized():
            dist.all_reduce(loss)
            loss = loss / dist.get_world_size()
        self.scaler.unscale_(trainer.optimizer)
        torch.nn.utils.clip_grad_norm_(trainer.model.parameters(), trainer.config.grad_norm_clip)
        self.scaler.step(trainer.optimizer)
        self.scaler.update()
        return loss, positions


def fused_adamw(param_groups, config, device):
    """AdamW with its fused kernel where PyTorch has one (cuda, cpu)."""
    fused = device.type in ('cuda', 'cpu')
    return torch.optim.AdamW(param_groups, lr=config.learning_rate, betas=config.betas, fused=fused)


class FastTraining:
    """
    The stages' training of a student's Trainer on `device`, plugged in
    through the trainer's callbacks (attach). At 'on_train_start' it puts in
    fused AdamW, the batches (`batches(trainer)`) and the step of `steps` (a
    FastSteps), and has the loss read back every `log_every` steps. It tells
    each of `callbacks` (callback(trainer, event)) of the events 'start' (the
    optimizer and batches are made: a resume restores here), 'step' (after
    the trainer's 'on_batch_end') and 'epoch_end'.
    """

    def __init__(self, device, steps, batches, log_every=10, callbacks=()):
        self.device, self.steps, self.batches, self.log_every = device, steps, batches, log_every
        self.callbacks = list(callbacks)

    @property
    def scaler(self):
        """The steps' gradient scaler (saved with a checkpoint)."""
        return self.steps.scaler

    def attach(self, trainer):
        """Plug into `trainer`, which then trains on this device; returns self."""
        trainer.device = self.device
        trainer.add_callback('on_train_start', self.start)
        trainer.add_callback('on_batch_end', functools.partial(self.tell, event='step'))
        trainer.add_callback('on_epoch_end', functools.partial(self.tell, event='epoch_end'))
        return self

    def tell(self, trainer, event):
        for callback in self.callbacks:
            callback(trainer, event)

    def start(self, trainer):
        trainer.optimizer = fused_adamw(optimizer_groups(trainer.model, trainer.config.weight_decay), trainer.config,
                                        self.device)
        trainer.batches = self.batches(trainer)
        trainer.train_step = functools.partial(self.steps, trainer)
        trainer.report_every = self.log_every
        self.tell(trainer, 'start')


def plug_into(trainer, device, precision='tf32', compile=False, processes=Processes(), seed=0, seeded_batches=True,
              backend='inductor', **overrides):
    """
    The FastTraining on `device` of the student's `trainer`, attached to it:
    FastSteps, fused AdamW, and the seeded batches of this process
    (batches.py; without seeded_batches, the batches of a plain DataLoader,
    in file order as the seeded ones). `overrides` (e.g. a smoke run's
    max_epochs) are set on the trainer's config; nothing else of it changes.
    """
    if not callable(getattr(trainer, 'add_callback', None)):
        raise ValueError("the Trainer has no add_callback, where the stages plug their training in: "
                         "src/submission/trainer.py is not the starter's")
    config = trainer.config
    for name, value in overrides.items():
        setattr(config, name, value)
    steps = FastSteps(device, config.batch_size // processes.world, precision, compile, backend=backend)

    def batches(trainer):
        if not seeded_batches:
            return DataLoader(trainer.train_dataset, batch_size=config.batch_size, num_workers=config.num_workers,
                              collate_fn=steps.collate)
        return EpochBatches(trainer.train_dataset, config.batch_size, steps.collate, config.num_workers,
                            seed, processes.rank, processes.world, pin_memory=device.type == 'cuda')

    return FastTraining(device, steps, batches).attach(trainer)
