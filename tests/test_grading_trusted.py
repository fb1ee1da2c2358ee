"""
Trusted probes (grading/trusted.py): the reference in a process of its own
that never imports submitted code, with the bundle's decoder first on its path;
during a grading run, that process forked from the run's zygote (its side,
enter, run here in this process).
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from grading import trusted

from grading_helpers import write


REFERENCE_TESTS = textwrap.dedent('''
    import os, sys, time
    from grading import probe

    @probe
    def observe(sub, x):
        print("the reference prints")
        import runtime.decoding
        return {"x": x, "name": sub.NAME, "cwd": os.getcwd(), "runtime": [runtime.WHERE, runtime.decoding.WHERE],
                "env": sorted(k for k in os.environ if k.startswith("GRADER_")),
                "threads": [os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")],
                "bytecode": os.environ.get("PYTHONDONTWRITEBYTECODE"), "isolated": sys.flags.isolated}

    @probe
    def broken(sub):
        raise ValueError("the reference broke")

    @probe
    def hang(sub):
        time.sleep(60)

    @probe
    def vanish(sub):
        sys.stderr.write("going\\n")
        os._exit(3)

    def not_a_probe(sub):
        return 1
''')


def make_reference(root):
    """A reference package that imports a module of its own, and a decoder (runtime/decoding) saying where it is."""
    write(root / "reference" / "__init__.py", "from .names import NAME\n")
    write(root / "reference" / "names.py", "NAME = 'reference'\n")
    write(root / "runtime" / "__init__.py", "WHERE = 'runtime'\n")
    write(root / "runtime" / "decoding" / "__init__.py", "WHERE = 'runtime decoding'\n")


@pytest.fixture
def reference(tmp_path, monkeypatch):
    """
    A tests file, a reference package and a runtime; the trusted process does
    not see MUTANT_UNDER_TEST (under `./run.sh mutate` it runs the original code).
    """
    write(tmp_path / "tests" / "grader.py", REFERENCE_TESTS)
    make_reference(tmp_path)
    started = subprocess.run

    def without_mutant(*args, env=None, **kwargs):
        return started(*args, env={k: v for k, v in env.items() if k != "MUTANT_UNDER_TEST"}, **kwargs)
    monkeypatch.setattr(trusted.subprocess, "run", without_mutant)
    monkeypatch.setenv("GRADER_HIDDEN_DIR", "/bundle")
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONDONTWRITEBYTECODE"):
        monkeypatch.setenv(name, "4")
    return lambda name, timeout=30, **kwargs: trusted.run_trusted(
        str(tmp_path / "tests" / "grader.py"), name, kwargs, str(tmp_path / "reference"), str(tmp_path),
        timeout)


def test_the_reference_answers_from_a_clean_isolated_process(reference, tmp_path):
    found = reference("observe", x=2)
    assert found == {"x": 2, "name": "reference", "cwd": str(tmp_path / "tests"),
                     "runtime": ["runtime", "runtime decoding"], "env": [],
                     "threads": ["1", "1"], "bytecode": "1", "isolated": 1}


def test_a_failing_reference_is_a_trusted_failure(reference):
    with pytest.raises(trusted.TrustedFailure, match=r"(?s)^Traceback.*ValueError: the reference broke\n$"):
        reference("broken")
    with pytest.raises(trusted.TrustedFailure, match=r"^no probe named 'not_a_probe'$"):
        reference("not_a_probe")
    with pytest.raises(trusted.TrustedFailure, match=r"^the reference did not finish hang within 2 s$"):
        reference("hang", timeout=1.5)
    with pytest.raises(trusted.TrustedFailure, match=r"^the reference's process ended without answering "
                                                     r"\(exit status 3\):\ngoing\n$"):
        reference("vanish")


@pytest.mark.parametrize("answer, told", [('{"ok": false}', "unknown error"),
                                          ('{"ok": false, "value": 1, "error": "broke"}', "broke")])
def test_an_answer_not_ok_is_a_failure_even_with_a_value(reference, monkeypatch, answer, told):
    monkeypatch.setattr(trusted.subprocess, "run", lambda args, **kwargs: subprocess.CompletedProcess(
        args, 0, stdout=answer, stderr=""))
    with pytest.raises(trusted.TrustedFailure, match=f"^{told}$"):
        reference("observe", x=1)


def test_trusted_answer_registers_the_reference_and_its_runtime(tmp_path, monkeypatch):
    write(tmp_path / "grader.py", REFERENCE_TESTS)
    make_reference(tmp_path)
    import runtime.decoding  # the project's own, which the reference must not see
    kept = {name: module for name, module in sys.modules.items() if name == "runtime" or name.startswith("runtime.")}
    for name in ("submission", "grader_tests"):
        monkeypatch.setitem(sys.modules, name, sys.modules.get(name))
    monkeypatch.setattr(sys, "path", list(sys.path))
    request = dict(module=str(tmp_path / "grader.py"), reference=str(tmp_path / "reference"),
                   runtime=str(tmp_path), kwargs={"x": 1})
    try:
        found = trusted.answer(dict(request, probe="observe"))
        assert found["ok"] is True and found["value"]["name"] == "reference"
        assert found["value"]["runtime"] == ["runtime", "runtime decoding"] and not hasattr(runtime.decoding, "WHERE")
        assert sys.path[0] == str(tmp_path)
        for name in ("not_a_probe", "missing"):
            assert trusted.answer(dict(request, probe=name, kwargs={})) == {
                "ok": False, "error": f"no probe named {name!r}"}
        failed = trusted.answer(dict(request, probe="broken", kwargs={}, runtime=None))
        assert failed["ok"] is False and failed["error"].endswith("ValueError: the reference broke\n")
    finally:
        for name in [n for n in sys.modules if n == "runtime" or n.startswith("runtime.")]:
            del sys.modules[name]
        sys.modules.update(kept)


def test_trusted_main_answers_alone_on_its_standard_output(tmp_path, monkeypatch):
    request = {"probe": "observe", "memory_bytes": 12345}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(request)))
    limits = []
    monkeypatch.setattr(trusted, "limit_resources", lambda *args: limits.append(args))

    def answer(given):
        os.write(1, b"the reference prints\n")
        return {"ok": True, "value": given["probe"]}
    monkeypatch.setattr(trusted, "answer", answer)
    saved = os.dup(1), os.dup(2)
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            trusted.main()
        finally:
            for fd, original in zip((1, 2), saved):
                os.dup2(original, fd)
                os.close(original)
    assert json.loads((tmp_path / "out").read_text()) == {"ok": True, "value": "observe"}
    assert (tmp_path / "err").read_text() == "the reference prints\n" and limits == [(12345, 1 << 30)]


def test_a_reference_ending_without_an_answer_shows_the_end_of_what_it_wrote(reference, monkeypatch):
    """Kills the start of a long standard error shown instead of its end, where the error is, or a
    tail one character short."""
    written = "Traceback: " + "x" * trusted.ERROR_TAIL_CHARS + "MemoryError\n"
    monkeypatch.setattr(trusted.subprocess, "run", lambda args, **kwargs: subprocess.CompletedProcess(
        args, -9, stdout="", stderr=written))
    with pytest.raises(trusted.TrustedFailure) as caught:
        reference("observe", x=1)
    assert str(caught.value) == ("the reference's process ended without answering (exit status -9):\n"
                                 + written[-trusted.ERROR_TAIL_CHARS:])
    assert str(caught.value).endswith("xMemoryError\n")


class Zygote:
    """Stands in for a grading run's ProbeRunner: records what run_trusted hands it and answers `reply`."""

    def __init__(self, reply):
        self.reply, self.asked = reply, []

    def run_trusted(self, request, timeout, tail_chars):
        self.asked.append((request, timeout, tail_chars))
        return self.reply


