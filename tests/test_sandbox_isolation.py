"""
A probe run as another user (src/grading/sandbox.py), forked from a real
zygote as `grader.py --user` runs it as root: the probe is that user with no
supplementary group, the first process of a PID namespace whose /proc shows
it alone, without network, with /tmp read-only and its package copy mounted
read-only (without the package's symbolic links), under the memory limit,
holding none of the zygote's descriptors, and nothing it registered runs
after its answer; its probe comes from a tests file only root may read (a
bundle's hidden tests), read before the probe drops to the user. Needs root, a user `nobody` and namespaces (skips
otherwise). The zygote's Python need not be readable by that user: the
probe runs in the zygote's forked copy and imports only what it has loaded.
"""

import os
import pwd
import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest

from grading import sandbox
from grading.runner import Limits, ProbeRunner

SECRET = "only root may read this"
MEMORY_BYTES = 1 << 30

TESTS_FILE = textwrap.dedent('''
    import atexit, errno, os, resource, socket
    from grading import probe

    def failure(action):
        """The errno name `action` fails with, or 'done'."""
        try:
            action()
            return "done"
        except OSError as error:
            return errno.errorcode[error.errno]

    def write_tmp():
        with open(f"/tmp/probe-{os.getpid()}-{os.getuid()}", "w") as f:
            f.write("x")

    def inherited():
        """What can be read from every descriptor but the standard ones."""
        text = b""
        for fd in range(3, 256):
            try:
                text += os.pread(fd, 1000, 0)
            except OSError:
                pass
        return text.decode("utf-8", "replace")

    def package_mount(package):
        with open("/proc/self/mounts") as f:
            return [line.split()[3].split(",")[0] for line in f if line.split()[1] == package]

    @probe
    def inside(sub, secret):
        atexit.register(print, "after the answer", flush=True)
        package = os.path.dirname(sub.__file__)
        return {"ids": [os.getuid(), os.getgid(), os.getgroups()], "pid": os.getpid(),
                "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                "network": failure(lambda: socket.socket().connect((b"127.0.0.1", 9))),  # bytes: no idna
                "tmp": failure(write_tmp), "secret": failure(lambda: open(secret).read()),
                "inherited": inherited(), "package": sorted(os.listdir(package)),
                "package mount": package_mount(package),
                "memory": resource.getrlimit(resource.RLIMIT_AS)[0]}
''')


def missing():
    """Why these tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (CI and the grading server run as root)"
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        return "needs a user named nobody"
    if not sandbox.namespaces_work():
        return "needs PID, network and mount namespaces"
    return None


pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))


@pytest.fixture
def world_readable(monkeypatch):
    """A folder every user may enter (pytest's own temporary folders are root's alone), on PYTHONPATH."""
    folder = Path(tempfile.mkdtemp(prefix="isolation-"))
    os.chmod(folder, 0o755)
    monkeypatch.setenv("PYTHONPATH", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_probe_for_another_user_is_isolated(world_readable):
    folder = world_readable
    (folder / "tests.py").write_text(TESTS_FILE)
    os.chmod(folder / "tests.py", 0o600)  # as a bundle's hidden tests: read before the probe becomes the user
    (folder / "secret.txt").write_text(SECRET)
    os.chmod(folder / "secret.txt", 0o600)
    (folder / "holds_a_secret.py").write_text(f"SECRET = open({str(folder / 'secret.txt')!r})\n")  # the zygote's
    (folder / "package").mkdir()
    (folder / "package" / "__init__.py").write_text("")
    os.symlink(folder / "secret.txt", folder / "package" / "answers.py")
    (folder / "work").mkdir()
    nobody = pwd.getpwnam("nobody")
    grader = ProbeRunner(str(folder / "work"), os.urandom(8).hex(),
                     Limits(memory_bytes=MEMORY_BYTES), user=nobody, preload=["holds_a_secret"], fork=True)
    groups = os.getgroups()
    os.setgroups([0])  # the zygote's supplementary groups, as a grader's root may have them
    try:
        grader.warm_up()
        os.setgroups(groups)
        found = grader.run(str(folder / "package"), str(folder / "tests.py"), "inside",
                           {"secret": str(folder / "secret.txt")}, 60)
    finally:
        os.setgroups(groups)
        grader.close()
    assert (found.status, found.reason, found.output) == ("ok", "", "")
    value = found.value
    assert value["ids"] == [nobody.pw_uid, nobody.pw_gid, []]
    assert value["pid"] == 1 and value["processes"] == [1]
    assert value["network"] == "ENETUNREACH" and value["tmp"] == "EROFS" and value["secret"] == "EACCES"
    assert SECRET not in value["inherited"]
    assert value["package"] == ["__init__.py"] and value["package mount"] == ["ro"]
    assert value["memory"] == MEMORY_BYTES
