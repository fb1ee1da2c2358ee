"""
The seeded batches (src/runtime/training/batches.py) across a resume: a pass resumed
at a batch of an epoch yields what an uninterrupted run's pass yields from
there, and counts its position from there, so the checkpoints it writes
let a second resume in the same epoch start at the right batch.
"""

from runtime.training.batches import EpochBatches


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
