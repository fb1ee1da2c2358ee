"""
The limits on submitted code held from the inside.

A probe run as another user (src/grading/sandbox.py; docs/threat-model.md,
"fork bomb; memory bomb; disk fill") gets an address-space limit, files of
at most Limits.file_bytes, at most Limits.processes processes and threads of
its user, no core dumps, a home of Limits.disk_bytes and a private /dev/shm
of sandbox.SHM_BYTES. The probe here, forked from a real zygote as
`grader.py --user` runs it as root, first tries every way a process has to
lift each limit itself (the soft limit up to the hard one and past it, the
hard one up, both unlimited, and becoming root again), then measures what
holds: each soft limit still equals its hard limit, writing past the file
size, forking or starting threads past the process limit, mapping past the
address space, filling the home or /dev/shm past its size, and writing into
the machine's shared scratch folders (/tmp and the like) all fail. It
runs as a user of its own (made with useradd), so the process limit counts
its processes alone. Needs root, useradd and namespaces (skips otherwise).
(Links in a hand-in, refused by the copy report's reader:
tests/test_copies_handins.py.)
"""

import os
import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest

import privileged
from grading import sandbox
from grading.runner import Limits, ProbeRunner

USER = "grader-limits"
LIMITS = Limits(memory_bytes=512 << 20, file_bytes=1 << 20, disk_bytes=4 << 20, processes=8)
PRELOAD = ["mmap", "threading"]  # what the probe imports beyond the zygote's own modules
ATTEMPTS = 64  # forks and threads tried: far past LIMITS.processes
SHARED = [folder for folder in ("/tmp", "/var/tmp", "/run/lock") if os.path.isdir(folder)]  # threat-model.md

