"""
./run.sh plot (src/stages/plot.py): a run's loss and learning rate against
the step, from its metrics.csv, drawn to curves.png beside the CSV (or to
--output); the run named by its name, its folder or its CSV; every point
recorded drawn, a zero too; a run without records, or a CSV without steps,
refused in one line that lists the runs there are; and a drawing that fails
midway leaving the earlier PNG and no temporary.
"""

import pytest

from runtime.training.records import COLUMNS
from stages import plot

from runtime_helpers import DISK_FULL, leftovers, then_raising, tree

PNG = b"\x89PNG\r\n\x1a\n"
ROWS = [(1, 1, 3.0, 6e-4, 100, 0.5), (2, 1, 2.5, 3e-4, 200, 1.0), (3, 1, 2.0, 0.0, 300, 1.5)]


def recorded(experiments, run, rows=ROWS):
    """experiments/run/metrics.csv of `rows` (None for an empty cell); the run's folder."""
    folder = experiments / run
    folder.mkdir(parents=True)
    lines = [",".join(COLUMNS)] + [",".join("" if value is None else str(value) for value in row) for row in rows]
    (folder / "metrics.csv").write_text("\n".join(lines) + "\n")
    return folder


def plotted(capsys, *argv):
    """plot.main's exit status and stderr."""
    status = plot.main([str(arg) for arg in argv])
    return status, capsys.readouterr().err


@pytest.fixture
def drawing():
    """Skips where matplotlib, which the project does not otherwise need, is not installed."""
    return pytest.importorskip("matplotlib", reason="matplotlib is optional; drawing is tested where it is installed")


def test_a_zero_is_a_point_of_the_curve_and_an_empty_cell_is_not():
    """Kills a learning rate decayed to 0 (or a loss of 0) left out of its curve, and an empty cell drawn."""
    rows = [dict(step=1.0, loss=2.0, lr=0.0), dict(step=2.0, loss=None, lr=1e-4), dict(step=3.0, loss=0.0, lr=None)]
    assert plot.series(rows, "lr") == ([1.0, 2.0], [0.0, 1e-4])
    assert plot.series(rows, "loss") == ([1.0, 3.0], [2.0, 0.0])


def test_a_run_is_found_by_its_name_its_folder_or_its_csv(tmp_path, monkeypatch):
    """Kills a run folder or a CSV given as the run (relative to the current folder) looked for under the
    experiments folder."""
    recorded(tmp_path / "experiments", "vanilla_pretrain")
    monkeypatch.chdir(tmp_path)
    csv = "experiments/vanilla_pretrain/metrics.csv"
    assert plot.metrics_path("vanilla_pretrain", "experiments") == csv
    assert plot.metrics_path("experiments/vanilla_pretrain", "elsewhere") == csv
    assert plot.metrics_path(csv, "elsewhere") == csv


def test_an_unknown_run_lists_the_runs_with_records_in_order(tmp_path, capsys):
    """Kills the runs listed unsorted, a folder without records listed as a run, or a traceback."""
    experiments = tmp_path / "experiments"
    for run in ("perceiver_pretrain", "b_run", "vanilla_pretrain"):
        recorded(experiments, run)
    (experiments / "no_records").mkdir()
    status, err = plotted(capsys, "none", "--experiments_dir", experiments)
    assert status == 1 and err == (f"plot.py: error: no records for 'none' (looked for {experiments}/none/metrics.csv); "
                                   f"runs with records: b_run, perceiver_pretrain, vanilla_pretrain\n")
    status, err = plotted(capsys, "none", "--experiments_dir", tmp_path / "nowhere")
    assert status == 1 and err.endswith("runs with records: none\n")


def test_a_run_without_training_steps_is_refused(tmp_path, capsys):
    """Kills an empty figure drawn for a run whose CSV holds no loss yet."""
    recorded(tmp_path, "run", rows=[(1, 1, None, 6e-4, 100, 0.5)])
    status, err = plotted(capsys, "run", "--experiments_dir", tmp_path)
    assert status == 1 and err == f"plot.py: error: {tmp_path}/run/metrics.csv has no training steps recorded yet\n"
    assert not (tmp_path / "run" / "curves.png").exists()


def test_an_output_in_a_missing_folder_is_refused(tmp_path, capsys):
    """Kills a drawing begun for a PNG that cannot be written."""
    recorded(tmp_path, "run")
    status, err = plotted(capsys, "run", "--experiments_dir", tmp_path, "--output", tmp_path / "none" / "c.png")
    assert status == 1 and err == f"plot.py: error: the folder of --output does not exist: {tmp_path}/none\n"


def test_the_png_goes_beside_the_csv_by_default(drawing, tmp_path, capsys, monkeypatch):
    """Kills a default PNG written to the current folder, or an output said but not written."""
    folder = recorded(tmp_path / "experiments", "run")
    monkeypatch.chdir(tmp_path)
    assert plot.main(["run", "--experiments_dir", "experiments"]) == 0
    assert (folder / "curves.png").read_bytes()[:8] == PNG and sorted(tree(tmp_path)) == [
        "experiments", "experiments/run", "experiments/run/curves.png", "experiments/run/metrics.csv"]
    assert capsys.readouterr().out == "wrote experiments/run/curves.png (3 records from experiments/run/metrics.csv)\n"


def test_each_curve_is_drawn_from_its_own_column_against_the_step(drawing, tmp_path, monkeypatch):
    """Kills the curves drawn from each other's column, against another column than the step, or without
    their last point (a learning rate decayed to 0), and the figure titled other than by its run."""
    from matplotlib.figure import Figure
    drawn = []
    save = Figure.savefig

    def saved(figure, *args, **kwargs):
        """Figure.savefig, after noting each axes' label and lines (x, y), and the title."""
        drawn.append([(axes.get_ylabel(), [(list(line.get_xdata()), list(line.get_ydata())) for line in axes.lines])
                      for axes in figure.axes] + [figure.axes[0].get_title()])
        return save(figure, *args, **kwargs)
    monkeypatch.setattr(Figure, "savefig", saved)
    recorded(tmp_path, "vanilla_pretrain")
    assert plot.main(["vanilla_pretrain", "--experiments_dir", str(tmp_path)]) == 0
    assert drawn == [[("training loss", [([1.0, 2.0, 3.0], [3.0, 2.5, 2.0])]),
                      ("learning rate", [([1.0, 2.0, 3.0], [6e-4, 3e-4, 0.0])]), "vanilla_pretrain"]]


def test_a_drawing_that_fails_midway_leaves_the_earlier_png_and_the_next_one_works(drawing, tmp_path, monkeypatch):
    """Kills the PNG written in place, or its temporary left beside the earlier PNG, when saving fails
    once the file is half written (a full disk)."""
    from matplotlib.figure import Figure
    folder = recorded(tmp_path, "run")
    (folder / "curves.png").write_bytes(b"the earlier curves")
    with monkeypatch.context() as patch, pytest.raises(OSError):
        patch.setattr(Figure, "savefig", then_raising(Figure.savefig, DISK_FULL))
        plot.main(["run", "--experiments_dir", str(tmp_path)])
    assert tree(folder)["curves.png"] == b"the earlier curves" and not leftovers(tmp_path)
    assert plot.main(["run", "--experiments_dir", str(tmp_path)]) == 0
    assert (folder / "curves.png").read_bytes()[:8] == PNG and not leftovers(tmp_path)
