"""
The pieces of key/value-cached decoding that both GPTs share.

submission.utils.sample runs the whole sequence through the model for every
new character. The caches (vanilla_cache.py for the vanilla GPT,
perceiver_cache.py for the perceiver) compute each position once, for many
prompts in one batch: the model's own modules and weights are applied to the
new positions only, and what later positions read from earlier ones is kept
here. An attention layer's cache holds, for every row, the keys and values

    K, V (B, nh, S, hs),   K[b, :, s] = key(ln1(x_b))[s]

and a query row i at position p_i attends to the slots s <= p_i:

    y_i = proj(softmax(q_i K^T / sqrt(hs) + mask_i) V)

Prompts of different lengths are right-padded (positions are absolute, so
no left padding); each row has its own current position, and a row never
attends to a cache entry it has not written. In a layer with rotary position
embeddings (a `rope_cache` buffer), each query and key is rotated at its
position (equation (3) of submission/attention.py) before it is used or kept.
"""

import math

import torch
from torch.nn import functional as F


def heads(attn, linear, x):
    """Project x (B, T, d) with `linear`, one of attention layer attn's, and split it into heads: (B, nh, T, hs)."""
    B, T, C = x.size()
    return linear(x).view(B, T, attn.n_head, C // attn.n_head).transpose(1, 2)


def rotate(attn, x, positions):
    """
    x (B, nh, n, hs) rotated by equation (3) of submission/attention.py at
    positions (B or 1, n), each row at its own, when layer attn has a
    rope_cache; x itself otherwise. Pair i (a, b) at position t becomes
    (a cos t theta_i - b sin t theta_i, a sin t theta_i + b cos t theta_i).
    """
    rope_cache = getattr(attn, 'rope_cache', None)  # (block_size, hs/2, 2)
    if rope_cache is None:
        return x
    cos, sin = rope_cache[positions][:, None].unbind(-1)  # (B, 1, n, hs/2) each
    a, b = x[..., 0::2], x[..., 1::2]  # (B, nh, n, hs/2) each
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)  # (B, nh, n, hs)


def attend(attn, q, k, v, mask):
    """
    Equation (1) of submission/attention.py as attention layer `attn` computes
    it (fused or written out): q (B, nh, Tq, hs), k and v (B, nh, Tk, hs), a
    boolean mask that is True where a query may look -> (B, nh, Tq, hs).
    Decoding runs the model in eval mode, so there is no dropout.
    """
    if attn.fused:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, nh, Tq, Tk)
    att = F.softmax(att.masked_fill(~mask, float('-inf')), dim=-1)
    return att @ v


def write(cache, positions, values):
    """cache[b, :, positions[b, i]] = values[b, :, i] for cache (B, nh, S, hs),
    positions (B, n) and values (B, nh, n, hs)."""
    index = positions[:, None, :, None].expand(-1, cache.size(1), -1, cache.size(3))
    cache.scatter_(2, index, values)


def causal_mask(positions, width):
    """(B, 1, n, width) boolean: query i of row b may look at key j iff j <= positions[b, i]."""
    keys = torch.arange(width, device=positions.device)
    return (keys[None, None, :] <= positions[:, :, None])[:, None]


def attend_cached(attn, q, k_cache, v_cache, positions):
    """Queries q (B, nh, n, hs) at `positions` (B, n) against the cached keys
    and values up to the furthest position, projected by attn.proj: (B, n, d)."""
    width = int(positions.max()) + 1
    y = attend(attn, q, k_cache[:, :, :width], v_cache[:, :, :width], causal_mask(positions, width))  # (B, nh, n, hs)
    B, nh, n, hs = y.size()
    return attn.proj(y.transpose(1, 2).reshape(B, n, nh * hs))


def shared_prefix(idx, lengths):
    """How many leading columns of idx (B, W) are the same in every row and
    inside every prompt, short of each prompt's last token."""
    same = (idx == idx[:1]).all(dim=0)  # (W,)
    inside = torch.arange(idx.size(1), device=idx.device) < int(lengths.min()) - 1
    return int((~(same & inside)).nonzero()[0])  # column W - 1 is never inside


class KVCache:
    """The keys and values (B, nh, S, hs) of one attention layer, zeros where none was written yet."""

    def __init__(self, attn, batch, length, device):
        shape = (batch, attn.n_head, length, attn.key.out_features // attn.n_head)
        self.attn = attn
        self.k = torch.zeros(shape, device=device, dtype=attn.key.weight.dtype)
        self.v = torch.zeros(shape, device=device, dtype=attn.key.weight.dtype)

    def add(self, x, positions, rows=None):
        """Write the keys and values of x (B_r, n, d) at positions (B_r, n) of
        the rows `rows` (every row if None); return those rows' k, v (B_r, nh, S, hs)."""
        attn = self.attn
        k, v = (self.k, self.v) if rows is None else (self.k[rows], self.v[rows])
        write(k, positions, rotate(attn, heads(attn, attn.key, x), positions))
        write(v, positions, heads(attn, attn.value, x))
        if rows is not None:
            self.k[rows], self.v[rows] = k, v
        return k, v

    def put(self, h, start, positions):
        """Write the keys and values of h (B or 1, n, d), at positions (B or 1, n), into slots
        start..start+n-1 of every row."""
        attn, n = self.attn, h.size(1)
        self.k[:, :, start:start + n] = rotate(attn, heads(attn, attn.key, h), positions)
        self.v[:, :, start:start + n] = heads(attn, attn.value, h)

    def keep(self, rows):
        """Keep only the rows `rows` (an index tensor), in that order."""
        self.k, self.v = self.k[rows], self.v[rows]


def attention_and_mlp(block, x, h, k, v, positions):
    """The rest of Block.forward once h = ln1(x) (B, n, d) is known: x plus the attention of h's
    queries at `positions` (B, n) over the keys and values k, v (B, nh, S, hs), then plus the MLP."""
    q = rotate(block.attn, heads(block.attn, block.attn.query, h), positions)  # (B, nh, n, hs)
    x = x + attend_cached(block.attn, q, k, v, positions)
    return x + block.mlp(block.ln2(x))

