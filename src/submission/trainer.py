"""
A plain training loop for any model whose forward(x, y) returns (logits, loss);
nothing in it is particular to GPT.
Part of a fork of Andrej Karpathy's minGPT (MIT licence; see LICENSE).

Each step takes one batch (x, y), backpropagates the loss, clips the norm of
the gradient to grad_norm_clip and takes an AdamW step. With lr_decay the
learning rate follows this schedule, where `tokens` counts the target
positions seen so far (every position of every batch, PAD included) and lr_0
is the base rate:

    tokens <  warmup:  lr = lr_0 * tokens / warmup
    tokens >= warmup:  progress = (tokens - warmup) / (final - warmup)
                       lr = lr_0 * max(0.1, 0.5 * (1 + cos(pi * progress)))

progress is not clamped, so past final_tokens the rate rises again. As in
minGPT, the rate is set after each step for the next one, so the first step
runs at the base rate.

Callbacks, added with Trainer.add_callback(event, callback), are called with
the trainer at three events:
    'on_train_start'  the model is on self.device, self.optimizer and
                      self.batches are made; a callback may put in others,
                      or another self.train_step
    'on_batch_end'    after each step and its learning-rate update
    'on_epoch_end'    after the epoch's checkpoint

The stages (./run.sh) put their own batches, fused AdamW and step in at
'on_train_start' (the same numbers, faster); `./run.sh <stage> --plain`
trains with this loop exactly as written.
"""

import math
import time

import torch
from torch.utils.data.dataloader import DataLoader
from tqdm import tqdm

from .utils import pick_device


class TrainerConfig:
    # optimization parameters
    max_epochs = 10
    batch_size = 64
    learning_rate = 3e-4
    betas = (0.9, 0.95)
    grad_norm_clip = 1.0
    weight_decay = 0.1  # on every parameter but biases (see optimizer_groups)
    # learning rate decay params: linear warmup followed by cosine decay to 10% of original
    lr_decay = False
    warmup_tokens = 375e6  # these two numbers come from the GPT-3 paper, but may not be good defaults elsewhere
    final_tokens = 260e9  # (at what point we reach 10% of original LR)
    # checkpoint settings
    ckpt_path = None
    num_workers = 0  # for DataLoader
    writer = None  # anything with add_scalar(tag, value, step), e.g. a TensorBoard SummaryWriter

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


def optimizer_groups(model, weight_decay):
    """AdamW's two groups, chosen by parameter name: no weight decay where the
    name contains "bias" or "LayerNorm.weight", weight_decay for every other
    parameter. This model names its LayerNorms ln1, ln2 and ln_f, so the
    second pattern never matches: every parameter but the biases is decayed,
    the embeddings and the LayerNorm gains too."""
    named = list(model.named_parameters())
    decayed = {name: not any(pattern in name for pattern in ("bias", "LayerNorm.weight")) for name, _ in named}
    return [{"params": [p for name, p in named if decayed[name]], "weight_decay": weight_decay},
            {"params": [p for name, p in named if not decayed[name]], "weight_decay": 0.0}]


class Trainer:

    def __init__(self, model, train_dataset, test_dataset, config):
        self.model = model
        self.train_dataset = train_dataset
        self.test_dataset = test_dataset
        self.config = config
        self.device = pick_device()
        self.callbacks = {}  # event -> the callbacks called at it, in the order they were added
        self.report_every = 1  # steps between progress reports (reading the loss waits for the device)
        # the state of a run: set by train() and its callbacks
        self.optimizer = None
        self.batches = None
        self.tokens = 0  # counter used for learning rate decay
        self.step = 0
        self.epoch = 0
        self.lr = config.learning_rate

    def add_callback(self, event, callback):
        """Call callback(trainer) at `event`, after the callbacks added to it before."""
        self.callbacks.setdefault(event, []).append(callback)

    def trigger_callbacks(self, event):
        for callback in self.callbacks.get(event, []):
            callback(self)

    def save_checkpoint(self):
        if self.config.ckpt_path is not None:
            print("saving %s" % self.config.ckpt_path)
            torch.save(self.model.state_dict(), self.config.ckpt_path)

    @torch.no_grad()
    def test_loss(self):
        """The mean loss over the test dataset's batches."""
        self.model.eval()
        loader = DataLoader(self.test_dataset, batch_size=self.config.batch_size, num_workers=self.config.num_workers)
        losses = [self.model(x.to(self.device), y.to(self.device))[1] for x, y in loader]
        return float(torch.stack(losses).mean())

    def train_step(self, batch):
        """One optimizer step on a batch (x, y) of (B, T) ids each; returns the loss and the B * T positions."""
        x, y = (t.to(self.device) for t in batch)
        logits, loss = self.model(x, y)  # forward
        self.model.zero_grad(set_to_none=True)
        loss.backward()  # backward
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_norm_clip)
        self.optimizer.step()  # update
        return loss, y.numel()

    def train(self):
        model, config = self.model, self.config
        model.to(self.device)
        self.optimizer = torch.optim.AdamW(optimizer_groups(model, config.weight_decay),
                                           lr=config.learning_rate, betas=config.betas)
        self.batches = DataLoader(self.train_dataset, batch_size=config.batch_size,  # in file order
                                  num_workers=config.num_workers)
        self.trigger_callbacks('on_train_start')
        start = time.time()

        for epoch in range(self.epoch, config.max_epochs):
            self.epoch = epoch
            model.train()
            pbar = tqdm(enumerate(self.batches), total=len(self.batches))
            for it, batch in pbar:
                loss, positions = self.train_step(batch)
                self.step += 1

                # decay the learning rate based on our progress
                self.tokens += positions  # every position of the batch, PAD included
                self.lr = learning_rate(config, self.tokens)
                for param_group in self.optimizer.param_groups:
                    param_group['lr'] = self.lr
                self.trigger_callbacks('on_batch_end')

                # report progress, every report_every steps and at the end of the epoch
                if it % self.report_every == 0 or it == len(self.batches) - 1:
                    loss_value = loss.item()
                    pbar.set_description(f"epoch {epoch + 1}/{config.max_epochs} iter {it}: "
                                         f"train loss {loss_value:.5f}. lr {self.lr:e}")
                    if config.writer is not None:
                        for tag, value in (('loss', loss_value), ('lr', self.lr), ('tokens', self.tokens),
                                           ('epoch', epoch + 1), ('seconds', time.time() - start)):
                            config.writer.add_scalar('train/' + tag, value, self.step)

            if self.test_dataset is not None:
                print("test loss: %f" % self.test_loss())
            self.save_checkpoint()
            self.trigger_callbacks('on_epoch_end')
