"""
The student starter as the release assembles it (src/instructors/release/student.py), on a small
repository made here: which files of src/ ship (Python files only, never the student package as it
is, the instructors' package, LEFT_OUT or caches), the student files cut with their line ends kept
byte for byte and the count of regions cut, the data without the test labels, and the student
README: the environment's name, the deliverables, and each test's thresholds with the release's
thresholds.json on top of grader.py's. No release is run and no check starts a process.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from assignment.editions import EDITIONS, SEED_EDITION
from assignment.facts import DATA_FILES, DELIVERABLES, OTHER_STAGES, TEST_LABELS
from grading import registry
from instructors.release import readme_tables, regions, student

from runtime_helpers import files_under

REPO = Path(__file__).resolve().parents[1]
SOLUTION = ("class Model:\r\n"
            "    def forward(self, x):\r\n"
            "        ### START_CODE_HERE ###\r\n"
            "        y = x + 1\r\n"
            "        ### END_CODE_HERE ###\r\n"
            "        return y\r\n"
            "\r\n"
            "\r\n"
            "def helper():\r\n"
            "    ### START_CODE_HERE ###\r\n"
            "    return 2\r\n"
            "    ### END_CODE_HERE ###\r\n")
GRADER = ('from grading import graded\n\n\n'
          '@graded("1f-1-hidden", points=5, visibility="hidden", timeout=300, min_accuracy=0.1, min_correct=3)\n'
          'def dev(ctx):\n    """vanilla: dev accuracy"""\n    return "vanilla.pretrain.dev.predictions"\n\n\n'
          '@graded("1a-0-basic", points=1, visibility="basic", timeout=60)\n'
          'def basic(ctx):\n    """no thresholds"""\n\n\n'
          '@graded("1g-1-hidden", points=5, visibility="hidden", timeout=300, min_accuracy=0.024)\n'
          'def perceiver(ctx):\n    """perceiver: dev accuracy"""\n')
SHIPPED = ("src/run.py", "src/assignment/__init__.py", "src/assignment/facts.py", "src/runtime/__init__.py", "src/runtime/decoding/__init__.py",
           "src/runtime/decoding/greedy.py")
RUN_SH = ("#!/bin/sh\ncase x in\n    help) ;;\n" + student.INSTRUCTORS_BEGIN + "    demo) mutmut ;;\n"
          + student.INSTRUCTORS_END + "esac\n")
FACTS = "# the facts\n\nEDITION = None\nSTAGES = ()\n"
NOT_SHIPPED = ("src/runtime/decoding/perceiver_cache.py", "src/runtime/decoding/notes.md",
               "src/runtime/__pycache__/inputs.cpython-311.pyc", "src/instructors/tool.py",
               "src/instructors/release/__main__.py")


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.fixture
def repository(tmp_path):
    """A small repository with every file the starter takes, and files it must leave out."""
    repo = tmp_path / "repo"
    for name in ("grader.py", "environment.yml", "requirements.txt", "LICENSE", *student.NOTEBOOKS,
                 *SHIPPED, *NOT_SHIPPED):
        write(repo / name, f"# {name}\n")
    write(repo / "run.sh", RUN_SH).chmod(0o755)
    write(repo / "grader.py", GRADER)
    write(repo / "src" / "assignment" / "facts.py", FACTS)
    write(repo / "environment.yml", "# the environment\nchannels: [pytorch]\nname: cs224n-a4 \ndependencies: []\n")
    write(repo / "requirements.txt", "torch==2.0.1\nnumpy\npytest  # the tests\n# a comment\ntqdm>=4\nmatplotlib\n")
    write(repo / "src" / "submission" / "model.py", SOLUTION)
    write(repo / "src" / "submission" / "__init__.py", "from .model import Model\n")
    write(repo / "src" / "submission" / "vanilla.model.params", "trained")
    write(repo / "src" / "submission" / "notes.txt", "### START_CODE_HERE ###\n")
    return repo


@pytest.fixture
def data(tmp_path):
    for name in DATA_FILES + (TEST_LABELS,):
        write(tmp_path / "data" / name, f"the lines of {name}\n")
    return tmp_path / "data"


@pytest.fixture
def grader_loaded(registered, monkeypatch):
    """An empty registry that the repository's grader.py fills, and sys.path put back afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_only_the_python_files_of_the_shipped_packages_are_copied_as_they_are(repository):
    """Kills LEFT_OUT shipped, files that are not Python (caches, notes) copied, or the student package
    or the instructors' package copied as they are."""
    assert student.starter_sources(str(repository)) == sorted(SHIPPED)


