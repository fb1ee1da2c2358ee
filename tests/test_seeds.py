"""
The seed of a run (src/runtime/seeds.py, run.py): drawn at random unless
--seed is given, the same on every process, recorded in the run's seed.txt
and in the parameters' stamp, taken back from the records when a run is
resumed, and part of what a checkpoint must match; seed.txt read back
within the seeds' range (garbled, unreadable or out of range: refused in
one line) and written whole or not at all.
"""

import os
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

import run
from runtime import seeds
from runtime.training.distributed import Processes
from runtime.inputs import InputError
from runtime.params import read_stamp
from runtime.seeds import SEED_FILE, SEED_RANGE, drawn_seed, record_seed, recorded_seed, run_seed

from forked_runs import Forked, launch
from runtime_helpers import DISK_FULL, path_of

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"


@pytest.fixture(scope="module")
def questions(tmp_path_factory):
    path = tmp_path_factory.mktemp("questions") / "train.tsv"
    path.write_text("".join((DATA / "birth_places_train.tsv").read_text(encoding="utf-8").splitlines(True)[:40]))
    return path


def trained(questions, folder, *extra):
    """run.main finetuning a small model for one epoch into folder/; returns (exit status, params path)."""
    params = folder / "model.params"
    status = run.main(["--function", "finetune", "--variant", "vanilla", "--pretrain_corpus_path",
                       str(DATA / "wiki.txt"), "--finetune_corpus_path", str(questions), "--writing_params_path",
                       str(params), "--experiments_dir", str(folder / "experiments"), "--tb_expt_name", "run",
                       "--small", "--device", "cpu", *extra])
    return status, params


@pytest.fixture(scope="module")
def unseeded_runs(questions, tmp_path_factory):
    """Two runs of the same command without --seed: (params path, records folder) of each."""
    runs = []
    for _ in range(2):
        folder = tmp_path_factory.mktemp("unseeded")
        status, params = trained(questions, folder)
        assert status == 0
        runs.append((params, folder / "experiments" / "run"))
    return runs


def test_runs_without_a_seed_draw_their_own_and_record_it(unseeded_runs):
    seeds = []
    for params, records in unseeded_runs:
        state = torch.load(params, weights_only=True)
        seed = read_stamp(state)["seed"]
        assert (records / SEED_FILE).read_text() == f"{seed}\n"
        seeds.append(seed)
    assert seeds[0] != seeds[1]
    first, second = (torch.load(params, weights_only=True) for params, _ in unseeded_runs)
    assert any(not torch.equal(first[key], second[key]) for key in first)


def test_a_given_seed_is_used_and_stamped(questions, tmp_path):
    status, params = trained(questions, tmp_path, "--seed", "7")
    assert status == 0 and read_stamp(torch.load(params, weights_only=True))["seed"] == 7


def test_a_resumed_run_takes_the_recorded_seed(tmp_path):
    record_seed(tmp_path, 1234)
    assert run_seed(None, True, tmp_path, Processes()) == 1234
    assert run_seed(5, True, tmp_path, Processes()) == 5
    assert run_seed(None, False, tmp_path, Processes()) != 1234


def test_a_given_seed_of_0_wins_over_the_recorded_one(tmp_path):
    """Kills --seed 0 taken for no seed (0 is a seed) and replaced by the recorded one on a resume."""
    record_seed(tmp_path, 1234)
    assert run_seed(0, True, tmp_path, Processes()) == 0
    assert run_seed(0, False, tmp_path, Processes()) == 0


def test_drawn_seeds_cover_the_range_a_recorded_seed_is_read_back_in():
    """Kills a drawn seed past SEED_RANGE (recorded, it would be refused on the resume, and numpy takes
    seed + rank only below 2**32), and a draw from a narrower range than the seeds' (or a constant). Of 64
    draws from the whole range, none in one of its halves has the chance 2**-64."""
    drawn = [drawn_seed(Processes()) for _ in range(64)]
    assert all(0 <= seed < SEED_RANGE for seed in drawn) and min(drawn) < SEED_RANGE // 2 <= max(drawn)


