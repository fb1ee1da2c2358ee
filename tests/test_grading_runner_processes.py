"""
The runner's probe processes (grading/runner.py): spawning a probe, forking
it from the zygote (stood in for here) or spawning when the zygote cannot,
the request it is given, ending it and its process group at its time limit,
sweeping another user's leftover processes, and the runner's side of a
trusted probe forked from a real zygote. The probes it starts run a small
tests file made here.
"""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
import types

import pytest

from grading import runner
from grading.runner import Limits, ProbeRunner

from grading_helpers import runner_for, write


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


def test_processes_of_finds_none_without_a_proc_folder(monkeypatch):
    """Kills a /proc taken to exist: where there is none (macOS), the sweep finds no process to kill
    rather than failing on the listing."""
    isdir, listdir = os.path.isdir, os.listdir

    def no_proc(path):
        if path == "/proc":
            raise FileNotFoundError(path)
        return listdir(path)
    monkeypatch.setattr(os.path, "isdir", lambda path: path != "/proc" and isdir(path))
    monkeypatch.setattr(os, "listdir", no_proc)
    assert runner.processes_of(os.getuid()) == []


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


def test_end_waits_for_a_supervisor_until_the_kernel_has_emptied_its_namespace(tmp_path, monkeypatch):
    """A supervisor leaves only when its namespace is empty, which takes seconds for a fork bomb on a loaded
    machine: a runner of probes in namespaces waits for it past the grace of a probe run in place."""
    monkeypatch.setattr(runner.sandbox, "namespaces_work", lambda: True)
    user = types.SimpleNamespace(pw_uid=4242, pw_gid=4242)
    probes = ProbeRunner(str(tmp_path), "t", user=user)
    process = subprocess.Popen([sys.executable, "-c", "import signal, sys, time; "
                                f"signal.signal(signal.SIGTERM, lambda *_: (time.sleep({runner.TERM_GRACE_SECONDS} + 1), "
                                "sys.exit(7))); print(flush=True); time.sleep(60)"],
                               start_new_session=True, stdout=subprocess.PIPE)
    process.stdout.readline()
    probes.end(runner.SpawnedProbe(process))
    assert process.wait() == 7
    process.stdout.close()
    assert probes.term_grace == runner.TEARDOWN_SECONDS > runner.TERM_GRACE_SECONDS + 1
    assert ProbeRunner(str(tmp_path), "t").term_grace == runner.TERM_GRACE_SECONDS  # no user: no namespaces
    monkeypatch.setattr(runner.sandbox, "namespaces_work", lambda: False)
    assert ProbeRunner(str(tmp_path), "t", user=user).term_grace == runner.TERM_GRACE_SECONDS
    assert ProbeRunner(str(tmp_path), "t").term_grace == runner.TERM_GRACE_SECONDS


def test_a_probe_never_imports_from_the_graders_working_folder(spawning, tmp_path, monkeypatch):
    write(tmp_path / "decoy" / "grading" / "__init__.py", "raise SystemExit(9)\n")
    monkeypatch.chdir(tmp_path / "decoy")
    found = spawning.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "answer", {"x": 1}, 30)
    assert found.status == "ok" and found.value["x"] == 1


# ---- trusted probes forked from the zygote: the runner's side, run in this process -----------------

TRUSTED_TESTS = textwrap.dedent('''
    import sys, time
    from grading import probe

    @probe
    def speak(sub, lines):
        print("".join(f"line {n}\\n" for n in range(lines)) + "caf\\u00e9", end="", flush=True)
        print(" and its errors", file=sys.stderr, flush=True)
        return sub.NAME

    @probe
    def hang(sub):
        time.sleep(60)
''')


@pytest.fixture
def forking(tmp_path):
    """A runner with a real zygote (nothing preloaded), a tests file and a reference package. Neither the
    zygote nor its children see MUTANT_UNDER_TEST (see `spawning`): only the runner's side is mutated."""
    if not runner.CAN_FORK:
        pytest.skip("only Linux forks probes from a zygote")
    write(tmp_path / "trusted.py", TRUSTED_TESTS)
    write(tmp_path / "reference" / "__init__.py", "NAME = 'the reference'\n")
    (tmp_path / "work").mkdir()
    probes = ProbeRunner(str(tmp_path / "work"), "t", hidden_env=("MUTANT_UNDER_TEST",), fork=True)
    probes.warm_up()
    yield probes
    probes.close()


