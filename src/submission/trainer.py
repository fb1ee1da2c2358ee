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
batches are cut after their last non-PAD target column (attention is causal
and PAD targets are ignored, so the loss is the same), while `tokens` still
counts the uncut batch; fused AdamW; on CUDA, bf16 autocast (fp16 with a grad
scaler where bf16 is missing), TF32 matmuls and pinned memory; optionally
torch.compile. The loss is read back to the host only every `log_every`
steps. As in minGPT, the rate is set after each step for the next one, so
the first step runs at the base rate.
"""

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

    def loader(self, dataset, shuffle, device):
        config, on_cuda = self.config, device.type == 'cuda'
        return DataLoader(dataset, shuffle=shuffle, batch_size=config.batch_size,
                          num_workers=config.num_workers, persistent_workers=config.num_workers > 0,
                          pin_memory=on_cuda, collate_fn=collate_trimmed if config.trim_padding else collate_whole)

    def train(self):
        model, config = self.model, self.config
        device = torch.device(config.device) if config.device else pick_device()
        model.to(device)
        if device.type == 'cuda':
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        dtype = autocast_dtype(device, config.precision)
        scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
        step_model = torch.compile(model) if config.compile else model
        optimizer = torch.optim.AdamW(optimizer_groups(model, config.weight_decay), lr=config.learning_rate,
                                      betas=config.betas, fused=device.type in ('cuda', 'cpu'))
        train_loader = self.loader(self.train_dataset, True, device)
        test_loader = self.loader(self.test_dataset, False, device) if self.test_dataset is not None else None
        start = time.time()

        def run_epoch(loader, is_train, epoch):
            model.train(is_train)
            losses = []
            pbar = tqdm(enumerate(loader), total=len(loader), disable=not is_train)
            for it, (x, y, positions) in pbar:
                x = x.to(device, non_blocking=True)  # (B, W)
                y = y.to(device, non_blocking=True)  # (B, W)

                with torch.set_grad_enabled(is_train), torch.autocast(device.type, dtype=dtype or torch.float32,
                                                                      enabled=dtype is not None):
                    logits, loss = step_model(x, y)
                    loss = loss.mean()  # collapse all losses if they are scattered on multiple gpus
                losses.append(loss.detach())
                if not is_train:
                    continue

                # backprop and update the parameters
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_norm_clip)
                scaler.step(optimizer)
                scaler.update()
                self.step += 1

                # decay the learning rate based on our progress
                self.tokens += positions  # every position of the uncut batch, PAD included
                lr = learning_rate(config, self.tokens)
                for param_group in optimizer.param_groups:
                    param_group['lr'] = lr
                self.lr_history.append(lr)

                if it % config.log_every == 0 or it == len(loader) - 1:
                    loss_value = loss.item()
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
