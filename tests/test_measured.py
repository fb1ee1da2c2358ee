"""
The figures the starter's README gives for each stage (src/assignment/measured.py) are docs/gpu.md's:
seed 0 of "The whole assignment, two seeds", and the losses its text gives for that run.
"""

import math
import re
from pathlib import Path

import pytest

from assignment.facts import ALL_STAGES, GRADED_TRAINING
from assignment.measured import (CPU_DEV_SECONDS, CPU_PRETRAINING_MINUTES, CPU_STEP_SECONDS, STAGE_FIGURES,
                                 TRAINING_STEPS)

GPU_DOC = Path(__file__).resolve().parents[1] / "docs" / "gpu.md"


def seed_0_table():
    """{stage: (wall seconds, dev accuracy or None)} of the seed-0 columns of docs/gpu.md's first table."""
    text = GPU_DOC.read_text(encoding="utf-8")
    table = text[text.index("| stage | seed 0: wall s"):]
    figures = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("| "):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        stage = cells[0].split(" (")[0]
        accuracy = re.match(r"\**([\d.]+)%", cells[3])
        figures[stage] = (int(cells[1]), float(accuracy[1]) / 100 if accuracy else None)
    return figures


def test_every_figure_is_the_measured_one():
    """Kills a time or accuracy typed apart from the measurement (or a stage the table lacks)."""
    measured = seed_0_table()
    for stage, figures in STAGE_FIGURES.items():
        assert (figures.seconds, figures.dev_accuracy) == measured[stage], stage
    assert set(STAGE_FIGURES) <= {stage.name for stage in ALL_STAGES}
    assert set(measured) - {"the whole command"} == set(STAGE_FIGURES)


def test_the_losses_are_the_ones_docs_gpu_md_gives_for_seed_0():
    text = " ".join(GPU_DOC.read_text(encoding="utf-8").split())
    epoch = re.search(r"last pretraining epoch: vanilla ([\d.]+) \(seed 0\).*?perceiver ([\d.]+) and", text)
    step = re.search(r"last finetuning step, vanilla ([\d.]+) and [\d.]+ after pretraining, ([\d.]+) and", text)
    assert STAGE_FIGURES["vanilla_pretrain"].last_loss == float(epoch[1])
    assert STAGE_FIGURES["perceiver_pretrain"].last_loss == float(epoch[2])
    assert STAGE_FIGURES["vanilla_finetune_with_pretrain"].last_loss == float(step[1])
    assert STAGE_FIGURES["vanilla_finetune_without_pretrain"].last_loss == float(step[2])


def test_the_cpu_estimates_come_from_the_benchs_last_measurements():
    """Kills a CPU step or evaluation time typed apart from the bench's rows, or a pretraining estimate that
    is not their product (the bench's own, from the unrounded step, within a minute)."""
    text = (GPU_DOC.parent / "benchmarks.md").read_text(encoding="utf-8")

    def last(pattern):
        return float(re.findall(pattern, text, re.M)[-1])
    assert CPU_STEP_SECONDS["pretrain"] == last(r"^\| train step s, pretraining batch 128x127 \| [\d.]+ \| ([\d.]+) \|")
    assert CPU_STEP_SECONDS["finetune"] == last(r"^\| train step s, finetuning batch 256x127 \| [\d.]+ \| ([\d.]+) \|")
    assert CPU_DEV_SECONDS == last(r"^\| dev eval s, 500 questions, vanilla, stop at MASK \| [\d.]+ \| ([\d.]+) \|")
    bench = last(r"^\| full pretraining \(14950 steps\) at the fast step, minutes \| \| (\d+) \|")
    assert abs(CPU_PRETRAINING_MINUTES - bench) <= 1 and TRAINING_STEPS["pretrain"] == 14950


def test_the_training_steps_are_the_graded_configurations_on_the_courses_data():
    course = GPU_DOC.parents[2] / "shared" / "data"
    if not (course / "wiki.txt").is_file():
        pytest.skip("the course's data is not beside the repository (../shared/data)")
    documents = sum(1 for line in (course / "wiki.txt").read_text(encoding="utf-8").splitlines())
    questions = sum(1 for line in (course / "birth_places_train.tsv").read_text(encoding="utf-8").splitlines()
                    if line.strip())

    def steps(count, name):
        return GRADED_TRAINING[name]["max_epochs"] * math.ceil(count / GRADED_TRAINING[name]["batch_size"])
    assert TRAINING_STEPS == {"pretrain": steps(documents, "pretrain"),
                              "finetune": steps(questions, "finetune_without_pretraining"),
                              "finetune_with_pretrain": steps(questions, "finetune_with_pretraining")}
