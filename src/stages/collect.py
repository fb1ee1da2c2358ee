"""
Zip the 18 files to hand in, from src/submission, into one flat zip.

    ./run.sh collect_submission [--submission-dir DIR] [--out ZIP]

The zip holds the files under their bare names (no directories), as the
handout asks. When any deliverable is missing the command names every missing
one with the run.sh stage that makes it, exits nonzero, and leaves any earlier
zip untouched; otherwise it writes the zip in one step (a temporary file
renamed into place), replacing the previous one.
"""

import argparse
import os
import sys
import tempfile
import zipfile

from .facts import DELIVERABLES, MAKER

SRC_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_DIR = os.path.dirname(SRC_DIR)


def maker(name):
    """What makes the deliverable `name`: the student's code, or a stage of run.sh."""
    return f"./run.sh {MAKER[name]}" if name in MAKER else "your code"


def missing_deliverables(submission_dir):
    """The deliverables that are not regular files in submission_dir, in the handout's order."""
    return [name for name in DELIVERABLES if not os.path.isfile(os.path.join(submission_dir, name))]


def write_zip(submission_dir, out_path):
    """Zip every deliverable of submission_dir under its bare name into out_path, atomically."""
    out_dir = os.path.dirname(os.path.abspath(out_path))
    handle, temporary = tempfile.mkstemp(suffix=".zip", dir=out_dir)
    os.close(handle)
    try:
        with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name in DELIVERABLES:
                archive.write(os.path.join(submission_dir, name), arcname=name)
        os.replace(temporary, out_path)
    except BaseException:
        os.remove(temporary)
        raise


def main(argv=None):
    parser = argparse.ArgumentParser(description="Zip the 18 deliverables of src/submission for upload.")
    parser.add_argument("--submission-dir", default=os.path.join(SRC_DIR, "submission"),
                        help="where the deliverables are (default: src/submission)")
    parser.add_argument("--out", default=os.path.join(REPO_DIR, "submission.zip"),
                        help="the zip to write (default: submission.zip at the top of the repository)")
    args = parser.parse_args(argv)

    if not os.path.isdir(args.submission_dir):
        print(f"collect_submission: no such directory: {args.submission_dir}", file=sys.stderr)
        return 1
    if os.path.isdir(args.out):
        print(f"collect_submission: --out is a directory, not a zip file: {args.out}", file=sys.stderr)
        return 1
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        print(f"collect_submission: the folder of --out does not exist: {args.out}", file=sys.stderr)
        return 1
    missing = missing_deliverables(args.submission_dir)
    if missing:
        listed = ", ".join(f"{name} ({maker(name)})" for name in missing)
        print(f"collect_submission: {len(missing)} of {len(DELIVERABLES)} deliverables missing from "
              f"{args.submission_dir}: {listed}", file=sys.stderr)
        return 1
    write_zip(args.submission_dir, args.out)
    print(f"wrote {args.out} with the {len(DELIVERABLES)} deliverables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
