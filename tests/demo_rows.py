"""
The rows of the demo's --quick table (src/instructors/demo.py) on one thread,
each trained once for the whole test run and shared by the test files that
judge it. Each row is seeded on its own (demo.trained_row), so a row trained
alone is the row of the whole table. Under pytest-xdist the workers share
them through files: the first worker to ask for a row trains it under a lock,
and a worker asking for it meanwhile waits for it, so the files that start
with different rows train them side by side.
"""

import contextlib
import fcntl
import io
import json
import os
import tempfile

import pytest
import torch

from instructors import demo

QUICK = ["--quick", "--threads", "1"]  # one thread: the numbers depend on the count, and one costs the least CPU
ROWS = {"scratch": ("vanilla", False), "pretrained": ("vanilla", True), "rope": ("rope", True),
        "perceiver": ("perceiver", True)}  # a row's name here -> its (variant, pretrained) in demo.runs


def train(name):
    """The demo's row `name` of ROWS ('baseline' too), trained here on a world of its own."""
    args = demo.parse_args(QUICK)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(args.threads)
        with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
            world = demo.written_world(args, folder)
            if name == "baseline":
                return demo.baseline_row(world)
            run = next(run for run in demo.runs(args) if (run[1], run[2]) == ROWS[name])
            return demo.trained_row(args, world, run)
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def quick_rows(tmp_path_factory):
    """quick_rows(name, ...) -> [demo.Row]: the rows named, each trained once in the whole run."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, above each worker's own
    shared = shared / "demo_rows"
    shared.mkdir(exist_ok=True)

    def row(name):
        with open(shared / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            done = shared / f"{name}.json"
            if not done.exists():
                done.write_text(json.dumps(vars(train(name))))
            found = json.loads(done.read_text())
        return demo.Row(found["run"], tuple(found["dev"]), tuple(found["train"]), found["minutes"])

    return lambda *names: [row(name) for name in names]
