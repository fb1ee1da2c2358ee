"""
Models, weights and fingerprints (src/grading/handout/models.py), tested
in-process on the reference package (src/submission) and on small models
made here: how a model is built, the weights set by name, the fingerprint
and its differences from the reference's, the shapes a forward pass goes
through, and the perceiver's anatomy, judged as a perceiver and as the
handout specifies it.
"""

import math
import types

import pytest
import torch

import submission
from assignment import not_written_yet
from grading.handout import answers, models

from handout_helpers import TINY, anatomy, failure, fingerprinted


# ---- models, weights and fingerprints ----------------------------------------------------------

def test_build_model_uses_the_helpers_only_where_asked():
    vanilla, how = models.build_model(submission, "vanilla", 10, TINY)
    assert type(vanilla) is submission.GPT and vanilla.get_block_size() == 16 and how is None
    assert sum(p.numel() for p in vanilla.parameters()) == sum(
        p.numel() for p in submission.GPT(submission.GPTConfig(10, 16, n_layer=1, n_head=2, n_embd=8)).parameters())
    fake = types.SimpleNamespace(GPTConfig=submission.GPTConfig, GPT=submission.GPT,
                                 initialize_vanilla_model=lambda mconf: None,
                                 initialize_perceiver_model=lambda mconf, bottleneck_dim: ("perceiver", bottleneck_dim))
    assert models.build_model(fake, "perceiver", 10, TINY) == (("perceiver", 4), None)
    assert type(models.build_model(fake, "vanilla", 10, TINY)[0]) is submission.GPT
    with pytest.raises(not_written_yet.PartFailure, match=r"part \(c\): initialize_vanilla_model returned None"):
        models.build_model(fake, "vanilla", 10, TINY, helper=True)
    fake.initialize_perceiver_model = lambda mconf, bottleneck_dim: None
    with pytest.raises(not_written_yet.PartFailure, match=r"part \(g\): initialize_perceiver_model"):
        models.build_model(fake, "perceiver", 10, TINY)


def test_a_changed_gpt_constructor_is_built_the_submissions_own_way():
    class Widened(submission.GPT):
        def __init__(self, config, extra):
            super().__init__(config)
            self.extra = extra
    fake = types.SimpleNamespace(GPTConfig=submission.GPTConfig, GPT=Widened,
                                 initialize_vanilla_model=lambda mconf: Widened(mconf, "own"))
    model, how = models.build_model(fake, "vanilla", 10, TINY)
    assert model.extra == "own" and model.get_block_size() == 16
    assert how.startswith("the model was built with initialize_vanilla_model, because GPT(config) raised "
                          "TypeError: ") and "extra" in how
    fake.initialize_vanilla_model = lambda mconf: None
    with pytest.raises(TypeError, match="extra"):
        models.build_model(fake, "vanilla", 10, TINY)


def test_any_error_of_the_gpt_constructor_tries_the_submissions_own_way():
    """Kills the fallback tried for a TypeError only: a constructor that reads a setting the grader's
    config lacks raises AttributeError."""
    class Reading(submission.GPT):
        def __init__(self, config):
            self.norm_first = config.norm_first
            super().__init__(config)

    def own(mconf):
        mconf.norm_first = True
        return Reading(mconf)
    fake = types.SimpleNamespace(GPTConfig=submission.GPTConfig, GPT=Reading, initialize_vanilla_model=own)
    model, how = models.build_model(fake, "vanilla", 10, TINY)
    assert model.norm_first is True and how.startswith("the model was built with initialize_vanilla_model, because "
                                                       "GPT(config) raised AttributeError: ")


def tiny_gpt(seed=0, vocab_size=12, perceiver=False):
    torch.manual_seed(seed)
    mconf = submission.GPTConfig(vocab_size, 16, n_layer=2, n_head=2, n_embd=8)
    return submission.initialize_perceiver_model(mconf, 4) if perceiver else submission.GPT(mconf)


