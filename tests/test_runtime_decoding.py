"""
The decoder (src/runtime/decoding/): batched, cached decoding against the
one-at-a-time loop, on tiny random models, at every edge of the prompt's
length too (one character, the latents, the longest prompt decoded
uncropped, the block and past it). Each test's docstring says what it kills.
"""

import copy
import sys
import types

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from assignment.facts import MASK_CHAR, PAD_CHAR
from runtime import decoding
from runtime.decoding import greedy, kv_cache
from runtime.decoding import predict_places, predict_places_plain, prediction_from_completion
from runtime.decoding.greedy import CacheUnusable, greedy_decode
from submission import GPT, GPTConfig
from submission.attention import CausalCrossAttention, CausalSelfAttention
from submission.utils import sample

from runtime_helpers import tiny_gpt

pytestmark = pytest.mark.usefixtures("single_thread")  # tiny models: far faster on one thread of a busy CPU


ALPHABET = PAD_CHAR + 'a' + MASK_CHAR + 'bcdefghij'  # MASK is id 2: a token these random models write
QUESTIONS = ['ab', 'jihgfedc', 'b', 'cab', 'dddd', 'hig', 'eeffgg', 'a', 'jj', 'ghij', 'cbad', 'fff', 'abcdefgh',
             'ih', 'dcba', 'gg', 'abcdefghij']  # the last one is too long to decode without cropping


# The noise of each variant's spread model: seeds whose answers differ from prompt to prompt and end at several
# steps (the RoPE model under noise seed 0 writes one answer to every prompt).
SPREAD_SEEDS = {'vanilla': 0, 'perceiver': 0, 'rope': 4}


def spread_model(variant):
    """A tiny GPT of `variant` (block 40, 8 latents) with weights spread so that its answers differ."""
    extra = {'vanilla': {}, 'perceiver': dict(perceiver=True, bottleneck_dim=8), 'rope': dict(rope=True)}[variant]
    torch.manual_seed(1)
    model = GPT(GPTConfig(len(ALPHABET), 40, n_layer=3, n_head=2, n_embd=16, **extra)).eval()
    generator = torch.Generator().manual_seed(SPREAD_SEEDS[variant])
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.5)
    return model


@pytest.fixture(scope="module", params=['vanilla', 'perceiver', 'rope'])
def spread(request):
    """A spread model of each variant."""
    return spread_model(request.param)


@pytest.fixture(scope="module")
def alphabet():
    """The dataset interface predict_places reads, over ALPHABET."""
    stoi = {char: i for i, char in enumerate(ALPHABET)}
    return types.SimpleNamespace(stoi=stoi, itos=dict(enumerate(ALPHABET)), MASK_CHAR=MASK_CHAR)


@pytest.fixture(scope="module")
def plain(spread, alphabet):
    """The one-at-a-time loop's predictions of the spread model for QUESTIONS."""
    return predict_places_plain(spread, QUESTIONS, alphabet, 'cpu')


def prompts_of(questions):
    """The token ids of each question followed by MASK."""
    return [[ALPHABET.index(char) for char in question + MASK_CHAR] for question in questions]


def sampled(model, prompt, steps):
    """What sample writes for `prompt` greedily: the prompt and `steps` ids."""
    return sample(model, torch.tensor([prompt]), steps)[0].tolist()


def cut_at(completion, prompt, stop):
    """`completion` ended after the first `stop` written after `prompt`."""
    written = completion[len(prompt):]
    return prompt + (written[:written.index(stop) + 1] if stop in written else written)


def test_greedy_decode_writes_what_sample_writes(spread):
    """Kills a wrong cache write, mask, position or token choice in the batched decoder."""
    prompts = prompts_of(QUESTIONS[:-1])
    assert greedy_decode(spread, prompts, 9) == [sampled(spread, p, 9) for p in prompts]


