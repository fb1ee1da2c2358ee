"""
Greedy decoding of many prompts at once, with the key/value cache of the
model's variant: VanillaCache (vanilla_cache.py) or PerceiverCache
(perceiver_cache.py, which the student starter leaves out: it writes out
the blocks of part (g); without it a perceiver is decoded in batches by
Recompute, the whole sequence at every step, with the same answers).

At each step every unfinished row takes

    token = argmax softmax(logits)   (as sample(..., sample=False) does)
"""

import torch
from torch.nn import functional as F

from .vanilla_cache import VanillaCache


CHECKED_ROWS = 4


class CacheUnusable(Exception):
    """Batched decoding would not give this model's answers: the cache's
    blocks are not the model's (say, a student's perceiver with other layer
    names or another LayerNorm placement), or the model is not causal, so
    padding a prompt changes its logits."""


class Recompute:
    """
    The cache interface without a cache, for a variant that has none here
    (the starter's perceiver): every step runs the model on the whole
    right-padded batch and reads each row's logits at its own last position.
    Attention is causal, so the padding after a row changes nothing before it.
    """

    def __init__(self, model, lengths, steps):
        self.model = model
        self.lengths = lengths  # (B,) prompt lengths
        self.generated = 0
        self.idx = torch.zeros(len(lengths), int(lengths.max()) + steps - 1, dtype=torch.long,
                               device=lengths.device)  # (B, W + steps - 1), PAD after each row's end

    def keep(self, rows):
        self.lengths, self.idx = self.lengths[rows], self.idx[rows]

    def logits(self):
        """(B, vocab): each row's logits after its last token."""
        last = self.lengths - 1 + self.generated  # (B,)
        out, _ = self.model(self.idx[:, :int(last.max()) + 1])
        return out[torch.arange(len(last), device=last.device), last]

    def prefill(self, idx):
        self.idx[:, :idx.size(1)] = idx
        return self.logits()

    def step(self, tokens):
        self.idx[torch.arange(len(tokens), device=tokens.device), self.lengths + self.generated] = tokens
        self.generated += 1
        return self.logits()


def cache_class(model):
    """The cache for the model's variant; Recompute where this copy has none."""
    if not model.perceiver:
        return VanillaCache
    try:
        from .perceiver_cache import PerceiverCache
    except ImportError:
        return Recompute
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
    Raises CacheUnusable when the first logits are not the model's on each
    prompt alone, compared on the CHECKED_ROWS longest prompts (a block that
    computes something else shows in any row; the longest prompts reach
    furthest) and the shortest (the most padded: a model that is not causal
    shows there).
    """
    model.eval()
    device = model.tok_emb.weight.device
    lengths = torch.tensor([len(p) for p in prompts], device=device)  # (B,)
    width = int(lengths.max())
    assert width + steps - 1 <= model.get_block_size(), "a prompt this long needs cropping: use sample"
    idx = torch.zeros(len(prompts), width, dtype=torch.long, device=device)  # right-padded with PAD
    for row, prompt in enumerate(prompts):
        idx[row, :len(prompt)] = torch.tensor(prompt, dtype=torch.long)
    cache = cache_class(model)(model, lengths, steps)
    generated = torch.zeros(len(prompts), steps, dtype=torch.long, device=device)  # (B, steps)
    ends = torch.full((len(prompts),), steps, device=device)  # how many generated tokens each row keeps
    rows = torch.arange(len(prompts), device=device)  # the prompt of each row of the cache
    done = torch.zeros(len(prompts), dtype=torch.bool, device=device)
    logits = cache.prefill(idx)  # (B, vocab)
    checked = lengths.topk(min(CHECKED_ROWS, len(prompts))).indices.tolist() + [int(lengths.argmin())]
    for row in checked:  # each against the model's forward on that prompt alone, unpadded
        alone = model(idx[row:row + 1, :int(lengths[row])])[0][0, -1]  # (vocab,)
        if not torch.allclose(logits[row], alone, rtol=1e-4, atol=1e-4):
            raise CacheUnusable("batched logits differ from the model's forward on one prompt")
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
