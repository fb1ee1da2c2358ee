"""
The runner, the grading process's side of a probe (grading/runner.py): the
result channel and its run token, the time limit, the output cap and the
other default limits (the threat model's), the folders a probe gets,
forking from the zygote or spawning, ending and sweeping. The probes it
starts run small tests files made here.
"""

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import types
from pathlib import Path

import pytest

from grading import runner
from grading.runner import CappedBuffer, Limits, ProbeOutcome, ProbeRunner

from grading_helpers import write


# ---- the runner: the grading process's side of a probe -----------------------------------------

def test_a_capped_buffer_keeps_the_start_and_counts_the_rest():
    buffer = CappedBuffer(5)
    buffer.add(b"abc")
    buffer.add(b"def\xc3")
    assert bytes(buffer.data) == b"abcde" and buffer.dropped == 2
    assert buffer.text() == "abcde\n[2 more bytes of output dropped]"
    whole = CappedBuffer(4)
    whole.add(b"ab\xc3\xa9")
    assert whole.text() == "abé" and whole.dropped == 0
    buffer.add(b"gh")
    assert bytes(buffer.data) == b"abcde" and buffer.dropped == 4
    broken = CappedBuffer(9)
    broken.add(b"ok\xff")
    assert broken.text() == "ok\ufffd"


def runner_for(tmp_path, **kwargs):
    return ProbeRunner(str(tmp_path), "t0ken", fork=False, **kwargs)


def outcome(probes, raw, returncode=0, timed_out=False, dropped=0):
    buffer = CappedBuffer(1 << 10)
    buffer.add(raw)
    buffer.dropped = dropped
    return probes.outcome(returncode, timed_out, buffer, "printed", 1.6)


def test_only_an_answer_with_this_runs_token_is_taken(tmp_path):
    probes = runner_for(tmp_path)
    assert outcome(probes, b't0ken\n{"ok": true, "value": [1]}') == ProbeOutcome("ok", [1], "", "printed", 1.6)
    tampered = ProbeOutcome("error", None, "the result channel was tampered with", "printed", 1.6)
    for raw in (b'other\n{"ok": true, "value": 1}', b't0ken{"ok": true, "value": 1}', b'\nt0ken\n{"ok": true}',
                b't0ken\n{"ok": tru', b't0ken\n{"value": 1}', b't0ken\n[1]', b't0ken\n\xff'):
        assert outcome(probes, raw) == tampered, raw
    assert outcome(probes, b't0ken\n{"ok": true, "value": 1}', dropped=1) == tampered
    assert outcome(probes, b't0ken\n{"ok": true,\n "value": 2}\n').value == 2


def test_a_failed_answer_says_where_it_failed(tmp_path):
    probes = runner_for(tmp_path)
    for stage, words in (("import", "the submission failed to import"), ("probe", "the submission raised an error"),
                         ("grader", "the grader failed"), (None, "the grader failed")):
        message = {"ok": False, "stage": stage, "error": "Traceback"}
        found = outcome(probes, b"t0ken\n" + json.dumps(message).encode())
        assert found == ProbeOutcome("error", None, f"{words}:\nTraceback", "printed", 1.6)
    assert outcome(probes, b't0ken\n{"ok": 1, "value": 1}').reason == "the grader failed:\n"
    assert outcome(probes, b't0ken\n{"ok": true}').reason == "the grader failed:\n"


def test_no_answer_is_an_error_and_lateness_a_timeout(tmp_path):
    probes = runner_for(tmp_path)
    assert outcome(probes, b"", returncode=3) == ProbeOutcome(
        "error", None, "the submission's process ended without answering (exit code 3)", "printed", 1.6)
    late = outcome(probes, b't0ken\n{"ok": true, "value": 1}', timed_out=True)
    assert late == ProbeOutcome("timeout", None, "the submission did not finish within the time limit "
                                                 "(stopped after 2 s)", "printed", 1.6)


