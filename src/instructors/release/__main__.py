"""
The release command: `./run.sh release --out OUT [--edition NAME]` (python3 -m instructors.release, src/ on
the path): the starter and the autograder bundle of one edition of the course (assignment/editions.py).

Everything is built in a temporary folder beside OUT and checked there; only
a release that passes every check is moved into OUT, all or none (see
staging.py), so a failed run leaves OUT as it was (an OUT it made is removed
again). OUT must be empty or missing, unless --force, which replaces
OUT/student, OUT/autograder and OUT/autograder.zip and keeps anything else.
"""

import argparse
import os
import shutil
import sys

from assignment.editions import EDITIONS, SEED_EDITION
from assignment.facts import DATA_FILES, TEST_LABELS, TEST_QUESTIONS
from grading.bundle import BundleError, read_thresholds
from runtime.inputs import InputError

from . import checks
from .autograder import build_autograder, check_test_labels
from .regions import RegionError
from ..staging import holds, move_into_place, staged
from .student import ReleaseError, build_student, require_files

REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OUTPUTS = ("student", "autograder", "autograder.zip")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="./run.sh release", description="Cut the student starter and the "
                                     "autograder bundle out of the reference solution.")
    parser.add_argument("--out", required=True, help="folder to write student/, autograder/ and autograder.zip into")
    parser.add_argument("--edition", default=SEED_EDITION, choices=sorted(EDITIONS),
                        help="the course edition to cut: its second model, parts, stages and tests "
                             "(default: %(default)s, the seed's)")
    parser.add_argument("--force", action="store_true", help="replace an earlier release in a non-empty OUT")
    parser.add_argument("--data", default=os.path.join(REPO_DIR, "data"),
                        help="the course data students get (default: data/)")
    parser.add_argument("--test-labels", help="the labelled test file for the hidden bundle "
                        "(default: birth_test.tsv in --data)")
    parser.add_argument("--thresholds", help="thresholds.json for the hidden bundle (default: the tests' own)")
    parser.add_argument("--grading", help="grading.json for the hidden bundle, e.g. {\"predictions\": \"files\"} "
                                          "for a course that does not collect parameters (default: regenerate)")
    parser.add_argument("--tests", help="a folder of hidden tests (*.py, written as grader.py's) for the bundle's "
                                        "tests/: they add tests, or replace grader.py's of the same id")
    return parser.parse_args(argv)


def check_arguments(args):
    """Raise ReleaseError for the first bad argument (InputError for a question file that breaks the rules of
    assignment/question_files.py); returns the resolved OUT path."""
    out = os.path.abspath(args.out)
    if not os.path.isdir(args.data):
        raise ReleaseError(f"--data {args.data} is not a folder")
    if not os.path.isfile(args.test_labels):
        raise ReleaseError(f"the test labels {args.test_labels} do not exist (give them with --test-labels)")
    require_files(args.data, DATA_FILES)
    check_test_labels(args.test_labels, os.path.join(args.data, TEST_QUESTIONS))
    for option, path in (("--thresholds", args.thresholds), ("--grading", args.grading)):
        if path is not None and not os.path.isfile(path):
            raise ReleaseError(f"{option} {path} does not exist")
    if args.thresholds is not None:
        try:
            read_thresholds(args.thresholds)
        except BundleError as error:
            raise ReleaseError(str(error)) from None
    if args.tests is not None and not hidden_tests(args.tests):
        raise ReleaseError(f"--tests {args.tests} holds no .py files of hidden tests")
    if os.path.exists(out) and not os.path.isdir(out):
        raise ReleaseError(f"--out {args.out} is a file, not a folder")
    if os.path.islink(out) and not os.path.exists(out):
        raise ReleaseError(f"--out {args.out} is a symbolic link to nothing")
    if holds(out, REPO_DIR):
        raise ReleaseError(f"--out {args.out} holds the repository itself; choose a folder of its own")
    if os.path.isdir(out) and os.listdir(out) and not args.force:
        raise ReleaseError(f"--out {args.out} is not empty; pass --force to replace an earlier release there")
    return out


def hidden_tests(folder):
    """The .py files of a --tests folder, sorted; () when it is not a folder."""
    if not os.path.isdir(folder):
        return ()
    return tuple(os.path.join(folder, name) for name in sorted(os.listdir(folder)) if name.endswith(".py"))


def build(args, staging):
    """Build and check the release in `staging`; returns the number of regions cut."""
    student = os.path.join(staging, "student")
    cut_count = build_student(REPO_DIR, args.data, student, args.thresholds, args.edition)
    tests = hidden_tests(args.tests) if args.tests else ()
    found = checks.problems(student, args.test_labels, os.path.join(REPO_DIR, "src", "submission"), tests)
    found += checks.student_file_problems(student, args.edition)
    if found:
        raise ReleaseError(f"the starter is not fit to hand out: {'; '.join(found)}")
    autograder = os.path.join(staging, "autograder")
    settings = {"thresholds.json": args.thresholds, "grading.json": args.grading}
    build_autograder(REPO_DIR, args.data, args.test_labels, settings, student, autograder, tests, args.edition)
    failure = checks.bundle_failure(student, os.path.join(autograder, "hidden"))
    if failure:
        raise ReleaseError(f"the grader does not accept the hidden bundle: {failure}")
    shutil.make_archive(autograder, "zip", root_dir=autograder)
    return cut_count


def main(argv=None):
    args = parse_args(argv)
    if args.test_labels is None:
        args.test_labels = os.path.join(args.data, TEST_LABELS)
    try:
        out = check_arguments(args)
        with staged(out, ".release-", beside=True) as staging:
            cut_count = build(args, staging)
            move_into_place(staging, out, OUTPUTS)
    except (ReleaseError, RegionError, InputError) as error:  # InputError: a corpus or question file refused
        print(f"release: {error}", file=sys.stderr)
        return 1
    print(f"release: cut {cut_count} regions; wrote {', '.join(os.path.join(out, n) for n in OUTPUTS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
