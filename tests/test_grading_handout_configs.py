"""
The trainer configs of the reference's stages (src/grading/handout/configs.py),
tested in-process: training refused where a probe only reads the configs,
train() checked on the submission's own Trainer (what it must call, save
and never run), settings compared by kind and number, and each wrong
setting of every stage named.
"""

import os
import sys
import types

import pytest
import torch

import submission
from assignment import facts, not_written_yet
from grading.handout import answers, configs, corpora

from handout_helpers import InProcess, failure


@pytest.fixture
def trainer_kept(monkeypatch):
    """Put back, after the test, the train functions the config probe replaces in the reference."""
    helper = sys.modules[submission.finetune.__module__]
    for owner in (submission, helper):
        monkeypatch.setattr(owner, "train", owner.train)
    monkeypatch.setattr(submission.Trainer, "train", submission.Trainer.train)


def test_refused_training_raises_at_every_entry_and_gives_back_train(trainer_kept):
    own = submission.train, submission.Trainer.train
    helper = sys.modules[submission.finetune.__module__]
    assert configs.refuse_training(submission) == own
    for call in (submission.train, helper.train, submission.Trainer.train):
        with pytest.raises(configs.TrainsItself):
            call(None, "x", None)


def tiny_trainer(ckpt_path=None):
    """A tiny GPT and a real Trainer of the reference on three names, as finetune() would set them up."""
    torch.manual_seed(0)
    corpus = "Ada. Where was Ada born? In Lima.\nBo. Where was Bo born? In Oslo.\n"
    pretraining = submission.CharCorruptionDataset(corpus, 32)
    names = submission.NameDataset("Where was Ada born?\tLima\nWhere was Bo born?\tOslo\n", pretraining)
    model = submission.GPT(submission.GPTConfig(pretraining.vocab_size, 32, n_layer=1, n_head=2, n_embd=8))
    config = submission.TrainerConfig(max_epochs=3, batch_size=2, learning_rate=1e-2, num_workers=4,
                                      ckpt_path=ckpt_path)
    return model, submission.Trainer(model, names, None, config)


def test_check_train_runs_the_submissions_trainer_and_reads_what_train_left(tmp_path, monkeypatch, trainer_kept):
    monkeypatch.chdir(tmp_path)
    model, trainer = tiny_trainer()
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    configs.check_train(submission.train, submission.Trainer.train, model, trainer)
    assert (trainer.config.max_epochs, trainer.config.num_workers, trainer.epoch) == (1, 0, 0)
    saved = torch.load("written.params", weights_only=True)
    assert set(saved) == set(before) and not all(torch.equal(saved[n], before[n]) for n in before)


def test_train_may_save_through_the_trainers_checkpoint(tmp_path, monkeypatch, trainer_kept):
    monkeypatch.chdir(tmp_path)
    model, trainer = tiny_trainer()

    def through_the_trainer(m, path, t):
        t.config.ckpt_path = path
        t.train()
    configs.check_train(through_the_trainer, submission.Trainer.train, model, trainer)
    assert set(torch.load("written.params", weights_only=True)) == set(model.state_dict())


def test_check_train_passes_on_the_arguments_train_gives_trainer_train(tmp_path, monkeypatch):
    """Kills the counting wrapper dropping trainer.train()'s positional or keyword arguments."""
    monkeypatch.chdir(tmp_path)
    model, got = torch.nn.Linear(2, 2), []

    class Trainer:
        config = types.SimpleNamespace(max_epochs=3, num_workers=4)

    def train(m, path, t):
        t.train(1, key=2)
        torch.save(m.state_dict(), path)
    configs.check_train(train, lambda self, *args, **kwargs: got.append((args, kwargs)), model, Trainer())
    assert got == [((1,), {"key": 2})]


def test_check_train_names_what_train_does_wrong(tmp_path, monkeypatch, trainer_kept):
    monkeypatch.chdir(tmp_path)

    def saves_first(m, path, t):
        torch.save(m.state_dict(), path)
        t.train()

    def saves_weights_only(m, path, t):
        t.train()
        torch.save({"weight": m.head.weight}, path)
    cases = {"^part \\(c\\): train never calls trainer.train\\(\\): it is not written yet$": lambda m, path, t: None,
             "^part \\(c\\): train saved nothing to writing_params_path: it is not written yet$":
                 lambda m, path, t: t.train(),
             "^part \\(c\\): train saved something other than the model's state_dict$": saves_weights_only,
             "^part \\(c\\): the parameters train saved are not the trained model's: save them after "
             "trainer.train\\(\\) returns$": saves_first}
    for told, train in cases.items():
        for leftover in tmp_path.glob("*.params"):
            leftover.unlink()
        model, trainer = tiny_trainer()
        with pytest.raises(not_written_yet.PartFailure, match=told):
            configs.check_train(train, submission.Trainer.train, model, trainer)


