"""
A whole generated world: its people, their splits, and the course's five files.

People are drawn one after another, so the first n_train are the training
split, the next n_dev the dev split, then n_test the test split and n_extra
people who appear only in wiki.txt. wiki.txt lists biographies in that
order, one a line, without a newline after the last line (as the course's
file); with several paraphrases a person, in rounds: every person's first
biography, then every person's second, and so on, so that a batch read in
file order (as the course's trainer reads it) holds as many people as
biographies. The question files end every line with a newline. One random
person's biography opens with a question, so that every character of the
question files occurs in wiki.txt, whose characters are the datasets'
vocabulary.

All randomness comes from random.Random instances seeded from `seed`: the
same arguments give the same bytes on any machine. The people depend only on
the seed, the number of people and name_from_birth_country; the phrasings
come from a second stream, so a different style or number of paraphrases
keeps the same people.
"""

import random
from pathlib import Path

from assignment.facts import CORPUS, DEV_QUESTIONS, TEST_LABELS, TEST_QUESTIONS, TRAIN_QUESTIONS

from .biographies import biographies
from .names import NameMaker
from .people import NAME_FROM_BIRTH_COUNTRY, make_person
from .places import PlaceSampler

FILE_NAMES = (CORPUS, TRAIN_QUESTIONS, DEV_QUESTIONS, TEST_QUESTIONS, TEST_LABELS)


def question(person):
    return f"Where was {person.name.full} born?"


def labelled(people):
    return "".join(f"{question(p)}\t{p.birth_place.name}\n" for p in people)


def make_people(seed, count, name_from_birth_country=NAME_FROM_BIRTH_COUNTRY):
    """Draws `count` people; returns them with a text stream seeded from the same seed."""
    rng = random.Random(seed)
    text_rng = random.Random(rng.getrandbits(64))
    name_maker, sampler = NameMaker(), PlaceSampler()
    people = [make_person(rng, name_maker, sampler, name_from_birth_country) for _ in range(count)]
    return people, text_rng


def make_world(seed, n_train=2000, n_dev=500, n_test=437, n_extra=0, paraphrases=1, style="course",
               name_from_birth_country=NAME_FROM_BIRTH_COUNTRY):
    """
    Returns {file name: text} for the five files of the world.
    name_from_birth_country is the share of people named in their birth
    country's culture (the rest get a random culture's name): the lower it
    is, the less a name alone gives away where its bearer was born.
    """
    people, text_rng = make_people(seed, n_train + n_dev + n_test + n_extra, name_from_birth_country)
    train = people[:n_train]
    dev = people[n_train : n_train + n_dev]
    test = people[n_train + n_dev : n_train + n_dev + n_test]
    asker = text_rng.randrange(len(people))
    by_person = [biographies(person, text_rng, style, paraphrases, open_with_question=index == asker)
                 for index, person in enumerate(people)]
    lines = [texts[turn] for turn in range(paraphrases) for texts in by_person]
    return {
        CORPUS: "\n".join(lines),
        TRAIN_QUESTIONS: labelled(train),
        DEV_QUESTIONS: labelled(dev),
        TEST_QUESTIONS: "".join(question(p) + "\n" for p in test),
        TEST_LABELS: labelled(test),
    }


def write_world(out_dir, seed, n_train=2000, n_dev=500, n_test=437, n_extra=0, paraphrases=1, style="course",
                name_from_birth_country=NAME_FROM_BIRTH_COUNTRY):
    """Writes the five files of the world (see make_world) into out_dir; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = make_world(seed, n_train, n_dev, n_test, n_extra, paraphrases, style, name_from_birth_country)
    paths = []
    for file_name, text in files.items():
        path = out_dir / file_name
        path.write_bytes(text.encode("ascii"))
        paths.append(path)
    return paths
