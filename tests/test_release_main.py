"""
The release command (src/instructors/release/__main__.py) in-process on a tiny course: which
arguments it refuses, each in one line with exit status 1 and nothing written (a --data that is no
folder or lacks a file, test labels, a --thresholds or --grading that do not exist or do not parse,
an OUT that holds the repository, a corpus the stages refuse), the hidden tests it takes from
--tests (a starter naming one is refused), a starter or bundle that fails a check, and the line and
zip of a release that passes. The checks that start processes (the starter's imports, the grader's
reading of the bundle) are stood in for: tests/test_release_main_end_to_end.py runs them on a real
release, and tests/test_staging.py has the all-or-none moves.
"""

import json
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from assignment.editions import EDITIONS, SEED_EDITION
from assignment.facts import PAD_CHAR
from instructors.release import __main__ as release_main
from instructors.release import checks, regions
from instructors.release.edition_blocks import for_edition

from runtime_helpers import tree, write_data


@pytest.fixture
def course(tmp_path, make_corpus):
    """A tiny course's data folder."""
    write_data(tmp_path / "course", make_corpus(seed=5, count=12), train=4, dev=4)
    return tmp_path / "course"


@pytest.fixture
def release(course, registered, monkeypatch, capsys):
    """release(OUT, *options): main's exit status, stdout and stderr, with the checks that start processes
    (the starter's imports, the grader's reading of the bundle) passing and sys.path put back afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(checks, "import_failure", lambda tree: None)
    monkeypatch.setattr(checks, "bundle_failure", lambda *args: None)

    def released(out, *options, data=course):
        status = release_main.main(["--out", str(out), "--data", str(data), *options])
        printed = capsys.readouterr()
        return status, printed.out, printed.err
    return released


def solution_regions():
    """The number of regions of the solution's files as the seed edition's starter has them."""
    package = Path(release_main.REPO_DIR) / "src" / "submission"
    second_model = EDITIONS[SEED_EDITION].second_model
    return sum(len(regions.locate(for_edition(path.read_text(encoding="utf-8"), second_model)))
               for path in package.glob("*.py"))


def arguments(course, out, *options):
    args = release_main.parse_args(["--out", str(out), "--data", str(course), *options])
    args.test_labels = args.test_labels or str(course / "birth_test.tsv")
    return args


@pytest.mark.parametrize("out", [release_main.REPO_DIR, os.path.dirname(release_main.REPO_DIR), "/"])
def test_an_out_that_holds_the_repository_is_refused(course, out):
    """Kills the repository itself, or a folder above it, the root included (`--out $OUT/` with $OUT
    empty), taken as OUT: --force would then write student/ and autograder/ into it, or beside it."""
    with pytest.raises(release_main.ReleaseError, match=r"holds the repository itself; choose a folder of its own$"):
        release_main.check_arguments(arguments(course, out, "--force"))


def test_an_out_beside_the_repository_whose_name_starts_as_its_does_is_taken(course):
    """Kills the repository's path compared as a string prefix, not folder by folder."""
    out = release_main.REPO_DIR + "-release"
    assert not os.path.exists(out)
    assert release_main.check_arguments(arguments(course, out)) == out


def test_a_release_says_the_regions_cut_and_the_outputs_in_one_line_and_zips_the_autograder(release, tmp_path):
    status, out, err = release(tmp_path / "out")
    assert status == 0 and err == ""
    outputs = ", ".join(str(tmp_path / "out" / name) for name in release_main.OUTPUTS)
    assert out.splitlines()[-1] == f"release: cut {solution_regions()} regions; wrote {outputs}"
    autograder = tmp_path / "out" / "autograder"
    with zipfile.ZipFile(tmp_path / "out" / "autograder.zip") as archive:
        zipped = {name: archive.read(name) for name in archive.namelist() if not name.endswith("/")}
    assert zipped == {str(path.relative_to(autograder)): path.read_bytes() for path in autograder.rglob("*")
                      if path.is_file()}


