"""
`./run.sh release --edition NAME` for every edition of the course, each
released once a module, in-process, on a small generated course:

- every edition's starter is its reference (its second model's blocks alone,
  its part letters, its initializer's signature) with the regions cut, so
  its regions written back rebuild that reference byte for byte; its facts
  name the edition, its README tables the edition's stages, it holds its
  second model's notebook alone; and its bundle's grader lists the
  edition's tests, points and thresholds and takes its deliverables;
- where editions differ in what the grader runs on code (a Perceiver
  edition after the seed, the Winter 2025 RoPE starter), the starter with its
  regions written back earns every basic test of its bundle's grader, and
  the empty starter scores none, each test naming in one line the function
  not written and its part in the edition's letters;
- the README of the current cohort's starter gives its parts, its
  thresholds and what its compile word does;
- every edition's README names no file the starter lacks but what a stage
  writes or what it says stays out, and its dataset demo runs from the top
  of the starter as it says.
"""

import os
import re
import subprocess
import sys

import pytest

from assignment.editions import EDITIONS
from assignment.facts import deliverables, stages_of
from instructors.release import checks, regions

from release_helpers import data_dir, edition_sources, grader_results, release_here, run_python  # noqa: F401

CURRENT = "spring2026"
# The editions graded here besides the seed's (tests/test_release_main_end_to_end.py): the Perceiver editions
# after it share their code tests, and the RoPE editions theirs; Winter 2025's initializer takes an extra argument.
GRADED = ("fall2024", "winter2025")
NOT_GRADED_HERE = "rope_written"  # the RoPE editions' written derivation (g), graded by hand
# The code only the other second model has, by the second model of the starter that never names it.
OTHER_MODELS_CODE = {"perceiver": ("initialize_rope_model", "precompute_rotary_emb", "apply_rotary_emb", "rope_cache"),
                     "rope": ("initialize_perceiver_model", "DownProjectBlock", "UpProjectBlock")}
UNWRITTEN = re.compile(r"^fail: part \(([a-z]+(?: and [a-z]+)?)\): ([\w.]+) \S.*: it is not written yet$")


@pytest.fixture(scope="module")
def release(tmp_path_factory, data_dir):  # noqa: F811
    """release(name): OUT of the release of edition `name`, made the first time a test asks for it."""
    made = {}

    def made_once(name):
        if name not in made:
            out = tmp_path_factory.mktemp(name) / "out"
            status, stderr = release_here(out, data_dir, "--edition", name)
            assert status == 0, stderr
            made[name] = out
        return made[name]
    return made_once


def written_back(student, name):
    """{file name: text} of the starter's src/submission with the regions of `name`'s reference put back."""
    package = student / "src" / "submission"
    return {file: regions.restore((package / file).read_bytes().decode("utf-8"), regions.regions(reference), file)
            for file, reference in edition_sources(name).items()}


# ------------------------------------------------------------ every edition

@pytest.mark.parametrize("name", list(EDITIONS))
def test_each_editions_starter_with_its_regions_written_back_is_its_reference(release, name):
    """Kills a starter cut from another edition's blocks, letters or initializer, a region left uncut or
    cut wrong, or another second model's code kept."""
    student = release(name) / "student"
    references = edition_sources(name)
    assert sorted(p.name for p in (student / "src" / "submission").glob("*.py")) == sorted(references)
    for file, restored in written_back(student, name).items():
        assert restored == references[file], file
        if regions.locate(restored):
            assert (student / "src" / "submission" / file).read_text(encoding="utf-8") != restored, file
        others = OTHER_MODELS_CODE[EDITIONS[name].second_model]
        assert not [word for word in others if re.search(rf"\b{word}\b", restored)], file
    helper = (student / "src" / "submission" / "helper.py").read_text(encoding="utf-8")
    assert f"\ndef {EDITIONS[name].second_initializer}:\n" in helper
    assert checks.student_file_problems(str(student), name) == []


@pytest.mark.parametrize("name", list(EDITIONS))
def test_each_editions_starter_names_it_and_runs_its_stages(release, name):
    """Kills a starter whose facts name another edition, whose README tables another edition's stages,
    or which lacks its second model's notebook or keeps the other's."""
    student = release(name) / "student"
    assert f"\nEDITION = {name!r}\n" in (student / "src" / "assignment" / "facts.py").read_text(encoding="utf-8")
    readme = (student / "README.md").read_text(encoding="utf-8")
    stages = re.findall(r"^\| `\./run\.sh (\w+)`", readme, re.MULTILINE)
    assert stages == [stage.name for stage in stages_of(name)]
    assert (student / "notebooks" / "rope.ipynb").is_file() == (EDITIONS[name].second_model == "rope")


def listed(bundle):
    """{test id: its line} of the bundle's `grader.py --list`, run in its starter with its hidden bundle."""
    done = run_python(["grader.py", "--list", "--hidden", str(bundle / "hidden")], cwd=bundle / "starter",
                      env={"PYTHONPATH": ""}, timeout=120)
    assert done.returncode == 0, done.stderr
    return {line.split()[0]: line for line in done.stdout.splitlines()
            if re.match(r"^  \d[a-z]-\d-(?:basic|hidden) ", line)}


