"""
What the privileged tests need: root, an unprivileged user, and a Python that
user can read (submitted code runs on it). conftest.py's `readable_python`
fixture builds that Python once per test session with `readable_python()`.

A Python under a folder only root can enter (pyenv under /root, as here) is
of no use to another user, so the Python is either this one, when every user
can already read it and its torch, or a virtual environment made from the
system's python3 in a world-readable folder of its own, with the project's
pinned torch, numpy and tqdm installed into it. The environment is built once
a machine, under CACHE (root's, not writable by others), in a folder named
after the system python's version and the pins, and reused afterwards; a
lock file in CACHE makes test processes running side by side wait for the
one that builds it.
"""

import fcntl
import hashlib
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grading.runner import readable_by

ROOT = Path(__file__).resolve().parents[1]
SYSTEM_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")
RUNTIME_PACKAGES = ("torch", "numpy", "tqdm")
INSTALL_SECONDS = 900
CACHE = "/var/cache/grader-tests"


def user(name):
    """The passwd entry of user `name`, or None."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def missing_privilege(name):
    """Why the privileged tests cannot run as root with user `name`, or None when they can."""
    if os.geteuid() != 0:
        return "needs root (CI and the grading server run as root)"
    if user(name) is None:
        return f"needs a user named {name!r} (useradd {name})"
    return None


def ensure_user(name):
    """Make the unprivileged user `name` (as setup.sh does) when it is absent; needs root."""
    if user(name) is None and os.geteuid() == 0:
        done = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                              capture_output=True, text=True)
        if done.returncode != 0 and user(name) is None:  # not made by a test process running beside this one
            raise RuntimeError(f"useradd {name} failed: {done.stderr.strip()}")
    return user(name)


def runtime_folders(python):
    """The folders of `python`'s standard library and torch package, or None when it has no torch."""
    done = subprocess.run([python, "-c", "import os, torch; print(os.path.dirname(os.__file__)); "
                           "print(os.path.dirname(torch.__file__))"], capture_output=True, text=True)
    return done.stdout.split() if done.returncode == 0 else None


def usable_by(name, python):
    """Whether user `name` can read `python`'s standard library and torch (and so run the grader's probes)."""
    who, folders = user(name), runtime_folders(python)
    return who is not None and folders is not None and all(readable_by(who, f) for f in folders)


def pinned_requirements():
    """The lines of requirements.txt that name the packages submitted code runs on."""
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return [line.strip() for line in lines
            if re.match(r"(%s)\b" % "|".join(RUNTIME_PACKAGES), line.strip())]


def venv_folder(system):
    """Where the environment of `system` python with the current pins lives in the cache."""
    version = subprocess.run([system, "--version"], capture_output=True, text=True).stdout.strip()
    key = hashlib.sha256("\n".join([system, version, *pinned_requirements()]).encode()).hexdigest()[:16]
    return os.path.join(CACHE, f"python-{key}")


def build_venv(folder, system):
    """
    Make the virtual environment at `folder` from `system` python with the
    pinned runtime packages, world-readable; built beside it and renamed into
    place when complete. Raises RuntimeError saying why it could not be built.
    """
    os.makedirs(CACHE, mode=0o755, exist_ok=True)
    os.chmod(CACHE, 0o755)
    partial = tempfile.mkdtemp(prefix="partial-", dir=CACHE)
    steps = ([system, "-m", "venv", partial],
             [os.path.join(partial, "bin", "python"), "-m", "pip", "install", "-q", *pinned_requirements()],
             ["chmod", "-R", "go+rX", partial])
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_SECONDS)
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise RuntimeError(f"{' '.join(step[:4])} failed: {done.stderr.strip()[-300:]}")
    os.rename(partial, folder)


def readable_python(name):
    """
    A Python user `name` can run the grader's probes on: this one, or the
    cached virtual environment (built when absent). Raises RuntimeError when
    none can be had.
    """
    if usable_by(name, sys.executable):
        return sys.executable
    system = next((p for p in SYSTEM_PYTHONS if os.access(p, os.X_OK)), None)
    if system is None:
        raise RuntimeError(f"no system python3 at {' or '.join(SYSTEM_PYTHONS)}")
    folder = venv_folder(system)
    python = os.path.join(folder, "bin", "python")
    os.makedirs(CACHE, mode=0o755, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as lock:  # parallel test workers build it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.isdir(folder):
            build_venv(folder, system)
    if not usable_by(name, python):
        raise RuntimeError(f"user {name} cannot run the virtual environment at {folder}")
    return python
