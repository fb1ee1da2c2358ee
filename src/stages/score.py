"""
./run.sh score_dev: the dev predictions in OUT_DIR scored against the dev
labels in DATA_DIR, each beside the threshold the hidden dev test applies
(facts.THRESHOLDS), so a hand-in can be checked before it is made. The test
set's labels are not in the starter; its thresholds are printed as well.

    python3 -m stages.score --out_dir src/submission --dev_path data/birth_dev.tsv
"""

import argparse
import sys

from submission.utils import evaluate_places

from .baseline import labelled_places
from .facts import MAKER, THRESHOLDS
from .inputs import InputError


def needed(threshold):
    """The threshold in words: 'at least 10%' and/or 'at least 1 correct'."""
    words = [f"at least {100 * threshold['min_accuracy']:g}%"] if 'min_accuracy' in threshold else []
    words += [f"at least {threshold['min_correct']} correct"] if 'min_correct' in threshold else []
    return ' and '.join(words)


def meets(threshold, correct, total):
    return correct >= threshold.get('min_correct', 0) and correct / total >= threshold.get('min_accuracy', 0)


def score_line(stem, out_dir, dev_path, dev_count):
    """One line for the dev predictions `stem`: accuracy against the threshold, or what makes the file."""
    path = f"{out_dir}/{stem}.predictions"
    try:
        with open(path, encoding='utf-8') as f:
            predictions = [line.rstrip('\n') for line in f]
    except FileNotFoundError:
        return f"{stem}: no predictions yet ({path}; ./run.sh {MAKER[stem + '.predictions']} makes them)", False
    if len(predictions) != dev_count:
        return f"{stem}: {len(predictions)} predictions for {dev_count} questions: rerun ./run.sh " \
               f"{MAKER[stem + '.predictions']}", False
    total, correct = evaluate_places(dev_path, predictions)
    ok = meets(THRESHOLDS[stem], correct, total)
    return (f"{stem}: {int(correct)} of {int(total)} correct ({100 * correct / total:.1f}%); "
            f"the hidden test needs {needed(THRESHOLDS[stem])}: {'met' if ok else 'NOT met'}"), ok


def main(argv=None):
    p = argparse.ArgumentParser(description="Score the dev predictions against the hidden tests' thresholds.")
    p.add_argument('--out_dir', required=True, help="the folder of the predictions (src/submission)")
    p.add_argument('--dev_path', required=True, help="birth_dev.tsv")
    args = p.parse_args(argv)
    try:
        dev_count = len(labelled_places(args.dev_path))
    except InputError as error:
        print(f"score_dev: error: {error}", file=sys.stderr)
        return 1
    results = [score_line(stem, args.out_dir, args.dev_path, dev_count) for stem in THRESHOLDS if stem.endswith('.dev')]
    for line, _ in results:
        print(line)
    tests = [f"{stem} {needed(threshold)}" for stem, threshold in THRESHOLDS.items() if stem.endswith('.test')]
    print(f"(the test set is scored only on submission: {'; '.join(tests)})")
    return 0 if all(ok for _, ok in results) else 1


if __name__ == '__main__':
    sys.exit(main())
