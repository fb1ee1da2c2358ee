"""
What the release command (python3 -m instructors.release) is given, each
case a real release (its main() run in this process, but for the copy of
the repository): an OUT that is not empty, refused in one line unless
--force, and then, forced, a release with hidden tests from --tests, which
go into the bundle and nowhere in the starter (the two tests read that one
release); and a copy of this repository whose student files lost a part's
label, refused naming each flaw, with nothing written.
"""

import os
import shutil
import subprocess
import sys

import pytest

from release_helpers import HIDDEN_TESTS, REPO, data_dir, files_under, release_here, write_hidden_tests


@pytest.fixture(scope="module")
def forced(tmp_path_factory, data_dir):
    """OUT holding notes.txt: (the release's refusal there, as (status, stderr, OUT's files after)), then
    OUT after a forced release of the repository's data/ with HIDDEN_TESTS."""
    root = tmp_path_factory.mktemp("inputs")
    out = root / "out"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    refused = (*release_here(out, data_dir), files_under(out))
    status, stderr = release_here(out, None, "--force", "--tests", str(write_hidden_tests(root / "term_tests")))
    assert status == 0, stderr
    return refused, out


def test_release_refuses_a_non_empty_out_unless_forced(forced):
    (status, stderr, files), out = forced
    assert status != 0
    assert stderr.strip().count("\n") == 0 and "--force" in stderr
    assert files == ["notes.txt"]

    assert (out / "notes.txt").read_text() == "keep me"
    assert (out / "student" / "grader.py").is_file() and (out / "autograder.zip").is_file()
    assert (out / "student" / "data" / "wiki.txt").read_bytes() == (REPO / "data" / "wiki.txt").read_bytes()
    assert not (out / "student" / "data" / "birth_test.tsv").exists()


def test_hidden_tests_go_into_the_bundle_and_nowhere_in_the_starter(forced):
    _, out = forced
    hidden = out / "autograder" / "hidden"
    assert sorted(p.name for p in (hidden / "tests").iterdir()) == ["extra.py", "stricter.py"]
    assert all((hidden / "tests" / name).read_text(encoding="utf-8") == text for name, text in HIDDEN_TESTS.items())
    for tree in (out / "student", out / "autograder" / "starter"):
        texts = [p.read_bytes() for p in tree.rglob("*") if p.is_file()]
        assert not [t for t in texts if b"1i-0-hidden" in t or b"min_accuracy=0.5" in t]
    listed = subprocess.run([sys.executable, "grader.py", "--list", "--hidden", str(hidden)], cwd=out / "student",
                            capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert "[from stricter.py, in place of grader.py's]" in listed.stdout
    assert listed.stdout.splitlines()[-1] == "  1i-0-hidden     1 pts  an extra hidden test  [from extra.py]"


def test_a_release_whose_student_files_lose_a_label_is_refused(tmp_path, data_dir):
    """The release of a copy of this repository whose dataset.py lost its part's label and whose
    model.py speaks of the grader: refused in one line naming both, nothing written."""
    copy = tmp_path / "repository"
    copy.mkdir()
    for name in ("run.sh", "grader.py", "environment.yml", "requirements.txt", "LICENSE", "notebooks"):
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(REPO / name, copy / name)
    shutil.copytree(REPO / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__", "*.params",
                                                                             "*.predictions"))
    dataset = copy / "src" / "submission" / "dataset.py"
    dataset.write_text(dataset.read_text(encoding="utf-8").replace("[part e]", "[part ?]"), encoding="utf-8")
    model = copy / "src" / "submission" / "model.py"
    model.write_text("# checked by the grader\n" + model.read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "instructors.release", "--out", str(out), "--data", str(data_dir)],
                          cwd=copy, env={**os.environ, "PYTHONPATH": str(copy / "src"), "PYTHONDONTWRITEBYTECODE": "1"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert done.stderr == ("release: the starter is not fit to hand out: src/submission/model.py:1 speaks of the "
                           "grader; src/submission/dataset.py: CharCorruptionDataset.__getitem__ lacks its label "
                           "[part e]\n")
    assert not out.exists()
