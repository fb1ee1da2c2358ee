"""
Building, pretraining, finetuning and saving the models of the assignment;
src/run.py calls these functions for every stage of run.sh.
Part of a fork of Andrej Karpathy's minGPT (MIT licence; see LICENSE).
"""

import torch

from .model import GPT
from .dataset import NameDataset
from .trainer import Trainer, TrainerConfig


def initialize_vanilla_model(mconf):
    """[part c] The vanilla model: a GPT (model.py) of the GPTConfig `mconf`, with causal self-attention in
    every block."""
    attention_model = None
    ### [part c]: build the model here

    ### START_CODE_HERE ###
    attention_model = GPT(mconf)
    ### END_CODE_HERE ###
    return attention_model


### EDITION perceiver ###
def initialize_perceiver_model(mconf, bottleneck_dim=32):
    """[part g] The perceiver: a GPT whose first block projects down to `bottleneck_dim` latents and whose
    last block projects back up (DownProjectBlock and UpProjectBlock, model.py). GPT builds those blocks
    when mconf.perceiver is True, with mconf.bottleneck_dim latents: set both on `mconf`, then build it."""
    attention_model = None
    ### [part g]: build the other model here

    ### START_CODE_HERE ###
    mconf.perceiver = True
    mconf.bottleneck_dim = bottleneck_dim
    attention_model = GPT(mconf)
    ### END_CODE_HERE ###
    return attention_model


### END_EDITION ###
### EDITION rope ###
def initialize_rope_model(mconf, bottleneck_dim=None):
    """[part h] The RoPE model: a GPT whose self-attention layers rotate queries and keys by position
    (attention.py) and which has no learnt position embedding. GPT builds it when mconf.rope is True.
    `bottleneck_dim` is unused: the Winter 2025 starter passed the perceiver's argument here.
    """
    attention_model = None
    ### [part h]: build the RoPE model here

    ### START_CODE_HERE ###
    mconf.rope = True
    attention_model = GPT(mconf)
    ### END_CODE_HERE ###
    return attention_model


### END_EDITION ###
def finetune(reading_params_path, finetune_corpus_path, pretrain_dataset, block_size, model, finetune_lr=6e-4, writer=None):
    """
    [part c] [part f] Set up the finetuning of `model` on the birth-place
    questions of finetune_corpus_path ("question<TAB>place" lines, UTF-8).

    - [part f] When reading_params_path is not None, first load the
      pretrained parameters it holds into the model:
          torch.load(reading_params_path, map_location=torch.device('cpu'), weights_only=True)
      gives the state_dict.
    - [part c] Read the corpus into a NameDataset, which takes its
      vocabulary from pretrain_dataset, and make a TrainerConfig with these
      settings (every other one keeps its default):

                          without pretraining   with pretraining
        max_epochs        75                    10
        batch_size        256                   256
        learning_rate     finetune_lr           finetune_lr
        lr_decay          True                  True
        warmup_tokens     512*20                512*20
        final_tokens      200*len(pretrain_dataset)*block_size, both
        num_workers       4, both (the Fall 2023 handout; the 2024
                          editions say 0; either is accepted)
        writer            writer, both

    Returns (tconf, trainer_obj): that TrainerConfig, and a Trainer
    (trainer.py) of the model on the NameDataset, with no test dataset.
    """
    trainer_obj = None  # Trainer object (see trainer.py for more details)
    tconf = None  # TrainerConfig object (see trainer.py for more details)

    ### START_CODE_HERE ###
    if reading_params_path is not None:
        model.load_state_dict(torch.load(reading_params_path, map_location=torch.device('cpu'), weights_only=True))
    with open(finetune_corpus_path, encoding='utf-8') as f:
        finetune_dataset = NameDataset(f.read(), pretrain_dataset)
    tconf = TrainerConfig(
        max_epochs=75 if reading_params_path is None else 10,
        batch_size=256,
        learning_rate=finetune_lr,
        lr_decay=True,
        warmup_tokens=512 * 20,
        final_tokens=200 * len(pretrain_dataset) * block_size,
        num_workers=4,
        writer=writer,
    )
    trainer_obj = Trainer(model, finetune_dataset, None, tconf)
    ### END_CODE_HERE ###
    return tconf, trainer_obj


def pretrain(pretrain_dataset, block_size, model, pretrain_lr=6e-3, writer=None):
    """
    [part f] Set up the pretraining of `model` on pretrain_dataset (the
    span-corruption examples of wiki.txt): a TrainerConfig with these
    settings (every other one keeps its default):

        max_epochs        650
        batch_size        128
        learning_rate     pretrain_lr
        lr_decay          True
        warmup_tokens     512*20
        final_tokens      200*len(pretrain_dataset)*block_size
        num_workers       4 (the Fall 2023 handout; the 2024 editions say
                          0; either is accepted)
        writer            writer

    Returns (tconf, trainer_obj): that TrainerConfig, and a Trainer of the
    model on pretrain_dataset, with no test dataset.
    """
    trainer_obj = None  # Trainer object (see trainer.py for more details)
    tconf = None  # TrainerConfig object (see trainer.py for more details)

    ### START_CODE_HERE ###
    tconf = TrainerConfig(
        max_epochs=650,
        batch_size=128,
        learning_rate=pretrain_lr,
        lr_decay=True,
        warmup_tokens=512 * 20,
        final_tokens=200 * len(pretrain_dataset) * block_size,
        num_workers=4,
        writer=writer,
    )
    trainer_obj = Trainer(model, pretrain_dataset, None, tconf)
    ### END_CODE_HERE ###
    return tconf, trainer_obj


def train(model, writing_params_path, trainer_obj):
    """
    [part c] Train: run trainer_obj.train(), then save the trained model's
    parameters, its state_dict, to writing_params_path with torch.save.
    """
    ### START_CODE_HERE ###
    trainer_obj.train()
    torch.save(model.state_dict(), writing_params_path)
    ### END_CODE_HERE ###
    return
