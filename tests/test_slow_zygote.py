"""
A zygote slow to fork (src/grading/zygote.py, runner.py): past the wait for
its reply the runner spawns the probe instead, while the zygote may still
fork the request it was sent. That late child must not live (the client
kills it, so no probe runs untracked) and must not share the spawned
probe's pipes (which hold one answer, the spawned probe's); the grader
closes its ends of the pipes it gave up on. The stand-in
zygote is the real one with os.fork slowed by a module it preloads, or, for a
late child that answers before it can be killed, a fake that answers itself.
"""

import gc
import os
import signal
import textwrap
import threading
import time

import pytest

from grading import runner
from grading.runner import ProbeRunner
from grading.zygote import ZygoteClient

FORK_DELAY_SECONDS = 0.5
GIVE_UP_SECONDS = 0.1

SLOW_FORK = textwrap.dedent(f'''
    import os, time
    fork = os.fork

    def slow_fork():
        time.sleep({FORK_DELAY_SECONDS})
        return fork()

    os.fork = slow_fork
''')

TESTS_FILE = textwrap.dedent('''
    import os, time
    from grading import probe

    @probe
    def answer(sub):
        return os.getpid()

    @probe
    def hang(sub):
        time.sleep(60)
''')


@pytest.fixture
def slow(tmp_path, monkeypatch):
    """A tests file, a package, a work folder, and PYTHONPATH leading to the slowing module."""
    (tmp_path / "slow_fork.py").write_text(SLOW_FORK)
    (tmp_path / "tests.py").write_text(TESTS_FILE)
    (tmp_path / "package").mkdir()
    (tmp_path / "package" / "__init__.py").write_text("")
    (tmp_path / "work").mkdir()
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(runner, "FORK_REPLY_SECONDS", GIVE_UP_SECONDS)
    return tmp_path


def killed_late(zygote, seconds=10):
    """Whether the zygote reports, within `seconds`, a child ended by SIGKILL."""
    with zygote.changed:
        return zygote.changed.wait_for(lambda: -signal.SIGKILL in zygote.exit_codes.values(), seconds)


def test_a_request_given_up_on_is_killed_when_the_zygote_forks_it_late(slow):
    sandbox = ProbeRunner(str(slow / "work"), "token", preload=["slow_fork"], fork=True)
    zygote = ZygoteClient(sandbox.environment(str(slow / "work")), str(slow / "work"), ["slow_fork"])
    try:
        assert zygote.wait_ready(60)
        pipes = os.pipe() + os.pipe()
        order = sandbox.order(dict(home=str(slow / "work")), dict(
            token="token", module=str(slow / "tests.py"), probe="hang", kwargs={},
            package_dir=str(slow / "package"), memory_bytes=1 << 30, file_bytes=1 << 20, processes=None))
        assert zygote.fork(order, [pipes[1], pipes[3]], GIVE_UP_SECONDS) is None
        assert killed_late(zygote) and zygote.pids == {}
    finally:
        zygote.close()
        for fd in pipes:
            os.close(fd)


def test_past_a_slow_fork_the_spawned_probe_answers_alone(slow):
    sandbox = ProbeRunner(str(slow / "work"), "token", preload=["slow_fork"], fork=True)
    try:
        found = sandbox.run(str(slow / "package"), str(slow / "tests.py"), "answer", {}, 30)
        assert (found.status, found.reason) == ("ok", "") and sandbox.fork is False
    finally:
        sandbox.close()


class LateZygote:
    """Stands in for ZygoteClient: never forks in time, and answers on the pipes it was sent a moment
    later, as a late child could before the client kills it."""

    def __init__(self, env, cwd, preload):
        pass

    def wait_ready(self, timeout):
        return True

    def fork(self, order, fds, timeout):
        output, result = (os.dup(fd) for fd in fds)

        def answer_late():
            time.sleep(0.3)
            try:
                os.write(result, (order["request"]["token"] + '\n{"ok": true, "value": "late"}').encode())
            except BrokenPipeError:  # nobody reads these pipes any more
                pass
            os.close(result)
            os.close(output)
        threading.Thread(target=answer_late, daemon=True).start()
        return None

    def close(self):
        pass


def test_a_late_answer_on_the_pipes_given_up_is_not_taken(slow, monkeypatch):
    monkeypatch.setattr(runner, "ZygoteClient", LateZygote)
    monkeypatch.setattr(runner, "CAN_FORK", True)
    sandbox = ProbeRunner(str(slow / "work"), "token", fork=True)
    try:
        found = sandbox.run(str(slow / "package"), str(slow / "tests.py"), "answer", {}, 30)
    finally:
        sandbox.close()
    assert (found.status, found.reason) == ("ok", "") and found.value != "late"


def open_descriptors():
    return sorted(int(fd) for fd in os.listdir("/proc/self/fd"))


def test_the_pipes_given_up_on_are_closed_in_the_grader(slow, monkeypatch):
    """Kills the grader's read ends of the pipes handed to a zygote too slow to fork left open: a
    descriptor leaked for every probe spawned past a slow fork."""
    monkeypatch.setattr(runner, "ZygoteClient", LateZygote)
    monkeypatch.setattr(runner, "CAN_FORK", True)
    gc.collect()  # what earlier tests left for the collector closes now, not during the run
    before = open_descriptors()
    sandbox = ProbeRunner(str(slow / "work"), "token", fork=True)
    try:
        assert sandbox.run(str(slow / "package"), str(slow / "tests.py"), "answer", {}, 30).status == "ok"
    finally:
        sandbox.close()
    deadline = time.monotonic() + 5  # the stand-in closes its own copies 0.3 s after the fork
    while set(open_descriptors()) - set(before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert set(open_descriptors()) - set(before) == set()
