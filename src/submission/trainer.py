"""
Simple training loop; Boilerplate that could apply to any arbitrary neural network,
so nothing in this file really has anything to do with GPT specifically.

Learning rate schedule, with `tokens` the number of target positions seen so
far (every position of every batch, PAD included) and lr_0 the base rate:

    tokens <  warmup:  lr = lr_0 * tokens / warmup
    tokens >= warmup:  progress = (tokens - warmup) / (final - warmup)
                       lr = lr_0 * max(0.1, 0.5 * (1 + cos(pi * progress)))

progress is not clamped, so past final_tokens the rate rises again.

Speed (none of it changes the numbers beyond floating-point rounding):
the rows of a batch are sorted by length into `length_groups` groups, each
cut after its own last non-PAD target column, and the batch's loss is the
targets-weighted sum of the groups' losses (attention is causal and PAD
targets are ignored, so loss and gradients are the batch's), while `tokens`
still counts the uncut batch; fused AdamW; on CUDA, bf16 autocast (fp16 with
a grad scaler where bf16 is missing), TF32 matmuls and pinned memory;
optionally torch.compile. The loss is read back to the host only every
`log_every` steps. As in minGPT, the rate is set after each step for the
next one, so the first step runs at the base rate.
"""

import functools
import math
import time

import torch
from torch.utils.data.dataloader import DataLoader, default_collate
from tqdm import tqdm

from .utils import pick_device


class TrainerConfig:
    # optimization parameters
    max_epochs = 10
    batch_size = 64
    learning_rate = 3e-4
    betas = (0.9, 0.95)
    grad_norm_clip = 1.0
    weight_decay = 0.1  # only applied on matmul weights
    # learning rate decay params: linear warmup followed by cosine decay to 10% of original
    lr_decay = False
    warmup_tokens = 375e6  # these two numbers come from the GPT-3 paper, but may not be good defaults elsewhere
    final_tokens = 260e9  # (at what point we reach 10% of original LR)
    # checkpoint settings
    ckpt_path = None
    num_workers = 0  # for DataLoader
    writer = None  # anything with add_scalar(tag, value, step), e.g. a TensorBoard SummaryWriter
    # how to run it
    device = None  # None: cuda, then mps, then cpu
    precision = 'auto'  # 'auto' (bf16/fp16 on cuda, fp32 elsewhere), 'fp32', 'bf16' or 'fp16'
    compile = False  # torch.compile the model
    trim_padding = True  # cut all-PAD tail columns of each batch
    length_groups = None  # groups of similar-length rows per batch (with trim_padding); None: see default_length_groups
    fused_adamw = True  # the fused AdamW kernel on cuda and cpu; False: PyTorch's default AdamW
    log_every = 10  # steps between reading the loss back for the bar and the writer

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)


def learning_rate(config, tokens):
    """The learning rate after `tokens` target positions, by the schedule above."""
    if not config.lr_decay:
        return config.learning_rate
    if tokens < config.warmup_tokens:
        return config.learning_rate * tokens / max(1, config.warmup_tokens)
    progress = (tokens - config.warmup_tokens) / max(1, config.final_tokens - config.warmup_tokens)
    return config.learning_rate * max(0.1, 0.5 * (1.0 + math.cos(math.pi * progress)))


def collate_trimmed(examples):
    """Stack (x, y) examples and cut every column after the last non-PAD target.
    Returns x (B, W), y (B, W) and the number of positions before the cut (B * T)."""
    x, y = default_collate(examples)  # (B, T) each
    target_columns = (y != 0).any(dim=0).nonzero()  # (K, 1) columns with a non-PAD target
    width = int(target_columns.max()) + 1 if len(target_columns) else 1
    return x[:, :width].contiguous(), y[:, :width].contiguous(), y.numel()


def collate_whole(examples):
    """Stack (x, y) examples as they are; also return the number of positions (B * T)."""
    x, y = default_collate(examples)
    return x, y, y.numel()


def split_by_length(x, y, groups):
    """
    Sort the rows of x, y (B, W) by their last non-PAD target and split them
    into up to `groups` groups, each cut after its own last non-PAD target
    column; rows without a target are left out. Returns a list of
    (x_g (B_g, W_g), y_g (B_g, W_g), share_g), where share_g is the group's
    fraction of the batch's non-PAD targets, so that for the mean loss over
    non-PAD targets

        loss(batch) = sum_g share_g * loss(group g)

    and the same holds for the gradients.
    """
    columns = torch.arange(y.size(1))
    last = torch.where(y != 0, columns, -1).max(dim=1).values  # (B,) last target column, -1 for none
    targets = int((y != 0).sum())
    if targets == 0:  # nothing to learn from: keep the batch whole, as the plain path does
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
    """Stack (x, y) examples into a list of (x_g, y_g, share_g) groups (see split_by_length;
    without trim_padding one group, the whole batch) and the number of positions B * T."""
    if not trim_padding:
        x, y, positions = collate_whole(examples)
        return [(x, y, 1.0)], positions
    x, y, positions = collate_trimmed(examples)
    return split_by_length(x, y, groups), positions


