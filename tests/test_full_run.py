"""
The timed whole assignment (src/instructors/full_run.py): it reads run.py's
own summary lines, runs a chain of stages through ./run.sh, and says which
stage failed.
"""

import torch

from instructors import full_run
from run import training_summary


def test_the_figures_are_read_from_run_pys_own_lines():
    """Kills a summary line that full_run no longer reads (the two are written apart), a peak
    memory or an accuracy read wrong."""
    cpu = full_run.read_figures("s", 9.5, 0, f"noise\n{training_summary(14950, 380.2, torch.device('cpu'))}\n")
    assert (cpu.steps, cpu.steps_per_second, cpu.peak_mib, cpu.correct) == (14950, 39.32, None, None)
    gpu = full_run.read_figures("s", 9.5, 0, "trained 80 steps in 11.1 s (7.19 steps/s), peak GPU memory 974 MiB\n"
                                             "Correct: 11.0 out of 500.0: 2.2%\n")
    assert (gpu.steps, gpu.peak_mib, gpu.correct) == (80, 974, (11, 500))
    assert gpu.row() == "| s | 10 | 80 | 7.2 | 974 | 2.2% (11/500) |"
    assert full_run.Figures("s", 3.0, 1).row() == "| s | failed (1) |  |  |  |  |"


def test_a_chain_runs_through_run_sh_and_its_table_is_written(tmp_path, monkeypatch, capsys):
    """The perceiver chain at the smoke size: each stage's log, the trained steps, the dev accuracy."""
    monkeypatch.setenv("SMALL", "1")
    assert full_run.main(["--out", str(tmp_path), "--chains", "perceiver", "--device", "cpu", "--", "--seed", "0"]) == 0
    rows = (tmp_path / "table.md").read_text(encoding="utf-8").splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| " + stage for stage in full_run.CHAINS["perceiver"]]
    assert int(rows[0].split(" | ")[2]) > 0 and rows[2].endswith("/500) |")
    assert all((tmp_path / "logs" / f"{stage}.log").is_file() for stage in full_run.CHAINS["perceiver"])
    assert (tmp_path / "files" / "perceiver.pretrain.dev.predictions").is_file()


def test_a_failed_stage_is_named_and_the_chain_stops(tmp_path, monkeypatch, capsys):
    """A stage that fails (here its input params are missing) ends the chain with exit status 1
    and one line naming the stage and its log."""
    monkeypatch.setitem(full_run.CHAINS, "perceiver", ("perceiver_finetune_with_pretrain", "perceiver_pretrain"))
    assert full_run.main(["--out", str(tmp_path), "--chains", "perceiver", "--device", "cpu"]) == 1
    assert capsys.readouterr().err == (f"full_run: error: perceiver_finetune_with_pretrain failed; see "
                                       f"{tmp_path / 'logs' / 'perceiver_finetune_with_pretrain.log'}\n")
    assert not (tmp_path / "logs" / "perceiver_pretrain.log").exists()
    assert full_run.main(["--out", str(tmp_path), "--data_dir", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().err == f"full_run: error: no data folder {tmp_path / 'none'}\n"
