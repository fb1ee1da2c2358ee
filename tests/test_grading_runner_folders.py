"""
The folders and the environment the runner gives a probe (grading/runner.py):
an environment that hides the bundle and pins threads, a fresh copy of the
package without outputs for each probe (files for links, and a private copy
handed over to another user), and who may read a path by its permission
bits.
"""

import os
import pwd
import shutil
import tempfile
import types
from pathlib import Path

import pytest

from grading import runner
from grading.runner import Limits, ProbeRunner

from grading_helpers import runner_for, write


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


@pytest.fixture
def no_umask():
    """A umask of 0 for the test, so that a folder made with mkdir's default mode shows as 0777."""
    before = os.umask(0)
    yield
    os.umask(before)


def test_a_probe_for_another_user_is_prepared_for_the_handover(tmp_path, no_umask):
    """Its folders have the modes they are given whatever the umask: kills a mount point made with
    mkdir's default mode, which a umask of 022 turns into 0755 too, but one of 0 leaves writable by all."""
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
