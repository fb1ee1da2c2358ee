"""
The copy report's parameters comparisons (src/instructors/copies/parameters.py), on small state_dicts
and sketches made here: what a sketch keeps (weight matrices and embeddings in key order; not biases,
LayerNorm parameters, masks or integer tensors), files that cannot be read or are no state_dict
compared by hash, files of another layout or vocabulary than the class's (known hand-ins do not vote)
left out of the distances, identical files of two hand-ins of a pair, and distances judged only from
MIN_REFERENCE pairs on, with the copy threshold of a finetuning against another's pretraining.
"""

import io
import math

import numpy as np
import pytest
import torch

from instructors.copies import parameters
from instructors.copies.handins import HandIn
from instructors.copies.parameters import Comparison, ParamsFile
from instructors.copies.verdicts import compared_pairs

PRETRAIN, FINETUNE = "vanilla.pretrain.params", "vanilla.finetune.params"


def weights(seed, rows=6, columns=5):
    return torch.randn(rows, columns, generator=torch.Generator().manual_seed(seed))


def test_a_sketch_keeps_the_weight_matrices_in_key_order_and_nothing_else():
    """Kills LayerNorm weights, biases, masks or integer tensors sketched (they make any two runs look
    alike), or the tensors taken in the state_dict's order instead of by key."""
    state = {"b.weight": weights(1), "a.weight": weights(2)}
    sketch = parameters.sketch_of(state)
    assert sketch.shape == (parameters.SKETCH_SIZE,)
    assert np.array_equal(sketch, parameters.sketch_of({"a.weight": weights(2), "b.weight": weights(1)}))
    extras = {"ln.weight": torch.rand(5) + 1, "ln.bias": torch.rand(5), "steps": torch.arange(12).reshape(3, 4)}
    assert np.array_equal(parameters.sketch_of({**state, **extras}), sketch)
    masked = parameters.sketch_of({**state, "mask": torch.tril(torch.ones(4, 4))})
    assert np.array_equal(masked, parameters.sketch_of({**state, "mask": torch.ones(4, 4)}))
    assert not np.array_equal(parameters.sketch_of({**state, "c.weight": torch.ones(2, 2) * 0.5}), sketch)


def test_relative_distances_of_sketches():
    files = [ParamsFile(0, PRETRAIN, "", sketch=vector) for vector in
             (np.array([3.0, 0, 0]), np.array([0, 3.0, 0]), np.array([3.0, 0, 0]), np.zeros(3))]
    distances = parameters.relative_distances(files, files)
    assert distances[0, 1] == pytest.approx(math.sqrt(2)) and distances[0, 2] == 0 and distances[3, 3] == 0


