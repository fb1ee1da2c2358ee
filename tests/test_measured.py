"""
The figures the starter's README gives for each stage (src/assignment/measured.py) are docs/gpu.md's:
seed 0 of "The whole assignment, two seeds", and the losses its text gives for that run.
"""

import re
from pathlib import Path

from assignment.facts import ALL_STAGES
from assignment.measured import CPU_PRETRAINING_MINUTES, STAGE_FIGURES

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


def test_the_cpu_pretraining_is_the_last_one_the_bench_measured():
    text = (GPU_DOC.parent / "benchmarks.md").read_text(encoding="utf-8")
    measured = re.findall(r"^\| full pretraining \(14950 steps\) at the fast step, minutes \| \| (\d+) \|", text, re.M)
    assert CPU_PRETRAINING_MINUTES == int(measured[-1])
