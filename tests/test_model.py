"""The GPT model, vanilla and perceiver: structure, initialisation, the block equations and causality."""

import math

import pytest
import torch
import torch.nn as nn

from submission import CausalCrossAttention, CausalSelfAttention, GPT, GPTConfig
from submission.model import Block, DownProjectBlock, UpProjectBlock

pytestmark = pytest.mark.usefixtures("single_thread")

VOCAB = 23
BLOCK = 40
BOTTLENECK = 8


def exact(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=0.0, atol=1e-6)


def differs(a, b):
    return (a - b).abs().max().item() > 1e-5


@pytest.fixture
def perceiver_config(tiny_config):
    return tiny_config(VOCAB, BLOCK, n_layer=4, perceiver=True, bottleneck_dim=BOTTLENECK)


def test_gptconfig_defaults_and_kwargs():
    config = GPTConfig(11, 7, n_layer=5, anything="kept")
    assert (config.vocab_size, config.block_size) == (11, 7)
    assert (config.embd_pdrop, config.resid_pdrop, config.attn_pdrop) == (0.1, 0.1, 0.1)
    assert config.perceiver is False and config.bottleneck_dim is None
    assert (config.n_layer, config.anything) == (5, "kept")


# ---------------------------------------------------------------- causality

@pytest.mark.parametrize("fused", [True, False], ids=["fused", "written-out"])
@pytest.mark.parametrize("perceiver", [False, True], ids=["vanilla", "perceiver"])
def test_changing_token_j_changes_nothing_before_j(tiny_config, perceiver, fused):
    """Changing the token at position j leaves the logits at every position
    < j unchanged and changes those at j, for j before, at and after the
    bottleneck size, on both attention paths."""
    extra = dict(perceiver=True, bottleneck_dim=BOTTLENECK) if perceiver else {}
    torch.manual_seed(0)
    model = GPT(tiny_config(VOCAB, BLOCK, n_layer=4, fused_attention=fused, **extra)).eval()
    positions = [1, 5, BOTTLENECK - 1, BOTTLENECK, 17, BLOCK - 1]
    idx = torch.randint(0, VOCAB, (1, BLOCK)).repeat(len(positions) + 1, 1)
    for row, j in enumerate(positions, start=1):
        idx[row, j] = (idx[0, j] + torch.randint(1, VOCAB, ())) % VOCAB
    with torch.no_grad():
        logits, _ = model(idx)
    for row, j in enumerate(positions, start=1):
        exact(logits[row, :j], logits[0, :j])
        assert differs(logits[row, j], logits[0, j]), j


# ---------------------------------------------------------------- structure

def test_gpt_layout(tiny_config):
    config = tiny_config(VOCAB, BLOCK, n_layer=3, dropout=0.25)
    model = GPT(config)
    assert isinstance(model.tok_emb, nn.Embedding) and model.tok_emb.weight.shape == (VOCAB, 32)
    assert isinstance(model.pos_emb, nn.Parameter) and model.pos_emb.shape == (1, BLOCK, 32)
    assert isinstance(model.drop, nn.Dropout) and model.drop.p == 0.25
    assert len(model.blocks) == 3 and all(isinstance(b, Block) for b in model.blocks)
    assert isinstance(model.ln_f, nn.LayerNorm) and model.ln_f.normalized_shape == (32,)
    assert isinstance(model.head, nn.Linear) and model.head.bias is None
    assert model.head.weight.shape == (VOCAB, 32)
    assert model.get_block_size() == BLOCK


def test_block_layout(tiny_config):
    block = Block(tiny_config(VOCAB, BLOCK, dropout=0.25))
    attn = block.attn
    assert isinstance(attn, CausalSelfAttention)
    for name in ["key", "query", "value", "proj"]:
        layer = getattr(attn, name)
        assert isinstance(layer, nn.Linear) and layer.weight.shape == (32, 32)
    assert attn.attn_drop.p == 0.25 and attn.resid_drop.p == 0.25
    exact(attn.mask.reshape(BLOCK, BLOCK), torch.tril(torch.ones(BLOCK, BLOCK)))
    kinds = [type(m) for m in block.mlp]
    assert kinds == [nn.Linear, nn.GELU, nn.Linear, nn.Dropout]
    assert block.mlp[0].weight.shape == (128, 32) and block.mlp[2].weight.shape == (32, 128)