def test_set_weights_depends_on_the_names_only():
    a, b = tiny_gpt(0), tiny_gpt(1)
    models.set_weights(a)
    models.set_weights(b)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    norms = [m.weight.detach() for m in a.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert norms and all(0.5 < float(w.mean()) < 1.5 and float(w.std()) > 0.01 for w in norms)
    layer_norm_weights = [m.weight for m in a.modules() if isinstance(m, torch.nn.LayerNorm)]
    others = [p.detach() for p in a.parameters() if not any(p is w for w in layer_norm_weights)]
    assert all(float(p.abs().max()) < 0.5 and float(p.std()) > 0.01 for p in others if p.numel() > 1)
    first, second = others[0], others[1]
    assert not torch.equal(first.flatten()[:4], second.flatten()[:4])


class Spy(torch.nn.Module):
    """A model that records the blocks it is given; its logits are the tokens' embeddings."""

    def __init__(self, block=16, tied=False):
        super().__init__()
        self.block, self.seen = block, []
        self.embed = torch.nn.Embedding(40, 10)
        self.head = torch.nn.Linear(10, 10)
        if tied:
            self.again = self.head
        self.norm = torch.nn.LayerNorm(10)

    def get_block_size(self):
        return self.block

    def forward(self, idx):
        self.seen.append(idx.tolist()[0])
        return self.head(self.norm(self.embed(idx))), None


def test_the_fingerprint_changes_the_block_from_each_causality_position():
    spy = Spy(block=64)
    spy.train()
    found = models.fingerprint(spy, 40, seed=3)
    assert not spy.training
    base, *changed = spy.seen
    assert len(changed) == 2 and all(len(block) == 64 for block in spy.seen)  # only positions 10 and 40 fit
    assert all(2 <= t < 40 for block in spy.seen for t in block) and len(set(base)) > 10
    assert min(base) == 2 and min(t for j, block in zip(models.CAUSALITY_POSITIONS, changed) for t in block[j:]) == 2
    for j, block in zip(models.CAUSALITY_POSITIONS, changed):
        assert block[:j] == base[:j] and block[j:] != base[j:]
    assert len(found["logits"]) == 3 and len(found["logits"][0]) == 64
    assert all(len(row) == models.LOGIT_COLUMNS for row in found["logits"][0])
    assert found["parameters"] == [[n, list(p.shape)] for n, p in spy.named_parameters()]
    assert found["shared"] == [] and models.fingerprint(Spy(block=64), 40, seed=4)["logits"] != found["logits"]
    assert models.fingerprint(Spy(tied=True), 40, 3)["shared"] == [["again.weight", "head.weight"],
                                                                   ["again.bias", "head.bias"]]
    at_a_position = Spy(block=40)
    assert len(models.fingerprint(at_a_position, 40, seed=3)["logits"]) == 2 and len(at_a_position.seen) == 2
    again = Spy(block=64)
    assert models.fingerprint(again, 40, seed=3) == found and again.seen == spy.seen


def test_module_shapes_reports_sequence_lengths_and_removes_its_hooks():
    model = tiny_gpt(perceiver=True)
    logits, seen = models.module_shapes(model, torch.zeros(1, 16, dtype=torch.long), 8)
    assert logits.shape == (1, 16, 12)
    assert {"inputs": [16], "outputs": [4]} in seen or any(s["outputs"] == [4] and 16 in s["inputs"] for s in seen)
    assert any(s["inputs"] == [16] and s["outputs"] == [16] for s in seen)
    assert all(not m._forward_hooks for m in model.modules())
    assert all(isinstance(n, int) for s in seen for n in s["inputs"] + s["outputs"])


class Pair(torch.nn.Module):
    """A block whose output is a tuple: the sequence and its first two positions."""

    def forward(self, x):
        return x, x[:, :2]


def test_module_shapes_reads_every_sequence_of_a_tuple_output():
    _, seen = models.module_shapes(torch.nn.Sequential(Pair()), torch.zeros(1, 5, 3), 3)
    assert {"inputs": [5], "outputs": [5, 2]} in seen


class Cross(torch.nn.Module):
    """A block that attends from its keyword input `latents` to `x`, as a down block may be called."""

    def forward(self, x, latents):
        return latents + x.mean(dim=1, keepdim=True)


class Keyed(torch.nn.Module):
    """A model that passes its block's latents by keyword."""

    def __init__(self):
        super().__init__()
        self.cross = Cross()

    def forward(self, x):
        return self.cross(x, latents=x[:, :2]), None


def test_module_shapes_reads_inputs_given_by_keyword():
    """Kills a block's keyword inputs left out of what it was called with."""
    _, seen = models.module_shapes(Keyed(), torch.zeros(1, 5, 3), 3)
    assert {"inputs": [5, 2], "outputs": [2]} in seen


def test_forward_failure_names_the_error_and_where():
    try:
        submission.GPT.forward(None, None)
    except Exception as error:
        raised = error
    failed = models.forward_failure(raised, submission, "forward pass")
    first_line = str(raised).splitlines()[0]
    assert str(failed) == ("part (g): the perceiver's forward pass at block size raises AttributeError: "
                           f"{first_line}") and first_line
    try:
        submission.model.UpProjectBlock.forward(None, None, None)
    except Exception as error:
        raised = error
    assert str(models.forward_failure(raised, submission, "forward pass")).endswith(" (in UpProjectBlock.forward)")
    assert str(models.forward_failure(ValueError(), submission, "backward pass")) == \
        "part (g): the perceiver's backward pass at block size raises ValueError"


def test_causal_drift_is_the_largest_change_before_each_position():
    base = [[[1.0, 2.0]] * 128]
    changed = [[[1.0, 2.0]] * 9 + [[1.0, 2.5]] + [[9.0, 9.0]] * 118,
               [[1.0, 1.75]] + [[1.0, 2.0]] * 39 + [[9.0, 9.0]] * 88,
               [[1.0, 2.0]] * 99 + [[1.0, 2.125]] + [[9.0, 9.0]] * 28]
    assert models.causal_drift(base + changed) == [(10, 0.5), (40, 0.25), (100, 0.125)]


def test_fingerprint_differences_name_sharing_shapes_and_logits():
    want = fingerprinted()
    assert models.fingerprint_differences(fingerprinted(), want) == []
    assert models.fingerprint_differences(fingerprinted(logits=((1.0, 2.0 + 9e-5),)), want) == []
    at_zero = fingerprinted(logits=((0.0, 2.0),))
    assert models.fingerprint_differences(fingerprinted(logits=((1e-4, 2.0),)), at_zero) == []
    assert models.fingerprint_differences(fingerprinted(logits=((1.0, 2.0 + 2e-4),)), want) == [
        "with the same weights the logits differ from the reference's by 0.0002"]
    assert models.fingerprint_differences(fingerprinted(logits=((1.0 - 3e-4, 2.0),)), want) == [
        "with the same weights the logits differ from the reference's by 0.0003"]
    shared = [("b.w", "a.w"), ("c.w", "a.w"), ("d.w", "a.w"), ("e.w", "a.w")]
    assert models.fingerprint_differences(fingerprinted(shared=shared), want) == [
        "modules are shared between blocks (b.w is a.w; c.w is a.w; d.w is a.w): the reference has a module "
        "of its own in each block"]
    wrong = fingerprinted(parameters=[("w", [3, 2])] + [(f"x{i}", [1]) for i in range(7)])
    assert models.fingerprint_differences(wrong, want) == [
        "parameters differ from the reference's: w: [3, 2] instead of [2, 3]; x0: [1] instead of nothing; "
        "x1: [1] instead of nothing; x2: [1] instead of nothing; x3: [1] instead of nothing; "
        "x4: [1] instead of nothing"]
    assert models.fingerprint_differences(fingerprinted(parameters=()), want) == [
        "parameters differ from the reference's: w: missing instead of [2, 3]"]


def test_xavier_bounds_of_a_latent_matrix():
    assert models.xavier_bounds([32, 256]) == (math.sqrt(6 / 288), math.sqrt(6 / 288))
    wide, named = models.xavier_bounds([1, 32, 256])
    assert wide == pytest.approx(math.sqrt(6 / (32 * 256 + 256))) and named == math.sqrt(6 / 288)
    assert models.xavier_bounds([2, 3, 4, 5])[0] == pytest.approx(math.sqrt(6 / (3 * 20 + 2 * 20)))


def test_the_reference_perceiver_passes_its_anatomy():
    anatomy = answers.answered(models.perceiver_anatomy(submission, vocab_size=256, seed=models.FINGERPRINT_SEED))
    models.judge_perceiver(anatomy)
    models.judge_perceiver_as_specified(anatomy)  # causal as observed: in eval mode, without dropout's noise
    assert anatomy["drift"] == [0.0] * len(models.CAUSALITY_POSITIONS)
    assert anatomy["down"] and anatomy["up"] and anatomy["logits_length"] == 128
    assert len(anatomy["latents"]) == 1 and anatomy["latents"][0]["grad"]


def test_each_flaw_of_a_perceivers_structure_is_told():
    models.judge_perceiver(anatomy())
    cases = {
        "part (g): initialize_perceiver_model builds a GPT without down and up blocks: set mconf.perceiver = True":
            dict(latents=[], down=False),
        "part (g): the perceiver has no learnable C of shape (m, d) = (32, 256) (or (1, 32, 256)): the down block's "
        "queries come from it": dict(latents=[]),
        "part (g): no block gives m = 32 positions from the 128 inputs: the down block's queries come from C, its "
        "keys and values from the input": dict(down=False),
        "part (g): no block gives the 128 positions back from the 32 latents and the input: the up block's queries "
        "come from the input X, its keys and values from the previous layer's output": dict(up=False),
        "part (g): the perceiver gives 32 positions of logits for 128 inputs": dict(logits_length=32),
    }
    for told, changes in cases.items():
        assert failure(models.judge_perceiver, anatomy(**changes)) == told
    for flaw in (dict(max=1.0, std=0.01), dict(grad=False), dict(drift=[1.0, 1.0, 1.0]), dict(latents_move_logits=0)):
        models.judge_perceiver(anatomy(**flaw))  # the structure only: a prediction test asks no more


def test_each_departure_from_the_handouts_perceiver_is_told():
    models.judge_perceiver_as_specified(anatomy())
    bound = math.sqrt(6 / 288)
    cases = {
        "part (g): C should start Xavier-uniform (within +-0.1445), but its largest entry is 0.1446":
            dict(max=bound * 1.0015),
        "part (g): C starts as not evenly spread: its largest entry is 0.1442 and its standard deviation 0.0939; "
        "the handout asks for Xavier-uniform (nn.init.xavier_uniform_: evenly spread within +-0.1445)":
            dict(std=bound * 0.65 * 1.001),
        "part (g): C starts as a normal distribution (xavier_normal_ or randn?): its largest entry is 0.1442 and "
        "its standard deviation 0.0707; the handout asks for Xavier-uniform": dict(std=bound * 0.49),
        "part (g): no gradient reaches C: C must feed the down block's queries": dict(grad=False),
        "part (g): the perceiver is not causal: changing the tokens from position 40 on changes the logits before "
        "it (by up to 0.00011)": dict(drift=[0.0, 1.1e-4, 0.0]),
        "part (g): the output does not depend on the latents: the up block's keys and values come from the previous "
        "layer's output": dict(latents_move_logits=1e-6),
    }
    for told, changes in cases.items():
        assert failure(models.judge_perceiver_as_specified, anatomy(**changes)).startswith(told), told
    models.judge_perceiver_as_specified(anatomy(std=bound * 0.501, max=bound * 1.0009))
    models.judge_perceiver_as_specified(anatomy(std=bound * 0.649, max=bound))
    models.judge_perceiver_as_specified(anatomy(shape=[1, 32, 256]))  # the handout's (m, d) bound, not torch's
    models.judge_perceiver_as_specified(anatomy(max=0.125, std=0.0625))  # a spread of exactly 0.5 and 0.65
    models.judge_perceiver_as_specified(anatomy(max=0.125, std=0.08125))
    models.judge_perceiver_as_specified(anatomy(max=math.sqrt(6 / 288) * 1.001))


def test_a_perceiver_started_with_xavier_normal_is_named_but_is_a_perceiver():
    torch.manual_seed(0)
    c = torch.empty(1, 32, 256)
    torch.nn.init.xavier_normal_(c)
    normal = anatomy(shape=[1, 32, 256], max=float(c.abs().max()), std=float(c.std()))
    models.judge_perceiver(normal)
    assert "starts as a normal distribution (xavier_normal_ or randn?)" in \
        failure(models.judge_perceiver_as_specified, normal)