def test_exit_statuses_in_words():
    assert runner.describe_exit(None) == "exit status unknown"
    assert runner.describe_exit(0) == "exit code 0" and runner.describe_exit(2) == "exit code 2"
    assert runner.describe_exit(-9) == "killed by SIGKILL" and runner.describe_exit(-1) == "killed by SIGHUP"
    assert runner.describe_exit(-99) == "killed by signal 99"


def test_the_probe_environment_hides_the_bundle_and_pins_threads(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_DIR", "/bundle")
    monkeypatch.setenv("PYTHONPATH", "/extra")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    for name in ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"):
        monkeypatch.delenv(name, raising=False)
    env = runner_for(tmp_path, hidden_env=("SECRET_DIR",)).environment("/home/probe")
    grading_root = os.path.dirname(os.path.dirname(runner.__file__))
    assert "SECRET_DIR" not in env and env["PYTHONPATH"] == f"{grading_root}{os.pathsep}/extra"
    assert (env["HOME"], env["TMPDIR"], env["PYTHONDONTWRITEBYTECODE"], env["PYTHONUNBUFFERED"]) == \
        ("/home/probe", "/home/probe", "1", "1")
    assert (env["OMP_NUM_THREADS"], env["MKL_NUM_THREADS"], env["OPENBLAS_NUM_THREADS"]) == ("3", "1", "1")
    monkeypatch.delenv("PYTHONPATH")
    monkeypatch.delenv("OMP_NUM_THREADS")
    bare = runner_for(tmp_path).environment("/h")
    assert bare["PYTHONPATH"] == grading_root and bare["OMP_NUM_THREADS"] == "1"


def test_each_probe_gets_a_fresh_copy_without_outputs(tmp_path):
    package = tmp_path / "package"
    for name in ("__init__.py", "model.py", "m.params", "a.predictions", "__pycache__/x.pyc"):
        write(package / name, "x")
    (tmp_path / "work").mkdir()
    probes = ProbeRunner(str(tmp_path / "work"), "t", fork=False)
    layout = probes.prepare(str(package))
    assert layout["home"] == layout["top"] and layout["package"] == os.path.join(layout["top"], "submission")
    assert os.path.dirname(layout["top"]) == str(tmp_path / "work")
    assert os.path.basename(layout["top"]).startswith("probe-")
    assert sorted(os.listdir(layout["package"])) == ["__init__.py", "model.py"]
    assert probes.prepare(str(package))["top"] != layout["top"]
    assert probes.order(layout, {"r": 1}) == {"home": layout["home"], "request": {"r": 1}}


def package_with_a_link(tmp_path):
    """A package with a private subpackage, outputs, and a link to a file outside it."""
    package = tmp_path / "package"
    write(package / "sub" / "__init__.py", "x")
    write(tmp_path / "outside.py", "SECRET = 1\n")
    os.symlink(tmp_path / "outside.py", package / "link.py")
    write(package / "m.params", "p")
    os.chmod(package / "sub", 0o700)
    os.chmod(package / "sub" / "__init__.py", 0o600)
    return package


def test_the_copy_holds_files_for_links(tmp_path):
    package = package_with_a_link(tmp_path)
    (tmp_path / "work").mkdir()
    layout = ProbeRunner(str(tmp_path / "work"), "t", fork=False).prepare(str(package))
    copied = os.path.join(layout["package"], "link.py")
    assert not os.path.islink(copied) and open(copied).read() == "SECRET = 1\n"


def test_a_probe_for_another_user_is_prepared_for_the_handover(tmp_path):
    package = package_with_a_link(tmp_path)
    (tmp_path / "work").mkdir()
    user = types.SimpleNamespace(pw_uid=4321, pw_gid=8765)
    probes = ProbeRunner(str(tmp_path / "work"), "t", Limits(disk_bytes=77), user=user, fork=False)
    layout = probes.prepare(str(package))
    top = layout["top"]
    assert layout == dict(top=top, home=os.path.join(top, "home"), package=os.path.join(top, "submission"),
                          copy=os.path.join(top, "private", "submission"))
    mode = lambda path: os.stat(path).st_mode & 0o777  # noqa: E731
    assert mode(top) == 0o755 and mode(os.path.join(top, "private")) == 0o700
    assert mode(layout["home"]) == mode(layout["package"]) == 0o755 and os.listdir(layout["package"]) == []
    assert mode(os.path.join(layout["copy"], "sub")) == 0o755
    assert mode(os.path.join(layout["copy"], "sub", "__init__.py")) == 0o644
    assert sorted(os.listdir(layout["copy"])) == ["sub"]
    assert probes.order(layout, {}) == dict(home=layout["home"], request={}, package=layout["package"],
                                             copy=layout["copy"], disk_bytes=77, uid=4321, gid=8765)


class Exited:
    """A probe process that has ended (poll answers `code`)."""

    def __init__(self, code=0, pid=None):
        self.code, self.pid = code, pid

    def poll(self):
        return self.code


def test_collect_reads_both_pipes_until_they_close(tmp_path):
    probes = runner_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    os.write(output_write, b"printed")
    os.write(result_write, b"answer")
    os.close(output_write)
    os.close(result_write)
    output, answer = CappedBuffer(100), CappedBuffer(100)
    timed_out = probes.collect(Exited(None), output_read, result_read, output, answer, time.monotonic() + 5)
    assert timed_out is False and output.text() == "printed" and answer.text() == "answer"
    with pytest.raises(OSError):
        os.close(output_read)


def test_collect_times_out_only_without_an_answer(tmp_path):
    probes = runner_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    started = time.monotonic()
    assert probes.collect(Exited(None), output_read, result_read, CappedBuffer(9), CappedBuffer(9), started + 0.3)
    assert 0.3 <= time.monotonic() - started < 2
    output_read, output_write2 = os.pipe()
    result_read, result_write2 = os.pipe()
    os.close(result_write2)
    assert not probes.collect(Exited(None), output_read, result_read, CappedBuffer(9), CappedBuffer(9),
                               time.monotonic() + 0.3)
    for fd in (output_write, result_write, output_write2):
        os.close(fd)


def test_collect_times_out_when_only_the_output_closed(tmp_path):
    """Kills the output pipe's end taken for the answer's: a probe that closes its standard output and
    error but never answers, while still running, times out."""
    probes = runner_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    os.close(output_write)
    assert probes.collect(Exited(None), output_read, result_read, CappedBuffer(9), CappedBuffer(9),
                          time.monotonic() + 0.3) is True
    os.close(result_write)


def test_collect_stops_soon_after_the_process_is_gone(tmp_path):
    probes = runner_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    started = time.monotonic()
    assert probes.collect(Exited(0), output_read, result_read, CappedBuffer(9), CappedBuffer(9), started + 5) is False
    assert runner.EXIT_GRACE_SECONDS <= time.monotonic() - started < runner.EXIT_GRACE_SECONDS + 0.55
    with pytest.raises(OSError):
        os.close(result_read)
    for fd in (output_write, result_write):
        os.close(fd)


TESTS_FILE = textwrap.dedent('''
    import os, sys, time
    from grading import probe

    @probe
    def answer(sub, x):
        print("hello from the probe", flush=True)
        print("and its errors", file=sys.stderr, flush=True)
        return {"x": x, "package": sub.NAME, "cwd": os.getcwd(), "home": os.environ["HOME"],
                "leads_its_session": os.getsid(0) == os.getpid()}

    @probe
    def hang(sub):
        time.sleep(60)

    @probe
    def forge(sub):
        for fd in range(3, 64):
            try:
                os.write(fd, b"wrong\\n" + b'{"ok": true, "value": "forged"}')
            except OSError:
                pass
        os._exit(0)

    @probe
    def leave(sub):
        os._exit(4)
''')


@pytest.fixture
def spawning(tmp_path):
    """
    A sandbox that spawns probes of a small tests file against a one-line
    package. The probe processes do not see MUTANT_UNDER_TEST: under `./run.sh
    mutate` they run the grading package's original code (mutmut's bookkeeping
    fails outside its folder), so what is judged is what the grading process does.
    """
    write(tmp_path / "tests.py", TESTS_FILE)
    write(tmp_path / "package" / "__init__.py", "NAME = 'pkg'\n")
    (tmp_path / "work").mkdir()
    probes = ProbeRunner(str(tmp_path / "work"), secrets_token(),
                      hidden_env=("MUTANT_UNDER_TEST",), fork=False)
    yield probes
    probes.close()


def secrets_token():
    return os.urandom(8).hex()


def test_a_spawned_probe_answers_and_is_cleaned_up(spawning, tmp_path):
    found = spawning.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "answer", {"x": 3}, 30)
    assert found.status == "ok" and found.output == "hello from the probe\nand its errors\n"
    assert found.value["x"] == 3 and found.value["package"] == "pkg" and found.value["leads_its_session"]
    assert found.value["cwd"] == found.value["home"] and found.value["home"].startswith(str(tmp_path / "work"))
    assert os.listdir(tmp_path / "work") == [] and spawning.live_groups == set()


