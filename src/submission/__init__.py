"""The student-facing minGPT fork: models, datasets, trainer and the helpers run.py calls."""

from .attention import CausalSelfAttention, CausalCrossAttention
from .dataset import CharCorruptionDataset, NameDataset
from .helper import initialize_vanilla_model, initialize_perceiver_model, finetune, pretrain, train
from .model import GPT, GPTConfig
from .trainer import Trainer, TrainerConfig
from .utils import evaluate_places, sample, set_seed
