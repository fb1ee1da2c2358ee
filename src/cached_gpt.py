"""
Greedy decoding with a key/value cache, for both GPTs of the assignment.

submission.utils.sample runs the whole sequence through the model for every
new character. Here each position is computed once, for many prompts in one
batch: the model's own modules and weights are applied to the new positions
only, and what later positions read from earlier ones is kept in caches.

Vanilla: in block l, position t attends to k_j, v_j for j <= t, so caches
K_l, V_l (B, nh, S, hs) hold them; a new token adds its k_t, v_t and only
its own query row is computed.

The perceiver's cache is in cached_perceiver.py, which the student starter
leaves out (it writes out the blocks of part (g)); without it a perceiver is
answered by the plain loop.

Prompts of different lengths are right-padded (positions are absolute, so
no left padding); each row has its own current position, and a row never
attends to a cache entry it has not written. The logits equal the model's
at each row's position up to floating-point rounding.
"""

import torch
from torch.nn import functional as F

from submission.attention import attend


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
    y = attend(q, k_cache[:, :, :width], v_cache[:, :, :width], causal_mask(positions, width),
               attn.attn_drop, attn.fused)  # (B, nh, n, hs)
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
        write(k, positions, attn.heads(attn.key, x))
        write(v, positions, attn.heads(attn.value, x))
        if rows is not None:
            self.k[rows], self.v[rows] = k, v
        return k, v

    def put(self, h, start):
        """Write the keys and values of h (B or 1, n, d) into slots start..start+n-1 of every row."""
        attn, n = self.attn, h.size(1)
        self.k[:, :, start:start + n] = attn.heads(attn.key, h)
        self.v[:, :, start:start + n] = attn.heads(attn.value, h)

    def keep(self, rows):
        """Keep only the rows `rows` (an index tensor), in that order."""
        self.k, self.v = self.k[rows], self.v[rows]


def attention_and_mlp(block, x, h, k, v, positions):
    """The rest of Block.forward once h = ln1(x) (B, n, d) is known: x plus the attention of h's
    queries at `positions` (B, n) over the keys and values k, v (B, nh, S, hs), then plus the MLP."""
    x = x + attend_cached(block.attn, block.attn.heads(block.attn.query, h), k, v, positions)
    return x + block.mlp(block.ln2(x))


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
        device = model.pos_emb.device
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
        x = model.tok_emb(idx[:, shared:]) + model.pos_emb[:, shared:W]  # (B, W - P, d)
        prefix = model.tok_emb(idx[:1, :shared]) + model.pos_emb[:, :shared]  # (1, P, d)
        for number, (block, cache) in enumerate(zip(model.blocks, self.caches)):
            if shared:
                h = block.ln1(prefix)
                cache.put(h, 0)
                if number < len(self.caches) - 1:  # the next block needs the prefix's output
                    prefix = attention_and_mlp(block, prefix, h, cache.k[:1], cache.v[:1], prefix_positions)
            h = block.ln1(x)
            cache.put(h, shared)
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
        x = model.tok_emb(tokens[:, None]) + model.pos_emb[0, positions][:, None]  # (B, 1, d)
        slots = torch.arange(slot + 1, device=tokens.device)
        mask = ((slots < self.lengths[:, None]) | (slots >= W))[:, None, None]  # (B, 1, 1, slot + 1)
        for block, cache in zip(model.blocks, self.caches):
            attn, h = block.attn, block.ln1(x)
            cache.put(h, slot)
            y = attend(attn.heads(attn.query, h), cache.k[:, :, :slot + 1], cache.v[:, :, :slot + 1], mask,
                       attn.attn_drop, attn.fused)  # (B, nh, 1, hs)
            x = x + attn.proj(y.transpose(1, 2).reshape(B, 1, -1))
            x = x + block.mlp(block.ln2(x))
        return model.head(model.ln_f(x[:, 0]))


CHECKED_ROWS = 4


class CacheUnusable(Exception):
    """No cache here computes this model: its blocks are not the ones the
    cache computes, so the cache's first logits differ from the model's own
    forward (say, a student's perceiver with other layer names or another
    LayerNorm placement), or it is a perceiver and this copy has no
    cached_perceiver.py."""


def cache_class(model):
    """The cache for the model's variant, or None where this copy has none."""
    if not model.perceiver:
        return VanillaCache
    try:
        from cached_perceiver import PerceiverCache
    except ImportError:
        return None
    return PerceiverCache


def greedy_next(logits):
    """The most likely next token (B,), chosen as sample(sample=False) does: softmax, then topk."""
    _, ix = torch.topk(F.softmax(logits, dim=-1), k=1, dim=-1)
    return ix[:, 0]


@torch.inference_mode()
def greedy_decode(model, prompts, steps, stop=None):
    """
    Greedily extend each prompt (a list of token ids; len + steps - 1 <=
    block_size, so that sample would never crop) by `steps` tokens, all rows
    in one batch. Returns the completed id lists, equal to
    sample(model, prompt, steps)[0] up to ties within floating-point rounding.
    With a `stop` token id, a row ends at the first `stop` it generates (what
    it would write after that cannot change what comes before), and rows
    that ended are dropped from the batch once they are a quarter of it.
    Raises CacheUnusable when there is no cache for the model's variant, or
    when the cache's first logits are not the model's, compared on the
    CHECKED_ROWS longest prompts (a block that computes something else shows
    in any row; the longest prompts reach furthest).
    """
    model.eval()
    device = model.pos_emb.device
    lengths = torch.tensor([len(p) for p in prompts], device=device)  # (B,)
    width = int(lengths.max())
    assert width + steps - 1 <= model.get_block_size(), "a prompt this long needs cropping: use sample"
    idx = torch.zeros(len(prompts), width, dtype=torch.long, device=device)  # right-padded with PAD
    for row, prompt in enumerate(prompts):
        idx[row, :len(prompt)] = torch.tensor(prompt, dtype=torch.long)
    cache_type = cache_class(model)
    if cache_type is None:
        raise CacheUnusable("no key/value cache for this variant in this copy")
    cache = cache_type(model, lengths, steps)
    generated = torch.zeros(len(prompts), steps, dtype=torch.long, device=device)  # (B, steps)
    ends = torch.full((len(prompts),), steps, device=device)  # how many generated tokens each row keeps
    rows = torch.arange(len(prompts), device=device)  # the prompt of each row of the cache
    done = torch.zeros(len(prompts), dtype=torch.bool, device=device)
    logits = cache.prefill(idx)  # (B, vocab)
    checked = lengths.topk(min(CHECKED_ROWS, len(prompts))).indices  # (C,) the longest prompts
    full = model(idx[checked])[0][torch.arange(len(checked), device=device), lengths[checked] - 1]  # (C, vocab)
    if not torch.allclose(logits[checked], full, rtol=1e-4, atol=1e-4):  # right padding is causal-safe
        raise CacheUnusable("cached logits differ from the model's forward")
    for step in range(steps):
        tokens = greedy_next(logits)  # (B_alive,)
        generated[rows, step] = tokens
        if stop is not None:
            ended = ~done & (tokens == stop)
            ends[rows[ended]] = step + 1
            done |= ended
            if bool(done.all()):
                break
            if int(done.sum()) * 4 >= len(done):
                alive = (~done).nonzero()[:, 0]
                cache.keep(alive)
                rows, tokens, done = rows[alive], tokens[alive], done[alive]
        if step < steps - 1:
            logits = cache.step(tokens)
    return [list(prompt) + kept[:end] for prompt, kept, end in zip(prompts, generated.tolist(), ends.tolist())]
