"""
The attention layers of src/submission/attention.py: equations (1) and (2) of
its docstring, computed apart here head by head, on the fused path and the
written-out one, for self-attention and for cross-attention with fewer,
as many and more queries than keys; the causal mask (query row i sees key
columns <= i); and the cross-attention's broadcast of a batch of one.
"""

import math

import pytest
import torch

from submission import CausalCrossAttention, CausalSelfAttention

pytestmark = pytest.mark.usefixtures("single_thread")

VOCAB = 23
BLOCK = 40
WIDTH = 32
HEADS = 4
PATHS = pytest.mark.parametrize("fused", [True, False], ids=["fused", "written-out"])


def exact(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=0.0, atol=1e-5)


def differs(a, b):
    return (a - b).abs().max().item() > 1e-5


def layer(kind, tiny_config, fused=True, seed=0):
    """An attention layer of WIDTH and HEADS, in eval mode, its biases drawn too (they start at 0 in a GPT)."""
    torch.manual_seed(seed)
    attention = kind(tiny_config(VOCAB, BLOCK, n_head=HEADS, fused_attention=fused)).eval()
    with torch.no_grad():
        for linear in (attention.key, attention.query, attention.value, attention.proj):
            linear.bias.normal_()
    return attention


def by_the_equations(attention, x_kv, x_q):
    """Equations (1) and (2), one head at a time: softmax((X_q Q_i)(X_kv K_i)^T / sqrt(d/h) + M)(X_kv V_i),
    the heads side by side, times A (the projection, with its bias)."""
    size = WIDTH // HEADS
    allowed = torch.ones(x_q.size(1), x_kv.size(1)).tril().bool()
    heads = []
    for i in range(HEADS):
        rows = slice(i * size, (i + 1) * size)
        q = x_q @ attention.query.weight[rows].T + attention.query.bias[rows]
        k = x_kv @ attention.key.weight[rows].T + attention.key.bias[rows]
        v = x_kv @ attention.value.weight[rows].T + attention.value.bias[rows]
        scores = (q @ k.transpose(1, 2) / math.sqrt(size)).masked_fill(~allowed, -math.inf)
        heads.append(scores.softmax(dim=-1) @ v)
    return torch.cat(heads, dim=-1) @ attention.proj.weight.T + attention.proj.bias


def inputs(*shape, seed):
    """Inputs large enough that the scores are far from 0, so a wrong scale shows."""
    return 3.0 * torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@PATHS
def test_self_attention_computes_the_equations(tiny_config, fused):
    attention = layer(CausalSelfAttention, tiny_config, fused)
    x = inputs(3, 17, WIDTH, seed=1)
    with torch.no_grad():
        exact(attention(x), by_the_equations(attention, x, x))


@PATHS
@pytest.mark.parametrize("keys, queries", [(12, 7), (7, 12), (10, 10), (1, 5), (BLOCK, BLOCK)])
def test_cross_attention_computes_the_equations_keys_from_the_first_input(tiny_config, fused, keys, queries):
    """Keys and values from x_kv (the first argument), queries from x_q; the output has T_q positions."""
    attention = layer(CausalCrossAttention, tiny_config, fused)
    x_kv, x_q = inputs(2, keys, WIDTH, seed=2), inputs(2, queries, WIDTH, seed=3)
    with torch.no_grad():
        out = attention(x_kv, x_q)
        assert out.shape == (2, queries, WIDTH)
        exact(out, by_the_equations(attention, x_kv, x_q))


def test_both_paths_give_the_same_output(tiny_config):
    """The fused path and the written-out one are the same layer: a state dict moves between them."""
    fused_layer, written = layer(CausalCrossAttention, tiny_config, True), layer(CausalCrossAttention, tiny_config,
                                                                                  False, seed=1)
    written.load_state_dict(fused_layer.state_dict())
    x_kv, x_q = inputs(2, 9, WIDTH, seed=4), inputs(2, 6, WIDTH, seed=5)
    with torch.no_grad():
        exact(written(x_kv, x_q), fused_layer(x_kv, x_q))


@PATHS
def test_self_attention_row_i_sees_columns_up_to_i(tiny_config, fused):
    """Perturbing position j changes the outputs at j and after it, and none before it."""
    attention = layer(CausalSelfAttention, tiny_config, fused)
    x = inputs(1, 11, WIDTH, seed=6)
    with torch.no_grad():
        base = attention(x)
        for j in range(11):
            moved = x.clone()
            moved[:, j] += 1.0
            out = attention(moved)
            exact(out[:, :j], base[:, :j])
            assert all(differs(out[:, i], base[:, i]) for i in range(j, 11)), j


@PATHS
def test_cross_attention_query_row_i_sees_key_columns_up_to_i(tiny_config, fused):
    """Perturbing key/value row j changes exactly the query rows >= j, both
    when there are fewer queries than keys and when there are more."""
    attention = layer(CausalCrossAttention, tiny_config, fused)
    for t_kv, t_q in [(12, 7), (7, 12), (10, 10)]:
        x_kv, x_q = inputs(2, t_kv, WIDTH, seed=7), inputs(2, t_q, WIDTH, seed=8)
        with torch.no_grad():
            base = attention(x_kv, x_q)
            for j in range(t_kv):
                moved = x_kv.clone()
                moved[:, j] += torch.randn(2, WIDTH)
                out = attention(moved, x_q)
                exact(out[:, :j], base[:, :j])
                for i in range(j, t_q):
                    assert differs(out[:, i], base[:, i]), (t_kv, t_q, j, i)


def test_the_mask_is_the_lower_triangle_of_the_block(tiny_config):
    for kind in (CausalSelfAttention, CausalCrossAttention):
        mask = layer(kind, tiny_config).mask
        assert mask.shape == (1, 1, BLOCK, BLOCK)
        assert torch.equal(mask[0, 0], torch.tril(torch.ones(BLOCK, BLOCK)))


@pytest.mark.parametrize("batched", ["keys", "queries"])
def test_cross_attention_broadcasts_a_batch_of_one(tiny_config, batched):
    attention = layer(CausalCrossAttention, tiny_config, seed=1)
    torch.manual_seed(1)
    one_kv, one_q = torch.randn(1, 9, WIDTH), torch.randn(1, 6, WIDTH)
    many_kv, many_q = torch.randn(3, 9, WIDTH), torch.randn(3, 6, WIDTH)
    with torch.no_grad():
        if batched == "keys":
            out, expected = attention(many_kv, one_q), attention(many_kv, one_q.expand(3, -1, -1).clone())
        else:
            out, expected = attention(one_kv, many_q), attention(one_kv.expand(3, -1, -1).clone(), many_q)
    assert out.shape == (3, 6, WIDTH)
    exact(out, expected)
    for i in range(3):
        kv, q = (many_kv[i:i + 1], one_q) if batched == "keys" else (one_kv, many_q[i:i + 1])
        with torch.no_grad():
            exact(out[i:i + 1], attention(kv, q))
