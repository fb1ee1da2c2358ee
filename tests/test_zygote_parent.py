"""
The zygote parent (src/grading/zygote_parent.py), which the test run's
grading runs fork their zygotes from (tests/zygote_parents.py): a probe of
a zygote it forked sees the process a probe of a new zygote sees, but for
`random`'s seed; it refuses a run whose zygote would differ, and the run
starts its own; grader.py's runs are forked from it; a zygote it forked
ends with its run and is reaped; its CPU is counted.
"""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from grading.runner import ProbeRunner
from grading.zygote import ZygoteClient
from grading.forked_zygote import PARENT_ENV, ForkedZygote, fork_zygote
from grader_fixtures import ROOT, run_grader
from zygote_parents import PRELOAD, parent_cpu_seconds, run_with_a_parent, start_parent

TESTS_FILE = textwrap.dedent('''
    import os, random, sys, tempfile
    import torch
    from grading import probe

    @probe
    def view(sub):
        mask = os.umask(0)
        return {"env": dict(os.environ), "cwd": os.getcwd(), "path": sys.path, "flags": list(sys.flags),
                "umask": mask, "tempdir": tempfile.gettempdir(), "modules": sorted(sys.modules),
                "threads": torch.get_num_threads(), "zygote leads its session": os.getsid(os.getppid()) == os.getppid(),
                "random": random.random(), "argv": sys.argv, "descriptors": sorted(os.listdir("/proc/self/fd"))}
''')


def wait_listening(address):
    """Wait until the parent named by the socket path `address` listens (it has imported its modules)."""
    deadline = time.monotonic() + 60
    while not os.path.exists(address):
        assert time.monotonic() < deadline, Path(address).with_name("parent.log").read_text()
        time.sleep(0.05)


@pytest.fixture(scope="module")
def parent_folder(tmp_path_factory):
    """The folder of a zygote parent of grader.py's modules of this file's own."""
    folder = tmp_path_factory.mktemp("parent")
    folder.chmod(0o700)
    process = start_parent(folder)
    wait_listening(folder / "parent.sock")
    yield folder
    process.kill()
    process.wait()


@pytest.fixture
def parent(parent_folder, monkeypatch):
    """That parent named in the environment; yields a function giving the lines of its log written since."""
    monkeypatch.setenv(PARENT_ENV, str(parent_folder / "parent.sock"))
    log = parent_folder / "parent.log"
    start = log.stat().st_size
    yield lambda: log.read_bytes()[start:].decode().splitlines()


def viewed(tmp_path, name):
    """What a probe of a zygote of grader.py's modules sees, and the kind of the zygote's process."""
    work = tmp_path / name
    (work / "package").mkdir(parents=True)
    (work / "package" / "__init__.py").write_text("")
    (work / "tests.py").write_text(TESTS_FILE)
    (work / "root").mkdir()
    runner = ProbeRunner(str(work / "root"), "t0ken", preload=PRELOAD, fork=True)
    try:
        runner.warm_up()
        found = runner.run(str(work / "package"), str(work / "tests.py"), "view", {}, 60)
        kind = type(runner.zygote.process)
        held = sorted(os.listdir(f"/proc/{runner.zygote.process.pid}/fd"))  # the zygote's, not the probe's
    finally:
        runner.close()
    assert found.status == "ok", found
    view = dict(found.value, zygote_descriptors=held)
    home = view["env"].pop("HOME")
    assert home.startswith(str(work / "root")) and view["env"].pop("TMPDIR") == home, view["env"]
    view["tempdir"] = view["tempdir"] == home
    view["path"] = [entry.replace(home, "HOME") for entry in view["path"]]
    view["cwd"] = view["cwd"].replace(home, "HOME")
    return view, kind


