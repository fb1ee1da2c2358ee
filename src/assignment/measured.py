"""
What each graded stage took and gave when the whole assignment ran on one
GPU with the course's data: docs/gpu.md, "The whole assignment, two seeds"
(seed 0; the command, machine and tree are there; the two chains shared the
GPU). For a training stage the loss a healthy run ends near (the mean of the
last pretraining epoch, the last finetuning step), for a dev evaluation its
accuracy. The starter's README builds its stage table from these, and
tests/test_measured.py holds them to docs/gpu.md and docs/benchmarks.md. A stage not here has not
run in full on a GPU. Standard library only.
"""

from dataclasses import dataclass
from typing import Optional

GPU = "one NVIDIA H200"
# A graded pretraining on this project's 2-core CPU, two threads: its 14,950 steps at the pace of the
# stages' step as `./run.sh bench --parts train` measured it last (docs/benchmarks.md, 2026-11-26).
CPU_PRETRAINING_MINUTES = 353


@dataclass(frozen=True)
class Measured:
    seconds: int  # the stage's wall time, start to end of its ./run.sh
    last_loss: Optional[float] = None
    dev_accuracy: Optional[float] = None


STAGE_FIGURES = {
    'vanilla_finetune_without_pretrain': Measured(27, last_loss=0.19),
    'vanilla_eval_dev_without_pretrain': Measured(5, dev_accuracy=0.010),
    'vanilla_pretrain': Measured(272, last_loss=0.52),
    'vanilla_finetune_with_pretrain': Measured(11, last_loss=0.11),
    'vanilla_eval_dev_with_pretrain': Measured(5, dev_accuracy=0.284),
    'perceiver_pretrain': Measured(261, last_loss=1.39),
    'perceiver_finetune_with_pretrain': Measured(15),
    'perceiver_eval_dev_with_pretrain': Measured(6, dev_accuracy=0.034),
}
