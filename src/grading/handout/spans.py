"""
Part (e), span corruption: the submission's CharCorruptionDataset observed
on the grader's seeded corpus (a probe), and each example decoded back into
the pieces the handout names,

    prefix MASK suffix MASK masked_content [MASK] PAD...

where prefix + masked_content + suffix must rebuild the start of the
example's own document, so a degenerate dataset earns nothing of part (e).
"""

import random

from assignment.facts import MASK_CHAR, PAD_CHAR
from assignment.not_written_yet import reported, written

from grading.context import check
from grading.registry import probe
from grading.handout.answers import answered
from grading.handout.corpora import write_span_corpus

SPAN_SEED = 224
SPAN_EXAMPLES = 3000  # 1500 of them on long documents: a truncation bound is reached with near certainty


def ids(sequence):
    """A tensor or sequence of token ids as a list of ints."""
    return [int(v) for v in (sequence.tolist() if hasattr(sequence, "tolist") else sequence)]


@probe
@reported
def corruption_examples(sub, corpus_path, block_size, count, seed):
    """`count` seeded examples of CharCorruptionDataset over the corpus, as ids, with the vocabulary."""
    import torch
    with open(corpus_path, encoding="utf-8") as f:
        dataset = sub.CharCorruptionDataset(f.read(), block_size)
    random.seed(seed)
    torch.manual_seed(seed)
    examples = []
    for i in range(count):
        item = written(dataset[i % len(dataset)], "CharCorruptionDataset.__getitem__")
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise TypeError(f"CharCorruptionDataset.__getitem__ should return (x, y), not {item!r:.60}")
        x, y = item
        examples.append({"index": i % len(dataset), "x": ids(x), "y": ids(y),
                         "types": [str(getattr(t, "dtype", type(t).__name__)) for t in (x, y)]})
    return {"itos": [[int(i), c] for i, c in dataset.itos.items()], "examples": examples}


class SpanExample:
    """One decoded example: its document, the full block string (x plus y's last character), x and y ids."""

    def __init__(self, raw, itos, documents):
        self.document = documents[raw["index"]]
        self.x, self.y, self.types = raw["x"], raw["y"], raw["types"]
        decode = lambda ids: "".join(itos.get(i, "?") for i in ids)  # noqa: E731
        self.text = decode(self.x) + decode(self.y[-1:])

    def kept(self):
        """How many characters of the document the example holds (everything but PAD and MASK)."""
        return sum(c not in (PAD_CHAR, MASK_CHAR) for c in self.text)

    def pieces(self):
        """(prefix, suffix, masked) of `prefix MASK suffix MASK masked [MASK] PAD...`, or None."""
        pieces = self.text.rstrip(PAD_CHAR).split(MASK_CHAR)
        if len(pieces) == 4 and pieces[3] == "":
            pieces.pop()
        return tuple(pieces) if len(pieces) == 3 else None

    def is_corruption(self):
        """Whether prefix + masked + suffix rebuilds the start of the example's own document."""
        pieces = self.pieces()
        return pieces is not None and self.document.startswith(pieces[0] + pieces[2] + pieces[1])

    def shown(self):
        return repr(self.text.rstrip(PAD_CHAR) + (PAD_CHAR + "..." if self.text.endswith(PAD_CHAR) else ""))


def span_examples(ctx, block_size):
    """The submission's seeded span-corruption examples over the grader's corpus, each a corruption of its
    document; made once a grading run for the four span tests (the probe is seeded: the same examples)."""
    def made():
        path, documents = write_span_corpus(ctx.scratch, count=240, seed=SPAN_SEED)
        data = answered(ctx.run(corruption_examples, corpus_path=path, block_size=block_size, count=SPAN_EXAMPLES,
                                seed=SPAN_SEED))
        itos = {int(i): c for i, c in data["itos"]}
        return [SpanExample(raw, itos, documents) for raw in data["examples"]]

    examples = ctx.once((corruption_examples.__name__, block_size), made)
    for e in examples:
        check(e.is_corruption(), f"an example is not a span corruption of its own document (prefix MASK suffix "
                                 f"MASK masked_content [MASK] PAD..., where prefix + masked_content + suffix "
                                 f"rebuilds the start of the document): {e.shown()}")
    return examples
