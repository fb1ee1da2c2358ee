"""
A run's zygote asked of a zygote parent (zygote_parent.py), the process
the test suite starts to fork zygotes that have torch imported already:
the request, which describes the asking process, and the handle on the
zygote forked for it. ZygoteClient asks where GRADING_ZYGOTE_PARENT names
a parent, and starts a new interpreter where there is none or it refuses.
"""

import json
import os
import resource
import select
import socket
import subprocess
import sys

PARENT_ENV = "GRADING_ZYGOTE_PARENT"  # the parent's socket, in a folder only its user may enter
LIMITS = [name for name in dir(resource) if name.startswith("RLIMIT_")]
REPLY_BYTES = 4096


def request_for(env, cwd, preload, fd=None):
    """The request for a zygote of `preload` in `env` and `cwd` serving the socket numbered `fd`,
    describing this process as well."""
    return dict(fd=fd, python=sys.executable, uid=os.getuid(), gid=os.getgid(), groups=sorted(os.getgroups()),
                limits={name: list(resource.getrlimit(getattr(resource, name))) for name in LIMITS},
                env=env, cwd=cwd, umask=current_umask(), preload=list(preload))


def current_umask():
    """This process's umask (read by setting it, then set back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


class ForkedZygote:
    """What ZygoteClient uses of a Popen, for a zygote forked by a parent: its pid, and waiting for its end."""

    def __init__(self, pid, pidfd):
        self.pid, self.pidfd = pid, pidfd

    def wait(self, timeout=None):
        """Wait until the zygote has ended; subprocess.TimeoutExpired after `timeout` seconds."""
        if self.pidfd is None:
            return
        if not select.select([self.pidfd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired("zygote", timeout)
        os.close(self.pidfd)
        self.pidfd = None


def fork_zygote(zygote_fd, env, cwd, preload, address=None):
    """A ForkedZygote of `preload` in `env` and `cwd` serving `zygote_fd`, forked by the parent listening at
    `address` (default: $GRADING_ZYGOTE_PARENT); None where there is none or it refuses."""
    address = address or os.environ.get(PARENT_ENV)
    if not address or not hasattr(os, "pidfd_open"):
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as connection:
            connection.connect(address)
            request = request_for(env, cwd, preload, zygote_fd)
            socket.send_fds(connection, [json.dumps(request).encode()], [zygote_fd, 2])
            data, fds, _, _ = socket.recv_fds(connection, REPLY_BYTES, 1)
    except (OSError, ValueError):
        return None
    reply = json.loads(data) if data else {}
    if "pid" not in reply or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        return None
    return ForkedZygote(reply["pid"], fds[0])
