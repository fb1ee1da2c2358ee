"""
`./run.sh release --edition NAME` for a RoPE cohort, run once in-process on
a small generated course: the starter holds only that edition's tasks, in
its part letters, stages, notebooks and thresholds, and the autograder
bundle grades that edition's tests and takes its deliverables.
"""

import re
import subprocess
import sys

import pytest

from assignment.editions import EDITIONS
from assignment.facts import deliverables, stages_of
from instructors.release import checks

from release_helpers import data_dir, release_here  # noqa: F401 (data_dir is a fixture)

EDITION = "spring2026"
PERCEIVER_WORDS = re.compile(r"perceiver|DownProjectBlock|UpProjectBlock|bottleneck_dim=32", re.IGNORECASE)


@pytest.fixture(scope="module")
def release(tmp_path_factory, data_dir):  # noqa: F811
    out = tmp_path_factory.mktemp("rope_release") / "out"
    status, stderr = release_here(out, data_dir, "--edition", EDITION)
    assert status == 0, stderr
    return out


def test_the_starter_is_the_editions_alone(release):
    """Kills a RoPE starter with the perceiver's tasks or words, its labels in the seed's letters, its facts
    naming another edition, or without the RoPE notebook."""
    student = release / "student"
    assert f"EDITION = {EDITION!r}" in (student / "src" / "assignment" / "facts.py").read_text(encoding="utf-8")
    for path in (student / "src" / "submission").glob("*.py"):
        assert not PERCEIVER_WORDS.search(path.read_text(encoding="utf-8")), path.name
    assert checks.student_file_problems(str(student), EDITION) == []
    assert (student / "notebooks" / "rope.ipynb").is_file()


def test_the_readme_gives_the_editions_stages_parts_and_thresholds(release):
    readme = (release / "student" / "README.md").read_text(encoding="utf-8")
    stages = re.findall(r"^\| `\./run\.sh (\w+)`", readme, re.MULTILINE)
    assert stages == [stage.name for stage in stages_of(EDITION)]
    assert "| (h) | `attention.py`, `helper.py` |" in readme
    assert "| (g) |  | no code here (see the handout) | 1g-0-basic |" in readme  # the written derivation
    assert "`1h-0-hidden` (RoPE pretrained: a RoPE model as the handout states it, and its dev accuracy): at least 22%" \
        in readme and "1g-1-hidden" not in readme and "Perceiver" not in readme
    assert "- `./run.sh <stage> compile` (the handout's way to ask for `torch.compile`) is\n  accepted and trains eager" \
        in readme


def test_the_bundle_grades_the_editions_tests_and_takes_its_deliverables(release):
    autograder = release / "autograder"
    assert (autograder / "deliverables.txt").read_text(encoding="utf-8").split() == list(deliverables(EDITION))
    listed = subprocess.run([sys.executable, "grader.py", "--list"], cwd=autograder / "starter", capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    ids = re.findall(r"^  (\d[a-z]-\d-(?:basic|hidden))\s", listed.stdout, re.MULTILINE)
    assert ids == [t.id for t in EDITIONS[EDITION].tests if t.judges != "rope_written"]