@pytest.mark.parametrize("name", list(EDITIONS))
def test_each_editions_bundle_lists_its_tests_points_and_thresholds_and_takes_its_deliverables(release, name):
    """Kills a bundle graded under another edition's ids, points or thresholds (the 2025 and 2026 RoPE
    cohorts differ only there), a test of the edition left out, or another edition's deliverables."""
    bundle = release(name) / "autograder"
    assert (bundle / "deliverables.txt").read_text(encoding="utf-8").split() == list(deliverables(name))
    lines = listed(bundle)
    tests = [t for t in EDITIONS[name].tests if t.judges != NOT_GRADED_HERE]
    assert list(lines) == [t.id for t in tests]
    for t in tests:
        assert lines[t.id].startswith(f"  {t.id:<12} {t.points:>4g} pts  "), lines[t.id]
        thresholds = ", ".join(f"{key} {value:g}" for key, value in t.thresholds.items())
        assert lines[t.id].endswith(f" ({thresholds})") == bool(thresholds), lines[t.id]


# ------------------------------------------------------------ graded editions

def basic_tests(name):
    """{test id: points} of `name`'s basic tests: what its grader runs on code alone."""
    return {t.id: t.points for t in EDITIONS[name].tests if t.id.endswith("-basic") and t.judges != NOT_GRADED_HERE}


@pytest.mark.parametrize("name", GRADED)
def test_the_starter_with_its_regions_written_back_earns_every_basic_test_of_its_bundle(release, name, tmp_path):
    """Kills a starter whose code, its regions written back, its own bundle's grader fails (a cut that
    changed given code, a region's code that no longer does its part), or a bundle grading the other
    second model's editions."""
    submission = tmp_path / "submission"
    submission.mkdir()
    for file, text in written_back(release(name) / "student", name).items():
        (submission / file).write_text(text, encoding="utf-8")
    done, tests = grader_results(release(name) / "autograder" / "starter", tmp_path, "--submission",
                                 str(submission), "basic")
    assert {test: entry["score"] for test, entry in tests.items()} == basic_tests(name), done.stdout


@pytest.mark.parametrize("name", GRADED)
def test_the_empty_starter_fails_every_basic_test_naming_the_part_in_one_line(release, name, tmp_path):
    """Kills an empty starter that earns points, a grader that stops before the last test, or a failure
    that does not name the function not written and its part in the edition's letters."""
    done, tests = grader_results(release(name) / "autograder" / "starter", tmp_path, "basic")
    assert {test: entry["max_score"] for test, entry in tests.items()} == basic_tests(name), done.stdout
    for test, entry in tests.items():
        said = UNWRITTEN.match(entry["output"].splitlines()[0])
        assert entry["score"] == 0 and said, (test, entry["output"])
        assert said.group(1) == EDITIONS[name].parts.get(said.group(2)), (test, said.group(0))


# ------------------------------------------------------------ the current cohort

def test_the_current_readme_gives_its_parts_thresholds_and_compile_word(release):
    readme = (release(CURRENT) / "student" / "README.md").read_text(encoding="utf-8")
    assert "| (h) | `attention.py`, `helper.py` |" in readme
    assert "| (g) |  | no code here (see the handout) | 1g-0-basic |" in readme  # the written derivation
    assert "`1h-0-hidden` (RoPE pretrained: a RoPE model as the handout states it, and its dev accuracy): at least 22%" \
        in readme and "1g-1-hidden" not in readme and "Perceiver" not in readme
    assert "- `./run.sh <stage> compile` (the handout's way to ask for `torch.compile`) is\n  accepted and trains eager" \
        in readme


# ------------------------------------------------------------ the starter's README, read top to bottom

PATH = re.compile(r"`([^`\s]*/[^`\s]*|[^`\s]+\.(?:py|tsv|txt|yml|md|ipynb|sh|zip|params|predictions))`")
# What the README names that the starter does not hold, and says so: where the course put its environment
# file, the labelled test questions the staff keep, the smoke tests' folder and the zip collect_submission makes.
NAMED_ELSEWHERE = {"src/environment.yml", "birth_test.tsv", "smoke/", "submission.zip"}


@pytest.mark.parametrize("name", list(EDITIONS))
def test_every_file_the_readme_names_is_in_the_starter_or_made_by_a_stage(release, name):
    """Kills a starter README that sends a student to a file the starter lacks (a docs/ page, a notebook
    of another edition, a file under another name), other than what the stages write and what it says
    stays out; a bare name is of the folder the README speaks of, src/submission/ or data/."""
    student = release(name) / "student"
    made = {stage.writes for stage in stages_of(name)}
    named = set(PATH.findall((student / "README.md").read_text(encoding="utf-8")))
    missing = {path for path in named - NAMED_ELSEWHERE if path.removeprefix("src/submission/") not in made
               and not any((folder / path).exists() for folder in (student, student / "src/submission", student / "data"))}
    assert missing == set() and {"notebooks/attention.ipynb", "wiki.txt", "helper.py"} <= named


@pytest.mark.parametrize("name", [list(EDITIONS)[0], CURRENT])
def test_the_readmes_dataset_demo_runs_from_the_top_of_the_starter(release, name):
    """Kills a dataset demo the README gives that fails from the top of the starter (its imports need
    src/ on the path, or it reads data from another folder), and a second command that does not stop
    where the README says, at the NotImplementedError of the part not yet written."""
    student = release(name) / "student"
    readme = (student / "README.md").read_text(encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = {}
    for kind in ("namedata", "charcorruption"):
        assert f"    python src/submission/dataset.py {kind}\n" in readme
        done[kind] = subprocess.run([sys.executable, "src/submission/dataset.py", kind], cwd=student, env=env,
                                    capture_output=True, text=True, timeout=120)
    assert done["namedata"].returncode == 0 and "x: Where was" in done["namedata"].stdout
    assert done["charcorruption"].stderr.splitlines()[-1] == "NotImplementedError"
    assert "stops at its `NotImplementedError`" in readme
