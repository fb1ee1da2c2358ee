"""
The students' package, which they complete and hand in: a minGPT fork with
the attention variants, the GPT, the two datasets, a plain trainer and the
helpers run.py calls. It imports nothing else of the project; what the stages
add (fast steps, cached decoding, input checks) lives in src/stages/.
"""

from .attention import CausalSelfAttention, CausalCrossAttention
from .dataset import CharCorruptionDataset, NameDataset
from .helper import initialize_vanilla_model, initialize_perceiver_model, finetune, pretrain, train
from .model import GPT, GPTConfig
from .trainer import Trainer, TrainerConfig
from .utils import evaluate_places, sample, set_seed
