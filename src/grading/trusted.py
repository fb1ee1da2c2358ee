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
"""

import json
import os
import subprocess
import sys

from .sandbox import describe, limit_resources, load_module

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grading.trusted import main; main()"
GRADING_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ERROR_TAIL_CHARS = 3000


class TrustedFailure(Exception):
    """The trusted process did not answer (the reference failed, or it took too long)."""


def run_trusted(module, probe_name, kwargs, reference, runtime, timeout, memory_bytes=4 << 30):
    """probe `probe_name` of the file `module`, run on the reference package with **kwargs in a
    trusted process; its value, or TrustedFailure."""
    request = dict(module=os.path.abspath(module), probe=probe_name, kwargs=kwargs,
                   reference=reference, runtime=runtime, memory_bytes=memory_bytes)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    try:
        done = subprocess.run([sys.executable, "-I", "-c", BOOT, GRADING_ROOT], input=json.dumps(request),
                              capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=os.path.dirname(os.path.abspath(module)))
    except subprocess.TimeoutExpired:
        raise TrustedFailure(f"the reference did not finish {probe_name} within {timeout:.0f} s")
    try:
        message = json.loads(done.stdout)
    except ValueError:
        raise TrustedFailure(f"the reference's process ended without answering (exit status {done.returncode}):\n"
                             + done.stderr[-ERROR_TAIL_CHARS:])
    if not message.get("ok"):
        raise TrustedFailure(message.get("error", "unknown error"))
    return message["value"]


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
