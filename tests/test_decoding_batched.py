"""
Batched cached decoding gives the one question at a time loop's answers: the
same predictions character for character, the cache's logits the full
forward's at every position, argmax ties broken as topk breaks them, and the
plain loop's answers wherever the cache cannot be trusted (a perceiver unlike
the cache, a model that is not causal).
"""

import copy
import itertools
import sys
import types

import pytest
import torch

from runtime.decoding import ANSWER_STEPS, predict_places, predict_places_plain
from runtime.decoding.greedy import CacheUnusable, Recompute, cache_class, greedy_decode
from runtime.decoding.kv_cache import shared_prefix
from runtime.decoding.perceiver_cache import PerceiverCache
from runtime.decoding.vanilla_cache import VanillaCache
from submission import GPT, CharCorruptionDataset, NameDataset, Trainer, TrainerConfig
from submission.attention import CausalCrossAttention, CausalSelfAttention
from submission.utils import sample

from runtime_helpers import one_thread

pytestmark = pytest.mark.usefixtures("single_thread")

EXACT = dict(atol=1e-5, rtol=1e-5)  # fp32, the same kernels on the same weights: the same numbers up to rounding
VARIANTS = {"vanilla": {}, "perceiver": dict(perceiver=True, bottleneck_dim=12)}


@pytest.fixture(scope="module")
def names(corpus):
    return NameDataset(corpus.questions, CharCorruptionDataset(corpus.wiki, 64))


SHORT_QUESTIONS = ["Where was Ada born?", "Who?", "Where was Lior Szabo born?"]  # prompts below 12 latents too


@pytest.fixture(scope="module", params=list(VARIANTS))
def trained(request, names, tiny_config):
    """A tiny model of each variant trained for a few seconds on the 200 questions (block 64, so
    that the longest prompts need the plain path's cropping; perceiver latents m = 30, so that
    prompts end below and above m)."""
    extra = dict(perceiver=True, bottleneck_dim=30) if request.param == "perceiver" else {}
    torch.manual_seed(0)
    model = GPT(tiny_config(len(names.stoi), 64, n_layer=4, **extra))
    config = TrainerConfig(max_epochs=6, batch_size=32, learning_rate=1e-2)
    with one_thread():
        Trainer(model, names, None, config).train()
    return model.eval()


@pytest.fixture(scope="module")
def questions(corpus):
    """The short questions and every sixth of the 200: 37 questions, five of them too long to decode uncropped."""
    lines = corpus.questions.splitlines()
    return SHORT_QUESTIONS + [line.split("\t")[0] for line in lines[::6]]


@pytest.fixture(scope="module")
def plain(trained, questions, names):
    """predict_places_plain's predictions of each model for the questions, made once: each question is
    answered alone, so those of the first N questions are its predictions for questions[:N]."""
    with one_thread():
        return predict_places_plain(trained, questions, names, "cpu")


@pytest.fixture(scope="module")
def sampled(trained, questions, names):
    """The first 24 prompts that decode uncropped, and what utils.sample writes greedily for each of them
    (all 32 steps), made once a model."""
    prompts = prompts_of(questions, names, 64)[:24]
    with one_thread():
        return prompts, [sample(trained, torch.tensor([p]), ANSWER_STEPS)[0].tolist() for p in prompts]


def test_batched_cached_predictions_equal_the_one_at_a_time_loop(trained, questions, names, plain, capsys):
    """predict_places gives predict_places_plain's predictions, character for character, in
    batches of 7 (rows stop and are dropped at different steps), all in one batch, and all in
    one batch running all 32 steps. The
    predictions are not trivial: several distinct ones, most closed by a MASK; and both the
    cached path (no notice of falling back) and the cropping fallback are used."""
    assert len(set(plain)) >= 5
    assert sum(len(p) < ANSWER_STEPS for p in plain) >= 0.9 * len(plain)
    lengths = [len(q) + 1 + ANSWER_STEPS - 1 for q in questions]
    assert min(lengths) <= 64 < max(lengths)
    capsys.readouterr()
    for batch_size, stop_at_mask in ((7, True), (256, True), (256, False)):
        assert predict_places(trained, questions, names, "cpu", batch_size, stop_at_mask) == plain
    assert "one question at a time" not in capsys.readouterr().err


