"""
The RoPE editions' judge of part (h) (src/grading/handout/rope.py), in-process:
the reference's rotation passes, and RoPE code a student could plausibly
hand in wrong is told in part (h)'s words: the exponent's sign flipped (as a
course docstring printed it), a rotation of the other handedness, the last
rows of the cache used for a short sequence, pairs taken as the two halves,
a model that keeps its learnt position embedding, and one that rotates the
values too.
"""

import types

import pytest
import torch

import submission
from submission import attention
from grading.context import TestFailure as Failed
from grading.handout import rope
from grading.handout.answers import answered


def judged(**replaced):
    """judge_rope of the reference with `replaced` functions put in; the failure's message, or 'pass'."""
    sub = types.SimpleNamespace(**{name: getattr(submission, name) for name in dir(submission)
                                   if not name.startswith("_")})
    for name, value in replaced.items():
        setattr(sub, name, value)
    try:
        rope.judge_rope(answered(rope.rope_anatomy(sub, vocab_size=40, seed=5)))
    except Failed as failure:
        return str(failure)
    return "pass"


def flipped_exponent(dim, positions):
    theta = 10000.0 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angles = torch.arange(positions, dtype=torch.float32)[:, None] * theta
    return torch.stack([torch.cos(angles), torch.sin(angles)], dim=-1)


def other_handedness(x, cache):
    return attention.apply_rotary_emb(x, cache * torch.tensor([1.0, -1.0]))


def last_rows(x, cache):
    return attention.apply_rotary_emb(x, cache[cache.shape[0] - x.shape[-2]:])


def halves(x, cache):
    """Pairs (x_i, x_{i + d/2}) instead of (x_{2i}, x_{2i + 1}): a rotation, by the wrong pairs."""
    d = x.shape[-1]
    interleaved = torch.stack([x[..., :d // 2], x[..., d // 2:]], dim=-1).flatten(-2)
    rotated = attention.apply_rotary_emb(interleaved, cache).unflatten(-1, (d // 2, 2))
    return torch.cat([rotated[..., 0], rotated[..., 1]], dim=-1)


def with_positions(mconf):
    """A RoPE model that also learns a position embedding."""
    model = submission.initialize_rope_model(mconf)
    model.pos_emb = torch.nn.Parameter(torch.zeros(1, mconf.block_size, mconf.n_embd))
    return model


class RotatedValues(torch.nn.Module):
    """An attention layer's value projection whose output is rotated by position, as q and k are."""

    def __init__(self, attn):
        super().__init__()
        self.value, self.n_head, self.cache = attn.value, attn.n_head, attn.rope_cache

    def forward(self, x):
        B, T, C = x.shape
        v = self.value(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        return attention.apply_rotary_emb(v, self.cache).transpose(1, 2).reshape(B, T, C)  # (B, T, C)


def with_rotated_values(mconf):
    """A RoPE model that rotates the values too."""
    model = submission.initialize_rope_model(mconf)
    for block in model.blocks:
        block.attn.value = RotatedValues(block.attn)
    return model


def test_the_references_rotation_is_the_handouts():
    assert judged() == "pass"


@pytest.mark.parametrize("replaced, told", [
    (dict(precompute_rotary_emb=flipped_exponent), "precompute_rotary_emb is"),
    (dict(apply_rotary_emb=other_handedness), "apply_rotary_emb does not rotate each pair"),
    (dict(apply_rotary_emb=last_rows), "does not use the cache's first rows"),
    (dict(apply_rotary_emb=halves), "apply_rotary_emb does not rotate each pair"),
    (dict(initialize_rope_model=lambda mconf: submission.GPT(mconf)), "the RoPE model has no rope_cache buffer"),
    (dict(initialize_rope_model=with_positions), "keeps a learnt position embedding (pos_emb)"),
    (dict(initialize_rope_model=with_rotated_values), "on one token repeated, the RoPE model's logits change"),
    (dict(initialize_rope_model=lambda mconf: None), "part (h): initialize_rope_model returned None"),
], ids=["exponent sign", "handedness", "last rows", "halves", "plain GPT", "learnt positions", "values rotated",
        "not written"])
def test_rope_code_handed_in_wrong_is_told_in_part_hs_words(replaced, told):
    message = judged(**replaced)
    assert message.startswith("part (h): ") and told in message, message


def polar_cache(dim, positions):
    """The cache by torch.polar, as a hand-in might build it."""
    theta = 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim)
    angles = torch.outer(torch.arange(positions).float(), theta)
    return torch.view_as_real(torch.polar(torch.ones_like(angles), angles))


def complex_rotation(x, cache):
    """Equation (3) in complex numbers, as the handout writes it."""
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
    turns = torch.view_as_complex(cache[:x.shape[-2]].contiguous())
    return torch.view_as_real(pairs * turns).flatten(-2).to(x.dtype)


def test_a_correct_rope_of_another_layout_passes():
    """Kills a judge that holds hand-ins to the reference's code rather than to the handout: the complex
    numbers of equation (3) and a cache by torch.polar are the same rotation."""
    assert judged(precompute_rotary_emb=polar_cache, apply_rotary_emb=complex_rotation) == "pass"
