"""
The inside of the sandbox: what one probe process does.

The process reads the source of the probe's module as the grading process's
user (so a hidden test of the bundle, which the submission's user cannot
read, can send probes too), sets its resource limits, runs that source,
imports the submission package, calls one probe and writes exactly one
message to the private result pipe:

    <run token>\n<JSON {"ok": true, "value": ...} or {"ok": false, "stage": ..., "error": ...}>

then exits at once with os._exit, so nothing the submission registered
(atexit hooks, threads) runs after the answer. Anything the submission
prints goes to standard output and error, which the grading process reads
separately, so printing can never look like an answer.

The process is either forked by the zygote (zygote.py) or a new interpreter
running main(), with the order as JSON on standard input. Both start as the
grading process's user and call enter(), which, when the order names another
user (the grader runs as root with --user), isolates the probe before any
submitted code runs:

- new PID, network and mount namespaces (Linux, where unshare is allowed):
  the process forks once more; the child is the namespace's first process and
  runs the probe, the parent stays outside as root and waits for it. When the
  probe's process ends or is killed, the kernel kills everything left in its
  namespace, so nothing the submission started outlives its test. The
  namespace has no network but a loopback that is down, a /proc of its own
  (the grader's processes are not in it), read-only /tmp, /var/tmp and
  /run/lock, a private size-limited /dev/shm, the package copy mounted
  read-only, and a size-limited private tmpfs as its home (each mount where
  the kernel allows it; the home and package otherwise as below);
- where namespaces are refused, the probe runs in place: its home and package
  copy are handed to the user, and the runner sweeps up its escaped processes;
- then all descriptors but the output and result pipes are closed, the
  groups and user are dropped, and the resource limits set (address space,
  file size, processes of the user, no core dumps).
"""

import ctypes
import importlib.machinery
import importlib.util
import json
import os
import shutil
import signal
import sys
import traceback
import types

try:
    import resource
except ImportError:  # not a POSIX system: no limits but the wall clock
    resource = None

ERROR_CHARS = 6000
CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
PR_SET_PDEATHSIG = 1
NAMESPACES_ENV = "GRADER_NAMESPACES"  # "0": never make namespaces (to try the fallback where they work)
READ_ONLY_SHARED = ("/tmp", "/var/tmp", "/run/lock")  # world-writable folders, read-only in a probe's namespace
SHM_BYTES = 64 << 20


def libc():
    """The C library, for the system calls Python 3.11 lacks (prctl, mount, unshare)."""
    return ctypes.CDLL(None, use_errno=True)


def die_with_parent(sig):
    """Have the kernel send `sig` to this process when its parent ends (Linux's parent-death signal)."""
    try:
        libc().prctl(PR_SET_PDEATHSIG, sig)
    except (OSError, AttributeError):
        pass


def mount(source, target, fstype, flags, data=None):
    """mount(2); raises OSError on failure."""
    encoded = [None if v is None else v.encode() for v in (source, target, fstype, data)]
    if libc().mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {target}: {os.strerror(error)}")


def unshare_namespaces():
    """Enter new mount and network namespaces; children go into a new PID namespace. False if refused."""
    if os.environ.get(NAMESPACES_ENV) == "0":
        return False
    try:
        return libc().unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET) == 0
    except (OSError, AttributeError):
        return False


