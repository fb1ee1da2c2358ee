"""
Rotary position embeddings (the RoPE edition's part h, src/submission/attention.py):
the handout's equations against an independent computation, what the rotation
keeps (norms, scores that depend only on the distance), and the RoPE model
(queries and keys rotated in every layer, values not, no learnt positions,
causal, the state_dict keys of a course hand-in's params file).
"""

import math

import pytest
import torch

from submission import GPTConfig, apply_rotary_emb, initialize_rope_model, precompute_rotary_emb
from submission.attention import CausalSelfAttention

SIZE = dict(n_layer=2, n_head=2, n_embd=16)
VOCAB, BLOCK = 12, 24


def rope_model(seed=0, **overrides):
    torch.manual_seed(seed)
    config = GPTConfig(VOCAB, BLOCK, **dict(SIZE, embd_pdrop=0.0, resid_pdrop=0.0, attn_pdrop=0.0, **overrides))
    return initialize_rope_model(config).eval()


def rotated_by_complex_numbers(x, dim):
    """Equation (3) in float64 complex arithmetic: pair i of the vector at position t times e^(j t theta_i)."""
    T = x.size(-2)
    theta = torch.tensor([10000.0 ** (-2 * i / dim) for i in range(dim // 2)], dtype=torch.float64)
    turns = torch.polar(torch.ones(T, dim // 2, dtype=torch.float64),
                        torch.arange(T, dtype=torch.float64)[:, None] * theta)  # (T, dim/2)
    pairs = torch.view_as_complex(x.double().reshape(*x.shape[:-1], dim // 2, 2).contiguous())
    return torch.view_as_real(pairs * turns).reshape(x.shape)


@pytest.mark.parametrize("dim, positions", [(2, 5), (8, 16), (32, 128)])
def test_the_cache_holds_the_cosines_and_sines_of_the_handout(dim, positions):
    cache = precompute_rotary_emb(dim, positions)
    assert tuple(cache.shape) == (positions, dim // 2, 2)
    for t in (0, 1, positions // 2, positions - 1):
        for i in range(dim // 2):
            angle = t * 10000.0 ** (-2 * i / dim)
            assert cache[t, i, 0].item() == pytest.approx(math.cos(angle), abs=1e-5)
            assert cache[t, i, 1].item() == pytest.approx(math.sin(angle), abs=1e-5)


@pytest.mark.parametrize("shape", [(7, 8), (2, 3, 7, 8), (1, 4, 16, 32)])
def test_rotation_is_the_complex_product_of_the_handout(shape):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(shape, generator=generator)
    cache = precompute_rotary_emb(shape[-1], 40)  # longer than the sequence: its first rows are used
    rotated = apply_rotary_emb(x, cache)
    assert rotated.shape == x.shape
    torch.testing.assert_close(rotated.double(), rotated_by_complex_numbers(x, shape[-1]), atol=1e-5, rtol=1e-5)


def test_rotation_keeps_every_vector_norm_and_leaves_position_zero_alone():
    x = torch.randn(3, 2, 20, 16, generator=torch.Generator().manual_seed(2))
    rotated = apply_rotary_emb(x, precompute_rotary_emb(16, 20))
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rotated[..., 0, :], x[..., 0, :])
    assert not torch.allclose(rotated[..., 1:, :], x[..., 1:, :])


def test_the_score_of_a_rotated_query_and_key_depends_only_on_their_distance():
    """<R_t q, R_s k> = <R_(t+u) q, R_(s+u) k> for seeded random q, k and every shift u, and it changes with t - s."""
    dim, positions = 16, 64
    cache = precompute_rotary_emb(dim, positions)
    generator = torch.Generator().manual_seed(3)
    for _ in range(20):
        q, k = torch.randn(2, dim, generator=generator)
        copies = torch.stack([q] * positions), torch.stack([k] * positions)  # the same vector at every position
        rotated_q, rotated_k = (apply_rotary_emb(c, cache) for c in copies)  # (positions, dim)
        scores = rotated_q @ rotated_k.T  # [t, s] = <R_t q, R_s k>
        for distance in (0, 1, 5, 30):
            diagonal = torch.diagonal(scores, offset=-distance)  # t = s + distance
            torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal), atol=1e-4, rtol=1e-4)
        assert len({round(float(scores[d, 0]), 3) for d in (0, 1, 5, 30)}) > 1


def test_the_rope_model_has_no_learnt_position_embedding_and_a_cache_in_every_layer():
    model = rope_model()
    state = model.state_dict()
    assert not any("pos_emb" in name for name, _ in model.named_parameters())
    assert "pos_emb" not in state
    head_size = SIZE["n_embd"] // SIZE["n_head"]
    for layer in range(SIZE["n_layer"]):
        cache = state[f"blocks.{layer}.attn.rope_cache"]
        assert "rope_cache" in dict(model.blocks[layer].attn.named_buffers())
        torch.testing.assert_close(cache, precompute_rotary_emb(head_size, BLOCK))


def test_a_course_hand_ins_keys_load():
    """The keys of the course's RoPE model (minGPT's blocks, a rope_cache buffer per layer, no pos_emb)."""
    layer_keys = ["ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias", "attn.mask", "attn.rope_cache"] + \
        [f"attn.{name}.{kind}" for name in ("key", "query", "value", "proj") for kind in ("weight", "bias")] + \
        [f"mlp.{index}.{kind}" for index in (0, 2) for kind in ("weight", "bias")]
    course_keys = {"tok_emb.weight", "ln_f.weight", "ln_f.bias", "head.weight"} | \
        {f"blocks.{layer}.{key}" for layer in range(SIZE["n_layer"]) for key in layer_keys}
    state = rope_model().state_dict()
    assert set(state) == course_keys
    rope_model(seed=1).load_state_dict(state)


def test_initialize_rope_model_takes_the_winter_2025_starters_unused_argument():
    for call in (lambda c: initialize_rope_model(c), lambda c: initialize_rope_model(c, 32),
                 lambda c: initialize_rope_model(c, bottleneck_dim=32)):
        config = GPTConfig(VOCAB, BLOCK, **SIZE)
        model = call(config)
        assert config.rope and model.rope and not config.perceiver
        assert all(block.attn.rope for block in model.blocks)


def test_an_odd_head_size_is_refused():
    with pytest.raises(AssertionError):
        CausalSelfAttention(GPTConfig(VOCAB, BLOCK, n_head=2, n_embd=6, rope=True))


def test_the_rope_model_is_causal():
    model = rope_model()
    idx = torch.randint(VOCAB, (2, BLOCK), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        logits, _ = model(idx)
        for j in (1, 10, BLOCK - 1):
            changed = idx.clone()
            changed[:, j:] = (changed[:, j:] + 1) % VOCAB
            torch.testing.assert_close(model(changed)[0][:, :j], logits[:, :j])


def test_queries_and_keys_are_rotated_and_values_are_not():
    """
    With the query and key projections zero, every score is 0 whether rotated or not, so position t
    averages the values of positions 0..t: the layer's output is then proj(mean of value(x)) exactly
    when the values are not rotated. With random projections the layer's output is equation (1) on the
    rotated queries and keys, computed here from the layer's own weights.
    """
    torch.manual_seed(5)
    attention = CausalSelfAttention(GPTConfig(VOCAB, BLOCK, n_head=2, n_embd=16, rope=True, attn_pdrop=0.0,
                                              resid_pdrop=0.0)).eval()
    x = torch.randn(2, 9, 16)
    B, T, C = x.shape
    split = lambda y: y.view(B, T, 2, C // 2).transpose(1, 2)  # (B, nh, T, hs)
    with torch.no_grad():
        expected_scores = rotated_by_complex_numbers(split(attention.query(x)), 8) @ \
            rotated_by_complex_numbers(split(attention.key(x)), 8).transpose(-2, -1) / math.sqrt(8)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        weights = expected_scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)  # (B, nh, T, T)
        expected = attention.proj((weights @ split(attention.value(x)).double()).float()
                                  .transpose(1, 2).reshape(B, T, C))
        torch.testing.assert_close(attention(x), expected, atol=1e-5, rtol=1e-4)

        for linear in (attention.query, attention.key):
            linear.weight.zero_()
            linear.bias.zero_()
        means = split(attention.value(x)).cumsum(dim=2) / torch.arange(1, T + 1)[:, None]  # (B, nh, T, hs)
        torch.testing.assert_close(attention(x), attention.proj(means.transpose(1, 2).reshape(B, T, C)),
                                   atol=1e-5, rtol=1e-5)


def test_fused_and_written_out_attention_agree_with_rope():
    idx = torch.randint(VOCAB, (3, 17), generator=torch.Generator().manual_seed(6))
    fused, written = rope_model(seed=7), rope_model(seed=7, fused_attention=False)
    with torch.no_grad():
        torch.testing.assert_close(fused(idx)[0], written(idx)[0], atol=1e-5, rtol=1e-5)

