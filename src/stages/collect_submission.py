"""
Zip the 18 files to hand in, from src/submission, into one flat zip.

    ./run.sh collect_submission [--submission-dir DIR] [--out ZIP]

The zip holds the files under their bare names (no directories), as the
handout asks. When any deliverable is missing, or a params file is not of
the graded configuration (its stamp, see params.py, or for an unstamped file
its model size, says so; a smoke run's, say), or predictions were made from
such params, the command names every such file with the run.sh stage that
makes it, exits nonzero, and leaves any earlier zip untouched; otherwise it
writes the zip in one step (a temporary file renamed into place, readable as
the user's umask allows), replacing the previous one.
"""

import argparse
import os
import sys
import tempfile
import zipfile

from assignment.facts import DELIVERABLES, GRADED_MODEL, HANDED_IN_STAGES, MAKER

SRC_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_DIR = os.path.dirname(SRC_DIR)


def maker(name):
    """What makes the deliverable `name`: the student's code, or a stage of run.sh."""
    return f"./run.sh {MAKER[name]}" if name in MAKER else "your code"


def missing_deliverables(submission_dir):
    """The deliverables that are not regular files in submission_dir, in the handout's order."""
    return [name for name in DELIVERABLES if not os.path.isfile(os.path.join(submission_dir, name))]


def not_graded(path):
    """Why the params file at `path` is not of the graded configuration, or None when it is."""
    import torch

    from runtime.params import read_stamp
    try:
        state = torch.load(path, map_location='cpu', weights_only=True)
        stamp = read_stamp(state)
        if 'configuration' in stamp:
            return f"from a run of another configuration ({stamp['configuration']})" if stamp['configuration'] else None
        layers = len({key.split('.')[1] for key in state if key.startswith('blocks.')})
        layers += 2 * any(key.startswith('down_block.') for key in state)
        width = state['tok_emb.weight'].shape[1]
    except Exception as error:
        return f"not a parameters file that can be read ({type(error).__name__})"
    if (layers, width) != (GRADED_MODEL['n_layer'], GRADED_MODEL['n_embd']):
        return f"from a model of another size (n_layer {layers}, n_embd {width})"
    return None


def refused(submission_dir):
    """One line for every params file not of the graded configuration and every prediction file made from one."""
    reasons = {stage.writes: not_graded(os.path.join(submission_dir, stage.writes)) for stage in HANDED_IN_STAGES
               if stage.writes.endswith('.params')}
    lines = [f"{name} is {reason}: rerun ./run.sh {MAKER[name]}" for name, reason in reasons.items() if reason]
    for stage in HANDED_IN_STAGES:
        if stage.function == 'evaluate' and reasons[stage.params_in]:
            lines.append(f"{stage.writes} was made from {stage.params_in}, which is {reasons[stage.params_in]}: "
                         f"rerun ./run.sh {stage.name} after that")
    return lines


def write_zip(submission_dir, out_path):
    """Zip every deliverable of submission_dir under its bare name into out_path, atomically."""
    out_dir = os.path.dirname(os.path.abspath(out_path))
    handle, temporary = tempfile.mkstemp(suffix=".zip", dir=out_dir)
    try:
        os.close(handle)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as a file the user makes, not mkstemp's 0600
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
    problems = refused(args.submission_dir)
    if problems:
        print(f"collect_submission: {len(problems)} files are not for grading: " + "; ".join(problems),
              file=sys.stderr)
        return 1
    write_zip(args.submission_dir, args.out)
    print(f"wrote {args.out} with the {len(DELIVERABLES)} deliverables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
