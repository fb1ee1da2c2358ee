"""
Each test's CPU seconds (user + system) as its property cpu_seconds, in a
--junitxml file of the run: its process's and those of the processes it
waited for (and of the zygotes the worker's zygote parent forked, and of
the processes its fork server forked: tests/forked_runs.py), its
fixtures' set-up and tear-down included (tests/conftest.py takes these
hooks; `python3 -m instructors.suite_costs FILE` sums them a file).
"""

import resource

import pytest

from forked_runs import server_cpu_seconds
from zygote_parents import parent_cpu_seconds


def cpu_seconds():
    """CPU seconds of this process, of the child processes it has waited for, of its zygote parent's
    zygotes (tests/zygote_parents.py) and of its fork server's processes (tests/forked_runs.py)."""
    mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime + parent_cpu_seconds()
            + server_cpu_seconds())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item.cpu_started = cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield
    item.user_properties.append(("cpu_seconds", round(cpu_seconds() - item.cpu_started, 2)))
