"""
Run records across a resume (src/runtime/training/records.py): metrics.csv keeps the
rows of the steps up to the checkpoint's, that step's own row included
(the resumed run starts after it, so nothing writes it again), and drops
the interrupted run's later rows, which the resumed run writes anew.
"""

from runtime.training.records import COLUMNS, CSV_NAME, RunRecorder, read_metrics


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
