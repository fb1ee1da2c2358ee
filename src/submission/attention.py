"""
Multi-head attention layers of the minGPT fork.

For each head i, with queries from X_q and keys and values from X_kv,

    Y_i = softmax( (X_q Q_i)(X_kv K_i)^T / sqrt(d/h) + M ) (X_kv V_i)        (1)
    Y   = [Y_1; ...; Y_h] A                                                  (2)

where M is 0 where a query may look at a key and -inf elsewhere (the lower
triangle: query row i sees key columns <= i). Self-attention is the case
X_q = X_kv = X.
"""

import math

import torch
import torch.nn as nn
from torch.nn import functional as F


def attend(q, k, v, mask, dropout, fused):
    """
    softmax(q k^T / sqrt(hs) masked) v for q (B, nh, Tq, hs), k and v
    (B, nh, Tk, hs), and a boolean mask (Tq, Tk) that is True where a query
    may look. The fused path calls PyTorch's scaled_dot_product_attention;
    the written-out path spells the equation out. Both drop attention
    weights with the probability of the `dropout` module while training.
    """
    if fused:
        p = dropout.p if dropout.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, nh, Tq, Tk)
    att = att.masked_fill(~mask, float('-inf'))
    att = F.softmax(att, dim=-1)
    att = dropout(att)
    return att @ v  # (B, nh, Tq, hs)


class MultiHeadAttention(nn.Module):
    """
    The parts both attention layers share: key, query and value projections
    for all heads, attention and residual dropout, the output projection A
    of equation (2), and a lower-triangular mask of block_size x block_size.
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

    def heads(self, linear, x):
        """Project x (B, T, d) with `linear` and split it into heads: (B, nh, T, hs)."""
        B, T, C = x.size()
        return linear(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)

    def attend_and_project(self, q, k, v):
        """Equations (1) and (2): q (B, nh, Tq, hs), k and v (B, nh, Tk, hs) -> (B, Tq, d)."""
        B, nh, Tq, hs = q.size()
        mask = self.mask[0, 0, :Tq, :k.size(2)].bool()  # (Tq, Tk)
        y = attend(q, k, v, mask, self.attn_drop, self.fused)  # (B, nh, Tq, hs)
        y = y.transpose(1, 2).contiguous().view(B, Tq, nh * hs)  # re-assemble all head outputs side by side
        return self.resid_drop(self.proj(y))


class CausalSelfAttention(MultiHeadAttention):
    """
    A vanilla multi-head masked self-attention layer with a projection at the
    end: equations (1) and (2) with X_q = X_kv = X and a causal mask.
    """

    def forward(self, x):
        k = self.heads(self.key, x)    # (B, nh, T, hs)
        q = self.heads(self.query, x)  # (B, nh, T, hs)
        v = self.heads(self.value, x)  # (B, nh, T, hs)
        return self.attend_and_project(q, k, v)  # (B, T, d)


class CausalCrossAttention(MultiHeadAttention):
    """
    Causal cross-attention: equations (1) and (2) with keys and values from
    x_kv (B, T_k, d) and queries from x_q (B, T_q, d). The mask is the
    lower triangle cut to [:T_q, :T_k], so query row i sees key columns
    <= i. Either input may have a batch of 1; it is broadcast against the
    other's batch.
    """

    def forward(self, x_kv, x_q):
        B = max(x_kv.size(0), x_q.size(0))
        k = self.heads(self.key, x_kv).expand(B, -1, -1, -1)    # (B, nh, Tk, hs)
        q = self.heads(self.query, x_q).expand(B, -1, -1, -1)   # (B, nh, Tq, hs)
        v = self.heads(self.value, x_kv).expand(B, -1, -1, -1)  # (B, nh, Tk, hs)
        return self.attend_and_project(q, k, v)  # (B, Tq, d)
