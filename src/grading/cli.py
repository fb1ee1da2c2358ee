"""
The command line of a tests module (grader.py calls `main`).

    python grader.py                  every test
    python grader.py 1e-0-basic 1f    one test, or a whole part; also 'basic' or 'hidden'
    python grader.py --json results/results.json --hidden /path/to/bundle

Exit status: 0 when the run completed, whatever the score; 2 for a usage
error (unknown test id, missing submission, unusable bundle); 130 when
interrupted.
"""

import argparse
import os
import pwd
import signal
import sys

from . import registry
from .bundle import HIDDEN_ENV, BundleError, load_bundle
from .report import render
from .results import write_results
from .runner import Limits, readable_by
from .suite import Suite


def parser(default_submission):
    p = argparse.ArgumentParser(description="Grade a submission: basic tests here, hidden tests with a hidden bundle.")
    p.add_argument("tests", nargs="*", metavar="TEST",
                   help="test ids (e.g. 1e-0-basic), parts (e.g. 1e), or 'basic' / 'hidden'; default: all")
    p.add_argument("--json", metavar="PATH", help="also write Gradescope's results.json to PATH")
    p.add_argument("--hidden", metavar="DIR", default=os.environ.get(HIDDEN_ENV),
                   help=f"the instructors' hidden bundle (default: ${HIDDEN_ENV}; none: hidden tests are graded on submission)")
    p.add_argument("--submission", metavar="DIR", default=default_submission,
                   help="the submission package to grade (default: %(default)s)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="time limit for every test instead of its own")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="tests run at once (default: %(default)s)")
    p.add_argument("--memory-mb", type=int, default=4096, help="address-space limit of each test process (default: %(default)s)")
    p.add_argument("--spawn", action="store_true",
                   help="start each test process as a new interpreter instead of forking it (slower)")
    p.add_argument("--user", help="run submission code as this user (the grader itself must run as root)")
    p.add_argument("--list", action="store_true", help="list the tests and exit")
    p.add_argument("-v", "--verbose", action="store_true", help="show what the submission printed in failing tests")
    return p


def listing(tests):
    """One line per test: id, points, description."""
    return "\n".join(f"  {t.test_id:<12} {t.points:>4g} pts  {t.description}" for t in tests)


def usage_error(message):
    print(f"grader: {message}", file=sys.stderr)
    return 2


def main(argv=None, tests_file=None, default_thresholds=None, preload=()):
    """
    Grade according to the command line; returns the exit status.
    `default_thresholds` are the thresholds a bundle may override; `preload`
    names the modules the zygote imports once for all test processes.
    """
    if os.name != "posix":
        return usage_error("the grader needs a POSIX system: Linux, macOS, or WSL on Windows")
    tests_file = os.path.abspath(tests_file or sys.argv[0])
    args = parser(os.path.join(os.path.dirname(tests_file), "src", "submission")).parse_args(argv)
    if args.list:
        print(listing(registry.TESTS.values()))
        return 0
    try:
        tests = registry.select(args.tests)
    except KeyError as unknown:
        return usage_error(f"unknown test {', '.join(unknown.args[0])}; known tests:\n"
                           + listing(registry.TESTS.values()))
    if not os.path.isfile(os.path.join(args.submission, "__init__.py")):
        return usage_error(f"{args.submission} is not a submission package (no __init__.py)")
    bundle = None
    if args.hidden:
        try:
            bundle = load_bundle(args.hidden, default_thresholds or {})
        except BundleError as error:
            return usage_error(str(error))
    elif args.json:
        print("grader: no hidden bundle: hidden tests score 0 in the results file", file=sys.stderr)
    user = None
    if args.user:
        try:
            user = pwd.getpwnam(args.user)
        except KeyError:
            return usage_error(f"no user named {args.user!r}")
        needed = [os.path.dirname(os.__file__), tests_file, os.path.dirname(os.path.abspath(__file__))]
        unreadable = [path for path in needed if not readable_by(user, path)]
        if unreadable:
            return usage_error(f"user {args.user} cannot read {unreadable[0]}: "
                               "install Python and the grader where that user can read them, or omit --user")
    suite = Suite(tests_file, args.submission, bundle, Limits(memory_bytes=args.memory_mb << 20),
                  user, args.jobs, args.timeout, preload, fork=not args.spawn)
    heading = (f"Grading {os.path.abspath(args.submission)}\nhidden bundle: "
               + (bundle.path if bundle else "none (hidden tests are graded on submission)"))
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
