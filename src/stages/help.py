"""
run.sh's stage list, made from the stage table (assignment/facts.py):

    python -m stages.help            the help `./run.sh help` prints
    python -m stages.help --graded   the graded stages' names, one a line

The instructors' stages are listed only in a checkout that has their tools
(src/instructors/), so the student starter lists what it can run.
"""

import argparse
import os

from assignment.facts import CORPUS, GRADED_STAGES, OTHER_STAGES, reads

SRC_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTRUCTORS_DIR = os.path.join(SRC_DIR, 'instructors')

HEADER = """usage: ./run.sh <stage> [options]
       ./run.sh <graded stage> [compile|no-compile] [backend] [options]   (the course's words; the stages train eager)

Graded stages (files go to $OUT_DIR, default src/submission/, smoke/ for SMALL=1; data from $DATA_DIR, default ./data):"""
FOOTER = """Settings: DATA_DIR, OUT_DIR, EXPERIMENTS_DIR, TEST_FILE, DEVICE, SMALL=1 (smoke test, not for grading),
NPROC=N (processes, e.g. one per GPU), RESUME=1 (continue from the last checkpoint), PYTHON.
Options after a graded stage go to src/run.py (python3 src/run.py --help lists them), e.g. --plain: train with
src/submission/trainer.py exactly as written, where the stages otherwise put in their own batches, AdamW and step."""


def available_other_stages():
    """The other stages this checkout can run, with their descriptions."""
    instructors = os.path.isdir(INSTRUCTORS_DIR)
    return {name: text for name, (audience, text) in OTHER_STAGES.items() if audience == 'all' or instructors}


def graded_line(stage):
    """'name  summary: reads -> writes' for one graded stage."""
    read = ', '.join('$TEST_FILE' if folder == 'test' else name for folder, name in reads(stage) if name != CORPUS)
    return f"  {stage.name:<36}{stage.summary}: {read + ' -> ' if read else ''}{stage.writes}"


def usage():
    lines = [HEADER]
    lines += [graded_line(stage) for stage in GRADED_STAGES.values()]
    lines += ["", "Other stages:"]
    lines += [f"  {name:<36}{text}" for name, text in available_other_stages().items()]
    lines += ["", FOOTER]
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description="run.sh's list of stages")
    parser.add_argument('--graded', action='store_true', help="print the graded stages' names only")
    args = parser.parse_args(argv)
    print('\n'.join(GRADED_STAGES) if args.graded else usage())


if __name__ == '__main__':
    main()