def test_resuming_a_run_without_a_recorded_seed_says_to_give_it(tmp_path):
    with pytest.raises(InputError, match=r"no seed is recorded with the run at .*: resume with the run's --seed"):
        run_seed(None, True, tmp_path, Processes())
    (tmp_path / SEED_FILE).write_text("seven\n")
    with pytest.raises(InputError, match=r"does not hold a seed"):
        run_seed(None, True, tmp_path, Processes())


def test_a_checkpoint_of_another_seed_is_refused(questions, tmp_path, capsys):
    assert trained(questions, tmp_path, "--seed", "1")[0] == 0
    status, _ = trained(questions, tmp_path, "--seed", "2", "--resume")
    assert status == 1 and "its seed is 1, this run's is 2" in capsys.readouterr().err


def draw_in_process(folder):
    """In a worker forked as torchrun starts one (tests/forked_runs.py): the seed it draws, to folder/RANK."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo")
    try:
        seed = drawn_seed(Processes(rank, world))
    finally:
        dist.destroy_process_group()
    Path(folder, str(rank)).write_text(str(seed))


def test_every_process_uses_rank_0s_seed(tmp_path):
    assert Forked(launch, 2, draw_in_process, str(tmp_path)).wait(120) == 0
    assert (tmp_path / "0").read_text() == (tmp_path / "1").read_text()


# ---- seed.txt: its range, and written whole ---------------------------------------------------

@pytest.mark.parametrize("text, seed", [("0\n", 0), (f"{SEED_RANGE - 1}\r\n", SEED_RANGE - 1), (" 7 ", 7),
                                        ("-1\n", None), (f"{SEED_RANGE}\n", None), ("", None), ("x\n", None)])
def test_a_recorded_seed_is_read_within_its_range_and_refused_outside(tmp_path, text, seed):
    """Kills a resumed run taking a recorded seed numpy cannot take (negative, too large) or crashing on an
    empty or garbled seed.txt."""
    path_of(tmp_path, seeds.SEED_FILE, text)
    if seed is not None:
        assert recorded_seed(str(tmp_path)) == seed
        return
    with pytest.raises(InputError, match=f"^{tmp_path}/seed.txt does not hold a seed: resume with the run's --seed$"):
        recorded_seed(str(tmp_path))


def test_a_seed_txt_that_cannot_be_read_is_refused_in_one_line(tmp_path):
    """Kills a traceback for a seed.txt that is a folder (or otherwise unreadable)."""
    (tmp_path / seeds.SEED_FILE).mkdir()
    with pytest.raises(InputError, match=f"^cannot read {tmp_path}/seed.txt \\(Is a directory\\): resume with"):
        recorded_seed(str(tmp_path))


@pytest.mark.parametrize("seed", [0, SEED_RANGE - 1])
def test_the_seeds_at_both_ends_of_the_range_round_trip(tmp_path, seed):
    """Kills a recorded seed cut, offset or refused at the ends of its range, or written without its line
    end."""
    record_seed(str(tmp_path), seed)
    assert recorded_seed(str(tmp_path)) == seed
    assert (tmp_path / SEED_FILE).read_bytes() == f"{seed}\n".encode()


def test_a_seed_that_cannot_be_written_whole_is_not_recorded_at_all(tmp_path, monkeypatch):
    """Kills seed.txt written in place: the first digits of a seed are a seed too, which a resumed run
    would take without a word."""
    def disk_fills(path, mode="r", **kwargs):
        with open(path, mode, **kwargs) as f:
            f.write("123")
        raise DISK_FULL
    with monkeypatch.context() as patch, pytest.raises(OSError):
        patch.setattr(seeds, "open", disk_fills, raising=False)
        seeds.record_seed(str(tmp_path), 1234567)
    assert os.listdir(tmp_path) == []
    with pytest.raises(InputError, match="no seed is recorded"):
        seeds.recorded_seed(str(tmp_path))
    seeds.record_seed(str(tmp_path), 1234567)
    assert seeds.recorded_seed(str(tmp_path)) == 1234567 and os.listdir(tmp_path) == [seeds.SEED_FILE]