PROBE = textwrap.dedent('''
    import errno, mmap, os, resource, threading
    from grading import probe

    MARGIN = 16 << 20  # what the probe may map or free between measuring its address space and mapping

    LIMITS = {"memory": resource.RLIMIT_AS, "file size": resource.RLIMIT_FSIZE,
              "processes": resource.RLIMIT_NPROC, "core": resource.RLIMIT_CORE}

    def ended(action):
        """How `action` ended: "done", the errno name of an OSError, or the message of a ValueError."""
        try:
            action()
            return "done"
        except OSError as error:
            return errno.errorcode.get(error.errno, str(error))
        except ValueError as error:
            return str(error)

    def lift(which):
        """Every way a process may try to raise limit `which` itself, and how each ended."""
        soft, hard = resource.getrlimit(which)
        unlimited = resource.RLIM_INFINITY
        tries = {"soft to hard": (hard, hard), "soft past hard": (hard + 1, hard),
                 "soft unlimited": (unlimited, hard), "hard up": (soft, hard + 1),
                 "both unlimited": (unlimited, unlimited)}
        return {name: ended(lambda: resource.setrlimit(which, value)) for name, value in tries.items()}

    def write_past(path, size):
        """(bytes a write of `size` bytes put in a new file, how writing one more ended, how growing
        the file past `size` ended)."""
        with open(path, "wb", buffering=0) as f:
            written = f.write(bytes(size))
            more = ended(lambda: f.write(b"x"))
        grow = ended(lambda: os.truncate(path, size + 1))
        os.remove(path)
        return [written, more, grow]

    def forks(attempts):
        """(children forked, each waiting on a pipe, before the first refusal; how it ended)."""
        read, write = os.pipe()
        children, refusal = [], "none"
        for _ in range(attempts):
            try:
                pid = os.fork()
            except OSError as error:
                refusal = errno.errorcode[error.errno]
                break
            if pid == 0:
                os.close(write)
                os.read(read, 1)
                os._exit(0)
            children.append(pid)
        os.close(write)
        for pid in children:
            os.waitpid(pid, 0)
        os.close(read)
        return [len(children), refusal]

    def threads(attempts):
        """(threads started, each waiting on an event, before the first refusal; how it ended)."""
        release, started, refusal = threading.Event(), [], "none"
        for _ in range(attempts):
            thread = threading.Thread(target=release.wait)
            try:
                thread.start()
            except RuntimeError as error:
                refusal = str(error)
                break
            started.append(thread)
        release.set()
        for thread in started:
            thread.join()
        return [len(started), refusal]

    def fill(folder, file_bytes, files):
        """(bytes written into `folder` in up to `files` files of `file_bytes` each; how the first
        refused write ended); the files are removed afterwards."""
        total, refusal, names = 0, "none", []
        for n in range(files):
            names.append(os.path.join(folder, f"fill-{n}"))
            fd = os.open(names[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                left = file_bytes
                while left:
                    wrote = os.write(fd, bytes(min(left, 1 << 20)))
                    left, total = left - wrote, total + wrote
            except OSError as error:
                refusal = errno.errorcode[error.errno]
                break
            finally:
                os.close(fd)
        for name in names:
            os.remove(name)
        return [total, refusal]

    def touch(folder):
        """Make a file in `folder`, and remove it."""
        path = os.path.join(folder, f"touched-{os.getpid()}")
        open(path, "w").close()
        os.remove(path)

    def mapped_bytes():
        """The bytes of address space this process holds now (VmSize)."""
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))

    def mapped(size):
        """How mapping `size` more bytes of anonymous memory ended."""
        return ended(lambda: mmap.mmap(-1, size).close())

    @probe
    def lift_limits(sub, memory_bytes, file_bytes, disk_bytes, shm_bytes, shared, attempts):
        found = {"ids before": list(os.getresuid()),
                 "become root": {"setuid": ended(lambda: os.setuid(0)), "seteuid": ended(lambda: os.seteuid(0)),
                                 "setresuid": ended(lambda: os.setresuid(0, 0, 0))},
                 "ids": list(os.getresuid()),
                 "lifted": {name: lift(which) for name, which in LIMITS.items()}}
        found["limits"] = {name: list(resource.getrlimit(which)) for name, which in LIMITS.items()}
        room = memory_bytes - mapped_bytes()
        found["memory"] = {"room": room, "less": mapped(room - MARGIN), "more": mapped(room + MARGIN)}
        found["file"] = write_past(os.path.join(os.getcwd(), "big"), file_bytes)
        found["forks"] = forks(attempts)
        found["threads"] = threads(attempts)
        found["home"] = fill(os.getcwd(), file_bytes, 2 * disk_bytes // file_bytes)
        found["shm"] = fill("/dev/shm", file_bytes, 2 * shm_bytes // file_bytes)
        found["shared"] = {folder: ended(lambda: touch(folder)) for folder in shared}
        return found
''')


def missing():
    """Why the sandbox's tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (CI and the grading server run as root)"
    if shutil.which("useradd") is None and privileged.user(USER) is None:
        return f"needs useradd, to make the user {USER}"
    if not sandbox.namespaces_work():
        return "needs PID, network and mount namespaces"
    return None


MISSING = missing()
needs_the_sandbox = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))


@pytest.fixture(scope="module")
def inside():
    """What the probe found, run once as USER with LIMITS."""
    who = privileged.ensure_user(USER)
    folder = Path(tempfile.mkdtemp(prefix="limits-"))  # every user may enter it, unlike pytest's tmp_path
    os.chmod(folder, 0o755)
    (folder / "tests.py").write_text(PROBE)
    (folder / "package").mkdir()
    (folder / "package" / "__init__.py").write_text("")
    (folder / "work").mkdir()
    runner = ProbeRunner(str(folder / "work"), os.urandom(8).hex(), LIMITS, user=who, preload=PRELOAD, fork=True)
    try:
        found = runner.run(str(folder / "package"), str(folder / "tests.py"), "lift_limits",
                           dict(memory_bytes=LIMITS.memory_bytes, file_bytes=LIMITS.file_bytes,
                                disk_bytes=LIMITS.disk_bytes, shm_bytes=sandbox.SHM_BYTES, shared=SHARED,
                                attempts=ATTEMPTS), 60)
    finally:
        runner.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert (found.status, found.reason) == ("ok", "")
    return dict(found.value, uid=who.pw_uid)


# ---------------------------------------------------------------- the limits, from the inside

@needs_the_sandbox
def test_the_probe_cannot_become_root_again(inside):
    """Kills a probe that drops only its effective user (seteuid) or keeps root's saved one: every try
    to become root is refused (EPERM) and the real, effective and saved users stay the probe's."""
    assert inside["ids before"] == inside["ids"] == [inside["uid"]] * 3
    assert set(inside["become root"].values()) == {"EPERM"}


