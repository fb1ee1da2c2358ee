"""
Trusted probes: a probe run against the hidden bundle's reference solution in
a process that never imports submitted code.

The process is a new interpreter (`python -I`) of the grading process's own
user (root on the grading server, where submitted code runs as another
user, so it can neither read nor signal this process). It imports the probe's
module, registers the bundle's reference/ as the package `submission` before
anything can import the submitted copy, puts the bundle first on the path
(so its runtime/decoding/, the stages' decoder, is the one imported), runs the probe with the
reference as `sub`, and writes one JSON message on its standard output;
whatever the reference prints goes to standard error.

    request (stdin)   {"module", "probe", "kwargs", "reference", "runtime", "memory_bytes"}
    answer (stdout)   {"ok": true, "value": ...} or {"ok": false, "error": "..."}

The grading process uses it to fingerprint the reference model and to
regenerate predictions from the submitted parameters, which are loaded
with torch.load(..., weights_only=True) and never run as code.

During a grading run (see forked_from) the process is instead forked from
the run's zygote (zygote.py), which has imported torch once and never
imports submitted code; it stays of the grading process's user, sets itself
up as main() does (its folder, one thread, the memory limit) and writes the
same message to a pipe of its own. Where the zygote cannot fork, a new
interpreter answers as above.
"""

import contextlib
import json
import os
import subprocess
import sys
import traceback

from .sandbox import describe, limit_resources, load_module

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grading.trusted import main; main()"
GRADING_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ERROR_TAIL_CHARS = 3000
FORKING = []  # the ProbeRunner whose zygote forks trusted processes, while a grading run has one


@contextlib.contextmanager
def forked_from(runner):
    """While in the block, trusted probes run in processes forked from `runner`'s zygote where it can."""
    FORKING.append(runner)
    try:
        yield
    finally:
        FORKING.remove(runner)


class TrustedFailure(Exception):
    """The trusted process did not answer (the reference failed, or it took too long)."""


def run_trusted(module, probe_name, kwargs, reference, runtime, timeout, memory_bytes=4 << 30):
    """probe `probe_name` of the file `module`, run on the reference package with **kwargs in a
    trusted process; its value, or TrustedFailure."""
    request = dict(module=os.path.abspath(module), probe=probe_name, kwargs=kwargs,
                   reference=reference, runtime=runtime, memory_bytes=memory_bytes)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    forked = FORKING[-1].run_trusted(dict(request, env=env), timeout, 4 * ERROR_TAIL_CHARS) if FORKING else None
    timed_out, returncode, answer_text, errors = forked or spawned(request, env, timeout)
    if timed_out:
        raise TrustedFailure(f"the reference did not finish {probe_name} within {timeout:.0f} s")
    try:
        message = json.loads(answer_text)
    except ValueError:
        raise TrustedFailure(f"the reference's process ended without answering (exit status {returncode}):\n"
                             + errors[-ERROR_TAIL_CHARS:])
    if not message.get("ok"):
        raise TrustedFailure(message.get("error", "unknown error"))
    return message["value"]


def spawned(request, env, timeout):
    """The request answered by a new interpreter: (timed out, exit status, standard output, standard error)."""
    try:
        done = subprocess.run([sys.executable, "-I", "-c", BOOT, GRADING_ROOT], input=json.dumps(request),
                              capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=os.path.dirname(request["module"]))
    except subprocess.TimeoutExpired:
        return True, None, "", ""
    return False, done.returncode, done.stdout, done.stderr


def answer(request):
    """Run the requested probe on the reference; the message for the grading process."""
    probes = load_module("grader_probes", request["module"])
    load_module("submission", os.path.join(request["reference"], "__init__.py"), request["reference"])
    if request.get("runtime"):
        sys.path.insert(0, request["runtime"])
        for name in [m for m in sys.modules if m == "runtime" or m.startswith("runtime.")]:
            del sys.modules[name]  # never the grader's copy: the bundle's decoder
    probe = getattr(probes, request["probe"], None)
    if not getattr(probe, "is_probe", False):
        return {"ok": False, "error": f"no probe named {request['probe']!r}"}
    try:
        return {"ok": True, "value": probe(sys.modules["submission"], **request["kwargs"])}
    except Exception as error:
        return {"ok": False, "error": describe(error)}


def main():
    request = json.loads(sys.stdin.read())
    limit_resources(request["memory_bytes"], 1 << 30)
    result = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what the reference prints goes to standard error
    message = answer(request)
    json.dump(message, result)
    result.close()


def enter(request, result_fd):
    """
    In a process forked from the zygote (its output already on standard output
    and error): set up as main() does (the path, environment, folder, threads
    and limits of a new interpreter), write the message on `result_fd`, and
    exit, never returning.
    """
    try:
        pythonpath = os.environ.get("PYTHONPATH", "").split(os.pathsep)  # the zygote's
        sys.path[:] = [GRADING_ROOT] + [p for p in sys.path if p and p not in pythonpath]  # as -I has it
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(os.path.dirname(request["module"]))
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(1)
        limit_resources(request["memory_bytes"], 1 << 30)
        message = answer(request)
        with os.fdopen(result_fd, "w", encoding="utf-8") as result:
            json.dump(message, result)
        code = 0
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
