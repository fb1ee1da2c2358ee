"""
Greedy decoding's key/value cache for the vanilla GPT (kv_cache.py has the
shared pieces, greedy.py the decoding loop).

In block l, position t attends to k_j, v_j for j <= t, so caches
K_l, V_l (B, nh, S, hs) hold them; a new token adds its k_t, v_t and only
its own query row is computed. The logits equal the model's at each row's
position up to floating-point rounding. The RoPE model (no pos_emb) is the
same GPT with its positions in the rotation of each query and key, which the
cache applies at each one's absolute position.
"""

import torch

from .kv_cache import KVCache, attend, attention_and_mlp, heads, rotate, shared_prefix


def embed(model, tokens, positions):
    """The stem before dropout: token embeddings (B, n, d) of tokens (B, n) at positions (B or 1, n), plus the
    learnt position embeddings where the model has them (a RoPE model has none)."""
    x = model.tok_emb(tokens)
    return x if getattr(model, 'rope', False) else x + model.pos_emb[0, positions]


class VanillaCache:
    """
    A cache for a vanilla GPT. The keys and values of block l are kept in
    slots: the prompt's positions 0..W-1 in slots 0..W-1 (a row's slots past
    its own prompt hold padding and are never attended to), and the token
    generated at step s in slot W + s for every row, whatever its position.
    Attention does not depend on the order of the keys, so only the mask
    needs the row's prompt length.
    """

    def __init__(self, model, lengths, steps):
        self.model = model
        self.lengths = lengths  # (B,) prompt lengths
        self.width = int(lengths.max())  # W
        size = self.width + steps - 1
        device = model.tok_emb.weight.device
        self.caches = [KVCache(block.attn, len(lengths), size, device) for block in model.blocks]
        self.generated = 0  # tokens entered after the prompt

    def keep(self, rows):
        """Keep only the rows `rows` (an index tensor), in that order."""
        self.lengths = self.lengths[rows]
        for cache in self.caches:
            cache.keep(rows)

    def prefill(self, idx):
        """The prompts idx (B, W), right-padded, enter the cache; returns the
        logits (B, vocab) after each row's last prompt token. The first P
        positions, equal in every row ("Where was "), are computed once and
        their keys and values copied to every row; the last block computes
        only the rows' last queries."""
        model, B, W = self.model, idx.size(0), self.width
        shared = shared_prefix(idx, self.lengths)  # P
        prefix_positions = torch.arange(shared, device=idx.device)[None]  # (1, P)
        own = torch.arange(shared, W, device=idx.device).expand(B, W - shared)  # (B, W - P)
        last = (self.lengths - 1)[:, None]  # (B, 1)
        x = embed(model, idx[:, shared:], own[:1])  # (B, W - P, d)
        prefix = embed(model, idx[:1, :shared], prefix_positions)  # (1, P, d)
        for number, (block, cache) in enumerate(zip(model.blocks, self.caches)):
            if shared:
                h = block.ln1(prefix)
                cache.put(h, 0, prefix_positions)
                if number < len(self.caches) - 1:  # the next block needs the prefix's output
                    prefix = attention_and_mlp(block, prefix, h, cache.k[:1], cache.v[:1], prefix_positions)
            h = block.ln1(x)
            cache.put(h, shared, own[:1])
            positions = own
            if number == len(self.caches) - 1:
                rows = torch.arange(B, device=idx.device)[:, None]
                x, h, positions = x[rows, last - shared], h[rows, last - shared], last
            x = attention_and_mlp(block, x, h, cache.k, cache.v, positions)
        return model.head(model.ln_f(x[:, 0]))

    def step(self, tokens):
        """The tokens (B,) just generated enter the cache at each row's next
        position (slot W + step); returns the logits (B, vocab) after them."""
        model, B, W = self.model, tokens.size(0), self.width
        positions = self.lengths + self.generated  # (B,)
        slot = W + self.generated
        self.generated += 1
        x = embed(model, tokens[:, None], positions[:, None])  # (B, 1, d)
        slots = torch.arange(slot + 1, device=tokens.device)
        mask = ((slots < self.lengths[:, None]) | (slots >= W))[:, None, None]  # (B, 1, 1, slot + 1)
        for block, cache in zip(model.blocks, self.caches):
            attn, h = block.attn, block.ln1(x)
            cache.put(h, slot, positions[:, None])
            q = rotate(attn, heads(attn, attn.query, h), positions[:, None])  # (B, nh, 1, hs)
            y = attend(attn, q, cache.k[:, :, :slot + 1], cache.v[:, :, :slot + 1], mask)  # (B, nh, 1, hs)
            x = x + attn.proj(y.transpose(1, 2).reshape(B, 1, -1))
            x = x + block.mlp(block.ln2(x))
        return model.head(model.ln_f(x[:, 0]))
