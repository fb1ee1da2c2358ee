"""
The small helpers of src/submission/utils.py: set_seed (python's, numpy's,
torch's and every GPU's generators), pick_device (cuda, then mps, then the
CPU), top_k_logits, sample (the context cropped to the model's last
block_size tokens, the last position's logits scaled by the temperature,
top-k, greedy or drawn, in eval mode and without gradients) and
evaluate_places ((total, correct) as floats; (0, 0) for a file without
labels).

Drawn samples are counted over DRAWS rows of one seeded step: a frequency's
standard error is at most 0.0036 there, and each must be within
RATE_TOLERANCE (0.02, more than 5.5 standard errors) of its probability.
"""

import math
import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from submission.utils import evaluate_places, pick_device, sample, set_seed, top_k_logits

DRAWS = 20000
RATE_TOLERANCE = 0.02
VOCAB = 7


@pytest.fixture(autouse=True)
def own_random_streams():
    """python's, numpy's and torch's global generators as they were before the test, whatever it seeds."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        yield
    random.setstate(python_state)
    np.random.set_state(numpy_state)


class Successor(torch.nn.Module):
    """
    A stand-in model of `block_size`: at each position its logits favour the
    token after that position's own (mod VOCAB), so greedy decoding counts up
    from the last token it reads. It records each context it is given, the
    mode it runs in and whether gradients are on.
    """

    def __init__(self, block_size):
        super().__init__()
        self.block_size = block_size
        self.contexts, self.modes, self.grads = [], [], []
        self.scale = torch.nn.Parameter(torch.ones(()))

    def get_block_size(self):
        return self.block_size

    def forward(self, idx):
        self.contexts.append(idx.tolist())
        self.modes.append(self.training)
        self.grads.append(torch.is_grad_enabled())
        return self.scale * 5.0 * torch.nn.functional.one_hot((idx + 1) % VOCAB, VOCAB).float(), None


class FixedLogits(torch.nn.Module):
    """A stand-in model whose logits at the last position are `logits` and, everywhere before, favour token 0."""

    def __init__(self, logits):
        super().__init__()
        self.logits = torch.tensor(logits)

    def get_block_size(self):
        return 8

    def forward(self, idx):
        out = torch.zeros(idx.size(0), idx.size(1), len(self.logits))
        out[:, :, 0] = 50.0
        out[:, -1] = self.logits
        return out, None


def frequencies(drawn, vocab):
    """The share of each token among the drawn ones."""
    return torch.bincount(drawn, minlength=vocab).float() / drawn.numel()


def draw_once(model, **options):
    """The tokens drawn for DRAWS two-token prompts in one seeded step."""
    torch.manual_seed(0)
    prompts = torch.full((DRAWS, 2), 3, dtype=torch.long)
    return sample(model, prompts, 1, sample=True, **options)[:, -1]


def labels_file(tmp_path, text, newline="\n"):
    path = tmp_path / "labels.tsv"
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return str(path)


# ---------------------------------------------------------------- set_seed and pick_device

def draws():
    return random.random(), float(np.random.rand()), float(torch.rand(()))


def test_set_seed_repeats_pythons_numpys_and_torchs_draws():
    """The same seed gives the same draws of each generator; another seed gives other draws of each."""
    set_seed(5)
    first = draws()
    set_seed(5)
    assert draws() == first
    set_seed(6)
    assert all(a != b for a, b in zip(draws(), first))


def test_set_seed_seeds_every_gpu(monkeypatch):
    seeded = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", seeded.append)
    set_seed(17)
    assert seeded and set(seeded) == {17}


@pytest.mark.parametrize("cuda, mps, expected", [(True, True, "cuda"), (True, False, "cuda"),
                                                 (False, True, "mps"), (False, False, "cpu")])
def test_pick_device_prefers_cuda_then_mps_then_cpu(monkeypatch, cuda, mps, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert pick_device() == torch.device(expected)


# ---------------------------------------------------------------- top_k_logits

@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.integers(-4, 4), min_size=VOCAB, max_size=VOCAB), min_size=1, max_size=4),
       st.integers(1, VOCAB))
def test_top_k_keeps_every_logit_at_least_the_kth_largest_and_no_other(rows, k):
    """Each row keeps its logits >= its k-th largest (ties with it included, so at least k), unchanged,
    and every other one becomes -inf; the input is left as it was."""
    logits = torch.tensor(rows, dtype=torch.float)
    before = logits.clone()
    out = top_k_logits(logits, k)
    assert torch.equal(logits, before)
    for row, kept in zip(logits, out):
        kth = row.sort(descending=True).values[k - 1]
        assert torch.equal(kept[row >= kth], row[row >= kth])
        assert bool(torch.all(kept[row < kth] == -math.inf))
        assert int((kept > -math.inf).sum()) >= k


def test_top_k_of_distinct_logits_keeps_exactly_k():
    logits = torch.tensor([[0.5, 3.0, -1.0, 2.0, 1.0], [9.0, 8.0, 7.0, 6.0, 5.0]])
    for k in range(1, 6):
        kept = top_k_logits(logits, k) > -math.inf
        assert kept.sum(dim=1).tolist() == [k, k]
    assert (top_k_logits(logits, 2) > -math.inf).tolist() == [[False, True, False, True, False],
                                                             [True, True, False, False, False]]


# ---------------------------------------------------------------- sample: context and greedy decoding

@pytest.mark.parametrize("length", [1, 3, 4, 5, 9])
def test_sample_gives_the_model_at_most_its_last_block_size_tokens(length):
    """Each step reads the whole sequence while it fits the block, and after that its last block_size
    tokens: a prompt shorter than, as long as and longer than the block."""
    model = Successor(block_size=4)
    prompt = [[(3 * i) % VOCAB for i in range(length)]]
    out = sample(model, torch.tensor(prompt), 4)
    sequence = out[0].tolist()
    assert len(sequence) == length + 4 and sequence[:length] == prompt[0]
    assert model.contexts == [[sequence[max(0, end - 4):end]] for end in range(length, length + 4)]


def test_greedy_sample_appends_the_most_likely_token_of_the_last_position_each_step():
    """Reading the last position's logits, greedy decoding counts up from each row's last token."""
    model = Successor(block_size=8)
    out = sample(model, torch.tensor([[2, 5], [0, 6]]), 5)
    assert out.tolist() == [[2, 5, 6, 0, 1, 2, 3], [0, 6, 0, 1, 2, 3, 4]]


def test_sample_runs_the_model_in_eval_mode_without_gradients():
    """A model left in training mode is run in eval mode, with no graph kept."""
    model = Successor(block_size=8).train()
    out = sample(model, torch.tensor([[1]]), 3)
    assert model.modes == [False] * 3 and model.grads == [False] * 3
    assert not out.requires_grad


def test_sample_of_zero_steps_is_the_prompt():
    model = Successor(block_size=8)
    prompt = torch.tensor([[4, 2, 1]])
    assert torch.equal(sample(model, prompt, 0), prompt) and model.contexts == []


# ---------------------------------------------------------------- sample: drawn tokens

LOGITS = [1.0, 0.0, 2.0, -1.0, 1.5]


@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.5])
def test_drawn_tokens_follow_the_softmax_of_the_last_logits_over_the_temperature(temperature):
    """Token i is drawn with probability softmax(logits / temperature)[i]: a lower temperature
    sharpens the distribution, a higher one flattens it."""
    drawn = draw_once(FixedLogits(LOGITS), temperature=temperature)
    expected = torch.softmax(torch.tensor(LOGITS) / temperature, dim=0)
    assert torch.allclose(frequencies(drawn, len(LOGITS)), expected, atol=RATE_TOLERANCE, rtol=0)


@pytest.mark.parametrize("top_k", [1, 2, 3])
def test_drawn_tokens_come_from_the_top_k_in_their_renormalised_proportions(top_k):
    """With top_k, only the k most likely tokens are drawn, each with its softmax probability
    renormalised over those k."""
    drawn = draw_once(FixedLogits(LOGITS), top_k=top_k)
    logits = torch.tensor(LOGITS)
    kept = logits.topk(top_k).indices
    expected = torch.zeros(len(LOGITS))
    expected[kept] = torch.softmax(logits[kept], dim=0)
    observed = frequencies(drawn, len(LOGITS))
    assert set(drawn.unique().tolist()) == set(kept.tolist())
    assert torch.allclose(observed, expected, atol=RATE_TOLERANCE, rtol=0)


def test_greedy_sample_ignores_the_temperature_and_top_k():
    model = FixedLogits(LOGITS)
    prompt = torch.tensor([[3, 3]])
    for options in [{}, {"temperature": 0.1}, {"temperature": 10.0}, {"top_k": 1}, {"top_k": 4}]:
        assert sample(model, prompt, 1, **options).tolist() == [[3, 3, 2]], options


# ---------------------------------------------------------------- evaluate_places

LABELS = "Where was A born?\tLisbon\nWhere was B born?\tNew York\nWhere was C born?\tOsaka\n"


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_evaluate_places_counts_exact_matches_as_floats(tmp_path, newline):
    path = labels_file(tmp_path, LABELS, newline)
    result = evaluate_places(path, ["Lisbon", "New York", "Paris"])
    assert result == (3.0, 2.0) and all(isinstance(value, float) for value in result)
    assert evaluate_places(path, ["lisbon", "New  York", "Osaka "]) == (3.0, 0.0)


def test_evaluate_places_skips_blank_lines_and_needs_no_final_newline(tmp_path):
    path = labels_file(tmp_path, "\n" + LABELS.replace("\n", "\n\n", 1).rstrip("\n") + "\n  \n")
    assert evaluate_places(path, ["Lisbon", "New York", "Osaka"]) == (3.0, 3.0)
    assert evaluate_places(labels_file(tmp_path, LABELS.rstrip("\n")), ["Lisbon", "New York", "Osaka"]) == (3.0, 3.0)


def test_evaluate_places_reads_a_label_without_the_whitespace_around_its_line(tmp_path):
    path = labels_file(tmp_path, LABELS.replace("Lisbon\n", "Lisbon \t\n").replace("Where was C", "  Where was C"))
    assert evaluate_places(path, ["Lisbon", "New York", "Osaka"]) == (3.0, 3.0)


def test_evaluate_places_refuses_a_prediction_count_other_than_the_questions(tmp_path):
    path = labels_file(tmp_path, LABELS)
    for predictions in (["Lisbon", "New York"], ["Lisbon", "New York", "Osaka", "Osaka"]):
        with pytest.raises(AssertionError):
            evaluate_places(path, predictions)


@pytest.mark.parametrize("text", ["Where was A born?\nWhere was B born?\n", "", "\n\n"],
                         ids=["questions only", "empty", "blank lines"])
def test_evaluate_places_scores_nothing_without_labels_and_says_so(tmp_path, capsys, text):
    assert evaluate_places(labels_file(tmp_path, text), ["Lisbon", "Osaka"]) == (0, 0)
    assert "No gold birth places" in capsys.readouterr().out
