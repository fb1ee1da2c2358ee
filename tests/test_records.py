"""
Run records (src/runtime/training/records.py): metrics.csv holds a row a
reported step, written (and readable) as soon as its last column arrives, the
incomplete ones at the end in step order with empty cells; scalars of other
tags go to TensorBoard only. A new run starts a fresh CSV, but only at its
first row: a run that records nothing leaves the earlier one as it was.
Across a resume, metrics.csv keeps the rows of the steps up to the
checkpoint's, that step's own row included (the resumed run starts after
it, so nothing writes it again), and drops the interrupted run's later rows,
which the resumed run writes anew; and when metrics.csv cannot be rewritten
(a full disk), it keeps its earlier rows.
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


def recorded_run(folder, steps, loss=1.0):
    """metrics.csv of a finished run that reported `steps`; its bytes."""
    with RunRecorder(str(folder), use_tensorboard=False) as recorder:
        for step in steps:
            record(recorder, step, loss)
    return (folder / CSV_NAME).read_bytes()


def steps_and_losses(folder):
    return [(row["step"], row["loss"]) for row in read_metrics(folder / CSV_NAME)]


def test_a_new_run_starts_a_fresh_csv(tmp_path):
    """Kills a run that is not resumed keeping, or appending to, the rows of the run before it."""
    recorded_run(tmp_path, (10, 20, 30))
    recorded_run(tmp_path, (10,), loss=0.5)
    assert steps_and_losses(tmp_path) == [(10, 0.5)]


@pytest.mark.parametrize("resumed", [False, True])
def test_a_run_that_records_no_row_leaves_the_earlier_csv_as_it_was(tmp_path, resumed):
    """Kills a CSV emptied when the recorder is made or closed: a run refused before its first step (a
    checkpoint of another run, say) would lose the records of the run before it."""
    before = recorded_run(tmp_path, (10, 20))
    with RunRecorder(str(tmp_path), use_tensorboard=False) as refused:
        if resumed:
            refused.resume_from(10)
        refused.add_scalar("eval/accuracy", 0.5, 10)
    assert (tmp_path / CSV_NAME).read_bytes() == before


def test_a_resumed_run_without_earlier_records_starts_them(tmp_path):
    """Kills a resume that needs an earlier metrics.csv (one removed by hand, say)."""
    with RunRecorder(str(tmp_path / "run"), use_tensorboard=False) as resumed:
        resumed.resume_from(20)
        record(resumed, 30, loss=0.5)
    assert steps_and_losses(tmp_path / "run") == [(30, 0.5)]


def test_a_complete_row_can_be_read_while_the_run_goes_on(tmp_path):
    """Kills rows left in the file's buffer: a plot drawn during the run would miss them."""
    with RunRecorder(str(tmp_path), use_tensorboard=False) as recorder:
        record(recorder, 10, loss=2.0)
        recorder.add_scalar("train/loss", 1.5, 20)
        assert steps_and_losses(tmp_path) == [(10, 2.0)]
        record(recorder, 20, loss=1.5)
        assert steps_and_losses(tmp_path) == [(10, 2.0), (20, 1.5)]


def test_incomplete_rows_are_written_at_the_end_in_step_order_with_empty_cells(tmp_path):
    """Kills incomplete rows dropped, written in the order they were started, or read back as 0 where a
    cell is empty."""
    with RunRecorder(str(tmp_path), use_tensorboard=False) as recorder:
        recorder.add_scalar("train/loss", 0.25, 20)
        record(recorder, 5, loss=1.0)
        recorder.add_scalar("train/lr", 0.001, 10)
    rows = read_metrics(tmp_path / CSV_NAME)
    assert [row["step"] for row in rows] == [5, 10, 20]
    assert rows[1] == dict.fromkeys(COLUMNS[1:], None) | {"step": 10, "lr": 0.001}
    assert rows[2] == dict.fromkeys(COLUMNS[1:], None) | {"step": 20, "loss": 0.25}


class Events:
    """A stand-in TensorBoard writer that keeps what it is given."""

    def __init__(self):
        self.scalars, self.closed = [], False

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, value, step))

    def close(self):
        self.closed = True


def test_every_scalar_goes_to_tensorboard_and_only_the_columns_to_the_csv(tmp_path, monkeypatch):
    """Kills a scalar of another tag taken for a column (the row is then written before its last column
    arrives) or kept from TensorBoard, TensorBoard's writer left open, and TensorBoard left out by default
    where it is installed."""
    events = Events()
    monkeypatch.setattr(records, "tensorboard_writer", lambda log_dir: events)
    assert RunRecorder(str(tmp_path), use_tensorboard=False).tensorboard is None
    with RunRecorder(str(tmp_path)) as recorder:
        for column in COLUMNS[1:-1]:
            recorder.add_scalar(f"train/{column}", 1.0, 10)
        recorder.add_scalar("train/grad_norm", 3.0, 10)
        recorder.add_scalar("eval/accuracy", 0.5, 10)
        assert not (tmp_path / CSV_NAME).exists()  # no row is complete yet
        recorder.add_scalar(f"train/{COLUMNS[-1]}", 7.0, 10)
    assert read_metrics(tmp_path / CSV_NAME) == [dict.fromkeys(COLUMNS, 1.0) | {"step": 10, COLUMNS[-1]: 7.0}]
    assert [tag for tag, _, _ in events.scalars] == [f"train/{c}" for c in COLUMNS[1:-1]] + [
        "train/grad_norm", "eval/accuracy", f"train/{COLUMNS[-1]}"]
    assert events.closed
