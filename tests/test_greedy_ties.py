"""
Greedy decoding's choice among tied logits (src/runtime/decoding/greedy.py): the token
sample(sample=False) takes, so batched answers are the one-question-at-a-time
loop's even where characters tie exactly. torch.argmax would not do: on a
tie it takes the first maximum, where torch.topk may take another.
"""

import pytest
import torch

from runtime.decoding.greedy import greedy_next
from submission.utils import sample


class FixedLogits(torch.nn.Module):
    """A stand-in model whose logits at every position are `logits` (vocab,)."""

    def __init__(self, logits):
        super().__init__()
        self.logits = logits

    def get_block_size(self):
        return 8

    def forward(self, idx):
        return self.logits.expand(idx.size(0), idx.size(1), -1), None


@pytest.mark.parametrize("logits", [[3.0, 3.0, 3.0, 3.0], [1.0, 3.0, 3.0, 0.0], [0.0, 2.0, 5.0, 5.0, 5.0]])
def test_a_tie_is_broken_as_sample_breaks_it(logits):
    logits = torch.tensor(logits)
    taken = sample(FixedLogits(logits), torch.zeros(1, 1, dtype=torch.long), 1)[0, -1]
    assert greedy_next(logits[None]).tolist() == [int(taken)]