def test_a_probe_of_a_forked_zygote_sees_what_one_of_a_new_zygote_sees_but_the_random_seed(
        tmp_path, parent, monkeypatch):
    """Kills a forked zygote that keeps the parent's environment, listening socket, umask, temporary
    folder, module or sys.argv, or stays in the parent's session; and a parent that is not used."""
    os.umask(0o027)
    try:
        first, first_kind = viewed(tmp_path, "first")
        second, second_kind = viewed(tmp_path, "second")
        monkeypatch.delenv(PARENT_ENV)
        new, new_kind = viewed(tmp_path, "new")
    finally:
        os.umask(0o022)
    assert (first_kind, second_kind, new_kind) == (ForkedZygote, ForkedZygote, subprocess.Popen)
    assert first["random"] != second["random"]
    for view in (first, second, new):
        view.pop("random")
    assert first == second == new
    assert new["umask"] == 0o027 and new["tempdir"] is True and new["zygote leads its session"]
    assert PARENT_ENV not in first["env"]


def test_a_zygote_that_would_differ_is_refused_and_the_run_starts_its_own(tmp_path, parent, monkeypatch):
    """Kills a parent that forks whatever the environment or the modules asked for."""
    monkeypatch.setenv("A_SETTING_OF_THIS_RUN", "1")
    view, kind = viewed(tmp_path, "other environment")
    assert kind is not ForkedZygote and view["env"]["A_SETTING_OF_THIS_RUN"] == "1"
    monkeypatch.delenv("A_SETTING_OF_THIS_RUN")
    assert fork_zygote(0, dict(os.environ), str(tmp_path), ("torch",)) is None
    assert parent() == ["refused: another environment (A_SETTING_OF_THIS_RUN)", "refused: another preload"]


def test_without_a_parent_listening_the_zygote_is_a_new_interpreter(tmp_path, monkeypatch):
    monkeypatch.setenv(PARENT_ENV, str(tmp_path / "nobody.sock"))
    assert fork_zygote(0, dict(os.environ), str(tmp_path), PRELOAD) is None
    client = ZygoteClient(ProbeRunner(str(tmp_path), "").environment(str(tmp_path)), str(tmp_path), [])
    try:
        assert client.wait_ready(60) and client.process.args[0] == sys.executable
    finally:
        client.close()


def test_grader_pys_runs_fork_their_zygotes_from_the_parent(parent):
    """Kills a parent that grader.py's runs never use (another preload, an environment that differs)."""
    done = run_grader("--submission", ROOT / "src" / "submission", "1e-0-basic")
    assert done.returncode == 0, done.stderr
    log = parent()
    assert len(log) == 1 and log[0].startswith("forked zygote "), log


def test_a_forked_zygote_ends_with_its_run_and_is_reaped(tmp_path, parent):
    """Kills a zygote left running after its run hangs up, or left a zombie of the parent."""
    client = ZygoteClient(ProbeRunner(str(tmp_path), "").environment(str(tmp_path)), str(tmp_path), PRELOAD)
    assert isinstance(client.process, ForkedZygote) and client.wait_ready(60)
    pid = client.process.pid
    with pytest.raises(subprocess.TimeoutExpired):
        client.process.wait(timeout=0.1)
    client.close()
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")  # ended, and reaped by the parent


def test_the_parents_cpu_is_counted_while_it_runs_and_none_once_it_is_stopped(tmp_path, monkeypatch):
    """Kills parent_cpu_seconds reading other fields of /proc (or none), or counting a stopped parent."""
    (tmp_path / "burn.py").write_text("import time\nstart = time.process_time()\n"
                                      "while time.process_time() - start < 0.5:\n    pass\n")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    before, named = parent_cpu_seconds(), os.environ.get(PARENT_ENV)
    stop = run_with_a_parent(preload=("burn",))
    try:
        wait_listening(os.environ[PARENT_ENV])
        assert parent_cpu_seconds() >= 0.5
    finally:
        stop()
    assert parent_cpu_seconds() - before < 0.1 and os.environ.get(PARENT_ENV) == named
