"""
Building, pretraining, finetuning and saving the models of the assignment;
src/run.py calls these functions for every stage of run.sh.
"""

import torch

from .model import GPT
from .dataset import NameDataset
from .trainer import Trainer, TrainerConfig


def initialize_vanilla_model(mconf):
    """A GPT with causal self-attention in every block."""
    attention_model = None
    ### [part c]: Make some model here

    ### START_CODE_HERE ###
    attention_model = GPT(mconf)
    ### END_CODE_HERE ###
    return attention_model


def initialize_perceiver_model(mconf, bottleneck_dim=32):
    """A GPT whose first and last blocks project down to and up from a bottleneck of `bottleneck_dim` latents."""
    attention_model = None
    ### [part g]: Make some other model here

    ### START_CODE_HERE ###
    mconf.perceiver = True
    mconf.bottleneck_dim = bottleneck_dim
    attention_model = GPT(mconf)
    ### END_CODE_HERE ###
    return attention_model


def finetune(reading_params_path, finetune_corpus_path, pretrain_dataset, block_size, model, finetune_lr=6e-4, writer=None):
    """
    [part c] [part f]:
    - Given:
        1. A finetuning corpus specified in finetune_corpus_path
        2. A path reading_params_path containing pretrained model
           parameters, or None if finetuning without a pretrained model
    - Goals:
        1. If reading_params_path is specified, load these parameters
           into the model
        2. Finetune the model on this corpus

    - Make sure to use the following hyperparameters:
        Hyperparameters for finetuning WITHOUT a pretrained model:
            max_epochs=75
            batch_size=256
            learning_rate=finetune_lr
            lr_decay=True
            warmup_tokens=512*20
            final_tokens=200*len(pretrain_dataset)*block_size
            num_workers=4
            writer=writer
        Hyperparameters for finetuning WITH a pretrained model:
            max_epochs=10
            batch_size=256
            learning_rate=finetune_lr
            lr_decay=True
            warmup_tokens=512*20
            final_tokens=200*len(pretrain_dataset)*block_size
            num_workers=4
            writer=writer

    Load pretrained parameters with
        torch.load(reading_params_path, map_location=torch.device('cpu'), weights_only=True)

    Returns (tconf, trainer_obj): the TrainerConfig and the Trainer built on
    a NameDataset of the finetuning corpus.
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
    [part f]:
    - Given:
        1. A corpus specified in pretrain_dataset
    - Goals:
        1. Pretrain the model on this corpus

    - Make sure to use the following hyperparameters for pretraining:
        max_epochs=650
        batch_size=128
        learning_rate=pretrain_lr
        lr_decay=True
        warmup_tokens=512*20
        final_tokens=200*len(pretrain_dataset)*block_size
        num_workers=4
        writer=writer

    Returns (tconf, trainer_obj).
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
    [part c]: Train with trainer_obj, then save the model's parameters
    (its state_dict) to writing_params_path.
    """
    ### START_CODE_HERE ###
    trainer_obj.train()
    torch.save(model.state_dict(), writing_params_path)
    ### END_CODE_HERE ###
    return
