"""
The seeded batches (src/runtime/training/batches.py) across a resume: a pass resumed
at a batch of an epoch yields what an uninterrupted run's pass yields from
there, and counts its position from there, so the checkpoints it writes
let a second resume in the same epoch start at the right batch. Across
processes, every example is visited once, in file order, in global batches
that depend neither on the number of processes nor on the resume point (a
hypothesis property, derandomized so that CI sees the same examples on every
run); a batch size the processes cannot share is refused in one line, and a
last batch of an epoch is shared as long as it holds an example for every
process. Each example draws from generators seeded by its own seed (numpy's
by that seed's low 32 bits, whatever its high bits), seed 0 when none is
given.
"""

import math
import random

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from runtime.training.batches import EpochBatches, SeededExamples, example_seed

from runtime_helpers import EDGE


def epoch_batches():
    """The batches of a 10-example dataset, 2 a batch, each batch the list of its examples."""
    return EpochBatches(list(range(100, 110)), 2, collate_fn=list, num_workers=0, seed=3)


def passes(batches, count):
    """The next `count` passes: each a list of (batch, position once it is yielded)."""
    return [[(batch, batches.position) for batch in batches] for _ in range(count)]


def test_a_resumed_pass_yields_and_counts_as_the_uninterrupted_one():
    uninterrupted = passes(epoch_batches(), 3)
    resumed = epoch_batches()
    resumed.start_at(1, 2)
    assert passes(resumed, 2) == [uninterrupted[1][2:], uninterrupted[2]]
    assert [position for _, position in uninterrupted[1]] == [1, 2, 3, 4, 5]


def global_batches(size, batch_size, world, skip):
    """The global batches of one epoch from batch `skip` on, joined from every process's loader batches."""
    per_rank = []
    for rank in range(world):
        batches = EpochBatches(list(range(size)), batch_size, collate_fn=list, num_workers=0, rank=rank, world=world)
        batches.start_at(0, skip)
        length = len(batches)
        per_rank.append(list(batches))
        assert len(per_rank[-1]) == length == math.ceil(size / batch_size) - skip
    return [sorted(i for part in parts for i in part) for parts in zip(*per_rank)], per_rank


@EDGE
@given(size=st.integers(0, 40), batch_size=st.integers(1, 12), world=st.integers(1, 6), data=st.data())
def test_every_example_is_visited_once_in_file_order_in_the_same_global_batches(size, batch_size, world, data):
    """Kills a sampler that drops the last partial batch, repeats or skips an example, takes another
    process's share, or makes global batches that depend on the number of processes or the resume point;
    and a combination the processes cannot share accepted, or refused in more than one line."""
    accepted = batch_size % world == 0 and not 0 < size % batch_size < world
    if not accepted:
        with pytest.raises(ValueError) as refused:
            EpochBatches(list(range(size)), batch_size, collate_fn=list, num_workers=0, world=world)
        assert "\n" not in str(refused.value)
        return
    skip = data.draw(st.integers(0, math.ceil(size / batch_size)))
    joined_batches, per_rank = global_batches(size, batch_size, world, skip)
    starts = range(skip * batch_size, size, batch_size)
    assert joined_batches == [list(range(start, min(start + batch_size, size))) for start in starts]
    for rank, batches in enumerate(per_rank):
        assert batches == [list(range(start, min(start + batch_size, size)))[rank::world] for start in starts]


@pytest.mark.parametrize("batch_size", [0, -4])
def test_a_batch_size_below_one_is_refused_in_one_line(batch_size):
    """Kills a zero batch size reaching a division (ZeroDivisionError) or the DataLoader's own traceback."""
    with pytest.raises(ValueError, match=f"^the batch size {batch_size} is not a positive number$"):
        EpochBatches(list(range(4)), batch_size, collate_fn=list, num_workers=0)


@pytest.mark.parametrize("size, batch_size, world, last", [(10, 4, 2, [[8], [9]]), (9, 6, 3, [[6], [7], [8]]),
                                                          (11, 4, 2, [[8, 10], [9]]), (8, 4, 4, [[4], [5], [6], [7]])])
def test_a_last_batch_with_an_example_for_every_process_is_shared(size, batch_size, world, last):
    """Kills a last batch exactly as large as the processes (or larger, but not a multiple of them) refused."""
    shares = []
    for rank in range(world):
        batches = EpochBatches(list(range(size)), batch_size, collate_fn=list, num_workers=0, rank=rank, world=world)
        shares.append(list(batches)[-1])
    assert shares == last


class Draws:
    """A dataset whose item is what numpy's, python's and torch's generators draw for it."""

    def __len__(self):
        return 4

    def __getitem__(self, index):
        return float(np.random.rand()), random.random(), float(torch.rand(1))


def test_an_examples_generators_are_seeded_by_its_seed_numpys_by_its_low_32_bits():
    """Kills numpy seeded by fewer bits of the seed (half of the seeds have their 32nd bit set)."""
    high_bit = 0
    for seed in range(4):
        for epoch in range(3):
            full = example_seed(seed, epoch, 1)
            high_bit += full % 2 ** 32 >= 2 ** 31
            np.random.seed(full % 2 ** 32)
            random.seed(full)
            torch.default_generator.manual_seed(full)
            assert SeededExamples(Draws(), seed)[(epoch, 1)] == (float(np.random.rand()), random.random(),
                                                                 float(torch.rand(1)))
    assert 3 <= high_bit <= 9


def test_batches_made_without_a_seed_draw_as_seed_0_does():
    """Kills another default seed: a stage that gives none would draw other span corruptions than the
    seed-0 runs measured."""
    unseeded, seeded = (EpochBatches(Draws(), 2, list, 0, **seed) for seed in ({}, {'seed': 0}))
    assert next(iter(unseeded)) == next(iter(seeded))
    assert next(iter(seeded)) != next(iter(EpochBatches(Draws(), 2, list, 0, seed=1)))
