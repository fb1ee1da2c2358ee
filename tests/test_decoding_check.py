"""
The check before batched decoding (src/runtime/decoding/greedy.py): the batch's first
logits are compared with the model's forward on single prompts, the most
padded one among them. Where the batch is decoded without a cache (the
starter's perceiver), the model itself runs on the padded batch: a model
that is not causal then shows only in padded rows, so it must be refused
even when the batch's longest prompts are unpadded.
"""

import sys

import pytest
import torch

from runtime.decoding.greedy import CHECKED_ROWS, CacheUnusable, greedy_decode
from submission import GPT, GPTConfig


def not_causal_perceiver():
    """A tiny perceiver, weights spread so that what a position sees shows, whose attention sees
    every position, later ones included."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(12, 40, n_layer=3, n_head=2, n_embd=16, perceiver=True, bottleneck_dim=8)).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.5)
    for name, buffer in model.named_buffers():
        if name.endswith("mask"):
            buffer.fill_(1.0)
    return model


def test_a_model_that_is_not_causal_is_refused_when_only_the_shortest_prompt_is_padded(monkeypatch):
    monkeypatch.setitem(sys.modules, "runtime.decoding.perceiver_cache", None)  # the starter: no perceiver cache
    longest = [[3 + (row + i) % 8 for i in range(8)] + [2] for row in range(CHECKED_ROWS)]
    with pytest.raises(CacheUnusable):
        greedy_decode(not_causal_perceiver(), longest + [[5, 2]], 5)
