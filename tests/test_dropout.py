"""
The reference model in training mode (src/submission/model.py, attention.py,
utils.py; ../shared/SPEC.md and docs/departures.md, "dropout
placement"): dropout sits after the sum of the token and position
embeddings, on the attention weights, after the attention's output
projection and at the end of the MLP, each with its own probability from
the config (embd_pdrop, attn_pdrop, resid_pdrop), for the fused attention
(SDPA's dropout_p) and the written-out one, self- and cross-attention. In
training mode each drops at rate p and scales the survivors by 1/(1-p); in
eval mode nothing is dropped, and `sample` decodes in eval mode whatever
mode the model was left in. (That the trainer trains in training mode at
every epoch is tested in tests/test_trainer.py.)

Each place is measured alone: its probability is set, the others are 0, so
the training-mode output is the eval-mode output with some elements zeroed
and the rest scaled. The draws come from torch's generator seeded with SEED
(each test runs inside fork_rng, so other tests' streams are untouched);
each rate is estimated from at least 20000 Bernoulli draws, whose standard
error at the probabilities used here is at most 0.0035, and must be within
RATE_TOLERANCE (0.02, more than 5.5 standard errors) of p.
"""

import functools

import pytest
import torch

from submission import GPT, GPTConfig
from submission.attention import CausalCrossAttention, CausalSelfAttention
from submission.model import MLP
from submission.utils import sample

SEED = 1234
RATE_TOLERANCE = 0.02
MIN_DRAWS = 20000
SCALE = dict(rtol=1e-4, atol=1e-6)  # a survivor is its eval-mode value / (1 - p), up to float rounding
VOCAB, BLOCK, WIDTH, HEADS = 12, 8, 32, 2
HEAD = WIDTH // HEADS
ATTENTION_CASES = [(layer, fused) for layer in ("self", "cross") for fused in (True, False)]
CASE_IDS = [f"{layer}-{'fused' if fused else 'written-out'}" for layer, fused in ATTENTION_CASES]



@pytest.fixture(autouse=True)
def own_random_stream():
    """torch's global generator as it was before the test, whatever the test seeds."""
    with torch.random.fork_rng(devices=[]):
        yield


pytestmark = pytest.mark.usefixtures("single_thread")  # tiny models: far faster on one thread of a busy CPU


def config(embd=0.0, attn=0.0, resid=0.0, fused=True, **extra):
    """A small model's config with each dropout probability given apart."""
    return GPTConfig(VOCAB, BLOCK, n_layer=3, n_head=HEADS, n_embd=WIDTH, embd_pdrop=embd, attn_pdrop=attn,
                     resid_pdrop=resid, fused_attention=fused, **extra)


def seeded(draw):
    """draw() with torch's global generator seeded with SEED."""
    torch.manual_seed(SEED)
    return draw()


def eval_and_train(module, *inputs):
    """(eval-mode output, training-mode output) of `module` on `inputs`, without gradients."""
    with torch.no_grad():
        expected = module.eval()(*inputs)
        dropped = seeded(lambda: module.train()(*inputs))
    return expected, dropped


def assert_inverted_dropout(expected, dropped, p):
    """Where `expected` is not 0, `dropped` is 0 at a rate within RATE_TOLERANCE of p and
    expected / (1 - p) elsewhere; where it is 0, `dropped` is 0 too."""
    live = expected != 0
    assert int(live.sum()) >= MIN_DRAWS
    zeroed = (dropped == 0) & live
    assert abs(float(zeroed.sum()) / float(live.sum()) - p) <= RATE_TOLERANCE
    kept = live & ~zeroed
    torch.testing.assert_close(dropped[kept], expected[kept] / (1 - p), **SCALE)
    assert (dropped[~live] == 0).all()


