"""
The seed of a run. `--seed N` seeds it with N; without it a training run
draws its seed at random (rank 0 draws, every process uses that one), so
two people who run the same code never train the same parameters by
chance, and identical parameters in two hand-ins mean one training run. A
resumed run without --seed takes the seed recorded with the run it resumes.

The seed is recorded twice: in <experiments_dir>/<run>/seed.txt, beside the
run's metrics, and in the parameters' stamp (params.py).
"""

import os
import secrets

import torch.distributed as dist

from .atomic_files import replace_when_done
from .inputs import InputError

SEED_FILE = 'seed.txt'
SEED_RANGE = 2 ** 31  # every seed, drawn, given or recorded, is below it: set_seed hands seed + rank to numpy (< 2**32)


def drawn_seed(processes):
    """A seed drawn at random by rank 0, on every process."""
    seed = [secrets.randbelow(SEED_RANGE)]
    if processes.world > 1:
        dist.broadcast_object_list(seed, src=0)
    return seed[0]


def recorded_seed(run_dir):
    """The seed recorded with the run in `run_dir`, or an InputError saying to give it."""
    path = os.path.join(run_dir, SEED_FILE)
    try:
        with open(path, encoding='utf-8') as f:
            seed = int(f.read())
    except FileNotFoundError:
        raise InputError(f"no seed is recorded with the run at {path}: resume with the run's --seed") from None
    except OSError as error:
        raise InputError(f"cannot read {path} ({error.strerror}): resume with the run's --seed") from None
    except ValueError:
        seed = None
    if seed is None or not 0 <= seed < SEED_RANGE:
        raise InputError(f"{path} does not hold a seed: resume with the run's --seed")
    return seed


def run_seed(given, resume, run_dir, processes):
    """The seed of a run: `given` (--seed) when there is one, else the recorded one when resuming,
    else one drawn at random."""
    if given is not None:
        return given
    if resume:
        return recorded_seed(run_dir)
    return drawn_seed(processes)


def record_seed(run_dir, seed):
    """Write `seed` to run_dir/seed.txt, whole or not at all."""
    def write(temporary):
        with open(temporary, 'w', encoding='utf-8') as f:
            f.write(f"{seed}\n")
    replace_when_done(os.path.join(run_dir, SEED_FILE), write)
