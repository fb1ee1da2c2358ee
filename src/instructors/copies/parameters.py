"""
Parameters files compared, for every pair of hand-ins: identical files (the
same SHA-256, whatever their names), and the distance between state_dicts
relative to the distances between the class's independent runs.

Each file is read once (torch.load(..., weights_only=True)) and kept as a
sketch: its weight matrices and embeddings (floating-point tensors of two
or more dimensions) in key order, flattened into one vector x, reduced to K
numbers by a CountSketch

    s[k] = sum over the i with h(i) = k of g(i) * x[i]

with buckets h(i) and signs g(i) = +-1 drawn once per length of x from a
fixed seed. E||s||^2 = ||x||^2 and s_a - s_b is the sketch of x_a - x_b, so
the relative distance

    d(a, b) = ||x_a - x_b|| / sqrt((||x_a||^2 + ||x_b||^2) / 2)

is estimated within a few percent (K = 4096) while no file is kept.
Biases and LayerNorm parameters are left out, as is any tensor of only 0s
and 1s (an attention mask): LayerNorm weights stay near 1 in every run and
would make any two runs look alike.

Distances are taken between files of the same kind (X against X) and
between a finetuning and the other hand-in's pretraining
(vanilla.finetune.params against vanilla.pretrain.params, and the
perceiver's), which is close when one was finetuned from the other's
pretrained parameters. Each comparison's distances are judged against its
median over all pairs compared, most of which are independent runs, by the
ratio r = d / median: below COPY_RATIO the two files are one run (or one
was trained from the other), below SUSPECT_RATIO suspect. A finetuning
against another's pretraining is a copy when it is closer to that
pretraining than the geometric mean of the median and of the class's own
finetuning distance (each hand-in's finetuning from its own pretraining),
where that is the larger threshold: how far finetuning moves depends on the
training, which the class shows. Files of another size or vocabulary than
most of the class's are compared by their hash only.
"""

import hashlib
import io
import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from assignment.facts import STAGES
from runtime.params import read_stamp

from .handins import COMPARED, Unreadable

SKETCH_SIZE = 4096
SKETCH_SEED = 2027
COPY_RATIO = 0.5  # r below this: one run, or one trained from the other's parameters
SUSPECT_RATIO = 0.8
MIN_REFERENCE = 3  # distances a comparison needs before its median stands for independent runs
PARAMS_FILES = tuple(name for name in COMPARED if name.endswith('.params'))
FINETUNED_FROM = tuple((stage.writes, stage.params_in) for stage in STAGES
                       if stage.function == 'finetune' and stage.params_in)


@dataclass
class ParamsFile:
    """One hand-in's parameters file: its hash, its tensors' names and shapes, its stamp, and its
    sketch (None when it is not compared by distance)."""
    hand_in: int
    name: str
    digest: str
    layout: tuple = None
    stamp: dict = None
    sketch: np.ndarray = None


@lru_cache(maxsize=None)
def sketch_hashing(length):
    """The buckets and signs of a CountSketch of vectors of `length`."""
    generator = np.random.default_rng(SKETCH_SEED)
    return generator.integers(0, SKETCH_SIZE, length), generator.integers(0, 2, length) * 2.0 - 1.0


def sketch_of(state):
    """The CountSketch of a state_dict's weight matrices and embeddings, in key order."""
    parts = []
    for key in sorted(state):
        tensor = state[key].detach()
        if tensor.is_floating_point() and tensor.dim() >= 2:
            values = tensor.reshape(-1).to(torch.float64)
            parts.append(torch.zeros_like(values) if bool(((values == 0) | (values == 1)).all()) else values)
    flat = torch.cat(parts).numpy() if parts else np.zeros(0)
    buckets, signs = sketch_hashing(len(flat))
    return np.bincount(buckets, weights=signs * flat, minlength=SKETCH_SIZE)


def read_file(hand_in, index, name, problems):
    """The ParamsFile of deliverable `name` of hand-in number `index` (layout None when it is not
    parameters; None when it cannot be read at all)."""
    try:
        data = hand_in.read(name)
    except Unreadable as error:
        problems.append(str(error))
        return None
    found = ParamsFile(index, name, hashlib.sha256(data).hexdigest())
    try:
        state = torch.load(io.BytesIO(data), map_location='cpu', weights_only=True)
    except Exception as error:
        problems.append(f"{hand_in.name}: {name} cannot be read as parameters ({type(error).__name__}): "
                        f"compared by its hash only")
        return found
    if not isinstance(state, dict) or not state or not all(torch.is_tensor(v) for v in state.values()):
        problems.append(f"{hand_in.name}: {name} is not a state_dict of tensors: compared by its hash only")
        return found
    found.layout = tuple((key, tuple(state[key].shape)) for key in sorted(state))
    found.stamp = read_stamp(state)
    found.sketch = sketch_of(state)
    return found


def read_params(hand_ins, problems):
    """The ParamsFile of every parameters file of the hand-ins that can be read."""
    files = [read_file(hand_in, index, name, problems) for index, hand_in in enumerate(hand_ins)
             for name in PARAMS_FILES if name in hand_in.files]
    return [found for found in files if found is not None]


def most_common(values):
    counted = Counter(value for value in values if value is not None)
    return counted.most_common(1)[0][0] if counted else None


