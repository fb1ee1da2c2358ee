"""
What each graded stage took and gave when the whole assignment ran on one
GPU with the course's data: docs/gpu.md, "The whole assignment, two seeds"
(seed 0; the command, machine and tree are there; the two chains shared the
GPU). For a training stage the loss a healthy run ends near (the mean of the
last pretraining epoch, the last finetuning step), for a dev evaluation its
accuracy. A stage not here has not run in full on a GPU. Beside them, what
each stage takes on a CPU, estimated from the bench's measurements. The
starter's README builds its stage table from these; tests/test_measured.py
holds them to docs/gpu.md and docs/benchmarks.md. Standard library only.
"""

from dataclasses import dataclass
from typing import Optional

GPU = "one NVIDIA H200"
CPU = "a 2-core CPU"
# What a stage takes on this project's 2-core CPU, two threads, estimated from the bench (docs/benchmarks.md):
# the stages' training step as `./run.sh bench --parts train` measured it last (2026-11-26), a pretraining
# step of 128 examples and a finetuning step of 256, times the steps of each training on the course's data;
# and the 500 dev questions answered by the stages' decoder (2026-11-22).
CPU_STEP_SECONDS = {'pretrain': 1.42, 'finetune': 1.59}
TRAINING_STEPS = {'pretrain': 14950, 'finetune': 600, 'finetune_with_pretrain': 80}
CPU_DEV_SECONDS = 1.37
CPU_PRETRAINING_MINUTES = round(TRAINING_STEPS['pretrain'] * CPU_STEP_SECONDS['pretrain'] / 60)


def cpu_minutes(stage):
    """The minutes a graded stage takes on CPU, estimated as above."""
    if stage.function == 'evaluate':
        return CPU_DEV_SECONDS / 60
    steps = TRAINING_STEPS['finetune_with_pretrain' if stage.params_in else stage.function]
    return steps * CPU_STEP_SECONDS[stage.function] / 60


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