def test_a_forged_answer_or_a_silent_exit_is_an_error(spawning, tmp_path):
    forged = spawning.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "forge", {}, 30)
    assert (forged.status, forged.reason) == ("error", "the result channel was tampered with")
    left = spawning.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "leave", {}, 30)
    assert (left.status, left.reason) == ("error", "the submission's process ended without answering (exit code 4)")


def test_a_hanging_probe_is_stopped_at_its_time_limit(spawning, tmp_path):
    started = time.monotonic()
    found = spawning.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "hang", {}, 1.5)
    assert found.status == "timeout" and 1.5 <= time.monotonic() - started < 5
    assert found.reason == "the submission did not finish within the time limit (stopped after 2 s)"


def test_end_stops_a_process_and_its_group(tmp_path):
    probes = runner_for(tmp_path)
    process = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                                "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                                "print(child.pid, flush=True); time.sleep(60)"], start_new_session=True,
                               stdout=subprocess.PIPE)
    child = int(process.stdout.readline())
    probe = runner.SpawnedProbe(process)
    probes.live_groups.add(process.pid)
    started = time.monotonic()
    probes.end(probe)
    assert probe.finish() == -signal.SIGTERM and time.monotonic() - started < runner.TERM_GRACE_SECONDS + 1
    assert probes.live_groups == set() and gone_or_zombie(child)
    process.stdout.close()


