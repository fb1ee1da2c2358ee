"""
A zygote parent (src/grading/zygote_parent.py) for the test run: started in
each worker of a run with slow tests (tests/conftest.py) and named in
GRADING_ZYGOTE_PARENT, so that the grading runs the tests start, in their
processes or in grader.py, fork their zygotes from it instead of importing
torch again, where the parent finds the zygote would be the same. Its line
for each request goes to parent.log beside its socket.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grading.bundle import HIDDEN_ENV
from grading.runner import ProbeRunner
from grading.forked_zygote import PARENT_ENV

from processes import cpu_seconds

PRELOAD = ("torch", "numpy", "tqdm")  # what grader.py's zygotes import
IGNORED = ("PYTEST_CURRENT_TEST",)  # set by pytest for each test; read by nothing as Python starts


def start_parent(folder, preload=PRELOAD, ignored=IGNORED):
    """A zygote parent listening at folder/parent.sock, with the environment grader.py's runs give their
    zygotes (ProbeRunner.environment); returns its Popen. Its log is folder/parent.log."""
    folder = Path(folder)
    env = ProbeRunner(str(folder), "", hidden_env=(HIDDEN_ENV,)).environment(str(folder))
    options = [word for name in ignored for word in ("--ignore", name)]
    with open(folder / "parent.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-c", "from grading.zygote_parent import main; main()", str(folder / "parent.sock"),
             *options, *preload], env=env, cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=log, start_new_session=True)


RUNNING = []  # the zygote parents (Popen) of this process that run, the one named last


def run_with_a_parent(preload=PRELOAD):
    """Start a zygote parent of this process and name it in the environment; returns a function that stops
    it and names the one named before, if any."""
    folder = tempfile.mkdtemp(prefix="zygote-parent-")  # only our user may enter it
    RUNNING.append(start_parent(folder, preload))
    named_before = os.environ.get(PARENT_ENV)
    os.environ[PARENT_ENV] = os.path.join(folder, "parent.sock")

    def stop():
        if named_before is None:
            os.environ.pop(PARENT_ENV, None)
        else:
            os.environ[PARENT_ENV] = named_before
        parent = RUNNING.pop()
        parent.kill()
        parent.wait()
        shutil.rmtree(folder, ignore_errors=True)
    return stop


def parent_cpu_seconds():
    """CPU seconds of the zygote parent named last and of the zygotes it has reaped (0 when none runs: once
    stopped, they count among this process's own children's)."""
    return cpu_seconds(RUNNING[-1].pid) if RUNNING else 0.0
