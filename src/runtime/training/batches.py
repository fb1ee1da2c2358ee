"""
The training batches of the stages, which FastTraining gives the student's Trainer.

Every epoch visits the training set in file order, as the course's trainer
does (its DataLoader does not shuffle). With N processes, the global batch
of B examples is the same B examples as in one process, split B/N to each:
process r takes the examples at positions r, r + N, r + 2N, ... of each
global batch. Every example is made
with the random generators (python, numpy, torch) seeded from (seed, epoch,
index), and in the main process put back afterwards (a loader worker's are
drawn from by nothing else), so an example's random span corruption does
not depend on the process, the loader worker or what was drawn before it:
a run resumed in the middle of an epoch, or run on another number of
processes, sees the same data.
"""

import math
import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler, get_worker_info


def example_seed(seed, epoch, index):
    """A 63-bit seed for example `index` of epoch `epoch`."""
    return (seed * 1_000_003 + epoch) * 1_000_000_007 + index & (2 ** 63 - 1)


class SeededExamples(Dataset):
    """dataset[index] made under generators seeded by (seed, epoch, index); items are (epoch, index)."""

    def __init__(self, dataset, seed):
        self.dataset, self.seed = dataset, seed

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, item):
        epoch, index = item
        if get_worker_info() is not None:  # a loader worker: nothing else draws from its generators
            return self.made(epoch, index)
        python_state, numpy_state, torch_state = random.getstate(), np.random.get_state(), torch.get_rng_state()
        example = self.made(epoch, index)
        random.setstate(python_state)
        np.random.set_state(numpy_state)
        torch.set_rng_state(torch_state)
        return example

    def made(self, epoch, index):
        """dataset[index], with python's, numpy's and the CPU's torch generator seeded for it."""
        seed = example_seed(self.seed, epoch, index)
        random.seed(seed)
        np.random.seed(seed % 2 ** 32)
        torch.default_generator.manual_seed(seed)  # torch.manual_seed would seed every GPU's generator too
        return self.dataset[index]


class ShardOrder(Sampler):
    """(epoch, index) items of this process's share of epoch `epoch`, in file order, from batch `skip` on."""

    def __init__(self, size, batch_size, rank, world):
        self.size, self.batch_size, self.rank, self.world = size, batch_size, rank, world
        self.epoch, self.skip = 0, 0

    def __len__(self):
        return len(self.indices())

    def indices(self):
        starts = range(self.skip * self.batch_size, self.size, self.batch_size)  # the global batches left
        return [index for start in starts
                for index in range(start, min(start + self.batch_size, self.size))[self.rank::self.world]]

    def __iter__(self):
        return iter([(self.epoch, index) for index in self.indices()])


class EpochBatches:
    """The batches of this process, one pass an epoch: the sampler's epoch advances after each
    pass, and `position` counts the global batches of the current epoch already yielded."""

    def __init__(self, dataset, batch_size, collate_fn, num_workers, seed=0, rank=0, world=1, pin_memory=False):
        if batch_size < 1:
            raise ValueError(f"the batch size {batch_size} is not a positive number")
        if batch_size % world:
            raise ValueError(f"the batch size {batch_size} is not a multiple of the {world} processes: "
                             f"choose a number of processes that divides it")
        if 0 < len(dataset) % batch_size < world:
            raise ValueError(f"the last batch of an epoch holds {len(dataset) % batch_size} examples, fewer than "
                             f"the {world} processes: choose fewer processes")
        self.batches_an_epoch = math.ceil(len(dataset) / batch_size)
        self.order = ShardOrder(len(dataset), batch_size, rank, world)
        self.loader = DataLoader(SeededExamples(dataset, seed), batch_size=batch_size // world, sampler=self.order,
                                 collate_fn=collate_fn, num_workers=num_workers,
                                 persistent_workers=num_workers > 0, pin_memory=pin_memory,
                                 generator=torch.Generator().manual_seed(seed))  # never draws from torch's own
        self.position = 0

    def start_at(self, epoch, position):
        """Resume: the next pass is epoch `epoch` from its global batch `position` on."""
        self.order.epoch, self.order.skip = epoch, position

    def __len__(self):
        return self.batches_an_epoch - self.order.skip

    def __iter__(self):
        self.position = self.order.skip
        for batch in self.loader:
            self.position += 1
            yield batch
        self.order.epoch, self.order.skip, self.position = self.order.epoch + 1, 0, 0
