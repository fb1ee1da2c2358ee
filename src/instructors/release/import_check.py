"""
Whether the modules of a starter import, asked of a child forked from this
process rather than of a new interpreter, which would import torch again:
seconds of CPU a release, where the release has imported torch already.

The child imports them as `python -c "import MODULE, ..."` run in the
starter with PYTHONPATH=src would: it first forgets every module that is
not of the standard library or an installed package (this repository's
own, which the starter may lack, above all), then finds modules in the
starter, its src/ and the installed places only, writing no bytecode; its
output goes nowhere, and an exception at import, SystemExit too, is a
failure. Python forks safely with torch loaded on Linux only (FORK):
elsewhere checks.import_failure starts a new interpreter.
"""

import functools
import importlib
import os
import site
import sys
import sysconfig
import traceback

FORK = sys.platform.startswith("linux")


def installed_places():
    """The folders of the standard library and of installed packages, resolved, as a sorted tuple."""
    places = {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    places.update(site.getsitepackages())
    places.add(site.getusersitepackages())
    return tuple(sorted({os.path.realpath(place) for place in places if place}))


def within(path, places):
    """Whether `path` lies in one of `places` (resolved folders)."""
    path = os.path.realpath(path)
    return any(os.path.commonpath([path, place]) == place for place in places)


@functools.lru_cache(maxsize=None)
def folder_within(folder, places):
    """within(folder, places), remembered: a process's thousands of modules lie in a few hundred folders."""
    return within(folder, places)


def is_installed(module, places):
    """Whether the folders `module` was loaded from all lie in `places` (a built-in one has none)."""
    folders = [os.path.dirname(module.__file__)] if getattr(module, "__file__", None) \
        else list(getattr(module, "__path__", []))
    return all(folder_within(folder, places) for folder in folders)


def import_as_a_new_interpreter(tree, modules):
    """In the forked child: forget the modules a new interpreter would not have, then import `modules` from
    `tree` as it would."""
    places = installed_places()
    for name, module in list(sys.modules.items()):
        if name != "__main__" and not is_installed(module, places):
            del sys.modules[name]
    os.chdir(tree)
    sys.path[:] = ["", os.path.join(tree, "src")] + [path for path in sys.path if path and within(path, places)]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    sys.dont_write_bytecode = True
    for name in modules:
        importlib.import_module(name)


def forked_failure(tree, modules):
    """None when `modules` import in a forked child as in a new interpreter, else the error's last line."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: it reports through the pipe and exits, whatever happens
        try:
            os.close(read_end)
            nowhere = open(os.devnull, "w")
            os.dup2(nowhere.fileno(), 1)
            os.dup2(nowhere.fileno(), 2)
            sys.stdout = sys.stderr = nowhere  # this process may write through other files than 1 and 2 (pytest's)
            import_as_a_new_interpreter(tree, modules)
            os._exit(0)
        except BaseException as error:  # SystemExit too: the starter does not import
            line = traceback.format_exception_only(error)[-1].strip()
            os.write(write_end, line.encode("utf-8", "backslashreplace"))  # as Python's standard error writes it
        finally:
            os._exit(1)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        complaint = pipe.read().decode("utf-8")
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return None if status == 0 else complaint or f"exit status {status}"