def default_length_groups(device, batch_size):
    """One group on a GPU, where a step's time hardly depends on the width; on
    a CPU about 16 rows a group, at most 8 groups (smaller groups cost more in
    per-call overhead than they save in padding)."""
    if device.type in ('cuda', 'mps'):
        return 1
    return max(1, min(8, batch_size // 16))


def autocast_dtype(device, precision):
    """The dtype to autocast to on `device` for a precision setting; None for fp32."""
    if precision == 'auto':
        if device.type != 'cuda':
            return None
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {'fp32': None, 'bf16': torch.bfloat16, 'fp16': torch.float16}[precision]


def optimizer_groups(model, weight_decay):
    """Weight decay on the weights of Linear layers only; none on biases,
    LayerNorm, embeddings, positional embeddings or the perceiver basis C."""
    matmul_weights = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Linear)}
    decay = [p for p in model.parameters() if id(p) in matmul_weights]
    no_decay = [p for p in model.parameters() if id(p) not in matmul_weights]
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


class Trainer:

    def __init__(self, model, train_dataset, test_dataset, config):
        self.model = model
        self.train_dataset = train_dataset
        self.test_dataset = test_dataset
        self.config = config
        self.tokens = 0  # counter used for learning rate decay
        self.step = 0
        self.lr_history = []  # the learning rate set after each step, in order

    def save_checkpoint(self):
        if self.config.ckpt_path is not None:
            print("saving %s" % self.config.ckpt_path)
            torch.save(self.model.state_dict(), self.config.ckpt_path)

    def setup(self):
        """Put the model on its device and build what a step needs: the
        autocast dtype, the grad scaler, the (compiled) model and AdamW."""
        config = self.config
        self.device = torch.device(config.device) if config.device else pick_device()
        self.model.to(self.device)
        if self.device.type == 'cuda':
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        self.dtype = autocast_dtype(self.device, config.precision)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.dtype == torch.float16)
        self.step_model = torch.compile(self.model) if config.compile else self.model
        fused = config.fused_adamw and self.device.type in ('cuda', 'cpu')
        self.optimizer = torch.optim.AdamW(optimizer_groups(self.model, config.weight_decay),
                                           lr=config.learning_rate, betas=config.betas, fused=fused)
        groups = config.length_groups or default_length_groups(self.device, config.batch_size)
        self.collate = functools.partial(collate_batch, trim_padding=config.trim_padding, groups=groups)

    def loader(self, dataset, shuffle):
        config = self.config
        return DataLoader(dataset, shuffle=shuffle, batch_size=config.batch_size,
                          num_workers=config.num_workers, persistent_workers=config.num_workers > 0,
                          pin_memory=self.device.type == 'cuda', collate_fn=self.collate)

    def batch_loss(self, groups, is_train):
        """The batch's loss sum_g share_g * loss_g over its groups (a tensor on the
        device); while training, also backpropagate it, group by group."""
        total = 0.0
        for x, y, share in groups:
            x = x.to(self.device, non_blocking=True)  # (B_g, W_g)
            y = y.to(self.device, non_blocking=True)  # (B_g, W_g)
            with torch.set_grad_enabled(is_train), torch.autocast(self.device.type, dtype=self.dtype or torch.float32,
                                                                  enabled=self.dtype is not None):
                logits, loss = self.step_model(x, y)
                loss = loss.mean() * share  # mean: collapse all losses if they are scattered on multiple gpus
            if is_train:
                self.scaler.scale(loss).backward()
            total = total + loss.detach()
        return total

    def train_step(self, groups, positions):
        """One optimizer step on a batch of `positions` (uncut) positions; returns its loss on the device."""
        config = self.config
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.batch_loss(groups, True)
        self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_norm_clip)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.step += 1

        # decay the learning rate based on our progress
        self.tokens += positions  # every position of the uncut batch, PAD included
        lr = learning_rate(config, self.tokens)
        for param_group in self.optimizer.param_groups:
            param_group['lr'] = lr
        self.lr_history.append(lr)
        return loss

    def train(self):
        model, config = self.model, self.config
        self.setup()
        train_loader = self.loader(self.train_dataset, True)
        test_loader = self.loader(self.test_dataset, False) if self.test_dataset is not None else None
        start = time.time()

        def run_epoch(loader, is_train, epoch):
            model.train(is_train)
            losses = []
            pbar = tqdm(enumerate(loader), total=len(loader), disable=not is_train)
            for it, (groups, positions) in pbar:
                if not is_train:
                    losses.append(self.batch_loss(groups, False))
                    continue
                loss = self.train_step(groups, positions)

                if it % config.log_every == 0 or it == len(loader) - 1:
                    loss_value, lr = loss.item(), self.lr_history[-1]
                    pbar.set_description(f"epoch {epoch + 1}/{config.max_epochs} iter {it}: "
                                         f"train loss {loss_value:.5f}. lr {lr:e}")
                    if config.writer is not None:
                        config.writer.add_scalar('train/loss', loss_value, self.step)
                        config.writer.add_scalar('train/lr', lr, self.step)
                        config.writer.add_scalar('train/tokens', self.tokens, self.step)
                        config.writer.add_scalar('train/epoch', epoch + 1, self.step)
                        config.writer.add_scalar('train/seconds', time.time() - start, self.step)
            if not is_train:
                test_loss = float(torch.stack(losses).mean())
                print("test loss: %f" % test_loss)
                return test_loss

        for epoch in range(config.max_epochs):
            run_epoch(train_loader, True, epoch)
            if test_loader is not None:
                run_epoch(test_loader, False, epoch)
            self.save_checkpoint()
