"""
./run.sh plot <run>: draw a run's training loss and learning rate against
the step, from <experiments_dir>/<run>/metrics.csv (see records.py), into
<experiments_dir>/<run>/curves.png. <run> may also be a run folder or a
metrics CSV. Drawing needs matplotlib, which the project does not otherwise
need: without it this says so and exits 1.
"""

import argparse
import os
import sys

from runtime.inputs import InputError
from runtime.training.records import CSV_NAME, read_metrics


def metrics_path(run, experiments_dir):
    """The metrics CSV that `run` names: a CSV file, a run folder, or a run name."""
    if os.path.isfile(run):
        return run
    folder = run if os.path.isdir(run) else os.path.join(experiments_dir, run)
    path = os.path.join(folder, CSV_NAME)
    if os.path.isfile(path):
        return path
    runs = sorted(name for name in os.listdir(experiments_dir)
                  if os.path.isfile(os.path.join(experiments_dir, name, CSV_NAME))) if os.path.isdir(experiments_dir) else []
    raise InputError(f"no records for {run!r} (looked for {path}); runs with records: {', '.join(runs) or 'none'}")


def series(rows, column):
    """(steps, values) of the rows whose `column` is filled in."""
    kept = [row for row in rows if row[column] is not None]
    return [row['step'] for row in kept], [row[column] for row in kept]


def draw(rows, title, output_path):
    try:
        import matplotlib
    except ImportError:
        raise InputError("drawing needs matplotlib, which is not installed (pip install matplotlib)") from None
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    figure, (loss_axes, lr_axes) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    loss_axes.plot(*series(rows, 'loss'), color='tab:blue')
    loss_axes.set_ylabel('training loss')
    loss_axes.set_title(title)
    loss_axes.grid(alpha=0.3)
    lr_axes.plot(*series(rows, 'lr'), color='tab:orange')
    lr_axes.set_ylabel('learning rate')
    lr_axes.set_xlabel('step')
    lr_axes.grid(alpha=0.3)
    figure.tight_layout()
    folder, name = os.path.split(os.path.abspath(output_path))
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.tmp.png")
    try:
        figure.savefig(temporary, dpi=100)
        os.replace(temporary, output_path)
    finally:
        plt.close(figure)
        if os.path.exists(temporary):
            os.remove(temporary)


def main(argv=None):
    p = argparse.ArgumentParser(description="Plot a run's loss and learning rate to a PNG.")
    p.add_argument('run', help="run name (a folder of --experiments_dir), run folder, or metrics CSV")
    p.add_argument('--experiments_dir', default='experiments')
    p.add_argument('--output', help="PNG to write (default: curves.png beside the CSV)")
    args = p.parse_args(argv)
    try:
        csv_path = metrics_path(args.run, args.experiments_dir)
        output = args.output or os.path.join(os.path.dirname(csv_path), 'curves.png')
        if not os.path.isdir(os.path.dirname(os.path.abspath(output))):
            raise InputError(f"the folder of --output does not exist: {os.path.dirname(os.path.abspath(output))}")
        rows = read_metrics(csv_path)
        if not series(rows, 'loss')[0]:
            raise InputError(f"{csv_path} has no training steps recorded yet")
        draw(rows, os.path.basename(os.path.dirname(os.path.abspath(csv_path))), output)
    except InputError as error:
        print(f"plot.py: error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {output} ({len(rows)} records from {csv_path})")
    return 0


if __name__ == '__main__':
    sys.exit(main())
