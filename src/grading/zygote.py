"""
The zygote: a process that imports the heavy libraries once (torch) and
forks a fresh process for every probe, so a run pays torch's import once
instead of once a test. It never imports submission code; each forked
child is a new process that does (see sandbox.py), or, asked for a trusted
probe, runs the reference instead (see trusted.py).

    python -c "from grading.zygote import main; main()" SOCKET_FD MODULE...

It talks with the grading process over a SOCK_SEQPACKET socket:

    request  {"ticket": n, "home": dir, "request": {...}, ...the rest of the order (sandbox.enter)}
             with two descriptors attached: the output pipe and the result pipe
    replies  {"ready": true}                  the libraries are imported (sent once, first)
             {"ticket": n, "pid": pid}        the child is running
             {"exited": pid, "code": code}    the child has ended (negative: killed by a signal)

It exits when the grading process closes the socket. ZygoteClient is the
grading process's side. A request it stops waiting for (the zygote took too
long to fork) is given up: should the zygote fork it later, the client kills
that child at once, so no probe runs that the grading process does not track.
"""

import importlib
import itertools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading

from . import sandbox, trusted
from .forked_zygote import fork_zygote

MESSAGE_BYTES = 1 << 20


def die_with(zygote_pid):
    """Have the kernel end this process (SIGTERM, see sandbox.supervise) when the zygote ends."""
    sandbox.die_with_parent(signal.SIGTERM)
    if os.getppid() != zygote_pid:
        os._exit(1)


def child(connection, order, output_fd, result_fd, zygote_pid):
    """In the forked child: become a sandboxed probe process (sandbox.enter), or a trusted one for an
    order of the grading process's own (trusted.enter), never return."""
    try:
        connection.close()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(output_fd)
        die_with(zygote_pid)
        if "trusted" in order:
            trusted.enter(order["trusted"], result_fd)
        else:
            sandbox.enter(order, result_fd)
    finally:
        os._exit(1)


def ended_children():
    """Reap every child that has ended, yielding its pid and exit code (negative: killed by a signal)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, os.waitstatus_to_exitcode(status)


def reap(connection):
    """Report every child that has ended."""
    for pid, code in ended_children():
        connection.send(json.dumps({"exited": pid, "code": code}).encode())


def serve(connection):
    """Fork a child for each request until the grading process hangs up."""
    while True:
        readable, _, _ = select.select([connection], [], [], 0.05)
        if readable:
            data, fds, _, _ = socket.recv_fds(connection, MESSAGE_BYTES, 2)
            if not data:
                return
            order = json.loads(data)
            zygote_pid = os.getpid()
            pid = os.fork()
            if pid == 0:
                child(connection, order, *fds, zygote_pid)
            for fd in fds:
                os.close(fd)
            connection.send(json.dumps({"ticket": order["ticket"], "pid": pid}).encode())
        reap(connection)


def preload(names):
    """Import each module of `names` that can be imported (the probes meet one that cannot)."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def main():
    connection = socket.socket(fileno=int(sys.argv[1]))
    preload(sys.argv[2:])
    try:
        connection.send(json.dumps({"ready": True}).encode())
        serve(connection)
    except (BrokenPipeError, ConnectionResetError):
        pass


def kill_late_child(pid):
    """Kill a child forked for a request given up on, then its process group (its own session's, once
    it has one: a probe's namespace and whatever it started)."""
    for kill in (os.kill, os.killpg):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class ZygoteClient:
    """The grading process's side: starts the zygote (or has a zygote parent fork it, see zygote_parent.py)
    and asks it for probe processes."""

    def __init__(self, env, cwd, preload):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = fork_zygote(theirs.fileno(), env, cwd, preload) or subprocess.Popen(
            [sys.executable, "-c", "from grading.zygote import main; main()", str(theirs.fileno()), *preload],
            pass_fds=(theirs.fileno(),), env=env, cwd=cwd, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, start_new_session=True)
        theirs.close()
        self.connection = ours
        self.send_lock = threading.Lock()
        self.changed = threading.Condition()
        self.tickets = itertools.count()
        self.pids = {}  # ticket -> pid of the forked child
        self.given_up = set()  # tickets no longer waited for: their children are killed on arrival
        self.exit_codes = {}  # pid -> exit code
        self.alive = True
        self.ready = False
        threading.Thread(target=self.listen, daemon=True).start()

    def wait_ready(self, timeout):
        """Wait until the zygote has imported its libraries; False if it died or took too long."""
        with self.changed:
            self.changed.wait_for(lambda: self.ready or not self.alive, timeout)
            return self.ready and self.alive

    def listen(self):
        """Record the zygote's replies until it hangs up."""
        while True:
            try:
                data = self.connection.recv(MESSAGE_BYTES)
                message = json.loads(data) if data else None
            except (OSError, ValueError):
                message = None
            with self.changed:
                if message is None:
                    self.alive = False
                    self.changed.notify_all()
                    return
                if "ready" in message:
                    self.ready = True
                elif message.get("ticket") in self.given_up:
                    self.given_up.discard(message["ticket"])
                    kill_late_child(message["pid"])
                elif "ticket" in message:
                    self.pids[message["ticket"]] = message["pid"]
                else:
                    self.exit_codes[message["exited"]] = message["code"]
                self.changed.notify_all()

    def fork(self, order, fds, timeout):
        """Ask for a child running `order` with `fds` (output, result); its pid, or None when the zygote fails."""
        with self.changed:
            ticket = next(self.tickets)
        try:
            with self.send_lock:
                socket.send_fds(self.connection, [json.dumps(dict(order, ticket=ticket)).encode()], fds)
        except OSError:
            return None
        with self.changed:
            self.changed.wait_for(lambda: ticket in self.pids or not self.alive, timeout)
            if ticket not in self.pids:
                self.given_up.add(ticket)
            return self.pids.pop(ticket, None)

    def exit_code(self, pid, wait=0.0):
        """The child's exit code once the zygote has reaped it, else None (waiting up to `wait` seconds)."""
        with self.changed:
            self.changed.wait_for(lambda: pid in self.exit_codes or not self.alive, wait)
            return self.exit_codes.get(pid)

    def close(self):
        """Hang up; the zygote exits (and is killed if it does not). The shutdown is what the zygote
        sees: a close alone leaves the socket open while the listening thread is in recv on it."""
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:  # the zygote is gone already
            pass
        self.connection.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


if __name__ == "__main__":
    main()
