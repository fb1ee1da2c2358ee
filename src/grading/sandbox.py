"""
The inside of the sandbox: what one probe process does.

The process sets its resource limits, loads the tests module, imports the
submission package, calls one probe and writes exactly one message to the
private result pipe:

    <run token>\n<JSON {"ok": true, "value": ...} or {"ok": false, "stage": ..., "error": ...}>

then exits at once with os._exit, so nothing the submission registered
(atexit hooks, threads) runs after the answer. Anything the submission
prints goes to standard output and error, which the grading process reads
separately, so printing can never look like an answer.

The process is either forked by the zygote (zygote.py) or a new interpreter
running main(), with the request as JSON on standard input.
"""

import importlib.util
import json
import os
import sys
import traceback

try:
    import resource
except ImportError:  # not a POSIX system: no limits but the wall clock
    resource = None

ERROR_CHARS = 6000


def limit_resources(memory_bytes, file_bytes):
    """Cap the address space (memory) and the size of any file written; no core dumps."""
    if resource is None:
        return
    for limit, value in ((resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_FSIZE, file_bytes),
                         (resource.RLIMIT_CORE, 0)):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):  # some systems (macOS) refuse an address-space limit
            pass


def load_module(name, path, package_dir=None):
    """Import the file at `path` as module `name` (as a package rooted at package_dir if given)."""
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[package_dir] if package_dir else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
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
    tests = load_module("grader_tests", request["tests_file"])
    probe = getattr(tests, request["probe"], None)
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
    limit_resources(request["memory_bytes"], request["file_bytes"])
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
    request = json.loads(sys.stdin.read())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    serve(request, request["result_fd"])


if __name__ == "__main__":
    main()
