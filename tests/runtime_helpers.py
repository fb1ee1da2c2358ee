"""
Helpers of the runtime's and the stages' tests: a tiny GPT over the tests'
vocabulary, and a file written from text or bytes.
"""

import torch

from assignment.facts import MASK_CHAR, PAD_CHAR
from submission import GPT, GPTConfig

VOCABULARY = PAD_CHAR + MASK_CHAR + ' ?ABLWabdehilnorsw'
STOI = {char: i for i, char in enumerate(VOCABULARY)}


def tiny_model(vocab_size=len(VOCABULARY), perceiver=False, n_layer=1):
    """A one-layer GPT of 8 dimensions."""
    extra = dict(perceiver=True, bottleneck_dim=4) if perceiver else {}
    config = GPTConfig(vocab_size, 16, n_layer=n_layer, n_head=2, n_embd=8, **extra)
    torch.manual_seed(0)
    return GPT(config)


def written(tmp_path, text, name="questions.tsv"):
    """`text` written to tmp_path/name as bytes (str is encoded as UTF-8); its path."""
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode('utf-8'))
    return str(path)
