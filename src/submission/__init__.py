"""
The package students complete and hand in: the attention layers, the GPT
and its variants, the two datasets, a plain trainer, and the helpers that
src/run.py calls. It imports nothing else of the repository.
Part of a fork of Andrej Karpathy's minGPT (MIT licence; see LICENSE).
"""

from .attention import CausalSelfAttention, CausalCrossAttention
from .dataset import CharCorruptionDataset, NameDataset
from .helper import initialize_vanilla_model, finetune, pretrain, train
from .model import GPT, GPTConfig
from .trainer import Trainer, TrainerConfig
from .utils import evaluate_places, sample, set_seed
### EDITION perceiver ###
from .helper import initialize_perceiver_model
from .model import DownProjectBlock, UpProjectBlock
### END_EDITION ###
### EDITION rope ###
from .attention import apply_rotary_emb, precompute_rotary_emb
from .helper import initialize_rope_model
### END_EDITION ###