def saved(state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("data, said", [
    (b"not parameters", "vanilla.pretrain.params cannot be read as parameters (UnpicklingError): compared by its "
                        "hash only"),
    (saved([weights(1)]), "vanilla.pretrain.params is not a state_dict of tensors: compared by its hash only"),
    (saved({}), "vanilla.pretrain.params is not a state_dict of tensors: compared by its hash only"),
    (saved({"w": weights(1), "step": 3}), "vanilla.pretrain.params is not a state_dict of tensors: compared by its "
                                          "hash only"),
])
def test_a_file_that_is_no_state_dict_is_compared_by_its_hash_only(tmp_path, data, said):
    (tmp_path / PRETRAIN).write_bytes(data)
    problems = []
    found = parameters.read_file(HandIn("ann", str(tmp_path), files={PRETRAIN: str(tmp_path / PRETRAIN)}), 3,
                                 PRETRAIN, problems)
    assert (found.hand_in, found.name, found.layout, found.sketch) == (3, PRETRAIN, None, None)
    assert len(found.digest) == 64 and problems == [f"ann: {said}"]


def class_files(layouts, known=()):
    """Hand-ins 0.. with one PRETRAIN file each of the layouts given ((key, shape) tuples) and stamps."""
    hand_ins, files = [], []
    for index, (layout, vocabulary) in enumerate(layouts):
        hand_ins.append(HandIn(f"h{index}", "", "elsewhere" if index in known else None))
        files.append(ParamsFile(index, PRETRAIN, f"{index:064d}", layout, {"vocabulary": vocabulary} if vocabulary
                                else {}, np.ones(4)))
    return hand_ins, files


SMALL, LARGE = (("w", (4, 8)),), (("w", (4, 16)),)


def test_files_of_another_layout_than_most_of_the_class_are_compared_by_hash_only():
    """Kills the known hand-ins' files voting for the class's layout."""
    hand_ins, files = class_files([(SMALL, None), (SMALL, None), (LARGE, None), (LARGE, None), (LARGE, None)],
                                  known=(2, 3, 4))
    problems = []
    parameters.keep_the_class_layout(files, hand_ins, None, problems)
    assert [f.sketch is not None for f in files] == [True, True, False, False, False]
    assert problems[0] == ("h2: vanilla.pretrain.params is of another size or vocabulary than the class's (w is "
                           "(4, 16) there, (4, 8) in most hand-ins): compared by its hash only")


def test_files_stamped_with_another_vocabulary_are_compared_by_hash_only():
    """Kills the bundle's vocabulary ignored, and the class's most common stamp not standing in for it."""
    layouts = [(SMALL, "abc"), (SMALL, "abc"), (SMALL, "abd"), (SMALL, None)]
    hand_ins, files = class_files(layouts)
    problems = []
    parameters.keep_the_class_layout(files, hand_ins, None, problems)
    assert [f.sketch is not None for f in files] == [True, True, False, True]
    assert problems == ["h2: vanilla.pretrain.params was trained with another vocabulary than the class's: "
                        "compared by its hash only"]
    hand_ins, files = class_files(layouts)
    parameters.keep_the_class_layout(files, hand_ins, "abd", [])
    assert [f.sketch is not None for f in files] == [False, False, True, True]


def test_identical_files_are_of_two_hand_ins_that_make_a_pair():
    """Kills a hand-in's own two identical files (a pretraining handed in as its finetuning too) taken for
    a copy, and two known hand-ins paired."""
    hand_ins = [HandIn("ann", ""), HandIn("ben", ""), HandIn("k1", "", "known"), HandIn("k2", "", "known")]
    files = [ParamsFile(0, PRETRAIN, "same"), ParamsFile(0, FINETUNE, "same"), ParamsFile(1, FINETUNE, "other"),
             ParamsFile(2, PRETRAIN, "known"), ParamsFile(3, PRETRAIN, "known"), ParamsFile(1, PRETRAIN, "same")]
    found = parameters.identical_files(files, compared_pairs(hand_ins))
    assert [(a.hand_in, a.name, b.hand_in, b.name) for a, b in found] == [(0, PRETRAIN, 1, PRETRAIN),
                                                                          (0, FINETUNE, 1, PRETRAIN)]


def sketched(hand_in, name, vector, digest=None):
    return ParamsFile(hand_in, name, digest or f"{hand_in}-{name}", sketch=np.asarray(vector, dtype=float))


def independent(count, seed=0):
    return np.random.default_rng(seed).normal(size=(count, 64))


def test_distances_are_judged_from_min_reference_pairs_on():
    """Kills a comparison of exactly MIN_REFERENCE pairs left unjudged, or one of fewer judged."""
    vectors = independent(parameters.MIN_REFERENCE + 1)
    vectors[1] = vectors[0] + 0.05 * vectors[2]
    for count in (parameters.MIN_REFERENCE - 1, parameters.MIN_REFERENCE):
        hand_ins = [HandIn(f"h{i}", "") for i in range(count)]
        files = [sketched(i, PRETRAIN, vectors[i]) for i in range(count)]
        close, comparisons = parameters.close_files(files, compared_pairs(hand_ins))
        pairs = math.comb(count, 2)
        assert bool(comparisons) == (pairs >= parameters.MIN_REFERENCE), count
    assert comparisons[(PRETRAIN, PRETRAIN)].taken == 3
    assert [(c.first.hand_in, c.second.hand_in, c.verdict) for c in close] == [(0, 1, "copy")]
    assert close[0].ratio == pytest.approx(close[0].distance / comparisons[(PRETRAIN, PRETRAIN)].median)


def test_a_finetuning_is_compared_with_the_others_pretrainings_but_not_its_own():
    """Kills a finetuning compared with another's pretraining that is the same file as its own (close for
    being its own: the identical files are the evidence), and a finetuning of another's pretraining
    missed."""
    pretrained = independent(6, seed=3)
    pretrained[5] = pretrained[1]
    hand_ins = [HandIn(f"h{i}", "") for i in range(6)]
    files = [sketched(i, PRETRAIN, pretrained[i], digest="copied" if i in (1, 5) else None) for i in range(6)]
    files += [sketched(i, FINETUNE, pretrained[i] + 0.3 * independent(5, seed=4)[i]) for i in range(4)]
    files.append(sketched(4, FINETUNE, pretrained[0] + 0.3 * independent(5, seed=4)[4]))
    close, comparisons = parameters.close_files(files, compared_pairs(hand_ins))
    crossed = [(c.first.hand_in, c.second.hand_in) for c in close
               if (c.first.name, c.second.name) == (FINETUNE, PRETRAIN)]
    assert crossed == [(4, 0)]
    comparison = comparisons[(FINETUNE, PRETRAIN)]
    assert comparison.taken == 5 * 5 - 1 and comparison.own_median == pytest.approx(0.3, abs=0.15)


@pytest.mark.parametrize("own, below", [(None, 0.5), (0.16, 0.5), (0.64, 0.8), (1.0, 0.5), (2.0, 0.5)])
def test_the_copy_threshold_is_the_geometric_mean_only_where_finetuning_moves_less_than_the_median(own, below):
    """Kills the geometric mean of the median and the class's own finetuning distance taken where that
    distance is the median or more (every other finetuning would then be a copy)."""
    assert Comparison(1.0, 10, own).copy_below == pytest.approx(below)
