"""
The grader's trusted regeneration as the copy report uses it
(src/instructors/copies/grader_regeneration.py), with the trusted process stood in for: what it is
asked (the bundle's model size, or the graded one; its vocabulary; the questions), the answers it gives
stripped, each way it can fail in one line, and a bundle that cannot regenerate named with all it
lacks. A real regeneration: tests/test_copies.py.
"""

import pytest

from assignment.facts import GRADED_SIZE
from grading.bundle import HiddenBundle
from grading.trusted import TrustedFailure
from instructors.copies import grader_regeneration
from instructors.copies.grader_regeneration import Unregenerated, cannot_regenerate, regenerated_answers

SMALL = dict(n_layer=2, n_head=2, n_embd=16, block_size=128, bottleneck_dim=4)


def bundle(reference="/bundle/reference", runtime="/bundle", vocabulary="abc", model=None):
    return HiddenBundle("/bundle", {}, {}, reference, model=model, vocabulary=vocabulary, runtime=runtime)


@pytest.mark.parametrize("missing, said", [
    ({}, None), ({"reference": None}, "reference/"), ({"vocabulary": None}, "vocabulary.json"),
    ({"reference": None, "runtime": None, "vocabulary": None}, "reference/, runtime/, vocabulary.json")])
def test_a_bundle_that_cannot_regenerate_is_named_with_all_it_lacks(missing, said):
    expected = None if said is None else f"the hidden bundle has no {said}"
    assert cannot_regenerate(bundle(**missing)) == expected


@pytest.fixture
def trusted(monkeypatch):
    """answer(result or exception): what run_trusted gives; the requests it got, as (kwargs, reference,
    runtime, timeout)."""
    requests, given = [], []

    def run(module, probe, kwargs, reference, runtime, timeout):
        requests.append((kwargs, reference, runtime, timeout))
        if isinstance(given[0], Exception):
            raise given[0]
        return given[0]
    monkeypatch.setattr(grader_regeneration, "run_trusted", run)

    def answer(result):
        given[:] = [result]
        return requests
    return answer


@pytest.mark.parametrize("model, size", [(None, GRADED_SIZE), (SMALL, SMALL)])
def test_the_reference_answers_with_the_bundles_size_and_vocabulary_stripped(trusted, model, size):
    requests = trusted({"value": {"misfit": [], "predictions": [" Lima ", "Quito\r", ""]}})
    answers = regenerated_answers(bundle(model=model), "/scratch/p.params", "perceiver", ["q1", "q2", "q3"], 30)
    assert answers == ["Lima", "Quito", ""]
    assert requests == [(dict(variant="perceiver", size=size, params_path="/scratch/p.params", vocabulary="abc",
                              questions=["q1", "q2", "q3"], seed=grader_regeneration.PROBE_SEED),
                         "/bundle/reference", "/bundle", 30)]


@pytest.mark.parametrize("result, said", [
    ({"failure": "the reference raised ValueError"}, "the reference raised ValueError"),
    ({"value": {"unloadable": "UnpicklingError: junk", "misfit": []}}, "it cannot be read (UnpicklingError: junk)"),
    ({"value": {"misfit": ["a is [2] there, [3] in the model", "b is missing there"], "predictions": None}},
     "it does not fit the reference's model (a is [2] there, [3] in the model; b is missing there)"),
    (TrustedFailure("the reference did not finish within 30 s\nTraceback (most recent call last):"),
     "the reference did not finish within 30 s"),
    (TrustedFailure("  \n"), "the trusted process failed"),
])
def test_each_failure_is_one_line_saying_why(trusted, result, said):
    trusted(result)
    with pytest.raises(Unregenerated) as failed:
        regenerated_answers(bundle(), "/scratch/p.params", "vanilla", ["q1"], 30)
    assert str(failed.value) == said