def trusted_request(tmp_path, probe, **kwargs):
    """What trusted.run_trusted hands the runner, with an environment of nothing."""
    return dict(module=str(tmp_path / "trusted.py"), probe=probe, kwargs=kwargs,
                reference=str(tmp_path / "reference"), runtime=None, memory_bytes=4 << 30, env={})


def test_a_forked_trusted_probe_answers_with_the_tail_of_what_it_printed(forking, tmp_path):
    """Kills an order the zygote does not run as trusted, a deadline counted back from the start, a tail
    of other bytes than the last (cut inside a character here), and its process left among the live."""
    timed_out, code, answer, tail = forking.run_trusted(trusted_request(tmp_path, "speak", lines=300), 30, 17)
    assert (timed_out, code, json.loads(answer)) == (False, 0, {"ok": True, "value": "the reference"})
    assert tail == "\ufffd and its errors\n" and forking.live_groups == set() and forking.fork is True


def test_a_hanging_trusted_probe_is_ended_at_its_time_limit(forking, tmp_path):
    """Kills a trusted probe waited for past its time limit, or left running: it is ended (SIGTERM) and
    said to have timed out, with no answer, long before its minute of sleep (the bound leaves a loaded
    machine room)."""
    started = time.monotonic()
    assert forking.run_trusted(trusted_request(tmp_path, "hang"), 1, 100) == (True, -signal.SIGTERM, "", "")
    assert 1 <= time.monotonic() - started < 30 and forking.live_groups == set()


class AnsweringZygote(FakeZygote):
    """A FakeZygote whose child has printed and answered by the time it is forked, in bytes that are not UTF-8."""

    def fork(self, order, fds, timeout):
        os.write(fds[0], b"printed \xff")
        os.write(fds[1], b'{"ok": true, "value": "\xff"}')
        return super().fork(order, fds, timeout)


def test_a_trusted_probe_is_ordered_as_trusted_and_read_whatever_its_bytes(tmp_path, zygotes, monkeypatch):
    """Kills a fork order other than {"trusted": request}, the zygote's reply not waited for as a probe's
    is, and a strict decoding of the answer: bytes no trusted process writes, on which the grader must
    not fail all the same."""
    monkeypatch.setattr(runner, "ZygoteClient", AnsweringZygote)
    probes = ProbeRunner(str(tmp_path), "t", fork=True)
    probes.warm_up()
    request = {"probe": "fingerprint"}
    assert probes.run_trusted(request, 30, 100) == (False, 5, '{"ok": true, "value": "\ufffd"}', "printed \ufffd")
    zygote, = zygotes
    _, order, modes, timeout = zygote.asked[1]
    assert order == {"trusted": request} and timeout == runner.FORK_REPLY_SECONDS
    assert [stat.S_ISFIFO(mode) for mode in modes] == [True, True]
    zygote.child.wait(5)


def open_descriptors():
    return set(os.listdir("/proc/self/fd"))


def test_a_trusted_probe_the_zygote_cannot_fork_is_left_to_a_new_interpreter(tmp_path, zygotes, monkeypatch):
    """Kills a failed fork taken for a forked probe, the pipes given to it left open here, and a failed
    zygote asked again: run_trusted answers None (trusted.py then spawns the probe), from then on at once."""
    monkeypatch.setattr(FakeZygote, "forks", False)
    assert ProbeRunner(str(tmp_path), "t", fork=False).run_trusted({}, 30, 100) is None
    probes = ProbeRunner(str(tmp_path), "t", fork=True)
    probes.warm_up()
    before = open_descriptors()
    assert probes.run_trusted({}, 30, 100) is None and probes.fork is False and open_descriptors() == before
    assert probes.run_trusted({}, 30, 100) is None
    assert [asked[0] for asked in zygotes[0].asked] == ["ready", "fork"]
