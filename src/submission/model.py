"""
GPT model:
- the initial stem consists of a combination of token encoding and a positional encoding
- the meat of it is a uniform sequence of Transformer blocks
    - each Transformer is a sequential combination of a 1-hidden-layer MLP block and a self-attention block
    - all blocks feed into a central residual pathway similar to resnets
- the final decoder is a linear projection into a vanilla Softmax classifier

The perceiver variant replaces the first block by a DownProjectBlock, which
cross-attends from a learnt basis C of m latents down to the input, and the
last block by an UpProjectBlock, which cross-attends from the input back up
to the latents; the blocks in between self-attend over the m latents only.
"""

import copy

import torch
import torch.nn as nn
from torch.nn import functional as F

from .attention import CausalSelfAttention, CausalCrossAttention


class GPTConfig:
    """ base GPT config, params common to all GPT versions """
    embd_pdrop = 0.1
    resid_pdrop = 0.1
    attn_pdrop = 0.1
    perceiver = False
    bottleneck_dim = None
    fused_attention = True

    def __init__(self, vocab_size, block_size, **kwargs):
        self.vocab_size = vocab_size
        self.block_size = block_size
        for k, v in kwargs.items():
            setattr(self, k, v)


class MLP(nn.Sequential):
    """ The feed-forward sub-block: Dropout(W_2 GELU(W_1 x + b_1) + b_2), with a 4x wider hidden layer. """

    def __init__(self, config):
        super().__init__(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd),
            nn.Dropout(config.resid_pdrop),
        )


class Block(nn.Module):
    """ an unassuming Transformer block: x = x + attn(ln1(x)); x = x + mlp(ln2(x)) """

    def __init__(self, config):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class DownProjectBlock(nn.Module):
    """Transformer block used for down projection.

    Initialize similarly to the regular transformer Block class,
    while using the CausalCrossAttention layer instead of the regular
    CausalSelfAttention layer.

    You also need to initialize the parameter for the basis vectors `self.C` here.
    Initialize `self.C` with appropriate dimensions and xavier_uniform initialization.

    self.C should be 1 x bottleneck_dim x n_embd. We need the first dimension
    for appropriate broadcasting along the batch_size dimension of the input
    sequence.

    `self.C` will be used to compute the Query vector for the cross attention
    layer. With X the input (B, T, d), this block computes (equation 3)

        Y = C + CrossAttention(keys/values = X, queries = ln1(C))
        Y = Y + MLP(ln2(Y))                                 (B, m, d)

    Name the attributes as the reference does, so that parameters saved from
    your model load into the grader's copy of it: `C`, `ln1`, `ln2`, `attn`
    (the cross-attention layer) and `mlp` (an MLP). The grader checks what
    the handout fixes: queries from C (m positions out), keys and values from
    X, causal; it leaves where the layer norms and residuals go to you.
    GPT builds this block only when `config.perceiver` is True, with
    `config.bottleneck_dim` latents: initialize_perceiver_model must set both.
    """
    def __init__(self, config):
        super().__init__()
        ### START_CODE_HERE ###
        self.C = nn.Parameter(torch.empty(1, config.bottleneck_dim, config.n_embd))
        nn.init.xavier_uniform_(self.C)
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.attn = CausalCrossAttention(config)
        self.mlp = MLP(config)
        ### END_CODE_HERE ###

    def forward(self, x_input):
        """Hint: perform cross-attention between x_input and self.C.
        Use the layernorm layers on C, and then on the input to the MLP.
        """
        ### START_CODE_HERE ###
        x = self.C + self.attn(x_input, self.ln1(self.C))  # (B, m, d)
        x = x + self.mlp(self.ln2(x))                       # (B, m, d)
        return x
        ### END_CODE_HERE ###


class UpProjectBlock(nn.Module):
    """Transformer block used for up projection.

    Initialize similarly to the regular transformer Block class,
    while using the CausalCrossAttention layer instead of the regular
    CausalSelfAttention layer.

    With Y the output of the previous layer (B, m, d) and X the original
    input (B, T, d), this block computes (equation 4)

        Z = X + CrossAttention(keys/values = ln1(Y), queries = X)
        Z = Z + MLP(ln2(Z))                                 (B, T, d)

    Name the attributes as the reference does: `ln1`, `ln2`, `attn` (the
    cross-attention layer) and `mlp` (an MLP). Queries come from X (T
    positions out), keys and values from Y. Like DownProjectBlock, it is
    built only when `config.perceiver` is True.
    """
    def __init__(self, config):
        super().__init__()
        ### START_CODE_HERE ###
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.attn = CausalCrossAttention(config)
        self.mlp = MLP(config)
        ### END_CODE_HERE ###

    def forward(self, y, x_input):
        """Hint: perform cross-attention between previous layer's output y and
        x_input.
        Use the layernorm layers on y, and then on the input to the MLP.
        """
        ### START_CODE_HERE ###
        x = x_input + self.attn(self.ln1(y), x_input)  # (B, T, d)
        x = x + self.mlp(self.ln2(x))                   # (B, T, d)
        return x
        ### END_CODE_HERE ###


class GPT(nn.Module):
    """  the full GPT language model, with a context size of block_size """

    def __init__(self, config):
        super().__init__()

        # input embedding stem
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd))
        self.drop = nn.Dropout(config.embd_pdrop)
        # transformer
        self.perceiver = config.perceiver
        if config.perceiver:
            self.down_block = DownProjectBlock(config)
            latent_config = copy.copy(config)
            latent_config.block_size = config.bottleneck_dim
            self.blocks = nn.Sequential(*[Block(latent_config) for _ in range(config.n_layer - 2)])
            self.up_block = UpProjectBlock(config)
        else:
            self.blocks = nn.Sequential(*[Block(config) for _ in range(config.n_layer)])
        # decoder head
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

        self.block_size = config.block_size
        self.apply(self._init_weights)

        print("number of parameters: {}".format(sum(p.numel() for p in self.parameters())))

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.block_size, "Cannot forward, model block size (%d, %d) is exhausted." % (t, self.block_size)

        # forward the GPT model
        token_embeddings = self.tok_emb(idx)  # each index maps to a (learnable) vector
        position_embeddings = self.pos_emb[:, :t, :]  # each position maps to a (learnable) vector
        x_input = self.drop(token_embeddings + position_embeddings)  # (b, t, d)

        if self.perceiver:
            x = self.down_block(x_input)  # (b, m, d)
        else:
            x = x_input
        x = self.blocks(x)
        if self.perceiver:
            x = self.up_block(x, x_input)  # (b, t, d)
        x = self.ln_f(x)
        logits = self.head(x)  # (b, t, vocab_size)

        # if we are given some desired targets also calculate the loss
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=0)

        return logits, loss
