"""
A zygote parent: a process that has imported what a run's zygote imports
(torch) and forks the zygote of each grading run that asks, which then
serves that run as zygote.py's own does, instead of the run starting a new
interpreter that imports torch again. The test suite starts one in each
worker (tests/zygote_parents.py) and names it to the grading processes it
starts in GRADING_ZYGOTE_PARENT; a production run has none.

    python -c "from grading.zygote_parent import main; main()" SOCKET [--ignore NAME]... MODULE...

It forks a zygote only where the result is the zygote a new interpreter
would be: the same Python, user, limits and preloaded modules, and the same
environment but for HOME, TMPDIR and the variables named with --ignore,
which neither Python nor the preloaded modules read as they start. Else it
refuses and the run starts its zygote as usual. The forked zygote takes the
run's environment, working folder and umask, holds the descriptors a new
zygote holds and no other (its socket at the number the run gave it),
leads a session of its own and writes its errors to the run's standard
error; like every forked child it draws other random numbers than its
parent (Python reseeds `random` at a fork).

    request  {"fd", "python", "uid", "gid", "groups", "limits", "env", "cwd", "umask", "preload"}
             with two descriptors attached: the zygote's end of its socket (numbered fd in the
             run's process), standard error
    reply    {"pid": pid} with a pidfd of the zygote attached, or {"refused": why}

The parent listens on a SOCK_SEQPACKET socket at SOCKET (in a folder only
its user may enter), a connection a request, reaps the zygotes it forked
and writes a line to its standard error for each request: the zygote
forked, or why it refused.
"""

import json
import os
import select
import signal
import socket
import sys
import tempfile
import traceback

from . import sandbox, zygote
from .forked_zygote import request_for

READ_LATER = ("HOME", "TMPDIR")  # read by the modules as they are used, not as they start


def refusal(request, own, ignored):
    """Why a zygote forked here for `request` would not be the one a new interpreter would be; None if it would."""
    for key in ("python", "uid", "gid", "groups", "limits", "preload"):
        if request[key] != own[key]:
            return f"another {key}"
    skipped = set(READ_LATER) | set(ignored)
    differing = sorted(name for name in set(request["env"]) | set(own["env"]) if name not in skipped
                       and request["env"].get(name) != own["env"].get(name))
    if differing:
        return f"another environment ({', '.join(differing)})"
    return None if isinstance(request["fd"], int) and request["fd"] > 2 else "no socket numbered above 2"


def become_zygote(request, zygote_fd, stderr_fd, listener, connection):
    """In the forked child: take the run's session, streams, umask, folder and environment, then serve
    it as its zygote (zygote.main); never return."""
    code = 1
    try:
        listener.close()
        connection.close()
        os.setsid()
        for fd, mode in ((0, os.O_RDONLY), (1, os.O_WRONLY)):  # as Popen's DEVNULL opens them
            devnull = os.open(os.devnull, mode)
            os.dup2(devnull, fd)
            os.close(devnull)
        os.dup2(stderr_fd, 2)
        os.close(stderr_fd)
        if zygote_fd != request["fd"]:  # the number the run gave it
            os.dup2(zygote_fd, request["fd"])
            os.close(zygote_fd)
        os.umask(request["umask"])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # found again from TMPDIR, as a new interpreter would
        del sys.modules[__name__]  # a new zygote never imports this module
        delattr(sys.modules[__package__], __name__.rpartition(".")[2])
        sys.argv = ["-c", str(request["fd"]), *request["preload"]]
        zygote.main()
        code = 0
    except BaseException:
        traceback.print_exc()  # as a new interpreter would, to the run's standard error
    finally:
        os._exit(code)


def answer(connection, listener, own, ignored):
    """Read one request from `connection`, fork its zygote or refuse, and reply."""
    data, fds, _, _ = socket.recv_fds(connection, zygote.MESSAGE_BYTES, 2)
    try:
        request = json.loads(data)
        why = refusal(request, own, ignored) if len(fds) == 2 else "two descriptors expected"
        if why:
            print(f"refused: {why}", file=sys.stderr, flush=True)
            connection.send(json.dumps({"refused": why}).encode())
            return
        pid = os.fork()
        if pid == 0:
            become_zygote(request, *fds, listener, connection)
        print(f"forked zygote {pid}", file=sys.stderr, flush=True)
        pidfd = os.pidfd_open(pid)
        try:
            socket.send_fds(connection, [json.dumps({"pid": pid}).encode()], [pidfd])
        finally:
            os.close(pidfd)
    finally:
        for fd in fds:
            os.close(fd)


def serve(listener, own, ignored):
    """Answer each connection, one request each, until killed."""
    while True:
        if select.select([listener], [], [], 0.5)[0]:
            connection, _ = listener.accept()
            with connection:
                try:
                    answer(connection, listener, own, ignored)
                except (OSError, ValueError, KeyError, TypeError):
                    pass  # a broken request is dropped: its client starts its zygote as usual
        for _ in zygote.ended_children():  # reaped: the runs wait on their pidfds, not on exit codes
            pass


def main():
    """Import the modules named, listen at the socket's path and serve (see the module's docstring)."""
    address, arguments, ignored = sys.argv[1], sys.argv[2:], []
    while arguments[:1] == ["--ignore"]:
        ignored.append(arguments[1])
        arguments = arguments[2:]
    sandbox.die_with_parent(signal.SIGKILL)
    zygote.preload(arguments)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    listener.listen(8)
    serve(listener, request_for(dict(os.environ), os.getcwd(), arguments), ignored)
