"""
The zygote (src/grading/zygote.py) as the runner uses it, a real zygote
process forking probes of a small tests file: a forked probe leads a session
of its own, holds none of the zygote's descriptors, sends both its output
streams to its output pipe and dies with the zygote; the zygote closes its
copies of a probe's pipes and reports each child's exit, and it ends by
itself when the grading process hangs up.
"""

import os
import signal
import textwrap
import time

import pytest

from grading.runner import ForkedProbe, ProbeRunner
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
