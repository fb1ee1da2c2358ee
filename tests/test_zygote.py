"""
The zygote (src/grading/zygote.py) as the runner uses it, a real zygote
process forking probes of a small tests file: a forked probe leads a session
of its own, holds none of the zygote's descriptors, sends both its output
streams to its output pipe and dies with the zygote; the zygote closes its
copies of a probe's pipes and reports each child's exit, forks on when a
module it preloads cannot be imported, and ends by itself when the grading
process hangs up (or is killed when it does not). The client gives up its
waits when the zygote dies, and kills a late child with its process group.
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from grading.runner import ForkedProbe, ProbeRunner
from grading.zygote import kill_late_child
from processes import running

TESTS_FILE = textwrap.dedent('''
    import os, stat, sys, time
    from grading import probe

    def is_socket(fd):
        try:
            return stat.S_ISSOCK(os.fstat(fd).st_mode)
        except OSError:  # the descriptor that listed them, closed since
            return False

    @probe
    def inside(sub):
        print("to standard error", file=sys.stderr, flush=True)
        sockets = [fd for fd in map(int, os.listdir("/proc/self/fd")) if is_socket(fd)]
        return {"leads its session": os.getsid(0) == os.getpid(), "sockets": sockets}

    @probe
    def leave(sub):
        os._exit(4)

    @probe
    def hang(sub):
        time.sleep(60)
''')


@pytest.fixture
def forking(tmp_path):
    """A sandbox forking probes of TESTS_FILE from a zygote (warmed up) against an empty package."""
    (tmp_path / "tests.py").write_text(TESTS_FILE)
    (tmp_path / "package").mkdir()
    (tmp_path / "package" / "__init__.py").write_text("")
    (tmp_path / "work").mkdir()
    sandbox = ProbeRunner(str(tmp_path / "work"), os.urandom(8).hex(), fork=True)
    sandbox.warm_up()
    assert sandbox.forking_zygote() is not None
    yield sandbox
    sandbox.close()


def test_a_forked_probe_leads_its_session_without_the_zygotes_socket(forking, tmp_path):
    found = forking.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "inside", {}, 30)
    assert (found.status, found.value) == ("ok", {"leads its session": True, "sockets": []})
    assert found.output == "to standard error\n" and forking.forking_zygote() is not None


def descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_the_zygote_reports_each_exit_and_keeps_no_pipe(forking, tmp_path):
    zygote = forking.zygote.process.pid
    forking.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "leave", {}, 30)
    held = descriptors(zygote)
    found = forking.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "leave", {}, 30)
    assert found.reason == "the submission's process ended without answering (exit code 4)"
    assert descriptors(zygote) == held


def test_a_forked_probe_dies_with_the_zygote(forking, tmp_path):
    layout = forking.prepare(str(tmp_path / "package"))
    request = dict(token=forking.token, module=str(tmp_path / "tests.py"), probe="hang", kwargs={},
                   package_dir=layout["package"], memory_bytes=1 << 30, file_bytes=1 << 20, processes=None)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    probe = forking.start(forking.order(layout, request), output_write, result_write)
    assert isinstance(probe, ForkedProbe)
    os.kill(forking.zygote.process.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while running(probe.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    alive = running(probe.pid)
    forking.kill(probe.pid)
    os.close(output_read)
    os.close(result_read)
    assert not alive


def test_the_zygote_ends_by_itself_when_the_grading_process_hangs_up(forking):
    zygote = forking.zygote
    forking.close()
    assert zygote.process.returncode == 0  # not killed after waiting for it


def test_a_preload_that_cannot_be_imported_leaves_the_zygote_forking(tmp_path):
    """Kills a zygote that stops on a module it cannot preload (its probes would all be spawned)."""
    (tmp_path / "tests.py").write_text(TESTS_FILE)
    (tmp_path / "package").mkdir()
    (tmp_path / "package" / "__init__.py").write_text("")
    (tmp_path / "work").mkdir()
    sandbox = ProbeRunner(str(tmp_path / "work"), os.urandom(8).hex(), preload=["no_such_module_here"], fork=True)
    try:
        sandbox.warm_up()
        assert sandbox.forking_zygote() is not None
        found = sandbox.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "inside", {}, 30)
        assert found.status == "ok" and sandbox.forking_zygote() is not None
    finally:
        sandbox.close()


def test_a_late_child_is_killed_with_its_process_group():
    """Kills a late child killed alone, leaving what it started in its session."""
    leader = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                               "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                               "print(child.pid, flush=True); time.sleep(60)"], start_new_session=True,
                              stdout=subprocess.PIPE)
    started = int(leader.stdout.readline())
    kill_late_child(leader.pid)
    leader.wait(10)
    deadline = time.monotonic() + 10
    while running(started) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert leader.returncode == -signal.SIGKILL and not running(started)
    kill_late_child(leader.pid)  # gone already: nothing to kill, nothing raised


def test_closing_kills_a_zygote_that_does_not_leave(forking, monkeypatch):
    """Kills a close that waits forever on a zygote that does not see the hang-up (here: stopped)."""
    zygote = forking.zygote
    os.kill(zygote.process.pid, signal.SIGSTOP)
    waited = zygote.process.wait

    def impatient(timeout=None):
        if timeout is not None:
            raise subprocess.TimeoutExpired(zygote.process.args, timeout)
        return waited()
    monkeypatch.setattr(zygote.process, "wait", impatient)
    closing = threading.Thread(target=forking.close, daemon=True)
    closing.start()
    closing.join(10)
    alive = closing.is_alive()
    if alive:
        os.kill(zygote.process.pid, signal.SIGKILL)
    assert not alive and zygote.process.returncode == -signal.SIGKILL


def test_waits_on_a_zygote_end_when_it_dies(forking):
    """Kills a fork request or an exit code that waits its whole time for a zygote that has died: both
    give up as soon as the zygote hangs up."""
    zygote = forking.zygote
    os.kill(zygote.process.pid, signal.SIGSTOP)  # it takes the request, and never answers
    threading.Timer(0.2, os.kill, (zygote.process.pid, signal.SIGKILL)).start()
    pipes = [os.pipe(), os.pipe()]
    started = time.monotonic()
    try:
        assert zygote.fork({"home": "/"}, [pipes[0][1], pipes[1][1]], 20) is None
        assert zygote.exit_code(os.getpid(), wait=20) is None
    finally:
        for read, write in pipes:
            os.close(read)
            os.close(write)
    assert time.monotonic() - started < 10 and not zygote.alive
