"""
The inside of a probe process (grading/sandbox.py), run here, in a child
forked for the test, or spawned as the runner spawns it: the answer and the
stage it names, the traceback sent back (its end kept, the sandbox's own
frames left out), the one message on the result pipe and what is printed
before it, the descriptors a probe keeps, its empty standard input, its
resource limits, its home, the supervisor's exit, and the hand-over of the
package and home where there are no namespaces. (The isolation as another
user, in namespaces: tests/test_sandbox_isolation.py and
tests/test_sandbox_limits.py.)
"""

import io
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grading import sandbox

from grading_helpers import write

PROBES = textwrap.dedent('''
    import os, sys
    from grading import probe

    @probe
    def value(sub, x):
        return {"x": x, "name": sub.NAME}

    @probe
    def fails(sub):
        raise ValueError("the probe failed")

    @probe
    def exits(sub):
        sys.exit(3)

    @probe
    def a_set(sub):
        return {1, 2}

    @probe
    def a_loop(sub):
        loop = []
        loop.append(loop)
        return loop

    @probe
    def prints(sub):
        print("printed just before the answer")
        return 1

    @probe
    def where(sub):
        return {"cwd": os.getcwd(), "home": os.environ["HOME"], "tmp": os.environ["TMPDIR"]}

    def not_a_probe(sub):
        return 1
''')


def raised(message):
    """A ValueError(message) with its traceback."""
    try:
        raise ValueError(message)
    except ValueError as error:
        return error


# ---- the traceback sent back ----------------------------------------------------------------------

def test_a_traceback_up_to_its_cap_is_whole_and_a_longer_one_keeps_its_end():
    """Kills a long traceback cut to its start (losing the error line at its end), or one exactly at the
    cap cut."""
    short = sandbox.describe(raised("x"))
    assert short.startswith("Traceback (most recent call last):\n") and short.endswith("ValueError: x\n")

    def whole(message):
        return short.replace("ValueError: x\n", f"ValueError: {message}\n")
    fits = "y" * (sandbox.ERROR_CHARS - len(short) + 1)  # a message that makes the traceback exactly the cap
    assert len(whole(fits)) == sandbox.ERROR_CHARS and sandbox.describe(raised(fits)) == whole(fits)
    longer = "<start>" + fits + "<end>"
    assert sandbox.describe(raised(longer)) == "...\n" + whole(longer)[-sandbox.ERROR_CHARS:]
    assert sandbox.describe(raised(longer)).endswith("y<end>\n")


@pytest.fixture
def probes(tmp_path, monkeypatch):
    """A probes file and a one-line package; sys.modules gets back its submission and probes afterwards."""
    write(tmp_path / "probes.py", PROBES)
    write(tmp_path / "package" / "__init__.py", "NAME = 'pkg'\n")
    for name in ("submission", "grader_probes"):
        monkeypatch.setitem(sys.modules, name, sys.modules.get(name))
    return tmp_path


def request(folder, probe, **kwargs):
    path = str(folder / "probes.py")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    return dict(module=path, source=source, probe=probe, kwargs=kwargs, package_dir=str(folder / "package"))


def test_the_answer_names_the_stage_that_failed(probes):
    """Kills a SystemExit in the probe or at import leaving no answer, and an unreadable probes file or a
    function that is not a probe told otherwise."""
    assert sandbox.answer(request(probes, "value", x=2)) == {"ok": True, "value": {"x": 2, "name": "pkg"}}
    exited = sandbox.answer(request(probes, "exits"))
    assert (exited["ok"], exited["stage"]) == (False, "probe") and exited["error"].endswith("SystemExit: 3\n")
    for name in ("not_a_probe", "missing"):
        assert sandbox.answer(request(probes, name)) == {"ok": False, "stage": "grader",
                                                         "error": f"no probe named {name!r}"}
    unread = dict(request(probes, "value", x=1), source=None)
    assert sandbox.answer(unread) == {"ok": False, "stage": "grader",
                                      "error": f"cannot read the probe's module {unread['module']}"}
    for init, told in (("raise ImportError('no torch')\n", "ImportError: no torch\n"),
                       ("raise SystemExit(2)\n", "SystemExit: 2\n")):
        write(probes / "package" / "__init__.py", init)
        failed = sandbox.answer(request(probes, "value", x=1))
        assert (failed["ok"], failed["stage"]) == (False, "import") and failed["error"].endswith(told)


