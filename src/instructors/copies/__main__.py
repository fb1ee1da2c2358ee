"""
The copy report: `./run.sh copies --submissions DIR --out OUT [--known DIR ...] [--hidden BUNDLE]`
(python3 -m instructors.copies, with src/ on the path).

Reads the hand-ins, compares every pair by parameters and answers, and
writes OUT/report.md, OUT/pairs.csv and OUT/agreement.png. Everything is
made in a staging folder inside OUT and moved into place at the end, all or
none (instructors/staging.py), so a failed run leaves OUT as it was (an OUT it
made is removed again), and nothing is written outside OUT. OUT must be
empty or missing, unless --force, which replaces those three files and
keeps anything else. A bad argument is one line and exit status 1; a bad
hand-in is one line of the report.
"""

import argparse
import os
import sys

from grading.bundle import BundleError

from ..staging import holds, move_into_place, staged
from .answers import answer_tables
from .class_regeneration import OUTPUTS, regenerate_class
from .grader_regeneration import cannot_regenerate, read_bundle
from .handins import named_apart, read_hand_ins
from .heatmap import draw_agreement
from .parameters import close_files, identical_files, keep_the_class_layout, read_params
from .report import Run, write_texts
from .verdicts import add_answer_evidence, add_params_evidence, compared_pairs, ranked

OUTPUTS_WRITTEN = ('report.md', 'pairs.csv', 'agreement.png')


class CopiesError(Exception):
    """A bad argument: one line, exit status 1."""


def parse_args(argv):
    parser = argparse.ArgumentParser(prog='./run.sh copies', description="Compare a class's hand-ins, with each "
                                     "other and with known ones, by parameters and answers; write a copy report.")
    parser.add_argument('--submissions', required=True, help="folder of the class's hand-ins: a folder or zip "
                        "each, or Gradescope's export (submission_metadata.yml)")
    parser.add_argument('--known', action='append', default=[], help="folder of hand-ins from elsewhere (earlier "
                        "terms, public repositories), same layouts; repeatable")
    parser.add_argument('--hidden', help="the hidden bundle (as the release writes it): labels, and the reference "
                        "that regenerates answers from parameters")
    parser.add_argument('--out', required=True, help="folder for report.md, pairs.csv and agreement.png")
    parser.add_argument('--force', action='store_true', help="replace an earlier report in a non-empty OUT")
    parser.add_argument('--jobs', type=int, default=os.cpu_count() or 1, help="regenerations at a time "
                        "(default: %(default)s, the CPU count)")
    parser.add_argument('--timeout', type=float, default=600, help="seconds one regeneration may take "
                        "(default %(default)g)")
    return parser.parse_args(argv)


def check_arguments(args):
    """The resolved OUT; CopiesError for the first bad argument."""
    for option, folder in [('--submissions', args.submissions)] + [('--known', k) for k in args.known]:
        if not os.path.isdir(folder):
            raise CopiesError(f"{option} {folder} is not a folder")
    out = os.path.abspath(args.out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise CopiesError(f"--out {args.out} is a file, not a folder")
    if os.path.islink(out) and not os.path.exists(out):
        raise CopiesError(f"--out {args.out} is a symbolic link to nothing")
    for folder in [args.submissions, *args.known]:
        real_out, real_folder = os.path.realpath(out), os.path.realpath(folder)
        if holds(real_folder, real_out) or holds(real_out, real_folder):
            raise CopiesError(f"--out {args.out} and the hand-ins' folder {folder} must not hold one another")
    if os.path.isdir(out) and os.listdir(out) and not args.force:
        raise CopiesError(f"--out {args.out} is not empty; pass --force to replace an earlier report there")
    if args.jobs < 1:
        raise CopiesError(f"--jobs {args.jobs}: give at least 1")
    return out


def answers_of(hand_ins, bundle, run, scratch, args, problems):
    """The regenerated answers, and the labels of each prediction file, as the bundle gives them."""
    if bundle is None:
        return {}, {}
    labels = {o.file: bundle.answers(o.labels) for o in OUTPUTS if o.labels in bundle.labels}
    run.labels = bool(labels)
    run.not_regenerated = cannot_regenerate(bundle)
    if run.not_regenerated:
        return {}, labels
    run.regenerated = regenerate_class(hand_ins, bundle, scratch, args.jobs, args.timeout, problems)
    print(f"copies: regenerated {run.regenerated.files} parameters files of {run.regenerated.hand_ins} hand-ins in "
          f"{run.regenerated.seconds:.1f} s", file=sys.stderr)
    return run.regenerated.answers, labels


def build(args, bundle, staging):
    """Compare the hand-ins and write the report into `staging`; returns the pairs, ranked."""
    problems, hand_ins = [], []
    for folder, known in [(args.submissions, None)] + [(k, k) for k in args.known]:
        found, lines = read_hand_ins(folder, known)
        hand_ins += found
        problems += lines
    hand_ins = named_apart(hand_ins)
    run = Run(args.submissions, args.known, args.hidden)
    scratch = os.path.join(staging, 'scratch')
    os.mkdir(scratch)
    regenerated, labels = answers_of(hand_ins, bundle, run, scratch, args, problems)
    os.rmdir(scratch)
    pairs = compared_pairs(hand_ins)
    files = read_params(hand_ins, problems)
    keep_the_class_layout(files, hand_ins, bundle.vocabulary if bundle else None, problems)
    close, comparisons = close_files(files, pairs)
    add_params_evidence(pairs, identical_files(files, pairs), close, comparisons, hand_ins)
    add_answer_evidence(pairs, answer_tables(hand_ins, regenerated, labels, problems), hand_ins)
    order = ranked(pairs)
    write_texts(staging, run, order, hand_ins, comparisons, problems)
    draw_agreement(os.path.join(staging, 'agreement.png'), order, [hand_in.name for hand_in in hand_ins])
    return order


def main(argv=None):
    args = parse_args(argv)
    try:
        out = check_arguments(args)
        bundle = read_bundle(args.hidden) if args.hidden else None
    except (CopiesError, BundleError) as error:
        print(f"copies: {error}", file=sys.stderr)
        return 1
    with staged(out, '.copies-', beside=False) as staging:
        pairs = build(args, bundle, staging)
        move_into_place(staging, out, OUTPUTS_WRITTEN)
    flagged = sum(pair.verdict != 'independent' for pair in pairs)
    print(f"copies: {len(pairs)} pairs compared, {flagged} flagged; wrote "
          f"{', '.join(os.path.join(out, name) for name in OUTPUTS_WRITTEN)}")
    return 0


if __name__ == '__main__':
    sys.exit(main())