def gone_or_zombie(pid, seconds=2.0):
    """Whether process `pid` ends (or is left unreaped) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rpartition(")")[2].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.01)
    return False


def test_kill_all_kills_every_live_group(tmp_path):
    probes = runner_for(tmp_path)
    processes = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
                 for _ in range(2)]
    probes.live_groups.update(p.pid for p in processes)
    probes.kill_all()
    assert [p.wait(5) for p in processes] == [-signal.SIGKILL] * 2 and probes.live_groups == set()


def test_processes_of_lists_a_users_processes_with_their_sessions():
    found = dict(runner.processes_of(os.getuid()))
    assert found[os.getpid()] == os.getsid(0)
    assert runner.processes_of(2 ** 31 - 7) == []


@pytest.fixture
def open_folder():
    """A folder in /tmp that every user may enter (pytest's own are its owner's only)."""
    folder = tempfile.mkdtemp(prefix="readable-")
    os.chmod(folder, 0o755)
    yield Path(folder)
    shutil.rmtree(folder)


def test_readable_by_follows_the_permission_bits(open_folder):
    me = pwd.getpwuid(os.getuid())
    other = types.SimpleNamespace(pw_uid=2 ** 31 - 7, pw_gid=2 ** 31 - 7)
    group = types.SimpleNamespace(pw_uid=2 ** 31 - 7, pw_gid=os.stat(open_folder).st_gid)
    folder = open_folder / "f"
    path = write(folder / "x.py", "x")
    for mode, readers in ((0o400, [me]), (0o440, [me, group]), (0o404, [me, other]), (0o040, [group]),
                          (0o004, [other])):
        os.chmod(path, mode)
        assert [readable_by for readable_by in (me, group, other) if runner.readable_by(readable_by, path)] == readers
    os.chmod(path, 0o444)
    os.chmod(folder, 0o700)
    assert runner.readable_by(me, path) and not runner.readable_by(other, path)
    os.chmod(folder, 0o754)
    assert not runner.readable_by(other, path) and runner.readable_by(group, path)
    assert runner.readable_by(other, folder) is False
    os.chmod(folder, 0o751)
    assert runner.readable_by(other, path) and not runner.readable_by(other, folder)
    os.chmod(folder, 0o755)
    assert runner.readable_by(other, folder)

# ---- the runner: forking from the zygote, the request, ending and sweeping -----------------------

class FakeZygote:
    """Stands in for ZygoteClient: records how it was started and asked; forks a sleeper, or nothing."""

    made = []
    forks = True

    def __init__(self, env, cwd, preload):
        self.env, self.cwd, self.preload, self.asked = env, cwd, preload, []
        FakeZygote.made.append(self)

    def wait_ready(self, timeout):
        self.asked.append(("ready", timeout))
        return True

    def close(self):
        self.asked.append(("close",))

    def fork(self, order, fds, timeout):
        self.asked.append(("fork", order, [os.fstat(fd).st_mode for fd in fds], timeout))
        if not self.forks:
            return None
        self.child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
        return self.child.pid

    def exit_code(self, pid, wait=None):
        self.asked.append(("exit_code", pid, wait))
        return 5


@pytest.fixture
def zygotes(monkeypatch):
    monkeypatch.setattr(runner, "ZygoteClient", FakeZygote)
    monkeypatch.setattr(runner, "CAN_FORK", True)
    FakeZygote.made = []
    return FakeZygote.made


def test_the_zygote_is_started_once_with_the_preloads(tmp_path, zygotes):
    probes = ProbeRunner(str(tmp_path), "t", preload=("torch",), fork=True)
    assert probes.forking_zygote() is None
    assert 0 <= probes.warm_up() < 1 and 0 <= probes.warm_up() < 1
    zygote, = zygotes
    assert (zygote.env, zygote.cwd, zygote.preload) == (probes.environment(str(tmp_path)), str(tmp_path), ["torch"])
    assert zygote.asked == [("ready", runner.ZYGOTE_READY_SECONDS)] and probes.forking_zygote() is zygote
    probes.close()


def test_a_zygote_that_never_gets_ready_means_spawning(tmp_path, zygotes, monkeypatch):
    monkeypatch.setattr(FakeZygote, "wait_ready", lambda self, timeout: False)
    probes = ProbeRunner(str(tmp_path), "t", fork=True)
    probes.warm_up()
    assert probes.forking_zygote() is None and probes.fork is False
    ProbeRunner(str(tmp_path), "t", fork=False).warm_up()
    monkeypatch.setattr(runner, "CAN_FORK", False)
    ProbeRunner(str(tmp_path), "t", fork=True).warm_up()
    assert len(zygotes) == 1


def test_a_forked_probe_is_the_zygotes_child(tmp_path, zygotes):
    probes = ProbeRunner(str(tmp_path), "t", fork=True)
    probes.warm_up()
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    probe = probes.start({"home": "/h"}, output_write, result_write)
    zygote = zygotes[0]
    assert isinstance(probe, runner.ForkedProbe) and probe.zygote is zygote and probe.pid == zygote.child.pid
    _, order, modes, timeout = zygote.asked[1]
    assert order == {"home": "/h"} and len(modes) == 2 and timeout == runner.FORK_REPLY_SECONDS
    for fd in (output_write, result_write):
        with pytest.raises(OSError):
            os.fstat(fd)
    assert probe.poll() == 5 and probe.finish() == 5
    assert zygote.asked[-2:] == [("exit_code", probe.pid, None), ("exit_code", probe.pid, 2.0)]
    probes.end(runner.SpawnedProbe(zygote.child))
    os.close(output_read)
    os.close(result_read)


def test_when_the_zygote_cannot_fork_probes_are_spawned(tmp_path, zygotes, spawning, monkeypatch):
    monkeypatch.setattr(FakeZygote, "forks", False)
    spawning.fork = True
    found = spawning.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "answer", {"x": 1}, 30)
    assert found.status == "ok" and spawning.fork is False and len(zygotes) == 1
    assert [asked[0] for asked in zygotes[0].asked] == ["ready", "fork"]


def test_the_probe_request_holds_the_limits_and_a_process_cap_only_for_another_user(tmp_path, monkeypatch):
    write(tmp_path / "package" / "__init__.py", "")
    (tmp_path / "work").mkdir()
    orders = []

    def answers(self, order, output_write, result_write):
        """Start a sleeper for the probe, answer for it, and take its folder away (as a cleaner might)."""
        orders.append(order)
        os.write(result_write, (self.token + '\n{"ok": true, "value": 7}').encode())
        os.close(result_write)
        os.close(output_write)
        shutil.rmtree(os.path.dirname(order["home"]) if self.user else order["home"])
        return runner.SpawnedProbe(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                                    start_new_session=True))
    monkeypatch.setattr(ProbeRunner, "start", answers)
    monkeypatch.setattr(runner.sandbox, "namespaces_work", lambda: True)
    limits = Limits(memory_bytes=1, file_bytes=2, processes=3)
    for user, processes in ((None, None), (types.SimpleNamespace(pw_uid=2 ** 31 - 7, pw_gid=2 ** 31 - 7), 3)):
        probes = ProbeRunner(str(tmp_path / "work"), "tok", limits, user=user, fork=False)
        assert probes.run(str(tmp_path / "package"), str(tmp_path / "t.py"), "observe", {"k": 1}, 30).value == 7
        request = orders[-1]["request"]
        assert request == dict(token="tok", module=str(tmp_path / "t.py"), probe="observe", kwargs={"k": 1},
                               package_dir=request["package_dir"], memory_bytes=1, file_bytes=2, processes=processes)
        assert request["package_dir"].endswith("submission")
    assert os.listdir(tmp_path / "work") == []


def test_sweeping_is_for_another_user_without_namespaces(tmp_path, monkeypatch):
    user = types.SimpleNamespace(pw_uid=2 ** 31 - 7, pw_gid=2 ** 31 - 7)
    for works in (True, False):
        monkeypatch.setattr(runner.sandbox, "namespaces_work", lambda: works)
        assert ProbeRunner(str(tmp_path), "t", user=user).sweeping is not works
        assert ProbeRunner(str(tmp_path), "t").sweeping is False


def sleepers(count):
    return [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
            for _ in range(count)]


def test_the_sweep_kills_the_users_processes_outside_live_probes(tmp_path, monkeypatch):
    user = types.SimpleNamespace(pw_uid=4242, pw_gid=4242)
    monkeypatch.setattr(runner.sandbox, "namespaces_work", lambda: False)
    live, stray = sleepers(2)
    asked = []

    def of_user(uid):
        asked.append(uid)
        return [(p.pid, p.pid) for p in (live, stray) if p.poll() is None]
    monkeypatch.setattr(runner, "processes_of", of_user)
    probes = ProbeRunner(str(tmp_path), "t", user=user)
    probes.live_groups.add(live.pid)
    started = time.monotonic()
    probes.sweep()
    assert time.monotonic() - started < 0.9 and asked[0] == 4242
    assert stray.wait(5) == -signal.SIGKILL and live.poll() is None
    probes.kill_all()
    assert live.wait(5) == -signal.SIGKILL


def test_the_sweep_gives_up_after_its_rounds(tmp_path, monkeypatch):
    user = types.SimpleNamespace(pw_uid=4242, pw_gid=4242)
    monkeypatch.setattr(runner.sandbox, "namespaces_work", lambda: False)
    rounds = []
    monkeypatch.setattr(runner, "processes_of", lambda uid: rounds.append(uid) or [(2 ** 22 + 17, 1)])
    ProbeRunner(str(tmp_path), "t", user=user).sweep()
    assert len(rounds) == runner.SWEEP_ROUNDS


NAMED = ("import ctypes, os, sys, time; ctypes.CDLL(None).prctl(15, 'é) 1 2 3'.encode(), 0, 0, 0); "
         "{become}; print(os.getsid(0), flush=True); time.sleep(60)")


def test_processes_of_reads_odd_names_and_the_real_user(tmp_path):
    plain, = [subprocess.Popen([sys.executable, "-c", NAMED.format(become="pass")], stdout=subprocess.PIPE,
                               start_new_session=True)]
    session = int(plain.stdout.readline())
    assert (plain.pid, session) in runner.processes_of(os.getuid())
    plain.kill()
    plain.wait()
    plain.stdout.close()
    if os.geteuid() != 0:
        pytest.skip("only root can run a process whose real and effective users differ")
    other = subprocess.Popen([sys.executable, "-c", NAMED.format(become="os.setresuid(4243, 0, 0)")],
                             stdout=subprocess.PIPE, start_new_session=True)
    other.stdout.readline()
    assert [pid for pid, _ in runner.processes_of(4243)] == [other.pid]
    other.kill()
    other.wait()
    other.stdout.close()


def test_end_waits_a_moment_for_the_probe_to_leave_on_its_own(tmp_path):
    probes = runner_for(tmp_path)
    process = subprocess.Popen([sys.executable, "-c", "import signal, sys, time; "
                                "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(0.1), sys.exit(7))); "
                                "print(flush=True); time.sleep(60)"], start_new_session=True, stdout=subprocess.PIPE)
    process.stdout.readline()
    probes.end(runner.SpawnedProbe(process))
    assert process.wait() == 7
    quick = subprocess.Popen([sys.executable, "-c", "import time; print(flush=True); time.sleep(60)"],
                             start_new_session=True, stdout=subprocess.PIPE)
    quick.stdout.readline()
    started = time.monotonic()
    probes.end(runner.SpawnedProbe(quick))
    assert time.monotonic() - started < runner.TERM_GRACE_SECONDS - 0.05 and quick.wait() == -signal.SIGTERM
    for p in (process, quick):
        p.stdout.close()


def test_a_probe_never_imports_from_the_graders_working_folder(spawning, tmp_path, monkeypatch):
    write(tmp_path / "decoy" / "grading" / "__init__.py", "raise SystemExit(9)\n")
    monkeypatch.chdir(tmp_path / "decoy")
    found = spawning.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "answer", {"x": 1}, 30)
    assert found.status == "ok" and found.value["x"] == 1


def test_the_default_limits_are_the_threat_models():
    """Kills a default limit other than the one docs/threat-model.md promises an upload meets."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "threat-model.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| fork bomb"))
    limits = Limits()
    for promise in (f"at most {limits.processes} processes and threads",
                    f"files of at most {limits.file_bytes >> 20} MiB",
                    f"a {limits.disk_bytes >> 20} MiB private tmpfs as home",
                    f"{limits.output_bytes >> 10} KiB of output kept"):
        assert promise in row, promise
    assert limits.memory_bytes == 4096 << 20  # --memory-mb's default, which the row names


class ExitsLater:
    """A probe process that ends `after` seconds from now (poll answers 0 from then on)."""

    def __init__(self, after):
        self.ends = time.monotonic() + after

    def poll(self):
        return 0 if time.monotonic() >= self.ends else None


def test_collect_notices_an_exit_within_a_moment(tmp_path):
    """Kills the pipes waited on a second at a time: an exit (whose pipes a child still holds open) is
    noticed within a tenth of a second, and collect ends the grace period later."""
    probes = runner_for(tmp_path)
    output_read, output_write = os.pipe()
    result_read, result_write = os.pipe()
    started = time.monotonic()
    assert probes.collect(ExitsLater(0.2), output_read, result_read, CappedBuffer(9), CappedBuffer(9),
                          started + 30) is False
    assert 0.2 + runner.EXIT_GRACE_SECONDS <= time.monotonic() - started < 0.2 + runner.EXIT_GRACE_SECONDS + 0.45
    for fd in (output_write, result_write):
        os.close(fd)