class Planted:
    """An object whose unpickling makes a folder: code run by loading a saved file."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.mkdir, (self.path,)


def test_check_train_never_runs_code_stored_in_the_saved_file(tmp_path, monkeypatch, trainer_kept):
    monkeypatch.chdir(tmp_path)
    planted = str(tmp_path / "planted")

    def saves_code(m, path, t):
        t.train()
        torch.save(Planted(planted), path)
    model, trainer = tiny_trainer()
    with pytest.raises(Exception):
        configs.check_train(saves_code, submission.Trainer.train, model, trainer)
    assert not os.path.exists(planted)


def test_same_setting_compares_kinds_and_numbers():
    assert configs.same_setting(True, True) and configs.same_setting(1, True) and not configs.same_setting(0, True)
    assert not configs.same_setting("True", True) and not configs.same_setting(None, False)
    assert configs.same_setting([0.9, 0.95], (0.9, 0.95)) and not configs.same_setting([0.9], (0.9, 0.95))
    assert not configs.same_setting((0.9, 0.95), (0.9, 0.95)) and not configs.same_setting([0.9, 0.9], (0.9, 0.95))
    assert configs.same_setting(6e-4 * (1 + 1e-12), 6e-4) and not configs.same_setting(6.1e-4, 6e-4)
    assert not configs.same_setting(6e-4 * (1 + 1e-6), 6e-4)  # equal but for float rounding, nothing looser
    assert configs.same_setting(256, 256.0) and not configs.same_setting(True, 1) and not configs.same_setting("1", 1)


def test_the_reference_configs_pass(tmp_path, monkeypatch, trainer_kept):
    monkeypatch.chdir(tmp_path)
    ctx = InProcess(tmp_path)
    configs.judge_configs(ctx, "vanilla", ["finetune_without_pretraining"], trains=True)
    configs.judge_configs(ctx, "vanilla", ["pretrain", "finetune_with_pretraining"])
    names = [name for name, _ in ctx.calls]
    assert names == ["trainer_configs", "trainer_configs"]
    assert ctx.calls[0][1]["block_size"] == 64 and ctx.calls[0][1]["trains"] is True
    assert ctx.calls[0][1]["variant"] == "vanilla"
    assert ctx.calls[1][1]["stages"] == ["pretrain", "finetune_with_pretraining"]


def test_train_runs_once_on_the_first_stages_trainer(tmp_path, monkeypatch, trainer_kept):
    """Kills train() checked on every stage's trainer when asked for (it trains each time)."""
    monkeypatch.chdir(tmp_path)
    checked = []
    monkeypatch.setattr(configs, "check_train", lambda train, trainer_train, model, trainer: checked.append(trainer))
    corpus_path, names_path, _ = corpora.write_biographies(str(tmp_path))
    observed = answers.answered(configs.trainer_configs(
        submission, corpus_path=corpus_path, names_path=names_path, block_size=64, variant="vanilla",
        stages=["finetune_without_pretraining", "pretrain"], trains=True))
    assert len(checked) == 1 and type(checked[0].train_dataset).__name__ == "NameDataset"
    assert list(observed) == ["finetune_without_pretraining", "pretrain"]


def observed_configs(documents=13, block_size=64, **changes):
    """What trainer_configs reports for the reference's finetuning without pretraining, with `changes`."""
    config = dict(facts.GRADED_TRAINING["finetune_without_pretraining"], **facts.TRAINER_DEFAULTS,
                  final_tokens=200 * documents * block_size)
    config["betas"] = list(config["betas"])
    seen = {"config": {field: config[field] for field in configs.CONFIG_FIELDS}, "loaded": None, "built": None,
            "train_dataset": "NameDataset"}
    for key, value in changes.items():
        (seen if key in seen else seen["config"])[key] = value
    return {"value": {"finetune_without_pretraining": seen}}


def test_each_wrong_setting_of_a_config_is_named(tmp_path):
    def judged(**changes):
        ctx = InProcess(tmp_path, canned={"trainer_configs": observed_configs(**changes)})
        return configs.judge_configs(ctx, "vanilla", ["finetune_without_pretraining"])
    assert judged() is None
    assert failure(judged, max_epochs=10, weight_decay=0.0) == (
        "vanilla model: finetune_without_pretraining: max_epochs is 10, expected 75; "
        "finetune_without_pretraining: weight_decay is 0.0, expected 0.1")
    assert failure(judged, final_tokens=200 * 12 * 64).endswith("final_tokens is 153600, expected 166400")
    assert failure(judged, train_dataset="CharCorruptionDataset") == (
        "vanilla model: finetune_without_pretraining: the trainer trains on a CharCorruptionDataset, "
        "expected a NameDataset")
    assert failure(judged, loaded=False).endswith(
        "the model does not hold the parameters read from reading_params_path")
    assert judged(loaded=True) is None
    assert judged(built="the model was built with initialize_vanilla_model") == \
        "the model was built with initialize_vanilla_model"


def test_problems_of_every_stage_are_named(tmp_path):
    first, second = observed_configs(max_epochs=1)["value"], observed_configs(batch_size=1)["value"]
    observed = {"value": {"pretrain": first["finetune_without_pretraining"],
                          "finetune_with_pretraining": second["finetune_without_pretraining"]}}
    told = failure(configs.judge_configs, InProcess(tmp_path, canned={"trainer_configs": observed}), "perceiver",
                   ["pretrain", "finetune_with_pretraining"])
    assert told.startswith("perceiver model: pretrain: max_epochs is 1, expected 650; ")
    assert "finetune_with_pretraining: batch_size is 1, expected 256" in told
