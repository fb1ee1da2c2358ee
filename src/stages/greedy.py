"""
Greedy decoding of many prompts at once, with the key/value cache of the
model's variant: VanillaCache (cached_gpt.py) or PerceiverCache
(cached_perceiver.py, which the student starter leaves out: it writes out
the blocks of part (g); without it greedy_decode raises CacheUnusable for a
perceiver, and decoding.py answers with the plain loop).

At each step every unfinished row takes

    token = argmax softmax(logits)   (as sample(..., sample=False) does)
"""

import torch
from torch.nn import functional as F

from .cached_gpt import VanillaCache


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
        from .cached_perceiver import PerceiverCache
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
