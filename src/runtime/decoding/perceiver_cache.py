"""
Greedy decoding's key/value cache for the perceiver GPT (vanilla_cache.py has
the vanilla one, kv_cache.py the shared pieces, greedy.py the loop).

Perceiver (m latents): latent j of the down block attends to inputs 0..j
(query row j sees key columns <= j), and the middle blocks are causal over
the latents, so latent j is final as soon as input j exists; position t of
the up block attends to latents 0..min(t, m-1). So for t < m the new latent
t is computed from a cache of the down block's keys/values over the inputs
and the middle blocks' caches over the latents, and its up-block key/value
is cached; for t >= m every latent is final and a step only computes the
up block's query row t.
"""

import torch

from .kv_cache import KVCache, attend_cached, attention_and_mlp, heads


def cached_block(block, cache, x, positions, rows=None):
    """Block.forward for the new positions (B_r, n) of the rows `rows` only, x (B_r, n, d)."""
    h = block.ln1(x)
    k, v = cache.add(h, positions, rows)
    return attention_and_mlp(block, x, h, k, v, positions)


class PerceiverCache:
    """
    A cache for a perceiver GPT: the down block's keys/values over inputs
    0..m-1, one KVCache per middle block over the latents, and the up
    block's keys/values over the latents, all by position.
    """

    def __init__(self, model, lengths, steps):
        down, up = model.down_block, model.up_block
        batch, device = len(lengths), model.pos_emb.device
        self.model = model
        self.lengths = lengths  # (B,) prompt lengths
        self.m = down.C.size(1)
        self.down_q = heads(down.attn, down.attn.query, down.ln1(down.C))  # (1, nh, m, hs): fixed queries
        self.down = KVCache(down.attn, batch, self.m, device)
        self.middle = [KVCache(block.attn, batch, self.m, device) for block in model.blocks]
        self.up = KVCache(up.attn, batch, self.m, device)
        self.generated = 0  # tokens entered after the prompt

    def keep(self, rows):
        """Keep only the rows `rows` (an index tensor), in that order."""
        self.lengths = self.lengths[rows]
        for cache in [self.down, *self.middle, self.up]:
            cache.keep(rows)

    def add_latents(self, x, positions, rows=None):
        """
        The latents at `positions` (R, p) (all < m) of the rows `rows` (every
        row if None), from their inputs x (R, p, d): the down block and the
        middle blocks for those latents only, then the up block's keys and
        values of them.
        """
        model, down = self.model, self.model.down_block
        k, v = self.down.add(x, positions, rows)
        q = self.down_q[0][:, positions].transpose(0, 1)  # (R, nh, p, hs)
        y = down.C[0, positions] + attend_cached(down.attn, q, k, v, positions)  # (R, p, d)
        y = y + down.mlp(down.ln2(y))
        for block, cache in zip(model.blocks, self.middle):
            y = cached_block(block, cache, y, positions, rows)
        self.up.add(model.up_block.ln1(y), positions, rows)

    def up_row(self, x, positions):
        """The up block, ln_f and head for one position a row: x (B, 1, d) at positions (B,) -> logits (B, vocab)."""
        model, up = self.model, self.model.up_block
        latents = positions.clamp(max=self.m - 1)[:, None]  # position t sees latents 0..min(t, m-1)
        x = attention_and_mlp(up, x, x, self.up.k, self.up.v, latents)  # the up block's queries come from x itself
        return model.head(model.ln_f(x[:, 0]))

    def prefill(self, idx):
        """As VanillaCache.prefill: latents 0..min(W, m)-1 of every row, then
        the up block at each row's last prompt position."""
        model, (B, W) = self.model, idx.size()
        x = model.tok_emb(idx) + model.pos_emb[:, :W]  # (B, W, d)
        positions = torch.arange(W, device=idx.device).expand(B, W)
        self.add_latents(x[:, :self.m], positions[:, :self.m])
        last = self.lengths - 1
        return self.up_row(x[torch.arange(B, device=idx.device), last][:, None], last)

    def step(self, tokens):
        """As VanillaCache.step: a new latent for each row whose new position is below m, then the up block."""
        model, B = self.model, tokens.size(0)
        positions = self.lengths + self.generated  # (B,)
        self.generated += 1
        x = model.tok_emb(tokens[:, None]) + model.pos_emb[0, positions][:, None]  # (B, 1, d)
        rows = (positions < self.m).nonzero()[:, 0]  # the rows whose new position makes a new latent
        if len(rows) == B:
            self.add_latents(x, positions[:, None])
        elif len(rows):
            self.add_latents(x[rows], positions[rows, None], rows)
        return self.up_row(x, positions)