def up_block_without_layernorm_on_latents(self, y, x_input):
    """A perceiver up block as a student might write it: keys and values from y itself, not ln1(y)."""
    x = x_input + self.attn(y, x_input)
    return x + self.mlp(self.ln2(x))


def test_a_perceiver_unlike_the_cache_is_answered_by_the_plain_loop(trained, questions, names, capsys):
    """When a perceiver's blocks compute something other than what the cache computes, the
    cached decoder refuses (CacheUnusable) and predict_places gives the plain loop's predictions,
    saying so on stderr."""
    if not trained.perceiver:
        pytest.skip("the vanilla blocks are the provided code, not a student's")
    other = copy.deepcopy(trained)
    other.up_block.forward = types.MethodType(up_block_without_layernorm_on_latents, other.up_block)
    prompts = prompts_of(questions, names, 64)[:8]
    with pytest.raises(CacheUnusable):
        greedy_decode(other, prompts, ANSWER_STEPS)
    some = questions[:6]  # the short questions and three more: each answered alone, whatever their number
    capsys.readouterr()
    assert predict_places(other, some, names, "cpu") == predict_places_plain(other, some, names, "cpu")
    assert ("predict_places: batched logits differ from the model's forward on one prompt; answering one "
            "question at a time" in capsys.readouterr().err)


def test_a_perceiver_without_its_cache_module_is_answered_in_batches(trained, questions, names, plain, sampled,
                                                                     monkeypatch, capsys):
    """The student starter has no perceiver_cache.py: a perceiver is decoded in batches without a
    cache (Recompute), with the ids sample writes and the plain loop's predictions; a vanilla
    model keeps its cache."""
    monkeypatch.setitem(sys.modules, "runtime.decoding.perceiver_cache", None)  # importing it now fails
    assert cache_class(trained) is (Recompute if trained.perceiver else VanillaCache)
    prompts, expected = sampled
    assert greedy_decode(trained, prompts[:8], ANSWER_STEPS) == expected[:8]
    capsys.readouterr()
    assert predict_places(trained, questions[:12], names, "cpu") == plain[:12]
    assert "one question at a time" not in capsys.readouterr().err


def test_a_model_that_is_not_causal_is_answered_one_question_at_a_time(trained, questions, names, monkeypatch):
    """Batched decoding pads prompts on the right, which only a causal model ignores: a model
    whose output at a position depends on later ones is refused by the check on the shortest
    prompt, with the cache and without one."""
    other = copy.deepcopy(trained)
    for module in other.modules():
        if isinstance(module, (CausalSelfAttention, CausalCrossAttention)):
            module.mask.fill_(1.0)  # every query sees every key
    prompts = prompts_of(questions, names, 64)[:8]
    with pytest.raises(CacheUnusable):
        greedy_decode(other, prompts, ANSWER_STEPS)
    monkeypatch.setitem(sys.modules, "runtime.decoding.perceiver_cache", None)
    with pytest.raises(CacheUnusable):
        greedy_decode(other, prompts, ANSWER_STEPS)


def prompts_of(questions, dataset, block_size):
    prompts = [[dataset.stoi[c] for c in q + dataset.MASK_CHAR] for q in questions]
    return [p for p in prompts if len(p) + ANSWER_STEPS - 1 <= block_size]


def test_greedy_decode_writes_what_sample_writes(trained, sampled):
    """Without a stop token every row runs all 32 steps: the same ids as utils.sample, greedy."""
    prompts, expected = sampled
    assert greedy_decode(trained, prompts, ANSWER_STEPS) == expected


