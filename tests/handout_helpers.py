"""
Helpers of the tests of this assignment's grading (src/grading/handout/):
a context whose probes run in this process, the failure message a judge
raises, the tiny model size, and made-up fingerprints and perceiver
anatomies for the judges to read.
"""

import math

import pytest

import submission
from grading import NotGraded
from grading.context import TestFailure as Failed


TINY = dict(n_layer=1, n_head=2, n_embd=8, block_size=16, bottleneck_dim=4)


class InProcess:
    """A test's ctx whose probes run here, on `sub` (the reference unless given), with canned answers first."""

    def __init__(self, scratch, sub=submission, bundle=None, canned=None, reference=None):
        self.scratch, self.sub, self.bundle = str(scratch), sub, bundle
        self.canned, self.reference, self.calls = canned or {}, reference or {}, []

    def run(self, probe, **kwargs):
        self.calls.append((probe.__name__, kwargs))
        if probe.__name__ in self.canned:
            return self.canned[probe.__name__]
        return probe(self.sub, **kwargs)

    def once(self, key, compute):
        return compute()  # a ctx of one test: nothing computed before it

    def run_reference(self, probe, **kwargs):
        self.calls.append(("reference " + probe.__name__, kwargs))
        return self.reference[probe.__name__]

    def require_bundle(self):
        if self.bundle is None:
            raise NotGraded("graded on submission")
        return self.bundle


def failure(function, *args, **kwargs):
    """The message of the test failure that function(*args, **kwargs) raises."""
    with pytest.raises(Failed) as caught:
        function(*args, **kwargs)
    return str(caught.value)


def fingerprinted(shared=(), parameters=(("w", [2, 3]),), logits=((1.0, 2.0),)):
    return {"shared": [list(s) for s in shared], "parameters": [list(p) for p in parameters],
            "logits": [[list(row) for row in logits]]}


def anatomy(**changes):
    bound = math.sqrt(6 / 288)
    good = {"latents": [{"name": "C", "shape": [32, 256], "max": bound * 0.999, "std": bound * 0.577, "grad": True}],
            "down": True, "up": True, "logits_length": 128, "drift": [0.0, 1e-4, 0.0], "latents_move_logits": 0.1}
    for key, value in changes.items():
        if key in good:
            good[key] = value
        else:
            good["latents"][0][key] = value
    return good