@needs_the_sandbox
def test_each_limit_is_hard_and_stays_as_the_runner_set_it(inside):
    """Kills a limit set soft only, set above or below the runner's value, or not set (no core dumps
    included): after the probe's tries to lift them, soft equals hard equals the runner's value."""
    expected = {"memory": LIMITS.memory_bytes, "file size": LIMITS.file_bytes, "processes": LIMITS.processes,
                "core": 0}
    assert inside["limits"] == {name: [value, value] for name, value in expected.items()}


@needs_the_sandbox
def test_no_limit_can_be_raised_past_its_hard_limit(inside):
    """Kills a hard limit left unlimited or a probe still privileged: raising a hard limit is refused,
    a soft limit past the hard one is refused, and the soft one may go only up to the hard one."""
    for name, tries in inside["lifted"].items():
        assert tries == {"soft to hard": "done", "soft past hard": "current limit exceeds maximum limit",
                         "soft unlimited": "current limit exceeds maximum limit",
                         "hard up": "not allowed to raise maximum limit",
                         "both unlimited": "not allowed to raise maximum limit"}, name


@needs_the_sandbox
def test_no_file_grows_past_the_file_size_limit(inside):
    """Kills a file-size limit that is missing or off by a byte: a file takes exactly file_bytes, and
    writing one more byte or growing it by one fails with EFBIG."""
    assert inside["file"] == [LIMITS.file_bytes, "EFBIG", "EFBIG"]


@needs_the_sandbox
def test_forking_stops_at_the_process_limit(inside):
    """Kills a process limit that is missing, larger, or left to the probe to raise: with the probe as
    its user's only process, exactly processes - 1 children are forked, then fork fails with EAGAIN."""
    assert inside["forks"] == [LIMITS.processes - 1, "EAGAIN"]


@needs_the_sandbox
def test_threads_count_against_the_process_limit(inside):
    """Kills a fork bomb made of threads: the probe starts exactly processes - 1 threads, then no more."""
    assert inside["threads"] == [LIMITS.processes - 1, "can't start new thread"]


@needs_the_sandbox
def test_mapping_past_the_address_space_fails(inside):
    """Kills an address-space limit that is missing or other than asked: of the room the limit leaves
    the probe's address space (VmSize), all but 16 MiB can be mapped, 16 MiB more cannot (ENOMEM)."""
    assert inside["memory"]["room"] > 64 << 20
    assert (inside["memory"]["less"], inside["memory"]["more"]) == ("done", "ENOMEM")


@needs_the_sandbox
def test_the_home_fills_up_at_its_size(inside):
    """Kills a home that is not a private tmpfs of disk_bytes: files written into it stop with ENOSPC
    after between disk_bytes - file_bytes and disk_bytes bytes."""
    total, refusal = inside["home"]
    assert refusal == "ENOSPC" and LIMITS.disk_bytes - LIMITS.file_bytes <= total <= LIMITS.disk_bytes


@needs_the_sandbox
def test_dev_shm_fills_up_at_its_size(inside):
    """Kills a /dev/shm that is the machine's, or larger than SHM_BYTES: files written into it stop with
    ENOSPC after between SHM_BYTES - file_bytes and SHM_BYTES bytes."""
    total, refusal = inside["shm"]
    assert refusal == "ENOSPC" and sandbox.SHM_BYTES - LIMITS.file_bytes <= total <= sandbox.SHM_BYTES


@needs_the_sandbox
def test_the_shared_scratch_folders_cannot_be_filled(inside):
    """Kills a disk fill through the machine's world-writable folders: writing into any of /tmp,
    /var/tmp and /run/lock (those this machine has) fails, read-only (EROFS)."""
    assert SHARED and inside["shared"] == {folder: "EROFS" for folder in SHARED}
