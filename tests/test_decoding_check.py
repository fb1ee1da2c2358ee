"""
The check before batched decoding (src/runtime/decoding/greedy.py): the batch's first
logits are compared with the model's forward on single prompts: each of the
four longest and the most padded one, within 1e-4 (a thousandth
apart is refused, rounding is not). Where the batch is decoded without a
cache (the starter's perceiver), the model itself runs on the padded batch: a
model that is not causal then shows only in padded rows, so it must be
refused even when the batch's longest prompts are unpadded.
"""

import copy
import sys

import pytest
import torch

from runtime.decoding.greedy import CHECKED_ROWS, CacheUnusable, greedy_decode
from submission import GPT, GPTConfig
from submission.utils import sample


def spread_model(**extra):
    """A tiny GPT, weights spread so that what a position sees shows."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(12, 40, n_layer=3, n_head=2, n_embd=16, **extra)).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.5)
    return model


def not_causal_perceiver():
    """A tiny perceiver whose attention sees every position, later ones included."""
    model = spread_model(perceiver=True, bottleneck_dim=8)
    for name, buffer in model.named_buffers():
        if name.endswith("mask"):
            buffer.fill_(1.0)
    return model


def test_a_model_that_is_not_causal_is_refused_when_only_the_shortest_prompt_is_padded(monkeypatch):
    monkeypatch.setitem(sys.modules, "runtime.decoding.perceiver_cache", None)  # the starter: no perceiver cache
    longest = [[3 + (row + i) % 8 for i in range(8)] + [2] for row in range(CHECKED_ROWS)]
    with pytest.raises(CacheUnusable):
        greedy_decode(not_causal_perceiver(), longest + [[5, 2]], 5)


PROMPTS = [[3 + (row + i) % 9 for i in range(length)] for row, length in enumerate((12, 3, 11, 10, 5, 9, 2))]
CHECKED_LENGTHS = (12, 11, 10, 9, 2)  # the four longest prompts, and the most padded one


def off_alone(model, length, offset):
    """A copy of `model` whose forward on one prompt of `length` alone adds `offset` to every logit."""
    forward = model.forward

    def forward_off(idx, *args, **kwargs):
        logits, loss = forward(idx, *args, **kwargs)
        return (logits + offset if idx.shape == (1, length) else logits), loss
    other = copy.deepcopy(model)
    other.forward = forward_off
    return other


@pytest.mark.parametrize("length", CHECKED_LENGTHS)
def test_each_checked_prompt_alone_is_compared_within_a_ten_thousandth(length):
    """Kills a check of fewer of the longest prompts, of the first rows rather than the longest, or with a
    tolerance that lets logits a thousandth apart through."""
    with pytest.raises(CacheUnusable):
        greedy_decode(off_alone(spread_model(), length, 1e-3), PROMPTS, 4)


def test_logits_that_differ_by_rounding_only_pass_the_check():
    """Kills a check stricter than the cache's rounding: every batch would fall back to the slow loop."""
    model = spread_model()
    expected = [sample(model, torch.tensor([prompt]), 4)[0].tolist() for prompt in PROMPTS]
    assert greedy_decode(off_alone(model, 12, 1e-5), PROMPTS, 4) == expected
