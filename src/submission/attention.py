"""
Multi-head attention layers of the minGPT fork.

For each head i, with queries from X_q and keys and values from X_kv,

    Y_i = softmax( (X_q Q_i)(X_kv K_i)^T / sqrt(d/h) + M ) (X_kv V_i)        (1)
    Y   = [Y_1; ...; Y_h] A                                                  (2)

where M is 0 where a query may look at a key and -inf elsewhere (the lower
triangle: query row i sees key columns <= i). Self-attention is the case
X_q = X_kv = X.

Each layer computes (1) with PyTorch's fused scaled_dot_product_attention
when config.fused_attention is set (the default: the same numbers, faster),
and as it is written out below otherwise.
Part of a fork of Andrej Karpathy's minGPT (MIT licence; see LICENSE).
"""

import math

import torch
import torch.nn as nn
from torch.nn import functional as F


### EDITION rope ###
def precompute_rotary_emb(dim, max_positions):
    """
    [part h] Rotary position embeddings rotate the queries and keys of each head by their positions
    before (1): for a head of size d, pair i = 1..d/2 of the vector at position t, (x_{2i-1}, x_{2i}),
    read as the complex number x_{2i-1} + j x_{2i}, becomes

        (x_{2i-1} + j x_{2i}) (cos t theta_i + j sin t theta_i),   theta_i = 10000^(-2(i-1)/d)     (3)

    so the score of a query at position t and a key at position s depends on t - s only; the values
    are not rotated. This function returns the cosines and sines of (3) for a head of size `dim` (even)
    at the positions t = 0 .. max_positions - 1: a tensor of shape (max_positions, dim / 2, 2) with

        [t, i, 0] = cos(t theta_i),   [t, i, 1] = sin(t theta_i),   theta_i = 10000^(-2i/dim), i = 0 .. dim/2 - 1

    (i counted from 0 here, from 1 in equation (3)).
    """
    rope_cache = None
    ### START_CODE_HERE ###
    theta = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)  # (dim/2,)
    angles = torch.arange(max_positions, dtype=torch.float32)[:, None] * theta[None, :]  # (max_positions, dim/2)
    rope_cache = torch.stack([torch.cos(angles), torch.sin(angles)], dim=-1)  # (max_positions, dim/2, 2)
    ### END_CODE_HERE ###
    return rope_cache


def apply_rotary_emb(x, rope_cache):
    """
    [part h] Equation (3): rotate x (..., T, dim), the vectors at positions 0 .. T - 1, with the first T
    rows of rope_cache (max_positions, dim / 2, 2); returns a tensor of x's shape. In real numbers, pair i
    (a, b) = (x[..., 2i], x[..., 2i + 1]) at position t becomes

        (a cos t theta_i - b sin t theta_i,   a sin t theta_i + b cos t theta_i).
    """
    rotated_x = None
    ### START_CODE_HERE ###
    T = x.size(-2)
    cos, sin = rope_cache[:T, :, 0], rope_cache[:T, :, 1]  # (T, dim/2) each
    a, b = x[..., 0::2], x[..., 1::2]  # (..., T, dim/2) each
    rotated_pairs = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1)  # (..., T, dim/2, 2)
    rotated_x = rotated_pairs.flatten(-2)  # (..., T, dim)
    ### END_CODE_HERE ###
    return rotated_x