def test_the_cut_student_files_keep_their_line_ends_and_the_regions_are_counted(repository, tmp_path):
    """Kills the solution read or written in text mode (its \\r\\n made \\n), files that are not Python cut
    or copied, and the count of regions cut counted by files."""
    assert student.write_cut_submission(str(repository / "src"), str(tmp_path / "out")) == 2
    cut = (tmp_path / "out" / "submission" / "model.py").read_bytes()
    assert cut == regions.cut(SOLUTION).encode("utf-8") and cut.count(b"\n") == cut.count(b"\r\n") == 12
    assert sorted(os.listdir(tmp_path / "out" / "submission")) == ["__init__.py", "model.py"]


def test_a_cut_that_does_not_compile_is_refused_naming_the_file(repository, tmp_path):
    write(repository / "src" / "submission" / "broken.py", "def f():\n    ### START_CODE_HERE ###\n"
                                                           "    return 1\n    ### END_CODE_HERE ###\n  x = 2\n")
    with pytest.raises(student.ReleaseError, match=r"^the cut submission/broken\.py does not compile: "):
        student.write_cut_submission(str(repository / "src"), str(tmp_path / "out"))


def test_the_environments_name_is_its_name_line(repository):
    assert student.environment_name(str(repository)) == "cs224n-a4"
    write(repository / "environment.yml", "channels: [pytorch]\n  name: indented\n")
    with pytest.raises(student.ReleaseError, match="environment.yml has no 'name:' line"):
        student.environment_name(str(repository))


def test_the_thresholds_are_grader_pys_with_the_releases_on_top(repository, tmp_path, grader_loaded):
    """Kills the release's thresholds.json read under grader.py's (the README promising the old
    figures), or an entry replacing a test's thresholds instead of updating them."""
    given = write(tmp_path / "thresholds.json", json.dumps({"1f-1-hidden": {"min_accuracy": 0.12}}))
    assert student.thresholds_in_words(str(repository), str(given)).splitlines() == [
        "- `1f-1-hidden` (vanilla: dev accuracy): at least 12% and at least 3 correct",
        "- `1g-1-hidden` (perceiver: dev accuracy): at least 2.4%"]


def test_the_thresholds_without_a_thresholds_json_are_grader_pys(repository, grader_loaded):
    assert student.thresholds_in_words(str(repository)).splitlines()[0] == \
        "- `1f-1-hidden` (vanilla: dev accuracy): at least 10% and at least 3 correct"


def test_another_editions_thresholds_leave_the_seed_edition_graded(repository, grader_loaded):
    """Kills a release for another edition that leaves this process grading that edition (a later
    grading in the same process judged under the wrong thresholds)."""
    def graded():
        return {t.test_id: (t.points, t.thresholds) for t in registry.TESTS.values()}

    student.thresholds_in_words(str(repository))
    seeds = graded()
    student.thresholds_in_words(str(repository), edition="spring2026")
    assert registry.GRADING["edition"] == SEED_EDITION and graded() == seeds


def test_the_starter_holds_what_students_need_and_nothing_more(repository, data, tmp_path, grader_loaded):
    """Kills the test labels shipped, a data file or a top file left out, run.sh no longer executable, a
    params file or note of the student package shipped, or a README with a placeholder left."""
    out = tmp_path / "student"
    assert student.build_student(str(repository), str(data), str(out)) == 2
    expected = {"run.sh", "grader.py", "environment.yml", "requirements.txt", "LICENSE", "README.md",
                *student.NOTEBOOKS, *SHIPPED, "src/submission/__init__.py", "src/submission/model.py",
                *(f"data/{name}" for name in DATA_FILES)}
    assert files_under(out) == sorted(expected)
    assert os.stat(out / "run.sh").st_mode & stat.S_IXUSR
    assert (out / "run.sh").read_text() == student.starter_run_sh(str(repository))
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "conda activate cs224n-a4" in readme and "{" not in readme and "<stage> compile" not in readme
    listed = [line for line in readme.splitlines() if line[:1].isdigit() and ". src/submission/" in line]
    assert listed == [f"{number}. src/submission/{name}" for number, name in enumerate(DELIVERABLES, start=1)]
    assert "- `1g-1-hidden` (perceiver: dev accuracy): at least 2.4%" in readme
    assert readme_tables.stage_table(SEED_EDITION) in readme
    graded = dict.fromkeys(test.id for test in EDITIONS[SEED_EDITION].tests)
    assert readme_tables.part_table(SEED_EDITION, out / "src" / "submission",
                                    dict(graded, **{"1f-1-hidden": "vanilla_eval_dev_with_pretrain"})) in readme
    assert (out / "src/assignment/facts.py").read_text() == f"# the facts\n\nEDITION = {SEED_EDITION!r}\nSTAGES = ()\n"
    assert (out / "requirements.txt").read_text() == "torch==2.0.1\nnumpy\ntqdm>=4\nmatplotlib\n"
    environment = (out / "environment.yml").read_text()
    assert environment.endswith("channels: [pytorch]\nname: cs224n-a4 \ndependencies: []\n")
    assert "# the environment" not in environment and "Python 3.10 or newer" in environment


