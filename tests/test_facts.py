"""
The assignment's facts (src/assignment/facts.py) against what else states
them: the handout's copy of the graded training settings (the reference's
pretrain() and finetune(), src/submission/helper.py), the parts the
student's files label each function with, the truncation bounds the
grading guide gives, the graded model and warmup the running guide gives,
and the labelled file each evaluation stage is scored against (the hidden
bundle's).
"""

import inspect
import re
from pathlib import Path

import pytest
import torch

import submission
from assignment import facts

ROOT = Path(__file__).resolve().parents[1]
CORPUS = "Ada. Where was Ada born? London.\nBo. Where was Bo born? Lima.\n"


@pytest.fixture
def handout_configs(tmp_path):
    """The TrainerConfig the reference's helpers set up for each graded stage, on a tiny corpus and model."""
    names = tmp_path / "names.tsv"
    names.write_text("Where was Ada born?\tLondon\n", encoding="utf-8")
    dataset = submission.CharCorruptionDataset(CORPUS, 32)
    config = submission.GPTConfig(dataset.vocab_size, 32, n_layer=1, n_head=1, n_embd=8)
    model = submission.GPT(config)
    params = tmp_path / "pretrained.params"
    torch.save(model.state_dict(), params)
    return dataset, {"pretrain": submission.pretrain(dataset, 32, model)[0],
                     "finetune_without_pretraining": submission.finetune(None, str(names), dataset, 32, model)[0],
                     "finetune_with_pretraining": submission.finetune(str(params), str(names), dataset, 32, model)[0]}


def test_the_graded_training_is_the_handouts(handout_configs):
    """Kills a graded setting (epochs, batch size, learning rate, warmup, decay, the trainer's defaults)
    stated otherwise than the handout's helpers set it."""
    dataset, found = handout_configs
    assert set(found) == set(facts.GRADED_TRAINING)
    for stage, tconf in found.items():
        for name, value in dict(facts.GRADED_TRAINING[stage], **facts.TRAINER_DEFAULTS).items():
            assert getattr(tconf, name) == value or (name == "num_workers" and tconf.num_workers == 0), (stage, name)
        assert tconf.final_tokens == 200 * len(dataset) * 32, stage  # the rule facts.py states beside the table


def test_each_student_function_is_labelled_with_its_parts():
    """Kills a student function given another part than the one its file labels it with: in its (or its
    class's) docstring, or, for a method of a class of given code (the RoPE edition's self-attention),
    in the comments of the method."""
    for name, parts in dict(facts.STUDENT_FUNCTIONS, **facts.GIVEN_FOR_PARTS).items():
        owner_name, _, method = name.partition(".")
        owner = getattr(submission.model, owner_name, None) or getattr(submission, owner_name)
        labelled = owner.__doc__ + (inspect.getsource(getattr(owner, method)) if method else "")
        labels = set(re.findall(r"\[part (\w)\]", labelled))
        assert labels == set(parts.split(" and ")), name


def test_the_truncation_bounds_are_the_ones_the_grading_guide_gives():
    guide = " ".join((ROOT / "docs" / "grading.md").read_text(encoding="utf-8").split())
    stated = [int(re.search(rf"int\(block_size \* {fraction}\) = (\d+)", guide).group(1))
              for fraction in ("3/4", "7/8")]
    assert list(facts.TRUNCATION_BOUNDS) == stated


def test_each_evaluation_is_scored_against_the_labels_of_its_questions():
    """Kills the test stages scored against their questions-only inputs, not the hidden labels."""
    evaluations = [stage for stage in facts.STAGES if stage.function == "evaluate"]
    assert {facts.labels(stage) for stage in evaluations if stage.questions == "test"} == {facts.TEST_LABELS}
    assert {facts.labels(stage) for stage in evaluations if stage.questions != "test"} == {facts.DEV_QUESTIONS}
    assert facts.TEST_LABELS not in facts.DATA_FILES and facts.TEST_QUESTIONS in facts.DATA_FILES


def test_the_graded_model_and_warmup_are_the_ones_the_running_guide_states():
    guide = " ".join((ROOT / "docs" / "running.md").read_text(encoding="utf-8").split())
    sizes = re.search(r"block (\d+), (\d+) layers, (\d+) heads, (\d+) dimensions, perceiver bottleneck (\d+)", guide)
    assert [int(n) for n in sizes.groups()] == [facts.BLOCK_SIZE, facts.GRADED_MODEL["n_layer"],
                                                facts.GRADED_MODEL["n_head"], facts.GRADED_MODEL["n_embd"],
                                                facts.BOTTLENECK_DIM]
    warmup = int(re.search(r"linear warmup over ([\d,]+) tokens", guide).group(1).replace(",", ""))
    assert {stage["warmup_tokens"] for stage in facts.GRADED_TRAINING.values()} == {warmup}
