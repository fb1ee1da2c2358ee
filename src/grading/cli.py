"""
The command line of a tests module (grader.py calls `main`).

    python grader.py                  every test
    python grader.py 1e-0-basic 1f    one test, or a whole part; also 'basic' or 'hidden'
    python grader.py --json results/results.json --hidden /path/to/bundle
    python grader.py --list --hidden /path/to/bundle     the tests that would run, the bundle's among them
    python grader.py --labels data/birth_dev.tsv hidden  a local check of the prediction files one has labels for
    python grader.py --edition spring2026 --hidden DIR   another edition's tests (assignment/editions.py)

Exit status: 0 when the run completed, whatever the score; 2 for a usage
error (unknown test id, missing submission, unusable bundle, a --json path
that cannot be written); 130 when interrupted, with no results file
written.
"""

import argparse
import os
import pwd
import signal
import sys

from . import registry
from .bundle import HIDDEN_ENV, BundleError, check_thresholds, load_bundle, local_labels
from .report import render
from .results import folders_to_make, write_results
from .runner import Limits, readable_by
from .suite import Suite


def parser(default_submission):
    p = argparse.ArgumentParser(description="Grade a submission: basic tests here, hidden tests with a hidden bundle.")
    p.add_argument("tests", nargs="*", metavar="TEST",
                   help="test ids (e.g. 1e-0-basic), parts (e.g. 1e), or 'basic' / 'hidden'; default: all")
    p.add_argument("--json", metavar="PATH", help="also write Gradescope's results.json to PATH")
    p.add_argument("--hidden", metavar="DIR", default=os.environ.get(HIDDEN_ENV),
                   help=f"the instructors' hidden bundle (default: ${HIDDEN_ENV}; none: hidden tests are graded on submission)")
    p.add_argument("--labels", metavar="FILE", action="append",
                   help="a local check instead of a bundle: grade the prediction files as they are against these "
                        "labelled files (e.g. data/birth_dev.tsv); repeatable")
    p.add_argument("--submission", metavar="DIR", default=default_submission,
                   help="the submission package to grade (default: %(default)s)")
    p.add_argument("--files", metavar="DIR",
                   help="the folder of the parameters and prediction files (default: the submission package)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="time limit for every test instead of its own")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="tests run at once (default: %(default)s)")
    p.add_argument("--memory-mb", type=int, default=4096, help="address-space limit of each test process (default: %(default)s)")
    p.add_argument("--spawn", action="store_true",
                   help="start each test process as a new interpreter instead of forking it (slower)")
    p.add_argument("--user", help="run submission code as this user (the grader itself must run as root)")
    p.add_argument("--list", action="store_true", help="list the tests and exit")
    p.add_argument("--edition", choices=sorted(registry.EDITIONS),
                   help=f"the course edition whose tests to grade (default: the checkout's, else "
                        f"${registry.EDITION_ENV}, else {registry.SEED_EDITION})")
    p.add_argument("-v", "--verbose", action="store_true", help="show what the submission printed in failing tests")
    return p


def listing(tests, bundle=None):
    """One line per test: id, points, description, thresholds (the bundle's where it sets them), origin."""
    lines = []
    for t in tests:
        thresholds = dict(t.thresholds, **(bundle.thresholds.get(t.test_id, {}) if bundle else {}))
        line = f"  {t.test_id:<12} {t.points:>4g} pts  {t.description}"
        line += f" ({', '.join(f'{k} {v:g}' for k, v in thresholds.items())})" if thresholds else ""
        if t.source in registry.BUNDLE_FILES:
            replaced = f", in place of {os.path.basename(t.replaces.source)}'s" if t.replaces else ""
            line += f"  [from {os.path.basename(t.source)}{replaced}]"
        lines.append(line)
    return "\n".join(lines)


def unwritable(path):
    """Why the results file cannot be written at `path` (a folder there, or a file where one of its
    folders should be), or None: said before the tests run, not after."""
    if os.path.isdir(path):
        return "a folder, not a file"
    missing = folders_to_make(path)
    nearest = os.path.dirname(missing[-1] if missing else os.path.abspath(path))
    return None if os.path.isdir(nearest) else f"{nearest} is not a folder"


def usage_error(message):
    print(f"grader: {message}", file=sys.stderr)
    return 2


def read_bundle(args):
    """The hidden bundle (its tests registered) or the local check's labels, as the arguments ask; None for neither."""
    if args.hidden and args.labels:
        raise BundleError("give either --hidden (the instructors' bundle) or --labels (a local check), not both")
    if args.labels:
        return local_labels(args.labels)
    if not args.hidden:
        return None
    bundle = load_bundle(args.hidden)
    try:
        registry.load_bundle_tests(bundle.tests)
    except ValueError as error:
        raise BundleError(str(error)) from None
    check_thresholds(bundle, registry.TESTS.values())
    return bundle


def main(argv=None, tests_file=None, preload=()):
    """
    Grade according to the command line; returns the exit status. `preload`
    names the modules the zygote imports once for all test processes.
    """
    if os.name != "posix":
        return usage_error("the grader needs a POSIX system: Linux, macOS, or WSL on Windows")
    tests_file = os.path.abspath(tests_file or sys.argv[0])
    args = parser(os.path.join(os.path.dirname(tests_file), "src", "submission")).parse_args(argv)
    named = os.environ.get(registry.EDITION_ENV)
    if named and named not in registry.EDITIONS and not args.edition:
        return usage_error(f"${registry.EDITION_ENV} is {named!r}, no edition of the course; the editions are "
                           f"{', '.join(registry.EDITIONS)}")
    if args.edition:
        registry.use_edition(args.edition)
    try:
        bundle = read_bundle(args)
    except BundleError as error:
        return usage_error(str(error))
    if args.list:
        print(listing(registry.select([]), bundle))
        return 0
    try:
        tests = registry.select(args.tests)
    except KeyError as unknown:
        return usage_error(f"unknown test {', '.join(unknown.args[0])}; known tests:\n"
                           + listing(registry.select([]), bundle))
    if not os.path.isfile(os.path.join(args.submission, "__init__.py")):
        return usage_error(f"{args.submission} is not a submission package (no __init__.py)")
    if args.files is not None and not os.path.isdir(args.files):
        return usage_error(f"--files {args.files} is not a folder")
    if args.json and unwritable(args.json):
        return usage_error(f"--json {args.json}: {unwritable(args.json)}")
    if bundle is None and args.json:
        print("grader: no hidden bundle: hidden tests score 0 in the results file", file=sys.stderr)
    user = None
    if args.user:
        try:
            user = pwd.getpwnam(args.user)
        except KeyError:
            return usage_error(f"no user named {args.user!r}")
        needed = [os.path.dirname(os.__file__), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
        unreadable = [path for path in needed if not readable_by(user, path)]
        if unreadable:
            return usage_error(f"user {args.user} cannot read {unreadable[0]}: "
                               "install Python and the grader where that user can read them, or omit --user")
    suite = Suite(args.submission, bundle, Limits(memory_bytes=args.memory_mb << 20),
                  user, args.jobs, args.timeout, preload, fork=not args.spawn, files_dir=args.files)
    heading = (f"Grading {os.path.abspath(args.submission)}\n"
               + ("hidden bundle: none (hidden tests are graded on submission)" if bundle is None
                  else f"local check: {bundle.path} (prediction files graded as they are)" if bundle.local
                  else f"hidden bundle: {bundle.path}"))
    print(heading, flush=True)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a terminated run cleans up like Ctrl-C
    try:
        results, seconds = suite.run(tests)
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130
    print("\n" + render(results, seconds, args.verbose))
    if args.json:
        write_results(args.json, results, seconds)
        print(f"wrote {args.json}")
    return 0
