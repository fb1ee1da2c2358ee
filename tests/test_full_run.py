"""
The timed whole assignment (src/instructors/full_run.py): it reads run.py's
own summary lines, runs a chain of stages through ./run.sh, and says which
stage failed. Its chains, their order in the table, and --parallel are
checked with the stages stood in for, and what a stage is given and what
its log gives with run.sh stood in for.
"""

import sys
import threading

import pytest
import torch

from instructors import full_run
from run import training_summary

from run_helpers import write_corpus


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
    """The perceiver chain at the smoke size, on a written corpus of 90 people (20 dev questions; the
    chain's table and logs do not depend on the data's size): each stage's log, the trained steps, the
    dev accuracy."""
    monkeypatch.setenv("SMALL", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    data = write_corpus(tmp_path / "data")
    out = tmp_path / "out"
    assert full_run.main(["--out", str(out), "--data_dir", str(data), "--chains", "perceiver", "--device", "cpu",
                          "--", "--seed", "0"]) == 0
    rows = (out / "table.md").read_text(encoding="utf-8").splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| " + stage for stage in full_run.CHAINS["perceiver"]]
    assert int(rows[0].split(" | ")[2]) > 0 and rows[2].endswith("/20) |")
    assert all((out / "logs" / f"{stage}.log").is_file() for stage in full_run.CHAINS["perceiver"])
    assert (out / "files" / "perceiver.pretrain.dev.predictions").is_file()


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


def test_the_chains_are_each_variants_training_and_dev_stages_in_the_stage_tables_order():
    """Kills the test-set evaluations (no labels to score) run, or a stage left out."""
    assert full_run.CHAINS == {
        "vanilla": ("vanilla_finetune_without_pretrain", "vanilla_eval_dev_without_pretrain", "vanilla_pretrain",
                    "vanilla_finetune_with_pretrain", "vanilla_eval_dev_with_pretrain"),
        "perceiver": ("perceiver_pretrain", "perceiver_finetune_with_pretrain", "perceiver_eval_dev_with_pretrain"),
        "rope": ("rope_pretrain", "rope_finetune_with_pretrain", "rope_eval_dev_with_pretrain")}


@pytest.fixture
def stages(monkeypatch):
    """The stages run, in order, by a stand-in for run_stage that fails the stages in `failing` and,
    for those in `meeting`, waits until every one of them has started."""
    run, failing, meeting = [], set(), {}

    def stand_in(stage, out, environment, options):
        run.append(stage)
        if stage in meeting:
            meeting[stage].wait()
        return full_run.Figures(stage, 100.0 - len(run), 1 if stage in failing else 0)  # the later, the faster
    monkeypatch.setattr(full_run, "run_stage", stand_in)
    return run, failing, meeting


def test_a_chain_stops_at_its_first_failed_stage_and_the_other_goes_on(tmp_path, stages, capsys):
    run, failing, _ = stages
    failing.add("vanilla_pretrain")
    assert full_run.main(["--out", str(tmp_path), "--device", "cpu"]) == 1
    assert run == list(full_run.CHAINS["vanilla"][:3]) + list(full_run.CHAINS["perceiver"])
    rows = (tmp_path / "table.md").read_text(encoding="utf-8").splitlines()[2:]
    assert [row.split(" | ")[0][2:] for row in rows] == run
    assert rows[2].split(" | ")[1] == "failed (1)"
    assert capsys.readouterr().err.startswith("full_run: error: vanilla_pretrain failed; see ")


def test_parallel_chains_run_side_by_side_and_are_tabled_in_the_order_given(tmp_path, stages):
    """Kills --parallel running the chains one after the other: each chain's first stage waits for the
    other's to start."""
    run, _, meeting = stages
    both = threading.Barrier(2, timeout=10)
    meeting.update({"vanilla_finetune_without_pretrain": both, "perceiver_pretrain": both})
    assert full_run.main(["--out", str(tmp_path), "--parallel", "--chains", "perceiver,vanilla"]) == 0
    rows = (tmp_path / "table.md").read_text(encoding="utf-8").splitlines()[2:]
    assert [row.split(" | ")[0][2:] for row in rows] == list(full_run.CHAINS["perceiver"] + full_run.CHAINS["vanilla"])
    assert sorted(run) == sorted(full_run.CHAINS["perceiver"] + full_run.CHAINS["vanilla"])


def test_an_unknown_chain_is_one_line(tmp_path, capsys):
    assert full_run.main(["--out", str(tmp_path / "out"), "--chains", "vanilla,gpt"]) == 1
    assert capsys.readouterr().err == "full_run: error: unknown chain gpt\n"
    assert not (tmp_path / "out").exists()


STAND_IN_RUN_SH = """#!/bin/bash
echo "$1 with $2 $3 on $DEVICE: data $DATA_DIR, out $OUT_DIR, records $EXPERIMENTS_DIR, python $PYTHON"
echo "trained 40 steps in 2.0 s (20.00 steps/s)"
echo "Correct: 3.0 out of 4.0: 75.0%" >&2
[ "$1" != perceiver_eval_dev_with_pretrain ]
"""


def test_each_stage_runs_run_sh_with_outs_folders_its_output_and_errors_logged_and_read(tmp_path, monkeypatch):
    """With a stand-in run.sh: each stage gets the data folder, OUT's folders, the device (auto by default), the
    Python and the options after --, its stdout and stderr go to its log, and the log's figures to the table."""
    repository = tmp_path / "repository"
    repository.mkdir()
    (repository / "run.sh").write_text(STAND_IN_RUN_SH)
    monkeypatch.setattr(full_run, "REPO", repository)
    (tmp_path / "data").mkdir()
    out = tmp_path / "out"
    assert full_run.main(["--out", str(out), "--data_dir", str(tmp_path / "data"), "--chains", "perceiver",
                          "--", "--seed", "3"]) == 1
    log = (out / "logs" / "perceiver_pretrain.log").read_text(encoding="utf-8").splitlines()
    assert log[0] == (f"perceiver_pretrain with --seed 3 on auto: data {tmp_path / 'data'}, out {out / 'files'}, "
                      f"records {out / 'experiments'}, python {sys.executable}")
    assert log[2] == "Correct: 3.0 out of 4.0: 75.0%"
    rows = (out / "table.md").read_text(encoding="utf-8").splitlines()[2:]
    assert [row.split(" | ", 1)[1] for row in rows] == ["0 | 40 | 20.0 |  | 75.0% (3/4) |"] * 2 + \
        ["failed (1) | 40 | 20.0 |  | 75.0% (3/4) |"]
    assert sorted(path.name for path in out.iterdir()) == ["experiments", "files", "logs", "table.md"]