def test_a_package_the_starter_needs_missing_from_requirements_txt_is_refused(repository, data, tmp_path):
    write(repository / "requirements.txt", "torch==2.0.1\nnumpy\ntqdm\n")
    with pytest.raises(student.ReleaseError, match="requirements.txt does not list matplotlib, which the starter"):
        student.build_student(str(repository), str(data), str(tmp_path / "student"))


def test_facts_without_the_line_of_the_edition_is_refused_naming_it(repository, data, tmp_path, grader_loaded):
    """Kills a starter that runs every edition's stages because its facts.py lost the line the release sets."""
    write(repository / "src" / "assignment" / "facts.py", "# the facts\nEDITION = 'fall2025'\n")
    with pytest.raises(student.ReleaseError, match="facts.py does not hold the line 'EDITION = None' once"):
        student.build_student(str(repository), str(data), str(tmp_path / "student"))


@pytest.mark.parametrize("edition, variants", [("fall2023", {"vanilla", "perceiver"}), ("winter2026", {"vanilla", "rope"})])
def test_a_starters_facts_name_its_edition_and_run_hand_in_and_list_only_its_stages(tmp_path, edition, variants):
    """The repository's own facts.py with the release's edition line: only that edition's stages."""
    shutil.copytree(Path(student.__file__).resolve().parents[2] / "assignment", tmp_path / "assignment")
    student.set_edition(tmp_path / "assignment" / "facts.py", edition)
    shown = subprocess.run([sys.executable, "-c", "from assignment import facts; print(facts.EDITION, "
                            "sorted({s.variant for s in facts.STAGES}), sorted(facts.GRADED_STAGES) == "
                            "sorted(s.name for s in facts.HANDED_IN_STAGES))"],
                           cwd=tmp_path, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert shown.stdout.split(" ", 1) == [edition, f"{sorted(variants)} True\n"], shown.stderr


@pytest.mark.parametrize("missing", ["LICENSE", "src/run.py", "notebooks/attention.ipynb", "data/birth_dev.tsv"])
def test_a_repository_or_data_missing_a_file_is_refused_before_anything_is_written(repository, data, tmp_path,
                                                                                  missing):
    (repository / missing if not missing.startswith("data/") else data.parent / missing).unlink()
    with pytest.raises(student.ReleaseError, match=rf"{missing.split('/')[-1]} is missing, and the starter needs it"):
        student.build_student(str(repository), str(data), str(tmp_path / "student"))
    assert not (tmp_path / "student").exists()


def test_the_starters_run_sh_refuses_the_instructors_stages_in_one_branch_and_keeps_the_rest():
    """Kills a starter's run.sh that keeps the instructors' branches (their mutmut, pytest and tools), that
    loses a branch of the stages it runs, or whose refusal leaves out an instructors' stage: each of those
    is a case label of run.sh, the refusal's exactly the instructors' stages of facts.OTHER_STAGES."""
    starter = student.starter_run_sh(str(REPO))
    labels = [found.group(1).split(" | ") for found in re.finditer(r"^    ([^ #()\n][^()\n]*)\)", starter, re.M)]
    instructors = [name for name, (audience, _) in OTHER_STAGES.items() if audience == "instructors"]
    ours = [name for name, (audience, _) in OTHER_STAGES.items() if audience == "all"]
    assert instructors in labels
    assert sorted(name for label in labels if label != instructors for name in label) == sorted(
        [*ours, "-h", "--help", '""', "*"])
    assert not re.search(r"instructors\.|mutmut|pytest|>>>|<<<", starter)
    assert subprocess.run(["bash", "-n"], input=starter, text=True).returncode == 0


@pytest.mark.parametrize("cut", ["begin", "end", "both"])
def test_a_run_sh_without_the_lines_around_the_instructors_stages_is_refused(repository, data, tmp_path, cut):
    text = RUN_SH.replace(student.INSTRUCTORS_BEGIN, "" if cut != "end" else student.INSTRUCTORS_BEGIN)
    text = text.replace(student.INSTRUCTORS_END, "" if cut != "begin" else student.INSTRUCTORS_END)
    write(repository / "run.sh", text)
    with pytest.raises(student.ReleaseError, match="run.sh does not hold the lines around the instructors'"):
        student.build_student(str(repository), str(data), str(tmp_path / "student"))
    assert not (tmp_path / "student").exists()