def test_a_model_left_in_training_mode_decodes_as_sample(spread):
    """Kills batched decoding under dropout: sample puts the model in eval mode, and so must greedy_decode."""
    model = copy.deepcopy(spread).train()
    prompts = prompts_of(QUESTIONS[:4])
    assert greedy_decode(model, prompts, 5) == [sampled(spread, p, 5) for p in prompts]
    assert not model.training


def test_prompts_with_a_common_start_decode_as_sample(spread):
    """Kills a wrong shared start (computed once a batch) or a wrong write of it into the cache."""
    prompts = prompts_of(['abcd' + question for question in ('', 'e', 'jj', 'bbb', 'e')])
    assert greedy_decode(spread, prompts, 5) == [sampled(spread, p, 5) for p in prompts]


def test_a_double_precision_model_decodes_as_sample(spread, monkeypatch):
    """Kills a cache of another dtype than the model's, or attention over it that is not the model's kind."""
    model = copy.deepcopy(spread).double()
    kinds = []
    attend = kv_cache.attend
    monkeypatch.setattr(kv_cache, 'attend', lambda *args: kinds.append(args[0].fused) or attend(*args))
    prompts = prompts_of(['abcd', 'ab', 'hhh'])
    assert greedy_decode(model, prompts, 5) == [sampled(model, p, 5) for p in prompts]
    assert set(kinds) == {True}  # the model's fused attention


def test_a_model_with_written_out_attention_decodes_as_sample(spread, monkeypatch):
    """Kills a wrong scale, transpose, mask or softmax in the written-out attention over the cache
    (fused_attention=False), which the fused default never reaches."""
    model = copy.deepcopy(spread)
    for module in model.modules():
        if isinstance(module, (CausalSelfAttention, CausalCrossAttention)):
            module.fused = False
    kinds = []
    attend = kv_cache.attend
    monkeypatch.setattr(kv_cache, 'attend', lambda *args: kinds.append(args[0].fused) or attend(*args))
    prompts = prompts_of(QUESTIONS[:-1])
    assert greedy_decode(model, prompts, 9) == [sampled(model, p, 9) for p in prompts]
    assert set(kinds) == {False}


def test_rows_stop_at_their_first_stop_token_and_the_others_go_on(spread):
    """Kills a row cut too early or late, or rows mixed up when the finished ones are dropped."""
    prompts = prompts_of(QUESTIONS[:-1])
    full = [sampled(spread, p, 9) for p in prompts]
    expected = [cut_at(c, p, 2) for c, p in zip(full, prompts)]
    assert len({len(e) - len(p) for e, p in zip(expected, prompts)}) >= 4  # rows end at several steps
    assert sum(2 not in c[len(p):] for c, p in zip(full, prompts)) >= 4  # and some never do
    assert greedy_decode(spread, prompts, 9, stop=2) == expected


def test_every_row_stopping_ends_the_decoding(spread):
    """Kills decoding on after every row ended."""
    prompts = prompts_of(['b', 'hig'])
    full = [sampled(spread, p, 9) for p in prompts]
    stop = full[0][len(prompts[0])]
    assert greedy_decode(spread, prompts, 9, stop=stop)[0] == prompts[0] + [stop]


def test_recompute_writes_what_sample_writes(spread, monkeypatch):
    """Kills a wrong row, position or step in the cache-less decoder (the starter's perceiver)."""
    monkeypatch.setattr(greedy, 'cache_class', lambda model: greedy.Recompute)
    prompts = prompts_of(QUESTIONS[:-1])
    full = [sampled(spread, p, 9) for p in prompts]
    assert greedy_decode(spread, prompts, 9) == full
    assert greedy_decode(spread, prompts, 9, stop=2) == [cut_at(c, p, 2) for c, p in zip(full, prompts)]


def one_hot_model(idx):
    """A causal stand-in for a GPT that makes no tensor of its own: each position's logits count the tokens so far."""
    return F.one_hot(idx, len(ALPHABET)).float().cumsum(1), None


