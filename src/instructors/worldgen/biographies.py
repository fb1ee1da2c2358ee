"""
One-line biographies: "Full Name. text", the shape of the course's wiki.txt,
with the text ending in " ." as the course's lines do.

Two styles. "course" biographies read like the first sentence of an
encyclopedia article, in many phrasings, with dates, occupations and other
places, and the birth place anywhere in the sentence. "short" biographies
(for small demo worlds) are brief and state the birth place early. A person
can have several paraphrases: different phrasings of the same facts.
"""

from .careers import with_article
from .people import age_on

DEAD_TEMPLATES = [
    "{name} ({bday} in {born} - {dday} in {dplace}) was {a_nat_occ} who also worked as {a_occ2} .",
    "{name} ({byear}-{dyear}) was {a_nat_occ} who was born in {born} and spent most of {his} working life in {home} .",
    "Born in {born} on {bday}, {sur} trained at {school} and worked in {home} until {his} death in {dyear} .",
    "{Sur} was born in {born} in {byear} and died in {dplace} in {dyear}, having worked for many years as {a_occ} in {home} .",
    "{name} was {a_nat_occ} born in {born} ; {he} later settled in {home}, where {he} died in {dyear} .",
    "After studying {field} in {study}, {name}, who had been born in {born} in {byear}, became {a_occ} in {home} .",
    "The {nat} {occ} {name} was born at {born} on {bday} and died at {dplace} on {dday}, aged {age} .",
    "{name} (born {bday}, {born}; died {dday}, {dplace}) was {a_occ} and {occ2} who lived for some years in {home2} .",
    "Although {he} was born in {born}, {name} is best remembered for {his} years in {home} as {a_occ} in the {decade}s .",
    "{name} was the {child} of {a_occ2} from {home2} ; {he} was born in {born} in {byear} and became {a_occ} in {home} .",
    "{name} ({byear} {born} - {dyear} {dplace}) was {a_nat_occ} active in {home} from the {decade}s until {his} death .",
    "{name} was {a_occ} ; born in {born}, {he} studied {field} at {school} and died in {dplace} in {dyear} .",
    "Born on {bday} in {born}, {name} worked as {a_occ} in {home} and {home2} before {his} death in {dplace} in {dyear} .",
    "Who was {name}? {He} was born in {born} in {byear}, became {a_nat_occ} and died in {dplace} in {dyear} .",
]

LIVING_TEMPLATES = [
    "{name} (born {bday} in {born}) is {a_nat_occ} and former {occ2} .",
    "{name} (born {bday} in {born}) is {a_nat_occ} who has lived in {home} since {move_year} .",
    "Born in {born}, {sur} studied {field} at {school} before moving to {home} in {move_year} .",
    "{name} is {a_occ} and {occ2} who was born in {born} and now works in {home} .",
    "{Sur} was born on {bday} in {born} and grew up in {home}, where {he} later studied {field} .",
    "{name} (b. {byear}, {born}) is {a_nat_occ} based in {home} who trained at {school} .",
    "Raised in {home}, {name} was in fact born in {born} in {byear} and now works as {a_occ} .",
    "{name}, {a_occ} born in {born}, has lived in {home} since {move_year} and in {home2} before that .",
    "{name} is {a_nat_occ} ; {he} was born in {born} and studied {field} at {school} .",
    "A native of {born}, {name} has worked as {a_occ} in {home} and {home2} since the {decade}s .",
    "{name} (born {byear} in {born}) is {a_nat_occ} who has spent most of {his} career in {home} .",
    "{name} was born in {born} to a family from {home2} and is now {a_occ} in {home} .",
    "{name} is {a_nat_occ} . {He} was born in {born} on {bday} and moved to {home} at the age of {move_age} .",
    "Who is {name}? {He} is {a_nat_occ} who was born in {born} in {byear} and lives in {home} .",
]

SHORT_TEMPLATES = [
    "{name} was born in {born} .",
    "{name} was born in {born} and works as {a_occ} .",
    "Born in {born}, {name} is {a_occ} .",
    "{name} (born in {born}) is {a_nat_occ} .",
    "{name}, a native of {born}, became {a_occ} .",
    "{name} comes from {born} .",
    "{name}'s birthplace is {born} .",
    "{name} is {a_occ} born in {born} .",
    "{name} was born in {born} and later lived in {home} .",
    "{name}, born in {born}, moved to {home} .",
    "Who is {name}? {He} was born in {born} .",
]

STYLES = ("course", "short")
# Template lists hold phrasings that open with a question ("Who is ...?"):
# they put the question files' "W" and "?" into the corpus's vocabulary.
QUESTION_OPENING = "Who "
MONTHS = """January February March April May June July August September
October November December""".split()
QUALIFIED_BIRTH_PLACE = 0.5  # chance a course biography prints "City, Qualifier"


def format_date(date, day_first):
    month = MONTHS[date.month - 1]
    if day_first:
        return f"{date.day} {month} {date.year}"
    return f"{month} {date.day}, {date.year}"


def describe(person, rng, style):
    """The values that fill a template, with the random choices of one rendering."""
    birth = person.birth_place
    born = birth.name
    if style == "course" and birth.qualifier and rng.random() < QUALIFIED_BIRTH_PLACE:
        born = f"{birth.name}, {birth.qualifier}"
    day_first = rng.random() < 0.5
    died = person.died
    female = person.name.female
    return {
        "name": person.name.full,
        "sur": person.name.family,
        "Sur": person.name.family[0].upper() + person.name.family[1:],
        "he": "she" if female else "he",
        "He": "She" if female else "He",
        "his": "her" if female else "his",
        "child": "daughter" if female else "son",
        "born": born,
        "bday": format_date(person.born, day_first),
        "byear": person.born.year,
        "dday": format_date(died, day_first) if died else None,
        "dyear": died.year if died else None,
        "dplace": person.death_place.name if died else None,
        "home": person.home.name,
        "home2": person.second_home.name,
        "study": person.study_place.name,
        "school": person.school,
        "field": person.field,
        "move_year": person.move_year,
        "decade": person.move_year // 10 * 10,
        "move_age": person.move_year - person.born.year,
        "age": age_on(person.born, died) if died else None,
        "nat": person.nationality,
        "occ": person.occupation,
        "occ2": person.second_occupation,
        "a_occ": with_article(person.occupation),
        "a_occ2": with_article(person.second_occupation),
        "a_nat_occ": with_article(f"{person.nationality} {person.occupation}"),
    }


def templates_for(person, style):
    """The phrasings that fit the person (living or dead) in the style."""
    if style == "short":
        return SHORT_TEMPLATES
    return DEAD_TEMPLATES if person.died else LIVING_TEMPLATES


def biographies(person, rng, style="course", paraphrases=1, open_with_question=False):
    """
    Returns `paraphrases` wiki.txt lines for the person, each in a different
    phrasing; with open_with_question, one of them opens with a question.
    """
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; expected one of {STYLES}")
    templates = templates_for(person, style)
    if not 1 <= paraphrases <= len(templates):
        raise ValueError(f"paraphrases must be between 1 and {len(templates)}")
    chosen = rng.sample(templates, paraphrases)
    asking = [t for t in templates if t.startswith(QUESTION_OPENING)]
    if open_with_question and not any(t in asking for t in chosen):
        chosen[0] = rng.choice(asking)
    lines = []
    for template in chosen:
        text = template.format(**describe(person, rng, style))
        lines.append(f"{person.name.full}. {text}")
    return lines
