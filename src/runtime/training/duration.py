"""
The estimate of a run's duration: after the first few steps, how long the
whole run takes at that pace, said once (a graded run on a CPU takes most of
a day; the student should know before waiting).
"""

import math
import sys
import time

from tqdm import tqdm


class DurationEstimate:
    """A callback that, after the first few steps of a run, says how long the whole run will
    take at that pace (once), and suggests a smoke run or a GPU when that is over an hour."""

    def __init__(self, after_steps=3):
        self.after_steps = after_steps
        self.seen = 0  # steps of this process, so a resumed run is timed too
        self.started = None

    def __call__(self, trainer, event):
        if event != 'step':
            return
        self.seen += 1
        if self.seen == 1:
            self.started = time.perf_counter()  # the first step warms up: time the ones after it
        if self.seen != self.after_steps + 1:
            return
        seconds_a_step = (time.perf_counter() - self.started) / self.after_steps
        config = trainer.config
        steps = config.max_epochs * math.ceil(len(trainer.train_dataset) / config.batch_size)
        hours = seconds_a_step * steps / 3600
        advice = (": for a quick check of your code use SMALL=1; train for grading on a GPU" if hours > 1 else "")
        tqdm.write(f"run.py: at {seconds_a_step:.2f} s a step on {trainer.device}, the {steps} steps of this run "
                   f"take about {hours:.1f} hours{advice}", file=sys.stderr)