def namespaces_work():
    """Whether this process may make the namespaces isolate() uses (tried in a child that exits at once)."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return False
    child = os.fork()
    if child == 0:
        os._exit(0 if unshare_namespaces() else 1)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status) == 0


def supervise(child):
    """
    Outside the namespace, as root: wait for the probe's process and exit as
    it did. SIGTERM (from the runner, or the parent-death signal) kills it,
    and with it the whole namespace.
    """
    signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGKILL))
    die_with_parent(signal.SIGTERM)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        if -code != signal.SIGKILL:  # SIGKILL's handler cannot be set, and is the default
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def try_mount(*args):
    """mount(*args); whether it worked."""
    try:
        mount(*args)
        return True
    except OSError:
        return False


def private_mounts(order):
    """
    In the new mount namespace: our own /proc, shared scratch read-only, a
    private /dev/shm, the home and the package copy. Each step is tried on its
    own; where the home or the package cannot be mounted, hand_over() puts
    them in place on disk instead.
    """
    if not try_mount(None, "/", None, MS_REC | MS_PRIVATE):
        return hand_over(order)
    try_mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for folder in READ_ONLY_SHARED:
        if os.path.isdir(folder) and try_mount(folder, folder, None, MS_BIND | MS_REC):
            try_mount(None, folder, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    if os.path.isdir("/dev/shm"):
        try_mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={SHM_BYTES},mode=1777")
    home = try_mount("tmpfs", order["home"], "tmpfs", MS_NOSUID | MS_NODEV,
                     f"size={order['disk_bytes']},mode=0700,uid={order['uid']},gid={order['gid']}")
    if not (home and try_mount(order["copy"], order["package"], None, MS_BIND | MS_REC)):
        return hand_over(order)
    try_mount(None, order["package"], None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def hand_over(order):
    """Without namespaces: move the package copy into place and give it and the home to the user."""
    os.rmdir(order["package"])
    shutil.move(order["copy"], order["package"])
    for folder in (order["package"], order["home"]):
        for root, dirs, files in os.walk(folder):
            for name in [root] + [os.path.join(root, f) for f in dirs + files]:
                os.chown(name, order["uid"], order["gid"])


def close_other_descriptors(keep):
    """Close every descriptor but 0, 1, 2 and `keep`, so the submission inherits nothing else."""
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))


def isolate(order, result_fd):
    """
    Become the process that runs the probe as order["uid"]: in namespaces of
    its own when the kernel allows (this process then stays outside and
    supervises), else in place.
    """
    if unshare_namespaces():
        child = os.fork()
        if child:
            os.close(result_fd)
            supervise(child)
        private_mounts(order)
    else:
        hand_over(order)
    os.chdir(order["home"])
    close_other_descriptors(result_fd)
    os.setgroups([])
    os.setgid(order["gid"])
    os.setuid(order["uid"])
    die_with_parent(signal.SIGKILL)  # after setuid, which clears it


def read_source(path):
    """The text of the probe's module, or None when it cannot be read (answer() then says so)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def enter(order, result_fd):
    """Run the probe of `order` (isolated when it names a user), answer on `result_fd`, end the process."""
    order["request"]["source"] = read_source(order["request"]["module"])
    os.environ.update(HOME=order["home"], TMPDIR=order["home"])
    if order.get("uid") is not None:
        isolate(order, result_fd)
    else:
        os.chdir(order["home"])
    serve(order["request"], result_fd)


def limit_resources(memory_bytes, file_bytes, processes=None):
    """Cap the address space (memory), the size of any file written and, if given, the user's processes."""
    if resource is None:
        return
    limits = [(resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_FSIZE, file_bytes), (resource.RLIMIT_CORE, 0)]
    if processes is not None:
        limits.append((resource.RLIMIT_NPROC, processes))
    for limit, value in limits:
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):  # some systems (macOS) refuse an address-space limit
            pass


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles a file from its text at every import: no bytecode cache is read or written beside it.
    A cache is trusted by its source's size and mtime in whole seconds, so a file rewritten within
    the same second at the same size would otherwise run its old code."""

    def get_code(self, fullname):
        return self.source_to_code(self.get_data(self.path), self.path)


def load_module(name, path, package_dir=None):
    """Import the file at `path`, compiled from its text (SourceOnlyLoader), as module `name` (as a
    package rooted at package_dir if given)."""
    spec = importlib.util.spec_from_file_location(
        name, path, loader=SourceOnlyLoader(name, path),
        submodule_search_locations=[package_dir] if package_dir else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_source(name, path, source):
    """Run `source`, the text of the file at `path`, as module `name`."""
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def describe(error):
    """A traceback of `error` without this file's frames, cut to its last ERROR_CHARS characters."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if os.path.abspath(frame.filename) != os.path.abspath(__file__)]
    text = ("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
            + "".join(traceback.format_exception_only(type(error), error)))
    return text if len(text) <= ERROR_CHARS else "...\n" + text[-ERROR_CHARS:]


def answer(request):
    """Run the requested probe and return the message for the grading process."""
    if request["source"] is None:
        return {"ok": False, "stage": "grader", "error": f"cannot read the probe's module {request['module']}"}
    probes = load_source("grader_probes", request["module"], request["source"])
    probe = getattr(probes, request["probe"], None)
    if not getattr(probe, "is_probe", False):
        return {"ok": False, "stage": "grader", "error": f"no probe named {request['probe']!r}"}
    try:
        package = load_module("submission", os.path.join(request["package_dir"], "__init__.py"),
                              request["package_dir"])
    except BaseException as error:
        return {"ok": False, "stage": "import", "error": describe(error)}
    try:
        value = probe(package, **request["kwargs"])
        return {"ok": True, "value": value}
    except BaseException as error:
        return {"ok": False, "stage": "probe", "error": describe(error)}


def serve(request, result_fd):
    """Answer `request` on `result_fd` and end the process."""
    limit_resources(request["memory_bytes"], request["file_bytes"], request.get("processes"))
    try:
        message = json.dumps(answer(request))
    except BaseException as error:
        message = json.dumps({"ok": False, "stage": "answer", "error": describe(error)})
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    data = (request["token"] + "\n" + message).encode("utf-8")
    while data:
        data = data[os.write(result_fd, data):]
    os.close(result_fd)
    os._exit(0)


def main():
    order = json.loads(sys.stdin.read())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    die_with_parent(signal.SIGTERM)
    enter(order, order["result_fd"])


if __name__ == "__main__":
    main()
