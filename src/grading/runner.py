"""
The isolated runner: one fresh process per probe, as the grading process sees it.

For every probe the runner copies the submission package into a new private
directory and starts a process there in a session of its own (so its whole
process group can be killed): forked from the zygote on Linux (torch already
imported, see zygote.py), else a new interpreter running grading.sandbox. Run
as another user (--user), the process isolates itself in namespaces where the
kernel allows (see sandbox.py); where it does not, the runner kills, after
each probe, every process of that user outside the sessions of the probes
still running. It then reads two pipes until the wall-clock deadline:

- the process's standard output and error together, kept up to an output cap;
- a private result pipe, whose message must begin with this run's random
  token and is the only thing the grading process takes as an answer.

Whatever the submission does — print, exit, hang, crash, spawn children —
the runner ends with the probe's process (and so its namespace) and its
process group killed, and an outcome that says so.
"""

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from . import sandbox
from .zygote import ZygoteClient
from .forked_zygote import PARENT_ENV

COPY_IGNORED = shutil.ignore_patterns("__pycache__", "*.params", "*.predictions", "*.pyc")
EXIT_GRACE_SECONDS = 0.5
TERM_GRACE_SECONDS = 0.5
# A probe in namespaces ends only when the kernel has emptied its namespace: a fork bomb of the process cap
# took 0.6 to 5.3 s to tear down on two loaded cores; its supervisor is waited for.
TEARDOWN_SECONDS = 30
SWEEP_ROUNDS = 20
FORK_REPLY_SECONDS = 10
ZYGOTE_READY_SECONDS = 180
RESULT_CAP_BYTES = 32 << 20
CAN_FORK = sys.platform.startswith("linux") and hasattr(__import__("socket"), "send_fds")


@dataclass
class Limits:
    memory_bytes: int = 4 << 30
    file_bytes: int = 64 << 20
    output_bytes: int = 64 << 10
    disk_bytes: int = 256 << 20  # the home of a probe run as another user, in a namespace
    processes: int = 256  # processes and threads of that user (RLIMIT_NPROC)


@dataclass
class ProbeOutcome:
    status: str  # "ok", "error" or "timeout"
    value: object
    reason: str
    output: str
    seconds: float


class CappedBuffer:
    """Bytes kept up to `cap`; anything beyond is counted and dropped."""

    def __init__(self, cap):
        self.cap, self.data, self.dropped = cap, bytearray(), 0

    def add(self, chunk):
        room = max(0, self.cap - len(self.data))
        self.data += chunk[:room]
        self.dropped += len(chunk) - len(chunk[:room])

    def text(self):
        text = self.data.decode("utf-8", errors="replace")
        return text + (f"\n[{self.dropped} more bytes of output dropped]" if self.dropped else "")


class TailBuffer:
    """The last `cap` bytes of what was added."""

    def __init__(self, cap):
        self.cap, self.data = cap, bytearray()

    def add(self, chunk):
        self.data = (self.data + chunk)[-self.cap:]

    def text(self):
        return self.data.decode("utf-8", errors="replace")


class SpawnedProbe:
    """A probe process started as a new interpreter."""

    def __init__(self, process):
        self.process, self.pid = process, process.pid

    def poll(self):
        return self.process.poll()

    def finish(self):
        return self.process.wait()


class ForkedProbe:
    """A probe process forked by the zygote, which reaps it and reports its exit code."""

    def __init__(self, zygote, pid):
        self.zygote, self.pid = zygote, pid

    def poll(self):
        return self.zygote.exit_code(self.pid)

    def finish(self):
        return self.zygote.exit_code(self.pid, wait=2.0)


