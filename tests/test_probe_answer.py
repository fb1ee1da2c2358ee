"""
A probe's process ends with its answer (src/grading/sandbox.py, serve):
whether forked from the zygote or spawned as a new interpreter, nothing the
submission registered to run at exit runs after the answer, so nothing it
prints then reaches the test's output.
"""

import os
import textwrap

import pytest

from grading.runner import ProbeRunner

TESTS_FILE = textwrap.dedent('''
    import atexit
    from grading import probe

    @probe
    def answer(sub):
        atexit.register(print, "after the answer", flush=True)
        return 7
''')


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_nothing_registered_runs_after_the_answer(tmp_path, fork):
    (tmp_path / "tests.py").write_text(TESTS_FILE)
    (tmp_path / "package").mkdir()
    (tmp_path / "package" / "__init__.py").write_text("")
    (tmp_path / "work").mkdir()
    grader = ProbeRunner(str(tmp_path / "work"), os.urandom(8).hex(), fork=fork)
    try:
        found = grader.run(str(tmp_path / "package"), str(tmp_path / "tests.py"), "answer", {}, 30)
    finally:
        grader.close()
    assert (found.status, found.value, found.output) == ("ok", 7, "")
