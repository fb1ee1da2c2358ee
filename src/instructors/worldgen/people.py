"""
The facts of one person of the generated world: name, birth and death,
occupation, and the other places of a life (home, studies, death), which
are never the birth place, so the birth place is not the only place a
biography mentions.
"""

from dataclasses import dataclass
from typing import Optional

from .careers import FIELD_LIST, OCCUPATION_LIST, school_for
from .cultures import CULTURES
from .names import Name
from .places import Place

LAST_YEAR = 2020  # the world's present: nothing happens after it
FIRST_BIRTH_YEAR = 1760
LAST_BIRTH_YEAR = 2000
FEMALE_SHARE = 0.3
NAME_FROM_BIRTH_COUNTRY = 0.6  # else the name comes from a random culture
NATIONALITY_FROM_HOME = 0.15  # else the nationality is the birth country's
CULTURE_NAMES = list(CULTURES)


@dataclass(frozen=True)
class Date:
    year: int
    month: int
    day: int


@dataclass(frozen=True)
class Person:
    name: Name
    birth_place: Place
    born: Date
    died: Optional[Date]
    death_place: Optional[Place]
    home: Place
    second_home: Place
    study_place: Place
    school: str
    field: str
    occupation: str
    second_occupation: str
    nationality: str
    move_year: int


def age_on(born, date):
    """Whole years between a birth date and a later date."""
    return date.year - born.year - ((date.month, date.day) < (born.month, born.day))


def random_date(rng, year):
    return Date(year, rng.randint(1, 12), rng.randint(1, 28))


def draw_other_place(rng, sampler, birth_place, avoid=(), cities_only=False):
    """A place that is neither the birth place nor what contains it, nor in `avoid`."""
    excluded = {birth_place.name, birth_place.qualifier, birth_place.country.name, *avoid}
    while True:
        place = sampler.draw(rng, avoid=excluded)
        if not (cities_only and place.is_country):
            return place


def make_person(rng, name_maker, sampler, name_from_birth_country=NAME_FROM_BIRTH_COUNTRY):
    """
    Draws one person; every random choice comes from `rng`. The name comes
    from the birth country's culture with probability name_from_birth_country.
    """
    birth_place = sampler.draw(rng)
    if rng.random() < name_from_birth_country:
        culture = birth_place.country.culture
    else:
        culture = rng.choice(CULTURE_NAMES)
    name = name_maker.make(rng, culture, female=rng.random() < FEMALE_SHARE)

    birth_year = max(rng.randint(FIRST_BIRTH_YEAR, LAST_BIRTH_YEAR) for _ in range(2))
    born = random_date(rng, birth_year)
    death_year = birth_year + rng.randint(30, 95)
    dies = death_year <= LAST_YEAR and (birth_year < 1930 or rng.random() < 0.2)
    died = random_date(rng, death_year) if dies else None

    home = draw_other_place(rng, sampler, birth_place)
    second_home = draw_other_place(rng, sampler, birth_place, avoid=(home.name,))
    study_place = draw_other_place(rng, sampler, birth_place, cities_only=True)
    death_place = None
    if died:
        death_place = home if rng.random() < 0.5 else draw_other_place(rng, sampler, birth_place)

    field = rng.choice(FIELD_LIST)
    occupation = rng.choice(OCCUPATION_LIST)
    second_occupation = rng.choice([o for o in OCCUPATION_LIST if o != occupation])
    from_home = rng.random() < NATIONALITY_FROM_HOME
    nationality = (home if from_home else birth_place).country.adjective
    move_year = min(birth_year + rng.randint(18, 40), died.year if died else LAST_YEAR)
    return Person(
        name=name,
        birth_place=birth_place,
        born=born,
        died=died,
        death_place=death_place,
        home=home,
        second_home=second_home,
        study_place=study_place,
        school=school_for(field, rng).format(city=study_place.name),
        field=field,
        occupation=occupation,
        second_occupation=second_occupation,
        nationality=nationality,
        move_year=move_year,
    )
