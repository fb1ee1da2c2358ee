"""
Part (h) of the RoPE editions, the rotary position embeddings: a probe that
observes the submission's precompute_rotary_emb, apply_rotary_emb and RoPE
model, and the judge that holds what it saw against the handout. With
theta_i = 10000^(-2(i-1)/d), i = 1..d/2, position t rotates the pair
(x_{2i-1}, x_{2i}) by the angle t * theta_i:

    cache[t, i] = (cos t theta_i, sin t theta_i)
    (x_{2i-1}, x_{2i}) -> (x_{2i-1} cos - x_{2i} sin, x_{2i-1} sin + x_{2i} cos)

so a rotation keeps each vector's norm, the score of a rotated query and key
depends on their positions only through the distance, and a shorter sequence
uses the first rows of the cache. The model has a rope_cache buffer, no
learnt position embedding, and stays causal; and on one token repeated its
logits are the same at every position: its only positions are the rotations
of queries and keys, which change where a position attends, but every
position's value is the same vector (a model that rotates the values too, or
embeds positions, fails). Behaviour is judged, not names: any layout of the
code that computes this passes.
"""

import random

from assignment.not_written_yet import part_of, reported

from grading.context import check

from grading.handout.models import CAUSALITY_POSITIONS, build_model
from grading.registry import probe

PART_H = part_of('initialize_rope_model')
DIM, POSITIONS = 8, 24  # a small head and sequence: the equations do not depend on the size
SIZE = dict(n_layer=2, n_head=2, n_embd=16, block_size=128, bottleneck_dim=4)
TOLERANCE = 1e-4  # float32 rounding of angles below POSITIONS radians


def handout_cache(torch, dim, positions):
    """The handout's cache, (positions, dim/2, 2), computed in float64."""
    t = torch.arange(positions, dtype=torch.float64)[:, None]
    theta = 10000.0 ** (-2 * torch.arange(dim // 2, dtype=torch.float64) / dim)
    return torch.stack([torch.cos(t * theta), torch.sin(t * theta)], dim=-1)


def handout_rotation(torch, x, cache):
    """x (..., T, dim) rotated as the handout says, with the first T rows of `cache`."""
    pairs = x.double().reshape(*x.shape[:-1], -1, 2)  # (..., T, dim/2, 2)
    cos, sin = cache[:x.shape[-2], :, 0], cache[:x.shape[-2], :, 1]
    first, second = pairs[..., 0], pairs[..., 1]
    return torch.stack([first * cos - second * sin, first * sin + second * cos], dim=-1).reshape(x.shape)


@probe
@reported
def rope_anatomy(sub, vocab_size, seed):
    """The submission's cache, rotations, scores by distance and RoPE model, as numbers to judge."""
    import torch
    torch.manual_seed(seed)
    cache = sub.precompute_rotary_emb(DIM, POSITIONS)
    want = handout_cache(torch, DIM, POSITIONS)
    seen = {"cache_shape": list(cache.shape)}
    seen["cache_error"] = float((cache.double() - want).abs().max()) if seen["cache_shape"] == list(want.shape) else None
    x = torch.randn(2, 3, POSITIONS, DIM)
    rotated = sub.apply_rotary_emb(x, want.float()).double()  # (2, 3, T, dim), with the handout's cache
    seen["rotation_error"] = float((rotated - handout_rotation(torch, x, want)).abs().max())
    seen["norm_error"] = float((rotated.norm(dim=-1) - x.double().norm(dim=-1)).abs().max())
    shorter = sub.apply_rotary_emb(x[:, :, :5], want.float()).double()
    seen["prefix_error"] = float((shorter - handout_rotation(torch, x[:, :, :5], want)).abs().max())
    q, k = torch.randn(DIM), torch.randn(DIM)
    rq = sub.apply_rotary_emb(q.expand(1, 1, POSITIONS, DIM).contiguous(), want.float())[0, 0].double()
    rk = sub.apply_rotary_emb(k.expand(1, 1, POSITIONS, DIM).contiguous(), want.float())[0, 0].double()
    scores = rq @ rk.T  # (T, T): score of the query at m and the key at n
    seen["distance_error"] = max(float((scores.diagonal(offset) - scores.diagonal(offset)[0]).abs().max())
                                 for offset in range(-POSITIONS + 1, POSITIONS))
    model, _ = build_model(sub, "rope", vocab_size, SIZE)
    model.eval()
    names = [name for name in model.state_dict()]
    seen["rope_cache"] = any(name.endswith("rope_cache") for name in names)
    seen["pos_emb"] = [name for name in names if "pos_emb" in name]
    rng = random.Random(seed)
    base = [rng.randrange(2, vocab_size) for _ in range(SIZE["block_size"])]
    with torch.no_grad():
        logits = model(torch.tensor([base]))[0]
        seen["drift"] = [float((logits[0, :j] - model(torch.tensor([base[:j] + [rng.randrange(2, vocab_size) for _ in
                                                                                   range(len(base) - j)]]))[0][0, :j])
                               .abs().max()) for j in CAUSALITY_POSITIONS]
        repeated = model(torch.full((1, SIZE["block_size"]), base[0]))[0][0]  # (T, vocab): one token everywhere
    seen["position_spread"] = float((repeated - repeated[0]).abs().max())
    return seen


def judge_rope(seen):
    """Hold the observations of rope_anatomy against the handout; returns a summary."""
    check(seen["cache_shape"] == [POSITIONS, DIM // 2, 2],
          f"{PART_H}: precompute_rotary_emb({DIM}, {POSITIONS}) has shape {tuple(seen['cache_shape'])}, not "
          f"({POSITIONS}, {DIM // 2}, 2)")
    check(seen["cache_error"] <= TOLERANCE,
          f"{PART_H}: precompute_rotary_emb is {seen['cache_error']:.3g} away from (cos t theta_i, sin t theta_i) "
          f"with theta_i = 10000^(-2(i-1)/d)")
    check(seen["rotation_error"] <= TOLERANCE,
          f"{PART_H}: apply_rotary_emb does not rotate each pair (x_2i-1, x_2i) by its position's angle "
          f"(off by {seen['rotation_error']:.3g})")
    check(seen["prefix_error"] <= TOLERANCE,
          f"{PART_H}: apply_rotary_emb on a sequence shorter than the cache does not use the cache's first rows")
    check(seen["norm_error"] <= TOLERANCE, f"{PART_H}: apply_rotary_emb changes the vectors' norms")
    check(seen["distance_error"] <= TOLERANCE,
          f"{PART_H}: a rotated query's score with a rotated key depends on more than their distance "
          f"(by up to {seen['distance_error']:.3g})")
    check(seen["rope_cache"], f"{PART_H}: the RoPE model has no rope_cache buffer in its state_dict")
    check(not seen["pos_emb"], f"{PART_H}: the RoPE model keeps a learnt position embedding ({', '.join(seen['pos_emb'])})")
    check(seen["position_spread"] <= TOLERANCE,
          f"{PART_H}: on one token repeated, the RoPE model's logits change with the position (by up to "
          f"{seen['position_spread']:.3g}): RoPE rotates the queries and keys only, not the values, and the "
          f"model embeds no position")
    check(max(seen["drift"]) <= TOLERANCE, f"{PART_H}: the RoPE model is not causal: changing later tokens moves "
                                           f"earlier logits by up to {max(seen['drift']):.3g}")
    return "the rotation, its relative positions and the RoPE model are the handout's"