def test_recompute_and_the_caches_make_their_tensors_on_the_devices_of_their_inputs(spread):
    """Kills a tensor made on the default device instead of the model's (what a GPU run would trip on): the
    default device is 'meta' here, so such a tensor has no data."""
    lengths = torch.tensor([4, 2, 5])
    idx = torch.tensor([[3, 4, 5, 2, 0], [3, 2, 0, 0, 0], [3, 4, 5, 6, 2]])
    positions = torch.tensor([[1, 2], [3, 4]])

    def decoded():
        """Recompute's first logits and buffer, and the caches' pieces (a step's indexing needs real data)."""
        cache = greedy.Recompute(one_hot_model, lengths, 4)
        kv = kv_cache.KVCache(spread.blocks[0].attn, 2, 5, torch.device('cpu'))
        return [cache.prefill(idx), cache.idx, kv_cache.causal_mask(positions, 6), kv.k, kv.v,
                kv_cache.shared_prefix(idx, lengths)]
    expected = decoded()
    with torch.device('meta'):
        found = decoded()
    assert found[-1] == expected[-1] == 1
    for got, wanted in zip(found[:-1], expected[:-1]):
        assert got.device == wanted.device and torch.equal(got, wanted)


def test_a_perceiver_without_its_cache_is_recomputed(monkeypatch):
    """Kills the wrong cache chosen for a variant."""
    assert greedy.cache_class(spread_model('vanilla')) is greedy.VanillaCache
    assert greedy.cache_class(spread_model('perceiver')).__name__ == 'PerceiverCache'
    monkeypatch.setitem(sys.modules, 'runtime.decoding.perceiver_cache', None)
    assert greedy.cache_class(spread_model('perceiver')) is greedy.Recompute


@pytest.mark.parametrize("batch_size, stop_at_mask", [(3, True), (128, True), (5, False)])
def test_predictions_equal_the_one_at_a_time_loop(spread, alphabet, plain, batch_size, stop_at_mask, capsys):
    """Kills a prediction put in another question's place, cut wrongly, or a long question not cropped."""
    assert len(set(plain)) >= 8 and sum(len(p) < 32 for p in plain) >= 4
    assert predict_places(spread, QUESTIONS, alphabet, 'cpu', batch_size, stop_at_mask) == plain
    assert "one question at a time" not in capsys.readouterr().err


def test_questions_are_decoded_by_length_in_batches_and_only_long_ones_one_at_a_time(spread, alphabet,
                                                                                    monkeypatch, capsys):
    """Kills another batch size, stop, order or length limit, a question sent to the slow loop that the
    batches could answer, or a progress bar that miscounts."""
    calls, slow = [], []

    def batched(model, prompts, steps, stop=None):
        """greedy_decode writing MASK at once, recording each call."""
        calls.append((len(prompts), steps, stop, [len(p) for p in prompts]))
        return [p + [2] for p in prompts]
    monkeypatch.setattr(decoding, 'greedy_decode', batched)
    monkeypatch.setattr(decoding, 'predict_places_plain',
                        lambda model, questions, dataset, device: slow.append((questions, device)) or
                        ['slow'] * len(questions))
    questions = [ALPHABET[3 + i % 9] * (9 - i % 9) for i in range(150)]  # 17 of 9 characters: too long
    expected = ['slow' if len(q) == 9 else '' for q in questions]
    assert predict_places(spread, questions, alphabet, 'cpu') == expected
    assert slow == [([q for q in questions if len(q) == 9], 'cpu')]
    assert [call[:3] for call in calls] == [(128, 32, 2), (5, 32, 2)]
    lengths = [length for call in calls for length in call[3]]
    assert lengths == sorted(lengths) and max(lengths) == 9  # a 9-token prompt is the longest that fits
    err = capsys.readouterr().err
    assert "predicting: 100%" in err and "150/150" in err
    calls.clear()
    predict_places(spread, questions, alphabet, 'cpu', batch_size=50, stop_at_mask=False)
    assert [call[:3] for call in calls] == [(50, 32, None), (50, 32, None), (33, 32, None)]


