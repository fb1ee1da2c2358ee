"""
Parts (c), (f) and (g), the trainer configurations: a probe that calls the
submission's pretrain() and finetune() on the grader's small corpus and
reads the TrainerConfig each returns (and, for part c, runs train()), and the
judge that holds them against the handout's table (assignment.facts).

What is graded is what changes the trained model: epochs, batch size,
learning rate, betas, gradient clipping, weight decay, the decay flag,
warmup and final tokens (CONFIG_FIELDS); not num_workers (the course's
editions say 4 or 0) or ckpt_path.
"""

import math
import os
import sys

from assignment.facts import GRADED_TRAINING, TRAINER_DEFAULTS
from assignment.not_written_yet import PartFailure, part_of, reported, unwritten, written

from grading.context import check
from grading.handout.answers import answered
from grading.handout.corpora import write_biographies
from grading.handout.models import build_model
from grading.registry import probe

CONFIG_FIELDS = ("max_epochs", "batch_size", "learning_rate", "betas", "grad_norm_clip", "weight_decay",
                 "lr_decay", "warmup_tokens", "final_tokens")
TINY_MODEL = dict(n_layer=4, n_head=2, n_embd=16, bottleneck_dim=8)
CONFIG_BLOCK_SIZE = 64


class TrainsItself(BaseException):
    """Raised by the stand-in for train() while finetune() or pretrain() is being set up
    (a BaseException, so that an `except Exception` around the call cannot hide it)."""


def plain(value):
    """A JSON-ready form of a config value."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return repr(value)


def refuse_training(sub):
    """
    Make train() and Trainer.train raise TrainsItself, so a helper that trains by
    itself is seen at once, whatever the machine's speed; returns the submission's
    own (train, Trainer.train).
    """
    def refuse(*args, **kwargs):
        raise TrainsItself()
    own = sub.train, sub.Trainer.train
    sub.Trainer.train = refuse
    for module in {sys.modules[sub.finetune.__module__], sub}:
        if hasattr(module, "train"):
            module.train = refuse
    return own


def check_train(train, trainer_train, model, trainer):
    """
    train(model, path, trainer) must train with trainer.train() and leave the
    trained model's state_dict at `path`, however the submission's trainer
    writes it (torch.save in train(), or the trainer's own checkpoint). The
    trainer runs for real, one epoch, without loader workers.
    """
    import torch
    calls = []

    def counted(self, *args, **kwargs):
        calls.append(1)
        return trainer_train(self, *args, **kwargs)
    type(trainer).train = counted
    trainer.config.max_epochs, trainer.config.num_workers = 1, 0
    train(model, "written.params", trainer)
    if not calls:
        raise unwritten("train", "never calls trainer.train()")
    if not os.path.exists("written.params"):
        raise unwritten("train", "saved nothing to writing_params_path")
    saved = torch.load("written.params", map_location="cpu", weights_only=True)
    now = {name: tensor.detach().cpu() for name, tensor in model.state_dict().items()}
    if not (isinstance(saved, dict) and set(saved) == set(now)):
        raise PartFailure(f"{part_of('train')}: train saved something other than the model's state_dict")
    if not all(torch.equal(saved[name].cpu(), tensor) for name, tensor in now.items()):
        raise PartFailure(f"{part_of('train')}: the parameters train saved are not the trained model's: save them "
                          f"after trainer.train() returns")


@probe
@reported
def trainer_configs(sub, corpus_path, names_path, block_size, variant, stages, trains=False):
    """
    The TrainerConfig fields and the training set that pretrain / finetune set up for a tiny model,
    and how its model was built; with `trains`, train() also runs on the first stage's trainer.
    """
    import torch
    with open(corpus_path, encoding="utf-8") as f:
        dataset = sub.CharCorruptionDataset(f.read(), block_size)
    size = dict(TINY_MODEL, block_size=block_size)
    own_train, own_trainer_train = refuse_training(sub)
    observed = {}
    for stage in stages:
        torch.manual_seed(0)
        model, how = build_model(sub, variant, dataset.vocab_size, size, trains)
        loaded, function = None, stage.split("_")[0]
        try:
            if stage == "pretrain":
                tconf, trainer = written(sub.pretrain(dataset, block_size, model), "pretrain")
            elif stage == "finetune_without_pretraining":
                tconf, trainer = written(sub.finetune(None, names_path, dataset, block_size, model), "finetune")
            else:
                torch.manual_seed(1)
                pretrained = build_model(sub, variant, dataset.vocab_size, size)[0].state_dict()
                torch.save(pretrained, "pretrained.params")
                tconf, trainer = written(sub.finetune("pretrained.params", names_path, dataset, block_size, model),
                                         "finetune")
                now = model.state_dict()
                loaded = all(name in now and torch.equal(now[name], value) for name, value in pretrained.items())
        except TrainsItself:
            raise PartFailure(f"{part_of(function)}: {function}() trains the model itself (it calls train()): "
                              f"return (tconf, trainer) and let the stage call train(), or every run trains twice")
        written(tconf, function, "returned no TrainerConfig")
        fields = {name: plain(getattr(tconf, name, None)) for name in CONFIG_FIELDS}
        observed[stage] = {"config": fields, "loaded": loaded, "built": how,
                           "train_dataset": type(getattr(trainer, "train_dataset", None)).__name__}
        if trains and stage == stages[0]:
            check_train(own_train, own_trainer_train, model, trainer)
    return observed


def same_setting(got, want):
    """Whether a config value `got` is the expected `want` (numbers compared with a relative tolerance)."""
    if isinstance(want, bool):
        return isinstance(got, (bool, int)) and bool(got) == want
    if isinstance(want, (tuple, list)):
        return isinstance(got, list) and len(got) == len(want) and all(map(same_setting, got, want))
    return isinstance(got, (int, float)) and not isinstance(got, bool) and math.isclose(got, want, rel_tol=1e-9)


def judge_configs(ctx, variant, stages, trains=False):
    """
    Check each stage's TrainerConfig (and, when pretrained, the loaded parameters)
    against the handout's table; returns how the models were built when the
    grader's way did not work (None otherwise).
    """
    corpus_path, names_path, documents = write_biographies(ctx.scratch)
    observed = answered(ctx.run(trainer_configs, corpus_path=corpus_path, names_path=names_path,
                                block_size=CONFIG_BLOCK_SIZE, variant=variant, stages=stages, trains=trains))
    problems = []
    for stage in stages:
        expected = dict(GRADED_TRAINING[stage], **TRAINER_DEFAULTS, final_tokens=200 * documents * CONFIG_BLOCK_SIZE)
        seen = observed[stage]
        problems += [f"{stage}: {field} is {seen['config'][field]!r}, expected {expected[field]!r}"
                     for field in CONFIG_FIELDS if not same_setting(seen["config"][field], expected[field])]
        wanted_dataset = "CharCorruptionDataset" if stage == "pretrain" else "NameDataset"
        if seen["train_dataset"] != wanted_dataset:
            problems.append(f"{stage}: the trainer trains on a {seen['train_dataset']}, expected a {wanted_dataset}")
        if seen["loaded"] is False:
            problems.append(f"{stage}: the model does not hold the parameters read from reading_params_path")
    check(not problems, f"{variant} model: " + "; ".join(problems))
    return next((seen["built"] for seen in observed.values() if seen["built"]), None)