def layout_difference(layout, expected):
    """The first difference between two layouts, in words."""
    mine, theirs = dict(layout), dict(expected)
    for key in sorted(set(mine) | set(theirs)):
        if mine.get(key) != theirs.get(key):
            return f"{key} is {mine.get(key, 'missing')} there, {theirs.get(key, 'absent')} in most hand-ins"
    return "the same layout"


def keep_the_class_layout(files, hand_ins, vocabulary, problems):
    """Take out of the distance comparisons (sketch None) every file of another layout than most of
    the class's files of its name, or stamped with another vocabulary than `vocabulary` (the
    bundle's; None: the one most of the class's files are stamped with), one line each."""
    in_class = [f for f in files if hand_ins[f.hand_in].known is None]
    vocabulary = vocabulary or most_common(f.stamp.get('vocabulary') for f in in_class if f.stamp)
    for name in PARAMS_FILES:
        expected = most_common(f.layout for f in in_class if f.name == name)
        for found in (f for f in files if f.name == name and f.sketch is not None):
            stamped = found.stamp.get('vocabulary')
            if expected is not None and found.layout != expected:
                problems.append(f"{hand_ins[found.hand_in].name}: {name} is of another size or vocabulary than "
                                f"the class's ({layout_difference(found.layout, expected)}): compared by its hash only")
                found.sketch = None
            elif vocabulary and stamped and stamped != vocabulary:
                problems.append(f"{hand_ins[found.hand_in].name}: {name} was trained with another vocabulary than "
                                f"the class's: compared by its hash only")
                found.sketch = None


def compared(pairs, i, j):
    """Whether hand-ins i and j make one of the `pairs` (keys (i, j) with i < j)."""
    return (min(i, j), max(i, j)) in pairs


def identical_files(files, pairs):
    """[(file, file)] of the identical files of the `pairs` of hand-ins."""
    by_digest = {}
    for found in files:
        by_digest.setdefault(found.digest, []).append(found)
    return [(a, b) for same in by_digest.values() for i, a in enumerate(same) for b in same[i + 1:]
            if a.hand_in != b.hand_in and compared(pairs, a.hand_in, b.hand_in)]


def relative_distances(first, second):
    """The matrix of relative distances between the sketches of two lists of files."""
    a, b = np.stack([f.sketch for f in first]), np.stack([f.sketch for f in second])
    squares_a, squares_b = (a * a).sum(1)[:, None], (b * b).sum(1)[None, :]
    squared = np.maximum(squares_a + squares_b - 2 * a @ b.T, 0)
    return np.sqrt(squared / np.maximum((squares_a + squares_b) / 2, 1e-300))


@dataclass
class Comparison:
    """One comparison's reference: the median distance over the pairs compared (most of them
    independent runs), how many, for a finetuning against pretrainings the median distance of a
    hand-in's finetuning from its own pretraining (None otherwise), and the distance below which
    two files are one run, or one trained from the other."""
    median: float
    taken: int
    own_median: float = None

    @property
    def copy_below(self):
        below = COPY_RATIO * self.median
        if self.own_median is not None and self.own_median < self.median:
            below = max(below, math.sqrt(self.own_median * self.median))
        return below


@dataclass
class Close:
    """Two files closer than SUSPECT_RATIO of their comparison's median: d, r and the verdict."""
    first: ParamsFile
    second: ParamsFile
    distance: float
    ratio: float
    verdict: str


def own_median(first, second):
    """The median distance of a hand-in's file in `first` from its own in `second` (None: no hand-in has both)."""
    mine = {f.hand_in: f for f in second}
    own = [float(relative_distances([f], [mine[f.hand_in]])[0, 0]) for f in first if f.hand_in in mine]
    return float(np.median(own)) if own else None


def close_files(files, pairs):
    """[Close] of every comparison's `pairs` of hand-ins, and {(name, name): Comparison}. A finetuning
    is not compared with another's pretraining that is the same file as its own."""
    close, comparisons = [], {}
    for first_name, second_name in tuple((name, name) for name in PARAMS_FILES) + FINETUNED_FROM:
        first = [f for f in files if f.name == first_name and f.sketch is not None]
        second = [f for f in files if f.name == second_name and f.sketch is not None]
        if not first or not second:
            continue
        distances = relative_distances(first, second)
        own = {f.hand_in: f.digest for f in files if f.name == second_name}  # a finetuning's own pretraining
        taken = [(i, j) for i, a in enumerate(first) for j, b in enumerate(second)
                 if a.hand_in != b.hand_in and compared(pairs, a.hand_in, b.hand_in)
                 and (a.hand_in < b.hand_in if first_name == second_name else own.get(a.hand_in) != b.digest)]
        median = float(np.median([distances[i, j] for i, j in taken])) if taken else 0.0
        if len(taken) < MIN_REFERENCE or median == 0:  # too few to judge; or most identical, as the hashes say
            continue
        comparison = Comparison(median, len(taken), own_median(first, second) if first_name != second_name else None)
        comparisons[(first_name, second_name)] = comparison
        for i, j in taken:
            distance = float(distances[i, j])
            if distance < SUSPECT_RATIO * median or distance < comparison.copy_below:
                verdict = 'copy' if distance < comparison.copy_below else 'suspect'
                close.append(Close(first[i], second[j], distance, distance / median, verdict))
    return close, comparisons
