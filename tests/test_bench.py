"""
The benchmark on a small generated data set: its table reports equal losses
and equal predictions for the plain and fast paths (in-process, on a small
model: the two paths agree whatever the model's size), the data rows of one
run of the command itself, and a bad data folder or parameters file stops it
with one line (in-process).
"""

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from instructors import bench

REPO = Path(__file__).resolve().parents[1]


def run_bench(*args):
    return subprocess.run([sys.executable, "-m", "instructors.bench", *args], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "src")), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=900)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, make_corpus):
    """300 people (three pretraining batches of up to 128): 64 training questions (a finetuning batch of
    64, four of the fast path's length groups on a CPU) and 40 dev questions."""
    corpus = make_corpus(seed=5, count=300)
    folder = tmp_path_factory.mktemp("bench_data")
    lines = corpus.questions.splitlines(keepends=True)
    (folder / "wiki.txt").write_text(corpus.wiki, encoding="utf-8")
    (folder / "birth_places_train.tsv").write_text("".join(lines[:64]), encoding="utf-8")
    (folder / "birth_dev.tsv").write_text("".join(lines[260:]), encoding="utf-8")
    return folder


def table_of(output):
    """{measure: (plain, fast, ratio, check)} of the bench's printed table."""
    rows = [line.split(" | ") for line in output.splitlines() if line.startswith("| ") and "---" not in line]
    return {cells[0][2:]: cells[1:] for cells in rows[1:]}


SMALL_MODEL = dict(n_layer=2, n_head=2, n_embd=32)  # in place of the graded 4 layers, 8 heads, 256 dims


@pytest.fixture(scope="module")
def table(data_dir):
    """The table of bench.main() run in-process on a small model, training and evaluation parts (both
    variants), one timed step, 12 questions."""
    threads = torch.get_num_threads()
    output = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(output):
        patch.setattr(bench, "GRADED_MODEL", SMALL_MODEL)
        patch.setattr(sys, "argv", ["bench.py", "--data_dir", str(data_dir), "--parts", "train", "eval",
                                    "--steps", "1", "--questions", "12", "--threads", "1", "--perceiver"])
        bench.main()
    torch.set_num_threads(threads)
    return table_of(output.getvalue())


@pytest.fixture(scope="module")
def command_table(data_dir):
    """The table of the command `python -m instructors.bench` itself, its data part."""
    done = run_bench("--data_dir", str(data_dir), "--parts", "data", "--threads", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    return table_of(done.stdout)


def test_training_steps_compute_the_same_loss_on_both_paths(table):
    steps = {measure: cells for measure, cells in table.items() if measure.startswith("train step")}
    assert len(steps) == 2
    for plain, fast, ratio, check in steps.values():
        assert float(plain.split()[0]) > 0 and float(fast.split()[0]) > 0 and float(ratio.rstrip("x")) > 0
        assert float(re.search(r"max diff (\S+) over", check).group(1)) <= 1e-5
        assert re.search(r"kernel \d+% of plain's CPU time, \d+% of fast's", check)


def test_evaluations_give_the_plain_loops_predictions_for_both_variants(table):
    evaluations = {measure: cells for measure, cells in table.items() if measure.startswith("dev eval")}
    assert len(evaluations) == 4
    assert {("perceiver" in m, "stop at MASK" in m) for m in evaluations} == {(False, False), (False, True),
                                                                              (True, False), (True, True)}
    for measure, (plain, fast, ratio, check) in evaluations.items():
        assert "12 questions" in measure
        assert check.startswith("predictions equal"), (measure, check)


def test_span_corruption_rate_is_reported(command_table):
    rates = [cells for measure, cells in command_table.items() if measure.startswith("span-corruption items/s")]
    assert len(rates) == 1 and float(rates[0][1]) > 0


def test_loader_rows_time_both_loaders_and_find_the_seeded_batches_the_same(command_table):
    loaders = {measure: cells for measure, cells in command_table.items() if measure.startswith("loader ms a batch")}
    assert [measure.split(", ")[-1] for measure in loaders] == ["0 workers", "4 workers"]
    for plain, seeded, ratio, check in loaders.values():
        assert float(plain) > 0 and float(seeded) > 0 and float(ratio.rstrip("x")) > 0
    checks = [cells[3].rstrip(" |") for cells in loaders.values()]
    assert checks == ["plain: unseeded; fast: the stages' seeded batches",
                      "plain: unseeded; fast: the stages' seeded batches, the same as with no worker"]


def copy_with_broken_line(data_dir, folder):
    """The data files of data_dir in folder, with the tab of birth_places_train.tsv's line 3 taken out."""
    for name in ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv"):
        (folder / name).write_bytes((data_dir / name).read_bytes())
    lines = (folder / "birth_places_train.tsv").read_text(encoding="utf-8").split("\n")
    lines[2] = lines[2].replace("\t", " ")
    (folder / "birth_places_train.tsv").write_text("\n".join(lines), encoding="utf-8")


def bench_exit(monkeypatch, *args):
    """What bench.main() on the command line `args` exits with: sys.exit(line) writes the line to stderr,
    exit status 1."""
    monkeypatch.setattr(sys, "argv", ["bench.py", *args])
    with pytest.raises(SystemExit) as stopped:
        bench.main()
    return stopped.value.code


@pytest.mark.parametrize("bad", ["folder", "line", "params"])
def test_bad_inputs_stop_with_one_line_before_any_timing(data_dir, tmp_path, bad, monkeypatch, capsys):
    if bad == "folder":
        (tmp_path / "wiki.txt").write_text("Ada. Ada was born in Lisbon .\n", encoding="utf-8")
        args = ("--data_dir", str(tmp_path), "--parts", "data")
        expected = f"bench.py: {tmp_path} has no birth_places_train.tsv, birth_dev.tsv"
    elif bad == "line":
        copy_with_broken_line(data_dir, tmp_path)
        args = ("--data_dir", str(tmp_path), "--parts", "data")
        expected = f"bench.py: {tmp_path}/birth_places_train.tsv line 3: expected 'question<TAB>place'"
    else:
        params = tmp_path / "model.params"
        params.write_text("not parameters", encoding="utf-8")
        args = ("--data_dir", str(data_dir), "--parts", "train", "eval", "--params", str(params))
        expected = f"bench.py: cannot read parameters from {params}"
    line = bench_exit(monkeypatch, *args)
    assert isinstance(line, str) and line.splitlines() == [line] and line.startswith(expected)
    out, err = capsys.readouterr()
    assert err == "" and "train step" not in out
