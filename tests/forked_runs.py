"""
Processes forked from a server that has imported torch (multiprocessing's
forkserver, one for each test process) rather than new interpreters that
import it again: about 3 CPU-seconds a process, and a torchrun of two
processes starts three. tests/test_resume.py starts its runs of run.py so,
and tests/test_seeds.py its two processes of a process group.

A run of N processes is a launcher that forks N workers with the variables
torchrun gives its workers (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT), as `torchrun --standalone` would, and ends with
status 1 when a worker fails, the others killed, else 0. run.py reads the
first three (runtime/training/distributed.py), torch's env:// process group
the others. torchrun itself still runs where a test runs run.sh with NPROC.

A forked run differs from `python src/run.py` only in what a process reads
as it starts, which here the server read: torch's settings from the
environment (OMP_NUM_THREADS is applied again, by torch.set_num_threads) and
tqdm's TQDM_* variables (torch imports tqdm), so that a worker of rank 1
draws progress bars too. Every worker writes its output to the run's log.
"""

import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import sys
from multiprocessing import forkserver
from pathlib import Path

from processes import cpu_seconds, process_tree, signal_tree

RUN_PY = Path(__file__).resolve().parents[1] / "src" / "run.py"
SERVER = multiprocessing.get_context("forkserver")
SERVER.set_forkserver_preload(["torch"])
WORKERS = multiprocessing.get_context("fork")  # in a launcher: one thread, just forked from the server


class Forked:
    """function(*args) in a process forked from the server, in the environment `env` (default this
    process's); as much of subprocess.Popen as the tests use: pid, poll(), wait(), returncode,
    send_signal(), kill(). Its exit status is SystemExit's, 1 after another exception, else 0; or minus
    the signal that ended it."""

    def __init__(self, function, *args, env=None):
        self.process = SERVER.Process(target=in_environment, args=(dict(os.environ if env is None else env),
                                                                   function, args))
        self.process.start()
        self.pid = self.process.pid

    @property
    def returncode(self):
        return self.process.exitcode

    def poll(self):
        return self.process.exitcode

    def wait(self, timeout=None):
        self.process.join(timeout)
        if self.process.exitcode is None:
            raise TimeoutError(f"process {self.pid} still runs after {timeout} s")
        return self.process.exitcode

    def send_signal(self, sig):
        if self.process.exitcode is None:
            os.kill(self.pid, sig)

    def kill(self):
        """SIGKILL the process and every process it started (a launcher's workers)."""
        if self.process.exitcode is None:
            signal_tree(process_tree(self.pid), signal.SIGKILL)


def in_environment(env, function, args):
    """In a forked process: function(*args) with `env` for os.environ."""
    os.environ.clear()
    os.environ.update(env)
    function(*args)


def run_py(arguments, log):
    """In a forked process: `python src/run.py ARGUMENTS`, its standard output and error appended to the
    file `log`; exits with run.py's status."""
    output = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for fd in (1, 2):
        os.dup2(output, fd)
    os.close(output)
    import torch
    if "OMP_NUM_THREADS" in os.environ:
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    sys.argv = [str(RUN_PY), *arguments]
    sys.path.insert(0, str(RUN_PY.parent))
    import run
    sys.exit(run.main(arguments))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch(processes, function, *args):
    """In a forked process: function(*args) in `processes` workers, each with the variables torchrun gives
    its workers; exits 1 when one fails (the others killed), else 0."""
    shared = dict(os.environ, WORLD_SIZE=str(processes), LOCAL_WORLD_SIZE=str(processes), MASTER_ADDR="127.0.0.1",
                  MASTER_PORT=str(free_port()))
    workers = [WORKERS.Process(target=in_environment, args=(dict(shared, RANK=str(rank), LOCAL_RANK=str(rank)),
                                                            function, args)) for rank in range(processes)]
    for worker in workers:
        worker.start()
    running = workers
    while running:
        multiprocessing.connection.wait([worker.sentinel for worker in running])
        running = [worker for worker in workers if worker.exitcode is None]
        if any(worker.exitcode for worker in workers if worker.exitcode is not None):
            for worker in running:
                worker.kill()
                worker.join()
            sys.exit(1)


def started_run(arguments, env, log, processes=1):
    """run.py's command line `arguments` started in `processes` processes (a Forked), in the environment
    `env`, its output appended to the file `log`."""
    if processes == 1:
        return Forked(run_py, arguments, str(log), env=env)
    return Forked(launch, processes, run_py, arguments, str(log), env=env)


def finished_run(arguments, env, log, processes=1, timeout=300):
    """started_run(...) waited for, `timeout` seconds at most: (its status, its log's text)."""
    started = started_run(arguments, env, log, processes)
    try:
        status = started.wait(timeout)
    finally:
        started.kill()
    return status, Path(log).read_text(encoding="utf-8", errors="replace")


def server_pid():
    """The pid of this process's server, None if none runs."""
    return forkserver._forkserver._forkserver_pid  # private: multiprocessing does not say


def server_cpu_seconds():
    """CPU seconds of this process's server and of the processes it has reaped (0 when none runs: once
    stopped, they count among this process's children's)."""
    pid = server_pid()
    return 0.0 if pid is None else cpu_seconds(pid)


def stop_server():
    """Stop this process's server, if one runs, and wait for it: its CPU seconds and its processes' then
    count among this process's children's. The next Forked starts another."""
    forkserver._forkserver._stop()  # private, but the one way to end the server and reap it
