"""
Resumable training. A Checkpointer, one of FastTraining's callbacks, saves
every `every` steps and at the end of each epoch

    model, optimizer (AdamW's moments), grad scaler, tokens, step, epoch,
    position (global batches done in that epoch), every process's random
    generators (python, numpy, torch, CUDA), and the run's identity

into one file, written whole or not at all (a temporary file in the same
folder, flushed and fsynced, then renamed over the old one), so a kill at any
moment leaves the previous checkpoint loadable. Resuming loads it at the
trainer's start: the seeded batches (batches.py) continue from the same
position of the same epoch, and the run ends with the parameters an
uninterrupted run would have had. A checkpoint of another run (stage,
variant, vocabulary, configuration, processes) is refused with one line.
Ctrl-C stops after the current step with a checkpoint and says how to
resume; a second Ctrl-C stops at once. The Checkpointer is a context
manager: when training ends, well or not, Ctrl-C gets back the handler it
had before.
"""

import os
import random
import signal
import tempfile

import numpy as np
import torch
import torch.distributed as dist

from ..inputs import InputError

CHECKPOINT_NAME = 'checkpoint.pt'
CHECKPOINT_EVERY = 500  # steps; a save of the graded model takes well under a second


class Interrupted(Exception):
    """Training stopped by Ctrl-C after saving a checkpoint."""


def save_atomically(state, path):
    """torch.save(state) to `path` through a temporary file in its folder, fsynced, then renamed."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix='.tmp')
    try:
        with os.fdopen(handle, 'wb') as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    directory = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def rng_states():
    return {'python': random.getstate(), 'numpy': np.random.get_state(), 'torch': torch.get_rng_state(),
            'cuda': torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}


def set_rng_states(states):
    random.setstate(states['python'])
    np.random.set_state(states['numpy'])
    torch.set_rng_state(states['torch'])
    if states['cuda']:
        torch.cuda.set_rng_state_all(states['cuda'])


def every_process(value, processes):
    """[value of rank 0, value of rank 1, ...], on every process."""
    if processes.world == 1:
        return [value]
    values = [None] * processes.world
    dist.all_gather_object(values, value)
    return values


def read_checkpoint(path, identity):
    """The checkpoint at `path`, refused with one line if it is not one of the run `identity`."""
    if not os.path.isfile(path):
        raise InputError(f"no checkpoint to resume from at {path}: start the stage without --resume")
    try:
        state = torch.load(path, map_location='cpu', weights_only=False)
    except Exception as error:
        raise InputError(f"cannot read the checkpoint {path} ({type(error).__name__})") from None
    saved = state.get('identity', {}) if isinstance(state, dict) else {}
    for key, value in identity.items():
        if saved.get(key) != value:
            shown = {k: (v if len(str(v)) < 60 else f"{str(v)[:57]}...") for k, v in
                     (('there', saved.get(key)), ('here', value))}
            raise InputError(f"the checkpoint {path} is of another run: its {key} is {shown['there']!r}, "
                             f"this run's is {shown['here']!r}")
    return state


class Checkpointer:
    """The Trainer callback described above; `resume` is a checkpoint read by read_checkpoint, or None;
    `scaler` the run's grad scaler, or None. It handles Ctrl-C from its making until it is closed (or
    its `with` block ends)."""

    def __init__(self, path, identity, every, processes, resume=None, scaler=None):
        self.path, self.identity, self.every, self.processes, self.resume = path, identity, every, processes, resume
        self.scaler = scaler
        self.interrupted = False
        self.former_handler = signal.signal(signal.SIGINT, self.interrupt)

    def close(self):
        """Give Ctrl-C back the handler it had before this Checkpointer."""
        signal.signal(signal.SIGINT, self.former_handler)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def interrupt(self, signum, frame):
        self.interrupted = True
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C stops at once

    def stop_now(self):
        """Whether any process was interrupted (all of them agree, so they save together)."""
        if self.processes.world == 1:
            return self.interrupted
        flag = torch.tensor([float(self.interrupted)])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())

    def __call__(self, trainer, event):
        if event == 'start' and self.resume is not None:
            self.restore(trainer, self.resume)
        elif event == 'step':
            stop = self.stop_now()
            if stop or trainer.step % self.every == 0:
                self.save(trainer, trainer.epoch, trainer.batches.position)
            if stop:
                raise Interrupted
        elif event == 'epoch_end':
            self.save(trainer, trainer.epoch + 1, 0)

    def save(self, trainer, epoch, position):
        rngs = every_process(rng_states(), self.processes)
        if not self.processes.main:
            return
        save_atomically({'identity': self.identity, 'model': trainer.model.state_dict(),
                         'optimizer': trainer.optimizer.state_dict(),
                         'scaler': self.scaler.state_dict() if self.scaler is not None else None,
                         'tokens': trainer.tokens, 'step': trainer.step, 'epoch': epoch, 'position': position,
                         'rng': rngs}, self.path)

    def restore(self, trainer, state):
        trainer.model.load_state_dict(state['model'])
        trainer.optimizer.load_state_dict(state['optimizer'])
        if state['scaler'] is not None:
            self.scaler.load_state_dict(state['scaler'])
        trainer.tokens, trainer.step, trainer.epoch = state['tokens'], state['step'], state['epoch']
        trainer.lr = trainer.optimizer.param_groups[0]['lr']
        trainer.batches.start_at(state['epoch'], state['position'])
        set_rng_states(state['rng'][self.processes.rank])
