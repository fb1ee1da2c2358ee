"""
Records of a training run.

The trainer reports, every few steps, five scalars through
`writer.add_scalar(tag, value, step)`: train/loss, train/lr, train/tokens,
train/epoch and train/seconds. A RunRecorder is such a writer. It keeps one
row per reported step in experiments/<run name>/metrics.csv, with the
columns below, and also passes every scalar on to TensorBoard when the
`tensorboard` package is installed.
"""

import csv
import os

from ..atomic_files import replace_when_done

COLUMNS = ('step', 'epoch', 'loss', 'lr', 'tokens', 'seconds')
CSV_NAME = 'metrics.csv'


def tensorboard_writer(log_dir):
    """A TensorBoard SummaryWriter for log_dir, or None when tensorboard is not installed."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(log_dir=log_dir)


class RunRecorder:
    """
    A writer for TrainerConfig(writer=...): add_scalar('train/<column>', value, step).

    A row is written to the CSV once every column of its step has arrived, so
    the file can be read (or plotted) while the run goes on. A new recorder
    for the same run starts a fresh CSV; when the run resumes from a
    checkpoint of step k (resume_from), the earlier CSV's rows up to step k
    come first (its later rows, from the interrupted run, are dropped: those
    steps are trained again); the fresh CSV replaces the earlier one whole,
    so a run that fails before it keeps the earlier rows. TensorBoard keeps
    every run's events.
    """

    def __init__(self, run_dir, use_tensorboard=True):
        os.makedirs(run_dir, exist_ok=True)
        self.run_dir = run_dir
        self.csv_path = os.path.join(run_dir, CSV_NAME)
        self.csv_file = None  # opened, fresh, at the first row: a run refused before it keeps the old file
        self.resume_step = None
        self.pending = {}  # step -> {column: value} for rows not complete yet
        self.tensorboard = tensorboard_writer(run_dir) if use_tensorboard else None

    def resume_from(self, step):
        """Keep the earlier rows of steps up to `step`, before any new one."""
        self.resume_step = step

    def open(self):
        earlier = []
        if self.resume_step is not None and os.path.isfile(self.csv_path):
            with open(self.csv_path, newline='', encoding='utf-8') as f:
                earlier = [row for row in list(csv.reader(f))[1:] if row and float(row[0]) <= self.resume_step]

        def write(temporary):
            with open(temporary, 'w', newline='', encoding='utf-8') as f:
                csv.writer(f).writerows([COLUMNS, *earlier])
        replace_when_done(self.csv_path, write)  # a failure here leaves the earlier rows where they were
        self.csv_file = open(self.csv_path, 'a', newline='', encoding='utf-8')
        self.csv = csv.writer(self.csv_file)

    def add_scalar(self, tag, value, step):
        if self.tensorboard is not None:
            self.tensorboard.add_scalar(tag, value, step)
        column = tag.split('/')[-1]
        if column not in COLUMNS:
            return
        row = self.pending.setdefault(step, {'step': step})
        row[column] = value
        if len(row) == len(COLUMNS):
            self.write_row(self.pending.pop(step))

    def write_row(self, row):
        if self.csv_file is None:
            self.open()
        self.csv.writerow([row.get(column, '') for column in COLUMNS])
        self.csv_file.flush()

    def close(self):
        """Write any incomplete rows (with empty cells) and close the files."""
        for step in sorted(self.pending):
            self.write_row(self.pending[step])
        self.pending = {}
        if self.csv_file is not None:
            self.csv_file.close()
        if self.tensorboard is not None:
            self.tensorboard.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_metrics(csv_path):
    """The rows of a metrics CSV, each a dict of column -> float (None for an empty cell)."""
    with open(csv_path, newline='', encoding='utf-8') as f:
        return [{column: float(row[column]) if row.get(column) else None for column in COLUMNS}
                for row in csv.DictReader(f)]