def test_a_grading_run_forks_the_trusted_process_from_its_innermost_zygote(reference, monkeypatch, tmp_path):
    """Kills spawning a new interpreter while a zygote forks, asking another of the nested zygotes,
    handing it the request without its environment (or the environment alone), another time limit,
    or a tail other than four error tails."""
    def spawn(*args, **kwargs):
        raise AssertionError("a new interpreter while a zygote forks")
    monkeypatch.setattr(trusted.subprocess, "run", spawn)
    outer, middle, inner = Zygote(None), Zygote(None), Zygote((False, 0, '{"ok": true, "value": 7}', ""))
    with trusted.forked_from(outer), trusted.forked_from(middle), trusted.forked_from(inner):
        assert reference("observe", timeout=12, x=2) == 7
    assert outer.asked == middle.asked == [] and trusted.FORKING == []
    (request, timeout, tail_chars), = inner.asked
    env = request.pop("env")
    assert request == dict(module=str(tmp_path / "tests" / "grader.py"), probe="observe", kwargs={"x": 2},
                           reference=str(tmp_path / "reference"), runtime=str(tmp_path), memory_bytes=4 << 30)
    assert env["OMP_NUM_THREADS"] == "1" and "GRADER_HIDDEN_DIR" not in env and env["PATH"] == os.environ["PATH"]
    assert timeout == 12 and tail_chars == 4 * trusted.ERROR_TAIL_CHARS


