"""
The suite's cost accounting: tests/cpu_costs.py records each test's CPU
seconds, its child processes' included, and instructors.suite_costs sums a
run's junit XML a test file, most CPU first.
"""

import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from instructors import suite_costs

TESTS = Path(__file__).resolve().parent
BURN = "import time\nstart = time.process_time()\nwhile time.process_time() - start < 0.3:\n    pass\n"

RUN = textwrap.dedent('''
    <testsuites><testsuite name="pytest">
    <testcase classname="tests.test_a" name="test_one@test_a.py" time="2.5">
      <properties><property name="cpu_seconds" value="1.25" /></properties></testcase>
    <testcase classname="tests.test_a" name="test_two@test_a.py" time="0.5">
      <properties><property name="other" value="9" /><property name="cpu_seconds" value="0.5" /></properties>
    </testcase>
    <testcase classname="tests.test_b" name="test_three" time="4.0">
      <properties><property name="cpu_seconds" value="3.0" /></properties></testcase>
    <testcase classname="tests.test_c" name="test_four" time="7.0" />
    </testsuite></testsuites>
''')


def test_each_tests_cpu_seconds_count_its_own_work_and_its_childrens_but_not_its_waits(tmp_path):
    """Kills a recording of wall time for CPU time, of the process alone without the children it
    waited for, or none at all: a test that burns 0.3 CPU-seconds, one whose child does, one that sleeps."""
    (tmp_path / "test_burning.py").write_text(
        f"import subprocess, sys, time\n\nBURN = {BURN!r}\n\n\n"
        "def test_burns():\n    exec(BURN)\n\n\n"
        "def test_its_child_burns():\n    subprocess.run([sys.executable, '-c', BURN], check=True)\n\n\n"
        "def test_sleeps():\n    time.sleep(0.5)\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the run's root here, not the repository's settings
    xml_path = tmp_path / "run.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "cpu_costs",
                           f"--junitxml={xml_path}", "test_burning.py"],
                          cwd=tmp_path, env={"PYTHONPATH": f"{TESTS}:{TESTS.parent / 'src'}", "PATH": ""},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    seconds = {case.get("name"): [float(p.get("value")) for p in case.iter("property") if p.get("name") == "cpu_seconds"]
               for case in ElementTree.parse(xml_path).getroot().iter("testcase")}
    (burns,), (child,), (sleeps,) = seconds["test_burns"], seconds["test_its_child_burns"], seconds["test_sleeps"]
    assert burns >= 0.3 and child >= 0.3 and sleeps < 0.2, seconds


def test_a_runs_costs_are_summed_a_file_and_tabled_most_cpu_first(tmp_path):
    """Kills a file's tests not summed (the last kept), the worker's seconds taken for CPU, another
    property counted, a file without the property left out, and rows in another order."""
    xml_path = tmp_path / "run.xml"
    xml_path.write_text(RUN)
    found = suite_costs.costs(xml_path)
    assert found == {"test_a.py": [1.75, 3.0, 2], "test_b.py": [3.0, 4.0, 1], "test_c.py": [0.0, 7.0, 1]}
    assert suite_costs.table(found) == [
        "| file | CPU s | s in its worker | tests |", "| --- | --- | --- | --- |",
        "| `test_b.py` | 3.0 | 4.0 | 1 |", "| `test_a.py` | 1.8 | 3.0 | 2 |", "| `test_c.py` | 0.0 | 7.0 | 1 |",
        "| all 3 files | 4.8 | 14.0 | 4 |"]
    assert suite_costs.table(found, top=1)[2:] == ["| `test_b.py` | 3.0 | 4.0 | 1 |", "| all 3 files | 4.8 | 14.0 | 4 |"]


def test_an_unreadable_or_empty_run_is_one_line_and_status_2(tmp_path, capsys):
    (tmp_path / "empty.xml").write_text("<testsuites><testsuite name='pytest' /></testsuites>")
    (tmp_path / "broken.xml").write_text("<testsuites>")
    for name, said in (("missing.xml", "cannot read"), ("broken.xml", "cannot read"), ("empty.xml", "holds no test")):
        assert suite_costs.main([str(tmp_path / name)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and said in err and name in err, name
