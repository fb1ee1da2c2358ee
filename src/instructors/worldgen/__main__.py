"""
Command line: writes a generated world into a folder.

    PYTHONPATH=src python3 -m instructors.worldgen --out data --seed 224
"""

import argparse

from .people import NAME_FROM_BIRTH_COUNTRY
from .world import write_world


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m instructors.worldgen", description=__doc__.strip().splitlines()[0])
    parser.add_argument("--out", required=True, help="folder to write the five files into")
    parser.add_argument("--seed", type=int, required=True, help="the world's random seed")
    parser.add_argument("--train", type=int, default=2000, help="people in birth_places_train.tsv")
    parser.add_argument("--dev", type=int, default=500, help="people in birth_dev.tsv")
    parser.add_argument("--test", type=int, default=437, help="people in birth_test.tsv")
    parser.add_argument("--extra", type=int, default=0, help="people only in wiki.txt")
    parser.add_argument("--paraphrases", type=int, default=1, help="biographies per person")
    parser.add_argument("--style", choices=("course", "short"), default="course", help="biography style")
    parser.add_argument("--name_link", type=float, default=NAME_FROM_BIRTH_COUNTRY,
                        help="share of people named in their birth country's culture (default %(default)s)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    paths = write_world(args.out, args.seed, args.train, args.dev, args.test, args.extra,
                        args.paraphrases, args.style, args.name_link)
    for path in paths:
        print(f"{path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