class Exited(Exception):
    """Raised by os._exit, stood in for, with the status enter exits with."""


def exit_raising(status):
    raise Exited(status)


def enter(monkeypatch, tmp_path, answer, path):
    """
    trusted.enter run in this process as in a child forked from the zygote, with `path` as sys.path,
    its exit, resource limits and answer stood in for; the environment, folder and torch threads it
    sets are put back after. Returns its exit status, what it wrote on its result pipe, and its limits.
    """
    limits = []
    monkeypatch.setattr(trusted, "limit_resources", lambda *args: limits.append(args))
    monkeypatch.setattr(trusted, "answer", answer)
    monkeypatch.setattr(os, "_exit", exit_raising)
    monkeypatch.setattr(sys, "path", path)
    monkeypatch.chdir(os.getcwd())
    (tmp_path / "tests").mkdir()
    request = dict(module=str(tmp_path / "tests" / "grader.py"), memory_bytes=12345, env={"OMP_NUM_THREADS": "1"})
    environ, threads = dict(os.environ), torch.get_num_threads()
    torch.set_num_threads(2)
    read_end, write_end = os.pipe()
    try:
        with pytest.raises(Exited) as exited:
            trusted.enter(request, write_end)
    finally:
        os.environ.clear()
        os.environ.update(environ)
        torch.set_num_threads(threads)
    with contextlib.suppress(OSError):
        if os.fstat(write_end).st_ino == os.fstat(read_end).st_ino:  # still this pipe's: enter never opened it
            os.close(write_end)
    os.set_blocking(read_end, False)
    with os.fdopen(read_end, "rb") as result:
        written = result.read() or b""
    return exited.value.args[0], written.decode(), limits, request


@pytest.mark.parametrize("zygote_path", [["/zygote/a", "/zygote/b"], None])
def test_a_forked_trusted_process_sets_itself_up_as_a_new_interpreter(monkeypatch, tmp_path, zygote_path):
    """Kills a forked trusted process that keeps the zygote's PYTHONPATH (or its '' entry) on its path, misreads
    an unset PYTHONPATH, keeps the zygote's environment or not the request's, stays in the zygote's folder,
    leaves torch's threads, sets other limits, answers another request, writes no answer or another, or exits
    with a status other than 0."""
    if zygote_path:
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(zygote_path))
    else:
        monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("ZYGOTE_ONLY", "1")
    seen = []

    def answer(given):
        seen.append((given, list(sys.path), dict(os.environ), os.getcwd(), torch.get_num_threads()))
        return {"ok": True, "value": "observed"}
    status, written, limits, request = enter(monkeypatch, tmp_path, answer,
                                             ["", *(zygote_path or []), "/kept", "/kept/too"])
    assert (status, json.loads(written), limits) == (0, {"ok": True, "value": "observed"}, [(12345, 1 << 30)])
    (given, path, environ, cwd, threads), = seen
    assert given is request and path == [trusted.GRADING_ROOT, "/kept", "/kept/too"]
    assert environ == request["env"] and cwd == str(tmp_path / "tests") and threads == 1


def test_a_forked_trusted_process_that_fails_exits_1_with_its_traceback(monkeypatch, tmp_path, capfd):
    """Kills a forked trusted process that fails yet exits 0 (or with no status), or with another status
    than 1, and one that does not print why it failed."""
    def answer(given):
        raise RuntimeError("the probes file broke")
    status, written, limits, request = enter(monkeypatch, tmp_path, answer, ["/kept"])
    assert (status, written) == (1, "")
    assert capfd.readouterr().err.endswith("RuntimeError: the probes file broke\n")