def test_a_probes_traceback_shows_its_frames_but_not_the_sandboxs(probes):
    failed = sandbox.answer(request(probes, "fails"))
    assert (failed["ok"], failed["stage"]) == (False, "probe")
    assert f'File "{probes / "probes.py"}", line 11, in fails' in failed["error"]
    assert "sandbox.py" not in failed["error"] and failed["error"].endswith("ValueError: the probe failed\n")


# ---- in a child forked for the test ---------------------------------------------------------------

def in_child(action):
    """What action(result_fd) writes to its pipe in a forked child, and how the child ended."""
    read, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            action(write_end)
        finally:
            os._exit(99)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    return b"".join(chunks), os.waitstatus_to_exitcode(status)


def served(folder, probe, kwargs=None, stdout=None, **order):
    """The token line and the message a probe process sends, run by sandbox.enter in a forked child."""
    def enter(result_fd):
        if stdout is not None:
            os.dup2(stdout, 1)
            sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False))  # buffered: flushed only by the sandbox
        full = dict(request(folder, probe, **(kwargs or {})), token="t0ken", memory_bytes=64 << 30,
                    file_bytes=1 << 30, processes=None)
        del full["source"]
        sandbox.enter(dict(order, request=full), result_fd)
    data, code = in_child(enter)
    token, _, message = data.partition(b"\n")
    return token, json.loads(message), code


def test_a_probe_answers_once_with_the_token_and_exits_at_once(probes):
    assert served(probes, "value", {"x": 2}, home=str(probes)) == (b"t0ken", {"ok": True, "value": {"x": 2,
                                                                                                "name": "pkg"}}, 0)


@pytest.mark.parametrize("probe, told", [("a_set", "TypeError: Object of type set is not JSON serializable\n"),
                                         ("a_loop", "ValueError: Circular reference detected\n")])
def test_a_value_that_is_not_json_is_still_answered(probes, probe, told):
    """Kills a probe's value that JSON cannot hold (whatever the error says so) ending the process
    without an answer."""
    token, message, code = served(probes, probe, home=str(probes))
    assert (token, message["ok"], message["stage"], code) == (b"t0ken", False, "answer", 0)
    assert message["error"].endswith(told)


def test_what_the_probe_printed_is_flushed_before_the_answer(probes):
    """Kills the submission's last buffered lines lost at the probe's immediate exit."""
    read, write_end = os.pipe()
    assert served(probes, "prints", stdout=write_end, home=str(probes))[1] == {"ok": True, "value": 1}
    os.close(write_end)
    assert os.read(read, 1000) == b"printed just before the answer\n"
    os.close(read)


def test_a_probe_for_ourselves_runs_in_its_home(probes):
    """Kills a probe run in the grader's folder, or with the grader's HOME or TMPDIR."""
    home = probes / "home"
    home.mkdir()
    _, message, _ = served(probes, "where", home=str(home))
    assert message == {"ok": True, "value": {"cwd": str(home), "home": str(home), "tmp": str(home)}}


def open_descriptors():
    """The descriptors from 3 to 255 this process has open."""
    found = []
    for fd in range(3, 256):
        try:
            os.fstat(fd)
            found.append(fd)
        except OSError:
            pass
    return found


def test_a_probe_keeps_only_the_standard_descriptors_and_its_result_pipe():
    """Kills the descriptor just below or just above the result pipe's left open."""
    def keeps(result_fd):
        for fd in (49, 50, 51):
            os.dup2(result_fd, fd)
        sandbox.close_other_descriptors(50)
        os.write(50, json.dumps([open_descriptors(), [os.fstat(fd) is not None for fd in (0, 1, 2)]]).encode())
    found, standard = json.loads(in_child(keeps)[0])
    assert found == [50] and standard == [True] * 3


def test_each_limit_is_set_soft_and_hard():
    """Kills a limit set soft only, or not set (no core dumps included), and a process cap set where none
    is asked."""
    limits = {"memory": resource.RLIMIT_AS, "file": resource.RLIMIT_FSIZE, "processes": resource.RLIMIT_NPROC,
              "core": resource.RLIMIT_CORE}

    def limited(processes):
        def action(result_fd):
            sandbox.limit_resources(64 << 30, 5 << 20, processes)
            os.write(result_fd, json.dumps({k: resource.getrlimit(v) for k, v in limits.items()}).encode())
        return json.loads(in_child(action)[0])
    assert limited(77) == {"memory": [64 << 30] * 2, "file": [5 << 20] * 2, "processes": [77, 77], "core": [0, 0]}
    assert limited(None)["processes"] == list(resource.getrlimit(resource.RLIMIT_NPROC))


