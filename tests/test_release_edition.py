"""
`./run.sh release --edition NAME` for every edition of the course, each
released once a module, in-process, on a small generated course:

- every edition's starter is its reference (its second model's blocks alone,
  its part letters, its initializer's signature) with the regions cut, so
  its regions written back rebuild that reference byte for byte; its facts
  name the edition, its README tables the edition's stages, it holds its
  second model's notebook alone; and its bundle's grader lists the
  edition's tests, points and thresholds and takes its deliverables;
- the README of the current cohort's starter gives its parts, its
  thresholds and what its compile word does.
"""

import re

import pytest

from assignment.editions import EDITIONS
from assignment.facts import deliverables, stages_of
from instructors.release import checks, regions

from release_helpers import data_dir, edition_sources, release_here, run_python  # noqa: F401

CURRENT = "spring2026"
NOT_GRADED_HERE = "rope_written"  # the RoPE editions' written derivation (g), graded by hand
# The code only the other second model has, by the second model of the starter that never names it.
OTHER_MODELS_CODE = {"perceiver": ("initialize_rope_model", "precompute_rotary_emb", "apply_rotary_emb", "rope_cache"),
                     "rope": ("initialize_perceiver_model", "DownProjectBlock", "UpProjectBlock")}


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


# ------------------------------------------------------------ the current cohort

def test_the_current_readme_gives_its_parts_thresholds_and_compile_word(release):
    readme = (release(CURRENT) / "student" / "README.md").read_text(encoding="utf-8")
    assert "| (h) | `attention.py`, `helper.py` |" in readme
    assert "| (g) |  | no code here (see the handout) | 1g-0-basic |" in readme  # the written derivation
    assert "`1h-0-hidden` (RoPE pretrained: a RoPE model as the handout states it, and its dev accuracy): at least 22%" \
        in readme and "1g-1-hidden" not in readme and "Perceiver" not in readme
    assert "- `./run.sh <stage> compile` (the handout's way to ask for `torch.compile`) is\n  accepted and trains eager" \
        in readme