def test_when_a_later_batch_is_refused_only_the_questions_left_go_one_at_a_time(spread, alphabet, monkeypatch,
                                                                              capsys):
    """Kills the questions of the batches already decoded answered again by the slow loop, and counted
    twice by the progress bar."""
    calls, slow = [], []

    def refused_after_one_batch(model, prompts, steps, stop=None):
        """greedy_decode writing MASK at once for the first batch, refusing the second."""
        calls.append(len(prompts))
        if len(calls) > 1:
            raise CacheUnusable("batched logits differ from the model's forward on one prompt")
        return [p + [2] for p in prompts]
    monkeypatch.setattr(decoding, 'greedy_decode', refused_after_one_batch)
    monkeypatch.setattr(decoding, 'predict_places_plain',
                        lambda model, questions, dataset, device: slow.extend(questions) or ['slow'] * len(questions))
    questions = ['abc', 'a', 'ab', 'abcd', 'b']
    assert predict_places(spread, questions, alphabet, 'cpu', batch_size=2) == ['slow', '', 'slow', 'slow', '']
    assert calls == [2, 2] and slow == ['abc', 'ab', 'abcd']
    assert "5/5" in capsys.readouterr().err


def test_the_one_at_a_time_loop_shows_its_progress(spread, alphabet, capsys):
    """Kills the plain loop's progress bar unnamed."""
    predict_places_plain(spread, ['ab', 'c'], alphabet, 'cpu')
    assert "predicting: 100%" in capsys.readouterr().err


def test_a_prediction_is_the_text_between_the_first_two_masks():
    """Kills another piece of the completion taken."""
    assert prediction_from_completion(f"ab{MASK_CHAR}cd{MASK_CHAR}e{MASK_CHAR}", MASK_CHAR) == "cd"
    assert prediction_from_completion(f"ab{MASK_CHAR}cde", MASK_CHAR) == "cde"


def test_a_question_that_holds_a_mask_is_answered_inside_its_prompt(spread, alphabet):
    """Kills a prediction taken as what the model writes after the prompt: it is the text between the
    completion's first two MASKs, inside the prompt for a question that holds a MASK, batched or not."""
    questions = [f"ab{MASK_CHAR}cd", f"{MASK_CHAR}h", "ab"]
    plain = predict_places_plain(spread, questions, alphabet, 'cpu')
    assert plain[:2] == ["cd", "h"]
    for stop_at_mask in (True, False):
        assert predict_places(spread, questions, alphabet, 'cpu', 2, stop_at_mask) == plain


def not_causal(model):
    """`model` with every attention mask opened: each position sees the later ones."""
    other = copy.deepcopy(model)
    for module in other.modules():
        if isinstance(module, (CausalSelfAttention, CausalCrossAttention)):
            module.mask.fill_(1.0)
    return other


def test_a_model_that_is_not_causal_is_answered_one_question_at_a_time(spread, alphabet, capsys):
    """Kills the check of the batched logits (on the most padded row) and the fallback after it."""
    other = not_causal(spread)
    with pytest.raises(CacheUnusable, match="^batched logits differ from the model's forward on one prompt$"):
        greedy_decode(other, prompts_of(['abcdefgh', 'a']), 9)
    questions = QUESTIONS[:6]
    assert predict_places(other, questions, alphabet, 'cpu', 2) == predict_places_plain(other, questions,
                                                                                        alphabet, 'cpu')
    assert ("predict_places: batched logits differ from the model's forward on one prompt; answering one question "
            "at a time (the same predictions, slower)\n") in capsys.readouterr().err.split("\r")


def test_the_longest_prompts_are_checked(spread):
    """Kills a check that misses a model differing only on long prompts."""
    prompts = prompts_of(['ab', 'cd', 'ef', 'gh', 'abcdefgh'])
    forward = spread.forward

    def differs_when_long(idx, *args, **kwargs):
        """The model's forward, but other logits for the longest prompt alone."""
        logits, loss = forward(idx, *args, **kwargs)
        return (logits + 1 if idx.size(1) == 9 and idx.size(0) == 1 else logits), loss
    other = copy.deepcopy(spread)
    other.forward = differs_when_long
    with pytest.raises(CacheUnusable):
        greedy_decode(other, prompts, 5)