@pytest.mark.parametrize("ending, status", [(lambda: os._exit(3), 3),
                                            (lambda: os.kill(os.getpid(), signal.SIGKILL), -signal.SIGKILL),
                                            (lambda: os.kill(os.getpid(), signal.SIGTERM), -signal.SIGTERM)],
                         ids=["exit", "SIGKILL", "SIGTERM"])
def test_the_supervisor_ends_as_the_probe_did(ending, status):
    """Kills a probe killed by a signal told as an exit code by the supervisor outside its namespace (or,
    for SIGKILL, whose handler cannot be set, as the supervisor's own failure)."""
    def supervises(result_fd):
        child = os.fork()
        if child == 0:
            ending()
        sandbox.supervise(child)
    assert in_child(supervises) == (b"", status)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (CI and the grading server run as root)")
def test_without_namespaces_the_package_and_home_are_handed_to_the_user(tmp_path):
    """Kills the package copy or the home (or anything in them) left to root."""
    write(tmp_path / "private" / "submission" / "sub" / "model.py", "x")
    (tmp_path / "submission").mkdir()
    write(tmp_path / "home" / "notes", "n")
    sandbox.hand_over(dict(package=str(tmp_path / "submission"), copy=str(tmp_path / "private" / "submission"),
                           home=str(tmp_path / "home"), uid=4321, gid=8765))
    assert os.listdir(tmp_path / "private") == [] and os.listdir(tmp_path / "submission") == ["sub"]
    owners = {(os.lstat(os.path.join(root, name)).st_uid, os.lstat(os.path.join(root, name)).st_gid)
              for folder in ("submission", "home") for root, dirs, files in os.walk(tmp_path / folder)
              for name in [""] + dirs + files}
    assert owners == {(4321, 8765)}


def test_a_module_is_loaded_as_its_text_says_not_as_a_cached_compilation(tmp_path, monkeypatch):
    """Kills a load_module that reads or writes a bytecode cache beside the file (a hidden bundle's tests and
    reference, a hand-in): a cache is trusted by its source's size and whole-second mtime, so a file rewritten
    at the same size within one second would run its old code."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as in a process started without PYTHONDONTWRITEBYTECODE
    path = tmp_path / "package" / "__init__.py"
    for value in ("1", "2"):
        write(path, f"VALUE = {value}\n")
        os.utime(path, (1_700_000_000, 1_700_000_000))
        monkeypatch.delitem(sys.modules, "cached_or_not", raising=False)
        module = sandbox.load_module("cached_or_not", str(path), str(path.parent))
        assert module.VALUE == int(value) and module.__path__ == [str(path.parent)]
    assert os.listdir(path.parent) == ["__init__.py"]


def test_a_spawned_probes_standard_input_is_empty(probes):
    """Kills the order's pipe (or whatever the grader had) left as the submission's standard input."""
    write(probes / "probes.py", PROBES + textwrap.dedent('''
        @probe
        def reads(sub):
            return os.path.samestat(os.fstat(0), os.stat(os.devnull))
    '''))
    read, write_end = os.pipe()
    order = dict(home=str(probes), result_fd=write_end,
                 request=dict(request(probes, "reads"), token="t0ken", memory_bytes=64 << 30, file_bytes=1 << 30,
                              processes=None))
    del order["request"]["source"]
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(sandbox.__file__)))
    process = subprocess.Popen([sys.executable, "-c", "from grading.sandbox import main; main()"],
                               stdin=subprocess.PIPE, pass_fds=(write_end,), env=env)
    os.close(write_end)
    process.communicate(json.dumps(order).encode("utf-8"), timeout=60)
    with os.fdopen(read, "rb") as answer:
        assert answer.read() == b't0ken\n{"ok": true, "value": true}'


def test_dev_shm_is_the_size_the_threat_model_gives():
    text = (Path(__file__).resolve().parents[1] / "docs" / "threat-model.md").read_text(encoding="utf-8")
    assert f"a {sandbox.SHM_BYTES >> 20} MiB private `/dev/shm`" in text