### END_EDITION ###
class CausalSelfAttention(nn.Module):
    """
    A vanilla multi-head masked self-attention layer with a projection at the end:
    equations (1) and (2) with X_q = X_kv = X.
    """

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # key, query, value projections for all heads
        self.key = nn.Linear(config.n_embd, config.n_embd)
        self.query = nn.Linear(config.n_embd, config.n_embd)
        self.value = nn.Linear(config.n_embd, config.n_embd)
        # regularization
        self.attn_drop = nn.Dropout(config.attn_pdrop)
        self.resid_drop = nn.Dropout(config.resid_pdrop)
        # output projection
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        # causal mask to ensure that attention is only applied to the left in the input sequence
        self.register_buffer("mask", torch.tril(torch.ones(config.block_size, config.block_size))
                                     .view(1, 1, config.block_size, config.block_size))
        self.n_head = config.n_head
        self.fused = getattr(config, 'fused_attention', True)
        ### EDITION rope ###

        self.rope = config.rope
        if self.rope:
            assert (config.n_embd // config.n_head) % 2 == 0
            # [part h] the rotations of equation (3) for a head's size at positions 0 .. block_size - 1, kept
            # as a buffer named rope_cache (so that it moves with the model and is in its state_dict)
            ### START_CODE_HERE ###
            self.register_buffer("rope_cache", precompute_rotary_emb(config.n_embd // config.n_head,
                                                                     config.block_size))
            ### END_CODE_HERE ###
        ### END_EDITION ###

    def forward(self, x):
        B, T, C = x.size()

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        k = self.key(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)    # (B, nh, T, hs)
        q = self.query(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = self.value(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        ### EDITION rope ###

        if self.rope:
            # [part h] rotate the queries and the keys (not the values) by their positions: equation (3)
            ### START_CODE_HERE ###
            q = apply_rotary_emb(q, self.rope_cache)  # (B, nh, T, hs)
            k = apply_rotary_emb(k, self.rope_cache)  # (B, nh, T, hs)
            ### END_CODE_HERE ###
        ### END_EDITION ###

        # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        mask = self.mask[:, :, :T, :T].bool()  # (1, 1, T, T)
        if self.fused:
            dropout = self.attn_drop.p if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)  # (B, nh, T, hs)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, nh, T, T)
            att = att.masked_fill(~mask, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_drop(att)
            y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side

        # output projection
        y = self.resid_drop(self.proj(y))  # (B, T, C)
        return y


class CausalCrossAttention(CausalSelfAttention):
    """
    ### EDITION perceiver ###
    [part g] Given: the layer the perceiver's DownProjectBlock and
    UpProjectBlock (model.py) attend with.

    ### END_EDITION ###
    Causal cross-attention, with the layers of CausalSelfAttention: equations
    (1) and (2) with keys and values from x_kv (B, T_k, d), the first
    argument, and queries from x_q (B, T_q, d), the second; the output has
    T_q positions. The mask is the lower triangle cut to [:T_q, :T_k], so
    query row i sees key columns <= i. Either input may have a batch of 1; it
    is broadcast against the other's batch.
    """

    def forward(self, x_kv, x_q):
        Bk, Tk, Ck = x_kv.size()
        Bq, Tq, Cq = x_q.size()
        B = max(Bk, Bq)

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim;
        # a batch of 1 is broadcast against the other input's batch
        k = self.key(x_kv).view(Bk, Tk, self.n_head, Ck // self.n_head).transpose(1, 2)  # (Bk, nh, Tk, hs)
        q = self.query(x_q).view(Bq, Tq, self.n_head, Cq // self.n_head).transpose(1, 2)  # (Bq, nh, Tq, hs)
        v = self.value(x_kv).view(Bk, Tk, self.n_head, Ck // self.n_head).transpose(1, 2)  # (Bk, nh, Tk, hs)
        k, q, v = k.expand(B, -1, -1, -1), q.expand(B, -1, -1, -1), v.expand(B, -1, -1, -1)

        # causal cross-attention: (B, nh, Tq, hs) x (B, nh, hs, Tk) -> (B, nh, Tq, Tk)
        mask = self.mask[:, :, :Tq, :Tk].bool()  # (1, 1, Tq, Tk)
        if self.fused:
            dropout = self.attn_drop.p if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)  # (B, nh, Tq, hs)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, nh, Tq, Tk)
            att = att.masked_fill(~mask, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_drop(att)
            y = att @ v  # (B, nh, Tq, Tk) x (B, nh, Tk, hs) -> (B, nh, Tq, hs)
        y = y.transpose(1, 2).contiguous().view(B, Tq, Cq)  # re-assemble all head outputs side by side

        # output projection
        y = self.resid_drop(self.proj(y))  # (B, Tq, C)
        return y
