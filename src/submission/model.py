"""
GPT model:
- the initial stem consists of a combination of token encoding and a positional encoding
- the meat of it is a uniform sequence of Transformer blocks
    - each Transformer is a sequential combination of a 1-hidden-layer MLP block and a self-attention block
    - all blocks feed into a central residual pathway similar to resnets
- the final decoder is a linear projection into a vanilla Softmax classifier

### EDITION perceiver ###
The perceiver variant replaces the first block by a DownProjectBlock, which
cross-attends from a learnt basis C of m latents down to the input, and the
last block by an UpProjectBlock, which cross-attends from the input back up
to the latents; the blocks in between self-attend over the m latents only.
### END_EDITION ###

### EDITION rope ###
The RoPE variant (config.rope) has no learnt position embedding: every
self-attention layer rotates its queries and keys by their positions
(attention.py), so the stem is the token embedding alone.
### END_EDITION ###
Part of a fork of Andrej Karpathy's minGPT (MIT licence; see LICENSE).
"""

### EDITION perceiver ###
import copy

### END_EDITION ###
import torch
import torch.nn as nn
from torch.nn import functional as F

from .attention import CausalSelfAttention, CausalCrossAttention


class GPTConfig:
    """ base GPT config, params common to all GPT versions """
    embd_pdrop = 0.1
    resid_pdrop = 0.1
    attn_pdrop = 0.1
    ### EDITION perceiver ###
    perceiver = False
    bottleneck_dim = None
    ### END_EDITION ###
    rope = False
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


### EDITION perceiver ###
class DownProjectBlock(nn.Module):
    """
    [part g] The perceiver's first block. It cross-attends from a learnt
    basis C of m = config.bottleneck_dim latents to the input X (B, T, d), so
    the blocks after it work on m positions instead of T. For each head
    (equation 3 of the handout, M the causal mask of attention.py):

        Y_i = softmax( (C Q_i)(X K_i)^T / sqrt(d/h) + M ) (X V_i)

    that is, CausalCrossAttention (attention.py) with keys and values from X
    and queries from C. Around it, the block is built like Block, with the
    layer norms on C and on the MLP's input and the residual on C:

        Y = C + attn(X, ln1(C))                              (B, m, d)
        Y = Y + mlp(ln2(Y))                                  (B, m, d)

    __init__ makes C, an nn.Parameter of shape (1, bottleneck_dim, n_embd)
    (its first dimension is broadcast over the batch) initialized with
    nn.init.xavier_uniform_; ln1 and ln2, LayerNorms of n_embd; attn, a
    CausalCrossAttention(config); and mlp, an MLP(config). Keep these names:
    the keys of the model's state_dict, and so its saved parameters, are
    made of them. GPT builds this block only when config.perceiver is True.
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
        """x_input X (B, T, d) -> Y (B, m, d), as in the class docstring."""
        ### START_CODE_HERE ###
        x = self.C + self.attn(x_input, self.ln1(self.C))  # (B, m, d)
        x = x + self.mlp(self.ln2(x))                       # (B, m, d)
        return x
        ### END_CODE_HERE ###


class UpProjectBlock(nn.Module):
    """
    [part g] The perceiver's last block. It cross-attends from the model's
    input X (B, T, d) to Y (B, m, d), the output of the block before it, so
    the model's output has T positions again. For each head (equation 4 of
    the handout):

        Z_i = softmax( (X Q_i)(Y K_i)^T / sqrt(d/h) + M ) (Y V_i)

    that is, CausalCrossAttention with keys and values from Y and queries
    from X. Around it, the block is built like Block, with the layer norms
    on Y and on the MLP's input and the residual on X:

        Z = X + attn(ln1(Y), X)                              (B, T, d)
        Z = Z + mlp(ln2(Z))                                  (B, T, d)

    __init__ makes ln1 and ln2, LayerNorms of n_embd; attn, a
    CausalCrossAttention(config); and mlp, an MLP(config); keep these names,
    as in DownProjectBlock. GPT builds this block only when config.perceiver
    is True.
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
        """y Y (B, m, d) and x_input X (B, T, d) -> Z (B, T, d), as in the class docstring."""
        ### START_CODE_HERE ###
        x = x_input + self.attn(self.ln1(y), x_input)  # (B, T, d)
        x = x + self.mlp(self.ln2(x))                   # (B, T, d)
        return x
        ### END_CODE_HERE ###


### END_EDITION ###
class GPT(nn.Module):
    """  the full GPT language model, with a context size of block_size """

    def __init__(self, config):
        super().__init__()

        # input embedding stem
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.rope = config.rope
        if not config.rope:
            self.pos_emb = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd))
        self.drop = nn.Dropout(config.embd_pdrop)
        # transformer
        self.build_blocks(config)
        # decoder head
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

        self.block_size = config.block_size
        self.apply(self._init_weights)

        print("number of parameters: {}".format(sum(p.numel() for p in self.parameters())))

    def build_blocks(self, config):
        """ the transformer's blocks: n_layer Blocks"""
        ### EDITION perceiver ###
        self.perceiver = config.perceiver
        if config.perceiver:  # a DownProjectBlock, n_layer - 2 Blocks over the latents, an UpProjectBlock
            self.down_block = DownProjectBlock(config)
            latent_config = copy.copy(config)
            latent_config.block_size = config.bottleneck_dim
            self.blocks = nn.Sequential(*[Block(latent_config) for _ in range(config.n_layer - 2)])
            self.up_block = UpProjectBlock(config)
            return
        ### END_EDITION ###
        self.blocks = nn.Sequential(*[Block(config) for _ in range(config.n_layer)])

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
        if self.rope:
            x_input = self.drop(token_embeddings)  # (b, t, d): the attention layers rotate by position
        else:
            position_embeddings = self.pos_emb[:, :t, :]  # each position maps to a (learnable) vector
            x_input = self.drop(token_embeddings + position_embeddings)  # (b, t, d)

        x = x_input
        ### EDITION perceiver ###
        if self.perceiver:
            x = self.down_block(x_input)  # (b, m, d)
        ### END_EDITION ###
        x = self.blocks(x)
        ### EDITION perceiver ###
        if self.perceiver:
            x = self.up_block(x, x_input)  # (b, t, d)
        ### END_EDITION ###
        x = self.ln_f(x)
        logits = self.head(x)  # (b, t, vocab_size)

        # if we are given some desired targets also calculate the loss
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=0)

        return logits, loss