class ProbeRunner:
    """Runs probes against submission packages, one fresh process each."""

    def __init__(self, work_root, token, limits=None, user=None, hidden_env=(), preload=(), fork=CAN_FORK):
        self.work_root = work_root
        self.token = token
        self.limits = limits or Limits()
        self.user = user  # a pwd.struct_passwd to run as, or None
        self.hidden_env = set(hidden_env)
        self.preload = list(preload)
        self.fork = fork and CAN_FORK
        self.zygote = None
        self.live_groups = set()
        self.lock = threading.Lock()
        self.starting = threading.Lock()  # held while a probe starts and while escaped processes are swept
        isolating = user is not None and sandbox.namespaces_work()
        self.sweeping = user is not None and not isolating
        self.term_grace = TEARDOWN_SECONDS if isolating else TERM_GRACE_SECONDS

    def environment(self, home):
        """The process environment: ours without the hidden-bundle variables and the zygote parent's address,
        one thread, private home."""
        env = {k: v for k, v in os.environ.items() if k not in self.hidden_env and k != PARENT_ENV}
        grading_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (grading_root, env.get("PYTHONPATH")) if p)
        env.update(HOME=home, TMPDIR=home, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env.setdefault(name, "1")
        return env

    def prepare(self, package_dir):
        """
        A fresh directory for one probe; returns its layout: `top` (removed
        afterwards), `home` (the probe's working folder), `package` (where the
        probe imports the package from) and, run as another user, `copy` (the
        package copy, in a folder only root can enter, until the probe process
        mounts or moves it to `package`, see sandbox.isolate). That copy is made readable to the
        user, so it leaves symbolic links out (run_autograder takes none from an upload either);
        a probe run as ourselves gets a link's target, which we could read anyway.
        """
        top = tempfile.mkdtemp(prefix="probe-", dir=self.work_root)
        if self.user is None:
            package = os.path.join(top, "submission")
            shutil.copytree(package_dir, package, ignore=COPY_IGNORED, symlinks=False)
            return dict(top=top, home=top, package=package)
        os.chmod(top, 0o755)
        layout = dict(top=top, home=os.path.join(top, "home"), package=os.path.join(top, "submission"),
                      copy=os.path.join(top, "private", "submission"))
        os.mkdir(os.path.dirname(layout["copy"]), 0o700)
        shutil.copytree(package_dir, layout["copy"], ignore=ignored_for_another_user, symlinks=False)
        for root, dirs, files in os.walk(layout["copy"]):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        for mount_point in (layout["home"], layout["package"]):
            os.mkdir(mount_point, 0o755)
        return layout

    def warm_up(self):
        """Start the zygote and wait until it is ready (once); returns the seconds spent waiting."""
        started = time.monotonic()
        with self.lock:
            if self.fork and self.zygote is None:
                self.zygote = ZygoteClient(self.environment(self.work_root), self.work_root, self.preload)
                self.fork = self.zygote.wait_ready(ZYGOTE_READY_SECONDS)
        return time.monotonic() - started

    def forking_zygote(self):
        """The ready zygote, or None when probes must be spawned."""
        with self.lock:
            return self.zygote if self.fork else None

    def order(self, layout, request):
        """What the probe process needs to set itself up (sandbox.enter)."""
        order = dict(home=layout["home"], request=request)
        if self.user is not None:
            order.update(package=layout["package"], copy=layout["copy"], disk_bytes=self.limits.disk_bytes,
                         uid=self.user.pw_uid, gid=self.user.pw_gid)
        return order

    def start(self, order, output_write, result_write):
        """
        Start the probe process, forked if possible, else spawned; closes our copies of the write
        ends. None when the zygote did not fork it in time: probes are spawned from then on, but the
        request may still be forked late (the client kills that child), so these pipes are no
        longer the probe's alone.
        """
        try:
            zygote = self.forking_zygote()
            if zygote is not None:
                pid = zygote.fork(order, [output_write, result_write], FORK_REPLY_SECONDS)
                if pid is not None:
                    return ForkedProbe(zygote, pid)
                with self.lock:
                    self.fork = False  # the zygote died or hangs: spawn from now on
                return None
            process = subprocess.Popen(
                [sys.executable, "-c", "from grading.sandbox import main; main()"], stdin=subprocess.PIPE,
                stdout=output_write, stderr=output_write, pass_fds=(result_write,),
                cwd=self.work_root, env=self.environment(order["home"]), start_new_session=True)
            try:
                process.stdin.write(json.dumps(dict(order, result_fd=result_write)).encode("utf-8"))
                process.stdin.close()
            except OSError:
                pass
            return SpawnedProbe(process)
        finally:
            os.close(result_write)
            os.close(output_write)

    def launch(self, order):
        """Start the probe process on pipes of its own; returns (probe, output read end, result read end).
        Pipes handed to a zygote that did not fork in time are closed, and the probe spawned on new ones."""
        while True:
            result_read, result_write = os.pipe()
            output_read, output_write = os.pipe()
            probe = self.start(order, output_write, result_write)
            if probe is not None:
                return probe, output_read, result_read
            os.close(result_read)
            os.close(output_read)

    def run(self, package_dir, module, probe_name, kwargs, timeout):
        """
        Run probe `probe_name` of the file `module` as probe(package, **kwargs) in a new
        process; never raises for the submission's faults.
        """
        self.warm_up()
        started = time.monotonic()
        layout = self.prepare(package_dir)
        request = dict(token=self.token, module=module, probe=probe_name, kwargs=kwargs,
                       package_dir=layout["package"], memory_bytes=self.limits.memory_bytes,
                       file_bytes=self.limits.file_bytes,
                       processes=self.limits.processes if self.user is not None else None)
        with self.starting:
            probe, output_read, result_read = self.launch(self.order(layout, request))
            with self.lock:
                self.live_groups.add(probe.pid)
        output = CappedBuffer(self.limits.output_bytes)
        result = CappedBuffer(RESULT_CAP_BYTES)
        timed_out = self.collect(probe, output_read, result_read, output, result, started + timeout)
        self.end(probe)
        returncode = probe.finish()
        self.sweep()
        shutil.rmtree(layout["top"], ignore_errors=True)
        return self.outcome(returncode, timed_out, result, output.text(), time.monotonic() - started)

    def run_trusted(self, request, timeout, tail_bytes):
        """
        A trusted probe (trusted.py: the reference, never submitted code) in a
        process forked from the zygote, which has imported torch once for the
        run; returns (timed out, exit code, its answer's text, the last
        `tail_bytes` of what it printed), or None when probes are spawned here.
        """
        zygote = self.forking_zygote()
        if zygote is None:
            return None
        started = time.monotonic()
        result_read, result_write = os.pipe()
        output_read, output_write = os.pipe()
        try:
            pid = zygote.fork(dict(trusted=request), [output_write, result_write], FORK_REPLY_SECONDS)
        finally:
            os.close(result_write)
            os.close(output_write)
        if pid is None:
            os.close(result_read)
            os.close(output_read)
            with self.lock:
                self.fork = False  # the zygote died or hangs: spawn from now on
            return None
        probe = ForkedProbe(zygote, pid)
        with self.lock:
            self.live_groups.add(pid)
        output, result = TailBuffer(tail_bytes), CappedBuffer(RESULT_CAP_BYTES)
        timed_out = self.collect(probe, output_read, result_read, output, result, started + timeout)
        self.end(probe)
        return timed_out, probe.finish(), bytes(result.data).decode("utf-8", errors="replace"), output.text()

    def collect(self, probe, output_fd, result_fd, output, result, deadline):
        """
        Read both pipes until they close, the process has been gone for a
        moment, or the deadline passes. Returns True on a timeout: the
        deadline passed before the result pipe closed.
        """
        buffers = {output_fd: output, result_fd: result}
        selector = selectors.DefaultSelector()
        for fd in buffers:
            selector.register(fd, selectors.EVENT_READ)
        result_closed = False
        exited_at = None
        now = time.monotonic()
        while selector.get_map() and now < deadline:
            if exited_at is None and probe.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > EXIT_GRACE_SECONDS:
                break
            for key, _ in selector.select(timeout=min(0.1, deadline - now)):
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    buffers[key.fd].add(chunk)
                else:
                    selector.unregister(key.fd)
                    result_closed = result_closed or key.fd == result_fd
            now = time.monotonic()
        selector.close()
        for fd in buffers:
            os.close(fd)
        return now >= deadline and not result_closed

    def end(self, probe):
        """
        End the probe: SIGTERM to its process (a supervisor outside the
        namespace then kills the namespace's first process, and the kernel
        the rest, before the supervisor's wait returns), then SIGKILL to its
        process group once it has left or its grace is over.
        """
        try:
            os.kill(probe.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + self.term_grace
        while probe.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        self.kill(probe.pid)

    def kill(self, group):
        """Kill everything left in the probe's process group."""
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        with self.lock:
            self.live_groups.discard(group)

    def sweep(self):
        """Without namespaces: kill the user's processes outside the sessions of the probes still running."""
        if not self.sweeping:
            return
        with self.starting:
            for _ in range(SWEEP_ROUNDS):
                with self.lock:
                    live = set(self.live_groups)
                strays = [pid for pid, sid in processes_of(self.user.pw_uid) if sid not in live]
                if not strays:
                    return
                for pid in strays:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                time.sleep(0.01)

    def kill_all(self):
        """Kill every probe still running (on interrupt)."""
        with self.lock:
            groups = list(self.live_groups)
        for group in groups:
            self.kill(group)

    def close(self):
        """Stop the zygote, if one was started."""
        with self.lock:
            zygote, self.zygote = self.zygote, None
        if zygote is not None:
            zygote.close()
        self.sweep()

    def outcome(self, returncode, timed_out, result, output, seconds):
        """Turn what came back into a ProbeOutcome."""
        if timed_out:
            return ProbeOutcome("timeout", None, f"the submission did not finish within the time limit "
                                                 f"(stopped after {seconds:.0f} s)", output, seconds)
        raw = bytes(result.data)
        if not raw:
            return ProbeOutcome("error", None, "the submission's process ended without answering ("
                                + describe_exit(returncode) + ")", output, seconds)
        header, _, body = raw.partition(b"\n")
        tampered = ProbeOutcome("error", None, "the result channel was tampered with", output, seconds)
        if result.dropped or header != self.token.encode("ascii"):
            return tampered
        try:
            message = json.loads(body.decode("utf-8"))
            ok = message["ok"]
        except (ValueError, KeyError, TypeError):
            return tampered
        if ok is True and "value" in message:
            return ProbeOutcome("ok", message["value"], "", output, seconds)
        stage = {"import": "the submission failed to import",
                 "probe": "the submission raised an error"}.get(message.get("stage"), "the grader failed")
        return ProbeOutcome("error", None, f"{stage}:\n{message.get('error', '')}", output, seconds)


def ignored_for_another_user(folder, names):
    """What a package copy made readable for another user leaves out: COPY_IGNORED's names and every
    symbolic link, whose target (a root-only file, say) the user could not read by itself."""
    links = {name for name in names if os.path.islink(os.path.join(folder, name))}
    return set(COPY_IGNORED(folder, names)) | links


def processes_of(uid):
    """(pid, session id) of every process whose real user id is `uid`, read from /proc."""
    found = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as f:
                real_uid = next(int(line.split()[1]) for line in f if line.startswith("Uid:"))
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                session = int(f.read().rpartition(")")[2].split()[3])
        except (OSError, ValueError, StopIteration):
            continue
        if name.isdigit() and real_uid == uid:
            found.append((int(name), session))
    return found


def readable_by(user, path):
    """Whether `user` (with no supplementary groups) may read `path`, judging by the permission bits on its way."""
    path = os.path.abspath(path)
    checks = [(path, 0o5 if os.path.isdir(path) else 0o4)]
    while os.path.dirname(path) != path:
        path = os.path.dirname(path)
        checks.append((path, 0o1))
    for step, needed in checks:
        status = os.stat(step)
        shift = 6 if status.st_uid == user.pw_uid else 3 if status.st_gid == user.pw_gid else 0
        if (status.st_mode >> shift) & needed != needed:
            return False
    return True


def describe_exit(returncode):
    """Words for a process exit status."""
    if returncode is None:
        return "exit status unknown"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"
