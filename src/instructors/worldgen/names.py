"""
Unique full names drawn from the naming cultures.

A name is a given name, sometimes a second given name, and a family name
(with a particle in cultures that have them, and a feminine form where the
culture inflects family names). No full name is handed out twice, so a
person is identified by their name across all files of a world.
"""

from dataclasses import dataclass

from .cultures import CULTURES, FEMININE_ENDINGS, PARTICLES

# Cultures whose names in English texts often carry a second given name.
MIDDLE_NAME_CULTURES = ("english", "celtic", "french", "german", "dutch", "nordic", "afrikaans")
MIDDLE_NAME_CHANCE = 0.15
MAX_TRIES = 1000


@dataclass(frozen=True)
class Name:
    full: str
    given: str
    family: str
    female: bool


def split_parts(culture):
    """Returns (male given names, female given names, family names) of a culture."""
    return tuple(words.split() for words in CULTURES[culture])


PARTS = {culture: split_parts(culture) for culture in CULTURES}


def feminine(family, culture):
    """The form a family name takes for a woman in the given culture."""
    for ending, replacement in FEMININE_ENDINGS.get(culture, ()):
        if family.endswith(ending):
            return family[: len(family) - len(ending)] + replacement
    return family


class NameMaker:
    """Hands out full names that were never handed out before."""

    def __init__(self):
        self.used = set()

    def make(self, rng, culture, female):
        """Returns a new Name of the given culture and sex."""
        for _ in range(MAX_TRIES):
            name = self.draw(rng, culture, female)
            if name.full not in self.used:
                self.used.add(name.full)
                return name
        raise ValueError(f"no new {culture} name after {MAX_TRIES} tries: the world is too large")

    @staticmethod
    def draw(rng, culture, female):
        male_names, female_names, families = PARTS[culture]
        given_names = female_names if female else male_names
        given = rng.choice(given_names)
        family = rng.choice(families)
        if female:
            family = feminine(family, culture)
        chance, particles = PARTICLES.get(culture, (0.0, ()))
        if rng.random() < chance:
            family = rng.choice(particles) + " " + family
        first = given
        if culture in MIDDLE_NAME_CULTURES and rng.random() < MIDDLE_NAME_CHANCE:
            middle = rng.choice(given_names)
            if middle != given:
                first = given + " " + middle
        return Name(first + " " + family, given, family, female)
