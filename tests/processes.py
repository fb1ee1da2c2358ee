"""
Processes as /proc shows them, for the tests that kill runs and probes: the
tree a process leads (its descendants, whatever their sessions), a signal
to each process of it, whether a process still runs, and its CPU seconds.
"""

import os


def stat_fields(pid):
    """The fields of /proc/PID/stat after the command name (state, parent, ...)."""
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
        return f.read().rpartition(")")[2].split()


def process_tree(pid):
    """`pid` and every process descended from it. A process group is not enough: torchrun, for one,
    starts each worker in a session of its own."""
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            children.setdefault(int(stat_fields(entry)[1]), []).append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    tree, unseen = [], [pid]
    while unseen:
        tree.append(unseen.pop())
        unseen += children.get(tree[-1], [])
    return tree


def signal_tree(pids, sig):
    """Send `sig` to each of `pids` still there."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def running(pid):
    """Whether process `pid` exists and is not a zombie."""
    try:
        return stat_fields(pid)[0] != "Z"
    except (OSError, IndexError):
        return False


def cpu_seconds(pid):
    """CPU seconds of process `pid` and of the children it has waited for (utime, stime, cutime and
    cstime of /proc); 0 once it is gone."""
    try:
        fields = stat_fields(pid)
    except OSError:
        return 0.0
    return sum(map(int, fields[11:15])) / os.sysconf("SC_CLK_TCK")