def test_initialisation(tiny_config):
    """Linear and embedding weights ~ N(0, 0.02) (checked per matrix, each
    with at least 1024 entries), the positional embedding 0, every bias 0,
    LayerNorm (1, 0)."""
    torch.manual_seed(2)
    model = GPT(tiny_config(VOCAB, BLOCK, n_embd=64, n_layer=2))
    weights = [m.weight for m in model.modules() if isinstance(m, (nn.Linear, nn.Embedding))]
    assert len(weights) == 2 + 2 * 6
    for weight in weights:
        assert weight.numel() >= 1024
        assert abs(weight.std().item() - 0.02) < 0.002
        assert abs(weight.mean().item()) < 0.002
    assert torch.all(model.pos_emb == 0)
    biases = [m.bias for m in model.modules() if isinstance(m, nn.Linear) and m.bias is not None]
    assert len(biases) == 2 * 6 and all(torch.all(b == 0) for b in biases)
    norms = [m for m in model.modules() if isinstance(m, nn.LayerNorm)]
    assert len(norms) == 2 * 2 + 1
    assert all(torch.all(n.weight == 1) and torch.all(n.bias == 0) for n in norms)


def test_loss_is_cross_entropy_ignoring_pad_targets(tiny_config):
    torch.manual_seed(3)
    model = GPT(tiny_config(VOCAB, BLOCK)).eval()
    idx = torch.randint(0, VOCAB, (3, 20))
    targets = torch.randint(1, VOCAB, (3, 20))
    targets[:, 12:] = 0
    targets[1, 3] = 0
    with torch.no_grad():
        logits, loss = model(idx, targets)
    log_probs = logits.log_softmax(-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    kept = targets != 0
    exact(loss, -log_probs[kept].mean())
    assert model(idx)[1] is None


@pytest.mark.parametrize("length", [1, 13, BLOCK])
def test_vanilla_gpt_forward_path(tiny_config, length):
    """The logits are head(ln_f(blocks(tok_emb + pos_emb[:T]))), the positions read from the start of
    the table whatever the length, up to block_size itself."""
    torch.manual_seed(9)
    model = GPT(tiny_config(VOCAB, BLOCK, n_layer=2)).eval()
    nn.init.normal_(model.pos_emb)
    idx = torch.randint(0, VOCAB, (2, length))
    with torch.no_grad():
        logits, _ = model(idx)
        expected = model.head(model.ln_f(model.blocks(model.tok_emb(idx) + model.pos_emb[:, :length])))
    assert logits.shape == (2, length, VOCAB)
    exact(logits, expected)


@pytest.mark.parametrize("perceiver", [False, True], ids=["vanilla", "perceiver"])
def test_a_sequence_longer_than_the_block_is_refused(tiny_config, perceiver):
    extra = dict(perceiver=True, bottleneck_dim=BOTTLENECK) if perceiver else {}
    model = GPT(tiny_config(VOCAB, BLOCK, n_layer=4, **extra)).eval()
    assert model.get_block_size() == BLOCK
    with torch.no_grad():
        assert model(torch.zeros(1, BLOCK, dtype=torch.long))[0].shape == (1, BLOCK, VOCAB)
        with pytest.raises(AssertionError, match="block size"):
            model(torch.zeros(1, BLOCK + 1, dtype=torch.long))


def test_block_is_pre_layernorm_with_two_residuals(tiny_config):
    torch.manual_seed(4)
    block = Block(tiny_config(VOCAB, BLOCK)).eval()
    x = torch.randn(2, 10, 32)
    with torch.no_grad():
        h = x + block.attn(block.ln1(x))
        exact(block(x), h + block.mlp(block.ln2(h)))


# ---------------------------------------------------------------- perceiver

def test_down_project_block_equation_and_shape(perceiver_config):
    """Y = C + CrossAttention(keys/values = X, queries = ln1(C)); Y + MLP(ln2(Y)), shape (B, m, d)."""
    torch.manual_seed(5)
    down = DownProjectBlock(perceiver_config).eval()
    x = torch.randn(3, 21, 32)
    with torch.no_grad():
        out = down(x)
        y = down.C + down.attn(x, down.ln1(down.C))
        expected = y + down.mlp(down.ln2(y))
    assert out.shape == (3, BOTTLENECK, 32)
    exact(out, expected)


@pytest.mark.parametrize("length", [5, 21])
def test_up_project_block_equation_and_shape(perceiver_config, length):
    """Z = X + CrossAttention(keys/values = ln1(Y), queries = X); Z + MLP(ln2(Z)), shape (B, T, d)."""
    torch.manual_seed(6)
    up = UpProjectBlock(perceiver_config).eval()
    latents, x = torch.randn(3, BOTTLENECK, 32), torch.randn(3, length, 32)
    with torch.no_grad():
        out = up(latents, x)
        z = x + up.attn(up.ln1(latents), x)
        expected = z + up.mlp(up.ln2(z))
    assert out.shape == (3, length, 32)
    exact(out, expected)


@pytest.mark.parametrize("where", ["block", "gpt"])
def test_basis_c_is_xavier_uniform(tiny_config, where):
    """C is a (1, m, d) parameter drawn uniformly from a symmetric interval
    inside the Xavier-uniform bound sqrt(6 / (m + d)): every value within the
    bound, mean about 0, and std = half-width / sqrt(3) as for a uniform draw
    (so zeros, a constant, a normal or an unscaled init fail). Checked on the
    block alone and inside a GPT, whose own init must leave C alone."""
    m, d = 32, 64
    torch.manual_seed(7)
    config = tiny_config(VOCAB, BLOCK, n_embd=d, n_layer=2, perceiver=True, bottleneck_dim=m)
    c = DownProjectBlock(config).C if where == "block" else GPT(config).down_block.C
    assert isinstance(c, nn.Parameter) and c.shape == (1, m, d)
    half_width, std = c.abs().max().item(), c.std().item()
    assert 0 < half_width <= math.sqrt(6 / (m + d))
    assert abs(c.mean().item()) < 0.1 * std
    assert std == pytest.approx(half_width / math.sqrt(3), rel=0.05)


def test_perceiver_gpt_layout(perceiver_config):
    model = GPT(perceiver_config)
    assert isinstance(model.down_block, DownProjectBlock)
    assert isinstance(model.up_block, UpProjectBlock)
    assert len(model.blocks) == perceiver_config.n_layer - 2
    for block in model.blocks:
        assert isinstance(block, Block)
        assert block.attn.mask.shape[-2:] == (BOTTLENECK, BOTTLENECK)
    assert isinstance(model.down_block.attn, CausalCrossAttention)
    assert isinstance(model.up_block.attn, CausalCrossAttention)


@pytest.mark.parametrize("length", [3, BOTTLENECK, BLOCK])
def test_perceiver_gpt_forward_shape_and_path(perceiver_config, length):
    """The logits are (B, T, vocab) and equal the composition down block ->
    middle blocks -> up block (with the embedded input) -> ln_f -> head."""
    torch.manual_seed(8)
    model = GPT(perceiver_config).eval()
    nn.init.normal_(model.pos_emb)
    idx = torch.randint(0, VOCAB, (2, length))
    with torch.no_grad():
        logits, _ = model(idx)
        x = model.tok_emb(idx) + model.pos_emb[:, :length]
        expected = model.head(model.ln_f(model.up_block(model.blocks(model.down_block(x)), x)))
    assert logits.shape == (2, length, VOCAB)
    exact(logits, expected)