def bad_options(tmp_path, course):
    """{case: (options, data folder, the words the one line says)}."""
    (tmp_path / "bad_thresholds.json").write_text(json.dumps({"1f-1-hidden": {"min_acuracy": 0.5}}))
    (tmp_path / "not_a_folder").write_text("")
    (tmp_path / "bad_labels.tsv").write_text("Where was Ada born?\tLondon\t\n")
    shutil.copytree(course, tmp_path / "partial")
    (tmp_path / "partial" / "birth_dev.tsv").unlink()
    return {
        "no data folder": ([], tmp_path / "not_a_folder", "is not a folder"),
        "no thresholds file": (["--thresholds", str(tmp_path / "none.json")], course,
                               f"--thresholds {tmp_path / 'none.json'} does not exist"),
        "no grading file": (["--grading", str(tmp_path / "none.json")], course,
                            f"--grading {tmp_path / 'none.json'} does not exist"),
        "a misspelt threshold": (["--thresholds", str(tmp_path / "bad_thresholds.json")], course,
                                 "'1f-1-hidden' must map some of"),
        "no hidden tests": (["--tests", str(tmp_path)], course, "holds no .py files of hidden tests"),
        "no test labels": (["--test-labels", str(tmp_path / "none.tsv")], course,
                           f"the test labels {tmp_path / 'none.tsv'} do not exist (give them with --test-labels)"),
        "a data file missing": ([], tmp_path / "partial", "birth_dev.tsv is missing, and the starter needs it"),
        "test labels the question files' reader refuses": (
            ["--test-labels", str(tmp_path / "bad_labels.tsv")], course,
            f"release: {tmp_path / 'bad_labels.tsv'} line 1: expected 'question<TAB>place', found 2 tabs"),
    }


@pytest.mark.parametrize("case", ["no data folder", "no thresholds file", "no grading file", "a misspelt threshold",
                                  "no hidden tests", "no test labels", "a data file missing",
                                  "test labels the question files' reader refuses"])
def test_a_bad_argument_is_one_line_and_writes_nothing(release, tmp_path, course, case):
    options, data, said = bad_options(tmp_path, course)[case]
    before = tree(tmp_path)
    status, out, err = release(tmp_path / "out", *options, data=data)
    assert status == 1 and out == "" and err.startswith("release: ") and err.count("\n") == 1, err
    assert said in err
    assert tree(tmp_path) == before


def test_a_corpus_the_stages_refuse_is_one_line_and_writes_nothing(release, tmp_path, course):
    """Kills the stages' InputError (here a corpus holding the PAD character) let out as a traceback."""
    with open(course / "wiki.txt", "a", encoding="utf-8") as f:
        f.write(f"\nA line with {PAD_CHAR} in it .")
    before = tree(tmp_path)
    status, _, err = release(tmp_path / "out")
    assert status == 1 and err.startswith("release: ") and "reserved for PAD" in err and err.count("\n") == 1
    assert tree(tmp_path) == before


@pytest.mark.parametrize("check, found, said", [
    ("student_file_problems", ["a.py lacks its label", "b.py speaks of x"],
     "the starter is not fit to hand out: a.py lacks its label; b.py speaks of x"),
    ("problems", ["data/x.txt contains a line of the test labels"],
     "the starter is not fit to hand out: data/x.txt contains a line of the test labels"),
    ("bundle_failure", "grader: unknown threshold", "the grader does not accept the hidden bundle: grader: unknown "
                                                   "threshold"),
])
def test_a_starter_or_bundle_that_fails_a_check_is_refused_naming_each_problem(release, tmp_path, monkeypatch,
                                                                               check, found, said):
    """Kills a check skipped (the student files' most of all, which no process needs), or its lines lost
    from the message."""
    monkeypatch.setattr(checks, check, lambda *args: found)
    status, _, err = release(tmp_path / "out")
    assert (status, err) == (1, f"release: {said}\n")
    assert not (tmp_path / "out").exists()


def test_the_hidden_tests_are_the_python_files_of_the_folder_in_name_order(tmp_path):
    for name in ("c_term.py", "a_term.py", "notes.txt", "b_term.py", "d_term.py"):
        (tmp_path / name).write_text("")
    assert release_main.hidden_tests(str(tmp_path)) == tuple(str(tmp_path / f"{letter}_term.py") for letter in "abcd")
    assert release_main.hidden_tests(str(tmp_path / "notes.txt")) == ()


def test_the_data_defaults_to_the_repositorys_and_the_test_labels_to_the_datas(tmp_path):
    args = release_main.parse_args(["--out", str(tmp_path / "out")])
    assert args.data == os.path.join(release_main.REPO_DIR, "data") and args.test_labels is None
    assert (args.thresholds, args.grading, args.tests, args.force) == (None, None, None, False)


def test_a_hidden_test_the_starter_names_is_refused(release, course, tmp_path):
    """Kills the hidden tests of --tests left out of the starter's checks: a starter file holding a hidden
    test's @graded line would tell students the tests they cannot see."""
    hidden = '@graded("1h-0-hidden", points=1, visibility="hidden", timeout=60)'
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "term.py").write_text(f"from grading import graded\n\n\n{hidden}\n"
                                                f"def extra(ctx):\n    \"\"\"an extra test\"\"\"\n")
    with open(course / "birth_places_train.tsv", "a", encoding="utf-8") as f:
        f.write(f"{hidden}\n")
    status, _, err = release(tmp_path / "out", "--tests", str(tmp_path / "tests"))
    assert (status, err) == (1, "release: the starter is not fit to hand out: data/birth_places_train.tsv names a "
                                "hidden test\n")
