"""
Run records across a resume (src/runtime/training/records.py): metrics.csv keeps the
rows of the steps up to the checkpoint's, that step's own row included
(the resumed run starts after it, so nothing writes it again), and drops
the interrupted run's later rows, which the resumed run writes anew; and
when metrics.csv cannot be rewritten (a full disk), it keeps its earlier
rows.
"""

import pytest

from runtime.training import records
from runtime.training.records import COLUMNS, CSV_NAME, RunRecorder, read_metrics

from runtime_helpers import DISK_FULL, tree


def record(recorder, step, loss):
    """One complete row of `step`, as the trainer reports it."""
    for column in COLUMNS[1:]:
        recorder.add_scalar(f"train/{column}", loss if column == "loss" else step, step)


def test_a_resumed_run_keeps_the_rows_up_to_its_checkpoints_step(tmp_path):
    with RunRecorder(str(tmp_path), use_tensorboard=False) as interrupted:
        for step in (10, 20, 30):
            record(interrupted, step, loss=1.0)
    with RunRecorder(str(tmp_path), use_tensorboard=False) as resumed:
        resumed.resume_from(20)
        record(resumed, 30, loss=0.5)
    rows = read_metrics(tmp_path / CSV_NAME)
    assert [(row["step"], row["loss"]) for row in rows] == [(10, 1.0), (20, 1.0), (30, 0.5)]


class HalfWriter:
    """A csv writer whose writerows writes the first row, then finds the disk full."""

    def __init__(self, f, *args, **kwargs):
        self.f = f

    def writerows(self, rows):
        self.f.write(",".join(map(str, rows[0])) + "\r\n")
        raise DISK_FULL


def test_a_resumed_run_whose_records_cannot_be_rewritten_keeps_their_earlier_rows(tmp_path, monkeypatch):
    """Kills metrics.csv truncated in place when a resumed run starts it afresh: a disk that is full at
    that moment loses the rows up to the checkpoint, which no later run can write again."""
    with records.RunRecorder(str(tmp_path), use_tensorboard=False) as interrupted:
        for step in (10, 20, 30):
            record(interrupted, step, loss=1.0)
    before = tree(tmp_path)
    resumed = records.RunRecorder(str(tmp_path), use_tensorboard=False)
    resumed.resume_from(20)
    with monkeypatch.context() as patch, pytest.raises(OSError):
        patch.setattr(records.csv, "writer", HalfWriter)
        record(resumed, 30, loss=0.5)
    assert tree(tmp_path) == before
    with records.RunRecorder(str(tmp_path), use_tensorboard=False) as again:
        again.resume_from(20)
        record(again, 30, loss=0.5)
    rows = records.read_metrics(tmp_path / records.CSV_NAME)
    assert [(row["step"], row["loss"]) for row in rows] == [(10, 1.0), (20, 1.0), (30, 0.5)]
