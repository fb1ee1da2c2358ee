"""
The forked processes of tests/forked_runs.py, which tests/test_resume.py
and tests/test_seeds.py start instead of new interpreters: a process has
the environment it was given, a run exits with run.py's status and writes
its output to its log, a launcher gives each worker torchrun's variables
and fails when one of them fails, the others killed, and the server's CPU
seconds are counted.
"""

import json
import os
import resource
import signal
import sys
import time

from forked_runs import Forked, finished_run, launch, server_cpu_seconds, stop_server
from processes import running


def write_environment(folder):
    """In a forked process: its environment, to folder/RANK.json (RANK 0 where unset)."""
    path = os.path.join(folder, f"{os.environ.get('RANK', '0')}.json")
    with open(path, "w") as f:
        json.dump(dict(os.environ), f)


def write_pid_and_sleep(folder):
    """In a forked worker: its pid to folder/RANK.pid, then a sleep of two minutes."""
    with open(os.path.join(folder, f"{os.environ['RANK']}.pid"), "w") as f:
        f.write(str(os.getpid()))
    time.sleep(120)


def fail_at_rank_one(folder):
    """In a forked worker: rank 1 exits 3 at once; the others write_pid_and_sleep."""
    if os.environ["RANK"] == "1":
        sys.exit(3)
    write_pid_and_sleep(folder)


def burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass


def pid_written(path, timeout=30):
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return int(path.read_text())


def test_a_forked_process_has_the_environment_it_was_given_and_exits_with_its_status(tmp_path):
    assert Forked(write_environment, str(tmp_path), env={"ONLY": "this"}).wait(60) == 0
    assert json.loads((tmp_path / "0.json").read_text()) == {"ONLY": "this"}
    assert Forked(sys.exit, 4).wait(60) == 4


def test_a_run_exits_with_run_pys_status_and_its_output_goes_to_its_log(tmp_path):
    status, output = finished_run(["--no_such_option"], dict(os.environ), tmp_path / "run.log")
    assert status == 2 and "usage: run.py" in output and "--no_such_option" in output
    questions = tmp_path / "missing.tsv"
    status, output = finished_run(["--function", "evaluate", "--variant", "vanilla", "--eval_corpus_path",
                                   str(questions), "--reading_params_path", str(tmp_path / "missing.params"),
                                   "--outputs_path", str(tmp_path / "out.txt"), "--small", "--device", "cpu"],
                                  dict(os.environ), tmp_path / "bad.log")
    assert status == 1 and output.count("run.py: error") == 1, output
    assert not (tmp_path / "out.txt").exists()


def test_a_launcher_gives_each_worker_torchruns_variables(tmp_path):
    assert Forked(launch, 3, write_environment, str(tmp_path), env=dict(os.environ, OMP_NUM_THREADS="1")).wait(60) == 0
    workers = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(3)]
    for rank, env in enumerate(workers):
        assert (env["RANK"], env["LOCAL_RANK"]) == (str(rank), str(rank))
        assert (env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"]) == ("3", "3")
        assert env["MASTER_ADDR"] == "127.0.0.1" and env["OMP_NUM_THREADS"] == "1"
    assert len({env["MASTER_PORT"] for env in workers}) == 1 and int(workers[0]["MASTER_PORT"]) > 0


def test_a_launcher_whose_worker_fails_kills_the_others_and_fails(tmp_path):
    launcher = Forked(launch, 3, fail_at_rank_one, str(tmp_path))
    others = [pid_written(tmp_path / f"{rank}.pid") for rank in (0, 2)]
    assert launcher.wait(60) == 1
    assert not any(running(pid) for pid in others)


def test_kill_ends_a_launcher_and_its_workers(tmp_path):
    launcher = Forked(launch, 3, write_pid_and_sleep, str(tmp_path))
    others = [pid_written(tmp_path / f"{rank}.pid") for rank in range(3)]
    launcher.kill()
    assert launcher.wait(60) == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while any(running(pid) for pid in others):
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_the_servers_cpu_is_counted_while_it_runs_and_among_the_children_once_stopped():
    assert Forked(burn, 0.5).wait(60) == 0
    assert server_cpu_seconds() >= 0.5
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    stop_server()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert server_cpu_seconds() == 0
    assert after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime >= 0.5
