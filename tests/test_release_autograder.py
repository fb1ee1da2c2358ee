"""
The grading server's bundle as the release assembles it (src/instructors/release/autograder.py),
from a small repository and course made here: the hidden bundle holds the dev labels, the labels
given, only the settings files given, the corpus's vocabulary, the solution's and the decoder's
Python files (the perceiver's cache included, caches and outputs left out), and a tests/ folder only
for hidden tests; the scripts are executable by everyone, deliverables.txt lists the deliverables
one a line, and the starter is copied with its links as links. (The test labels' checks:
tests/test_release_labels.py.)
"""

import json
import os
import stat
from pathlib import Path

import pytest

from assignment.facts import DELIVERABLES, DEV_QUESTIONS, TEST_LABELS
from instructors.release import autograder
from runtime.inputs import pretraining_dataset
from runtime.params import vocabulary_string

from runtime_helpers import files_under, write_data

PYTHON_FILES = {"src/submission/__init__.py": "from .model import GPT\n", "src/submission/model.py": "GPT = 1\n",
                "src/runtime/__init__.py": "", "src/runtime/decoding/__init__.py": "from . import greedy\n",
                "src/runtime/decoding/greedy.py": "STEP = 1\n", "src/runtime/decoding/perceiver_cache.py": "M = 2\n"}
OTHER_FILES = ("src/submission/vanilla.model.params", "src/submission/vanilla.nopretrain.dev.predictions",
               "src/submission/__pycache__/model.cpython-311.pyc", "src/runtime/decoding/__pycache__/greedy.pyc",
               "src/runtime/decoding/notes.md", "src/runtime/inputs.py")


@pytest.fixture
def repository(tmp_path):
    repo = tmp_path / "repo"
    for name, text in PYTHON_FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    for name in OTHER_FILES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(f"{name}\n")
    return repo


@pytest.fixture
def course(tmp_path, make_corpus):
    labels = write_data(tmp_path / "course", make_corpus(seed=11, count=10), train=3, dev=3)
    return tmp_path / "course", labels


def test_the_hidden_bundle_holds_the_labels_vocabulary_and_python_files_and_nothing_else(repository, course,
                                                                                         tmp_path):
    """Kills outputs, caches or notes copied into reference/ or runtime/, the perceiver's cache left out of
    the bundle (predictions would be regenerated without it), and an empty tests/ folder made."""
    data, labels = course
    hidden = tmp_path / "hidden"
    autograder.write_hidden_bundle(str(repository), str(data), str(labels), {"thresholds.json": None},
                                   str(hidden))
    assert files_under(hidden) == sorted([DEV_QUESTIONS, TEST_LABELS, "vocabulary.json", "reference/__init__.py",
                                          "reference/model.py", "runtime/__init__.py", "runtime/decoding/__init__.py",
                                          "runtime/decoding/greedy.py", "runtime/decoding/perceiver_cache.py"])
    assert sorted(os.listdir(hidden)) == sorted([DEV_QUESTIONS, TEST_LABELS, "vocabulary.json", "reference", "runtime"])
    assert (hidden / DEV_QUESTIONS).read_bytes() == (data / DEV_QUESTIONS).read_bytes()
    for name, text in PYTHON_FILES.items():
        copied = name.replace("src/submission", "reference").replace("src/", "")
        assert (hidden / copied).read_text() == text, name
    vocabulary = json.loads((hidden / "vocabulary.json").read_text(encoding="utf-8"))
    assert vocabulary == vocabulary_string(pretraining_dataset(str(data / "wiki.txt")))


def test_the_settings_and_hidden_tests_given_go_into_the_bundle(repository, course, tmp_path):
    data, labels = course
    (tmp_path / "grading.json").write_text('{"predictions": "files"}')
    tests = []
    for name in ("b_term.py", "a_term.py"):
        (tmp_path / "tests" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "tests" / name).write_text(f"# {name}\n")
        tests.append(str(tmp_path / "tests" / name))
    hidden = tmp_path / "hidden"
    autograder.write_hidden_bundle(str(repository), str(data), str(labels),
                                   {"thresholds.json": None, "grading.json": str(tmp_path / "grading.json")},
                                   str(hidden), tests)
    assert (hidden / "grading.json").read_text() == '{"predictions": "files"}'
    assert not (hidden / "thresholds.json").exists()
    assert sorted(os.listdir(hidden / "tests")) == ["a_term.py", "b_term.py"]
    assert (hidden / "tests" / "a_term.py").read_text() == "# a_term.py\n"


def test_the_autograder_has_executable_scripts_the_deliverables_and_the_starter_as_it_is(repository, course,
                                                                                        tmp_path):
    """Kills scripts executable by their owner only (Gradescope runs them as another user), deliverables
    on one line, and the starter's links followed instead of kept."""
    data, labels = course
    starter = tmp_path / "student"
    (starter / "src").mkdir(parents=True)
    (starter / "src" / "run.py").write_text("print('run')\n")
    (starter / "data").symlink_to(data)
    out = tmp_path / "autograder"
    autograder.build_autograder(str(repository), str(data), str(labels), {}, str(starter), str(out))
    for name in autograder.SCRIPTS:
        mode = os.stat(out / name).st_mode
        assert mode & stat.S_IXUSR and mode & stat.S_IXGRP and mode & stat.S_IXOTH, name
        assert (out / name).read_bytes() == (Path(autograder.TEMPLATES) / name).read_bytes()
    assert (out / "deliverables.txt").read_text(encoding="utf-8") == "".join(f"{n}\n" for n in DELIVERABLES)
    assert (out / "starter" / "data").is_symlink() and (out / "starter" / "src" / "run.py").is_file()
    assert (out / "hidden" / TEST_LABELS).is_file()