# ---- at the edges of the prompt's length ------------------------------------------------------------

DECODE_BLOCK, LATENTS = 40, 4
DECODE_LETTERS = "abcdefgh"
DECODE_VOCABULARY = types.SimpleNamespace(MASK_CHAR=MASK_CHAR, PAD_CHAR=PAD_CHAR,
                                          itos=dict(enumerate(PAD_CHAR + MASK_CHAR + DECODE_LETTERS)))
DECODE_VOCABULARY.stoi = {c: i for i, c in DECODE_VOCABULARY.itos.items()}
# prompt lengths (question + MASK): one, around the latents, the longest that decodes uncropped (block - 31),
# one past it, and around the block
PROMPT_LENGTHS = [1, 2, LATENTS - 1, LATENTS, LATENTS + 1, DECODE_BLOCK - 32, DECODE_BLOCK - 31, DECODE_BLOCK - 30,
                  DECODE_BLOCK - 1, DECODE_BLOCK, DECODE_BLOCK + 1, 2 * DECODE_BLOCK + 3]
MODELS = {}


def decoding_model(variant):
    """A tiny GPT of `variant` with weights spread so that its answers differ and some end at a MASK (built once)."""
    if variant not in MODELS:
        extra = {"vanilla": {}, "perceiver": dict(perceiver=True, bottleneck_dim=LATENTS), "rope": dict(rope=True)}[variant]
        model = tiny_gpt(len(DECODE_VOCABULARY.stoi), DECODE_BLOCK, **extra).eval()
        noise = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(0.5 * torch.randn(parameter.shape, generator=noise))
        MODELS[variant] = model
    return MODELS[variant]


QUESTIONS_AT_THE_EDGES = [(letters * 11)[:length - 1] for length in PROMPT_LENGTHS for letters in ("abcdefgh", "hhgag")]
ANSWERS = {}


def one_at_a_time(variant, question):
    """The answer of submission.utils.sample's loop, which crops the context to its last block_size ids."""
    if (variant, question) not in ANSWERS:
        prompt = torch.tensor([[DECODE_VOCABULARY.stoi[c] for c in question + MASK_CHAR]])
        completion = "".join(DECODE_VOCABULARY.itos[int(i)] for i in sample(decoding_model(variant), prompt, 32)[0])
        ANSWERS[variant, question] = prediction_from_completion(completion, MASK_CHAR)
    return ANSWERS[variant, question]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(questions=st.lists(st.sampled_from(QUESTIONS_AT_THE_EDGES), max_size=6),
       variant=st.sampled_from(["vanilla", "perceiver", "rope"]), batch_size=st.integers(1, 4), stop_at_mask=st.booleans())
def test_batched_answers_equal_the_one_at_a_time_loop_at_every_prompt_length(questions, variant, batch_size,
                                                                           stop_at_mask):
    """Kills a batched decoder that differs from sample at a prompt of one character, at the latents'
    edge, at the longest prompt decoded uncropped or one past it, or past the block (where sample keeps
    the LAST block_size characters), and for no question at all."""
    assert predict_places(decoding_model(variant), questions, DECODE_VOCABULARY, "cpu", batch_size,
                          stop_at_mask) == [one_at_a_time(variant, q) for q in questions]


def test_greedy_decoding_runs_up_to_the_block_and_refuses_one_past_it():
    """Kills a limit of greedy_decode one short (a prompt that fits refused) or one long (positions past
    the block)."""
    model = decoding_model("vanilla")
    steps = 5
    prompt = [2 + i % len(DECODE_LETTERS) for i in range(DECODE_BLOCK - steps + 1)]
    expected = sample(model, torch.tensor([prompt]), steps)[0].tolist()
    assert greedy_decode(model, [prompt, prompt[:1]], steps)[0] == expected
    with pytest.raises(AssertionError, match="needs cropping"):
        greedy_decode(model, [prompt + [2]], steps)
