"""
The london_baseline stage: how often is a constant answer right on the dev set?

Two constants are scored: "London", the handout's reference point, and the
place that is most frequent among the training answers (the first in file
order if several are equally frequent). A model that has learnt nothing but
the answer distribution lands near these numbers.

    ./run.sh london_baseline   # python3 -m stages.london_baseline --train_path data/birth_places_train.tsv --dev_path data/birth_dev.tsv
"""

import argparse
import sys
from collections import Counter

from submission.utils import evaluate_places

from assignment.question_files import InputError, read_question_file


def labelled_places(path):
    """The places of a labelled question file, read by read_question_file's rules."""
    return [line.place for line in read_question_file(path, labelled=True)]


def accuracy_line(label, total, correct):
    return '{}: Correct: {} out of {}: {}%'.format(label, correct, total, correct / total * 100)


def main(argv=None):
    p = argparse.ArgumentParser(description="Accuracy on dev of always giving one answer.")
    p.add_argument('--train_path', required=True, help="birth_places_train.tsv")
    p.add_argument('--dev_path', required=True, help="birth_dev.tsv")
    args = p.parse_args(argv)
    try:
        train_places = labelled_places(args.train_path)
        dev_count = len(labelled_places(args.dev_path))
    except InputError as error:
        print(f"london_baseline: error: {error}", file=sys.stderr)
        return 1
    most_frequent, count = Counter(train_places).most_common(1)[0]
    for label, place in (('Always "London"', 'London'),
                         (f'Always "{most_frequent}" ({count} of {len(train_places)} training answers)',
                          most_frequent)):
        total, correct = evaluate_places(args.dev_path, [place] * dev_count)
        print(accuracy_line(label, total, correct))
    return 0


if __name__ == '__main__':
    sys.exit(main())