def random_inputs(shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- attention weights

def value_reader(layer):
    """
    Make `layer`'s values and projection read the attention weights out: on an
    input whose first BLOCK dimensions are the one-hot position, each head's
    value at key position j is e_j twice (dimensions j and BLOCK + j of the
    head) and the projection is the identity, so output[b, i, h * HEAD + j] and
    output[b, i, h * HEAD + BLOCK + j] are both head h's weight of query i on
    key j, after dropout.
    """
    with torch.no_grad():
        layer.value.weight.zero_()
        layer.value.bias.zero_()
        for h in range(HEADS):
            for j in range(BLOCK):
                layer.value.weight[h * HEAD + j, j] = 1.0
                layer.value.weight[h * HEAD + BLOCK + j, j] = 1.0
        layer.proj.weight.copy_(torch.eye(WIDTH))
        layer.proj.bias.zero_()
    return layer


def keys_with_positions(batch):
    """(batch, BLOCK, WIDTH) inputs: the one-hot position, then random features."""
    x = random_inputs((batch, BLOCK, WIDTH), seed=3)
    x[:, :, :BLOCK] = torch.eye(BLOCK)
    return x


@functools.lru_cache(maxsize=None)
def attention_weights(layer, fused, p=0.3, batch=500):
    """
    (eval-mode weights, training-mode weights, copies of the training-mode
    weights) of an attention layer with attn_pdrop p and no residual dropout,
    each (batch, HEADS, queries, keys), read out as value_reader says.
    """
    torch.manual_seed(0)
    kind = CausalSelfAttention if layer == "self" else CausalCrossAttention
    attention = value_reader(kind(config(attn=p, fused=fused)))
    x_kv = keys_with_positions(batch)
    inputs = (x_kv,) if layer == "self" else (x_kv, random_inputs((batch, BLOCK - 2, WIDTH), seed=4))
    expected, dropped = eval_and_train(attention, *inputs)

    def weights(output, offset):
        heads = output.view(batch, output.size(1), HEADS, HEAD).transpose(1, 2)  # (batch, HEADS, queries, HEAD)
        return heads[..., offset:offset + BLOCK]
    return weights(expected, 0), weights(dropped, 0), weights(dropped, BLOCK)


@pytest.mark.parametrize("layer, fused", ATTENTION_CASES, ids=CASE_IDS)
def test_attention_weights_are_dropped_at_rate_p_and_survivors_scaled(layer, fused):
    """Kills attention dropout left out, applied before the softmax, at another rate (resid_pdrop's, or
    SDPA's dropout_p not given) or not rescaled, on either path of either layer: each weight a query
    gives a key it may see is 0 at rate attn_pdrop (0.3) and otherwise its eval-mode value / 0.7;
    those it may not see stay 0."""
    expected, dropped, _ = attention_weights(layer, fused)
    assert_inverted_dropout(expected, dropped, 0.3)


@pytest.mark.parametrize("layer, fused", ATTENTION_CASES, ids=CASE_IDS)
def test_attention_dropout_drops_weights_not_values_or_outputs(layer, fused):
    """Kills dropout moved from the attention weights onto the values or the heads' outputs: a weight
    is dropped for all of its value, so the two copies each key's value carries come out equal, the
    zeroed ones included."""
    expected, dropped, copies = attention_weights(layer, fused)
    assert bool(((dropped == 0) & (expected != 0)).any())
    assert torch.equal(dropped, copies)


# ---------------------------------------------------------------- after the projection, end of the MLP

@pytest.mark.parametrize("layer, fused", ATTENTION_CASES, ids=CASE_IDS)
def test_the_attention_output_is_dropped_after_its_projection(layer, fused):
    """Kills the residual dropout left out, put before the projection, or at another rate (attn_pdrop's)
    on either path of either layer: with resid_pdrop 0.25 alone, the training-mode output is the
    eval-mode output, each element 0 at rate 0.25 or scaled by 1/0.75."""
    torch.manual_seed(0)
    kind = CausalSelfAttention if layer == "self" else CausalCrossAttention
    attention = kind(config(resid=0.25, fused=fused))
    x = random_inputs((100, BLOCK, WIDTH), seed=5)
    inputs = (x,) if layer == "self" else (x, random_inputs((100, BLOCK, WIDTH), seed=6))
    assert_inverted_dropout(*eval_and_train(attention, *inputs), 0.25)


def test_the_mlp_drops_its_output():
    """Kills the MLP's dropout left out, put after the GELU instead of at the end, or at another rate:
    with resid_pdrop 0.4 the training-mode output is the eval-mode output, each element 0 at rate 0.4
    or scaled by 1/0.6."""
    torch.manual_seed(0)
    mlp = MLP(config(resid=0.4))
    assert_inverted_dropout(*eval_and_train(mlp, random_inputs((100, BLOCK, WIDTH), seed=7)), 0.4)


# ---------------------------------------------------------------- after the embeddings

def embedding_inputs(perceiver):
    """What the first block (and a perceiver's up block) receives from the stem of a GPT with
    embd_pdrop 0.2 alone, in eval and in training mode, and the sum of the embeddings."""
    torch.manual_seed(0)
    extra = dict(perceiver=True, bottleneck_dim=4) if perceiver else {}
    model = GPT(config(embd=0.2, **extra))
    with torch.no_grad():
        model.pos_emb.normal_(generator=torch.Generator().manual_seed(8))  # the sum, not the tokens alone
    first = model.down_block if perceiver else model.blocks[0]
    seen = []
    first.register_forward_pre_hook(lambda module, args: seen.append(("first", args[0])))
    if perceiver:
        model.up_block.register_forward_pre_hook(lambda module, args: seen.append(("up", args[1])))
    idx = torch.randint(1, VOCAB, (100, BLOCK), generator=torch.Generator().manual_seed(9))
    eval_and_train(model, idx)
    with torch.no_grad():
        embeddings = model.tok_emb(idx) + model.pos_emb[:, :BLOCK]
    return seen, embeddings


@pytest.mark.parametrize("perceiver", [False, True], ids=["vanilla", "perceiver"])
def test_the_sum_of_the_embeddings_is_dropped_before_the_blocks(perceiver):
    """Kills the embedding dropout left out, applied to the token embeddings alone, at another rate, or
    not in training mode: with embd_pdrop 0.2 alone, the first block gets the eval-mode sum of token
    and position embeddings, with each element 0 at rate 0.2 or scaled by 1/0.8."""
    seen, embeddings = embedding_inputs(perceiver)
    firsts = [x for where, x in seen if where == "first"]
    assert len(firsts) == 2
    torch.testing.assert_close(firsts[0], embeddings)
    assert_inverted_dropout(firsts[0], firsts[1], 0.2)


def test_the_perceivers_up_block_gets_the_same_dropped_input():
    """Kills a perceiver whose up block gets the embeddings undropped or dropped afresh: in eval and in
    training mode the up block's X is exactly what the down block got."""
    seen, _ = embedding_inputs(perceiver=True)
    assert [where for where, _ in seen] == ["first", "up", "first", "up"]
    assert torch.equal(seen[0][1], seen[1][1]) and torch.equal(seen[2][1], seen[3][1])


# ---------------------------------------------------------------- eval mode

@pytest.mark.parametrize("perceiver", [False, True], ids=["vanilla", "perceiver"])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "written-out"])
def test_eval_mode_drops_nothing(perceiver, fused):
    """Kills dropout that acts in eval mode at any place (SDPA given dropout_p whatever the mode, say):
    in eval mode a GPT with every probability 0.5 gives the logits of the same weights with none."""
    extra = dict(perceiver=True, bottleneck_dim=4) if perceiver else {}
    torch.manual_seed(0)
    dropping = GPT(config(embd=0.5, attn=0.5, resid=0.5, fused=fused, **extra)).eval()
    plain = GPT(config(fused=fused, **extra)).eval()
    plain.load_state_dict(dropping.state_dict())
    idx = torch.randint(1, VOCAB, (4, BLOCK), generator=torch.Generator().manual_seed(10))
    with torch.no_grad():
        torch.testing.assert_close(seeded(lambda: dropping(idx)[0]), plain(idx)[0], rtol=0, atol=1e-6)


def test_sample_decodes_in_eval_mode():
    """Kills a `sample` that decodes in whatever mode the model was left in: a model left in training
    mode with every probability 0.5 decodes greedily what its dropout-free copy does."""
    torch.manual_seed(0)
    dropping = GPT(config(embd=0.5, attn=0.5, resid=0.5)).train()
    plain = GPT(config()).eval()
    plain.load_state_dict(dropping.state_dict())
    x = torch.randint(1, VOCAB, (6, 3), generator=torch.Generator().manual_seed(11))
    assert torch.equal(seeded(lambda: sample(dropping, x, 5)), sample(plain, x, 5))