def test_cached_logits_equal_the_full_forward_at_every_position(trained, sampled):
    """Prefill then one token at a time: at each row's every position, the cache's logits are
    the model's full-sequence logits within 1e-5."""
    prompts, completions = (part[:12] for part in sampled)
    completions = [torch.tensor(c) for c in completions]
    lengths = torch.tensor([len(p) for p in prompts])
    idx = torch.zeros(len(prompts), int(lengths.max()), dtype=torch.long)
    for row, p in enumerate(prompts):
        idx[row, :len(p)] = torch.tensor(p)
    with torch.no_grad():
        full = [trained(c[None, :-1])[0][0] for c in completions]  # (T, vocab) each: every position that is fed
        cache = (PerceiverCache if trained.perceiver else VanillaCache)(trained, lengths, ANSWER_STEPS)
        logits = cache.prefill(idx)
        for step in range(ANSWER_STEPS):
            expected = torch.stack([f[len(p) - 1 + step] for f, p in zip(full, prompts)])
            torch.testing.assert_close(logits, expected, **EXACT)
            if step < ANSWER_STEPS - 1:
                logits = cache.step(torch.stack([c[len(p) + step] for c, p in zip(completions, prompts)]))


def test_shared_prefix_stops_at_the_first_difference_and_before_the_shortest_prompts_last_token():
    idx = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 8, 0], [5, 6, 7, 1, 0]])
    assert shared_prefix(idx, torch.tensor([5, 4, 4])) == 3
    assert shared_prefix(idx[:2], torch.tensor([5, 4])) == 3  # position 3 is the last token of row 1
    assert shared_prefix(idx[:1], torch.tensor([5])) == 4
    assert shared_prefix(idx, torch.tensor([5, 4, 1])) == 0


def test_prompts_with_a_common_start_prefill_as_the_full_forward(trained, questions, names):
    """Questions that all start "Where was " (computed once for the batch) and the same
    questions after "Who?" (nothing shared): the prefill's logits are the model's at each
    row's last prompt position."""
    start = [names.stoi[c] for c in "Where was "]
    prompts = [p for p in prompts_of(questions, names, 64) if p[:len(start)] == start]
    assert len(prompts) >= 8
    for batch in (prompts[:8], prompts_of(["Who?"], names, 64) + prompts[:8]):
        lengths = torch.tensor([len(p) for p in batch])
        idx = torch.zeros(len(batch), int(lengths.max()), dtype=torch.long)
        for row, p in enumerate(batch):
            idx[row, :len(p)] = torch.tensor(p)
        with torch.no_grad():
            expected = trained(idx)[0][torch.arange(len(batch)), lengths - 1]
            cache = (PerceiverCache if trained.perceiver else VanillaCache)(trained, lengths, ANSWER_STEPS)
            torch.testing.assert_close(cache.prefill(idx), expected, **EXACT)


@pytest.mark.parametrize("variant", VARIANTS)
def test_argmax_ties_break_as_topk_does(tiny_config, variant, names):
    """A model whose two tokens always have exactly the highest logit (ln_f writes a constant,
    and their head rows are equal): every step is a tie, and the cached decoder picks the
    token sample's torch.topk picks, in every row of a batch."""
    torch.manual_seed(0)
    model = GPT(tiny_config(len(names.stoi), 64, n_layer=3, **VARIANTS[variant])).eval()
    direction = torch.randn(model.ln_f.bias.shape)
    with torch.no_grad():
        model.ln_f.weight.zero_()
        model.ln_f.bias.copy_(direction)
        model.head.weight[[5, 9]] = direction / direction.norm() ** 2 * 10
        top = model(torch.tensor([[3, 4]]))[0][0, -1]
    assert top[5] == top[9] == top.max()
    prompts = [[3] * n for n in (1, 4, 15, 20)]
    expected = [sample(model, torch.tensor([p]), 5)[0].tolist() for p in prompts]
    assert greedy_decode(model, prompts, 5) == expected
    assert set(itertools.chain.from_iterable(e[len(p):] for e, p in zip(expected, prompts))) <= {5, 9}
