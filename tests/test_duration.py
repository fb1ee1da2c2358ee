"""
The duration estimate (src/runtime/training/duration.py): after its first
steps a run on the CPU estimates the whole run, says so once, and advises
SMALL=1 and a GPU only past an hour.
"""

import math
import time
import types

import pytest

from runtime.training import duration
from runtime.training.duration import DurationEstimate


def test_a_long_cpu_run_says_how_long_it_will_take(capsys):
    """After its first steps a graded run on the CPU estimates the whole run, once, and suggests
    SMALL=1 or a GPU when that is over an hour."""
    trainer = types.SimpleNamespace(step=0, device="cpu", train_dataset=range(2000),
                                    config=types.SimpleNamespace(max_epochs=650, batch_size=128))
    estimate = DurationEstimate(after_steps=2)
    for step in range(1, 8):
        trainer.step = step
        estimate(trainer, 'step')
        time.sleep(0.05)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "the 10400 steps of this run take about" in lines[0]
    hours = float(lines[0].split("take about ")[1].split(" hours")[0])
    assert 0.1 <= hours <= 0.5 and "SMALL=1" not in lines[0]  # 0.05 s a step: about 0.14 hours
    trainer.config.max_epochs = 65000
    estimate, trainer.step = DurationEstimate(after_steps=2), 0
    for step in range(1, 5):
        trainer.step = step
        estimate(trainer, 'step')
        time.sleep(0.05)
    assert "use SMALL=1; train for grading on a GPU" in capsys.readouterr().err
    estimate = DurationEstimate(after_steps=2)  # a resumed run: its steps start far from 1
    for step in range(501, 505):
        trainer.step = step
        estimate(trainer, 'step')
    assert len(capsys.readouterr().err.splitlines()) == 1


@pytest.mark.parametrize("size, hours, advice", [(64, 1.0, False), (65, 1.0, False), (64, 1.001, True)])
def test_the_estimate_is_said_once_and_advises_only_past_an_hour(monkeypatch, capsys, size, hours, advice):
    """Kills an estimate that counts the last partial batch wrong, is said more than once, or advises a
    GPU for a run of exactly an hour."""
    steps = 2 * math.ceil(size / 32)  # two epochs of batches of 32
    clock = iter([0.0, 3 * hours * 3600 / steps])  # the first step starts the clock, the fourth reads it
    monkeypatch.setattr(duration.time, "perf_counter", lambda: next(clock))
    trainer = types.SimpleNamespace(config=types.SimpleNamespace(max_epochs=2, batch_size=32),
                                    train_dataset=range(size), device="cpu")
    estimate = duration.DurationEstimate(after_steps=3)
    for _ in range(10):
        estimate(trainer, "step")
        estimate(trainer, "epoch")
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and f"the {steps} steps of this run take about {hours:.1f} hours" in said[0]
    assert said[0].endswith("train for grading on a GPU") == advice


def test_by_default_the_estimate_times_a_few_steps_after_the_first(monkeypatch, capsys):
    """Kills a default that estimates before any step is timed (a division by zero) or times the first
    step, which warms up: here it takes 100 s and every later one 2 s, so the estimate is 2 s a step."""
    now = [0.0]
    monkeypatch.setattr(duration.time, "perf_counter", lambda: now[0])
    trainer = types.SimpleNamespace(config=types.SimpleNamespace(max_epochs=1, batch_size=10),
                                    train_dataset=range(1800), device="cpu")
    estimate = DurationEstimate()
    for step in range(1, 11):
        now[0] = 100.0 + 2.0 * (step - 1)  # the clock as the step ends
        estimate(trainer, "step")
    said = capsys.readouterr().err.splitlines()
    assert said == ["run.py: at 2.00 s a step on cpu, the 180 steps of this run take about 0.1 hours"]
