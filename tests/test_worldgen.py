"""
The world generator's parts (src/instructors/worldgen) at the edges the default world never reaches
(tests/test_data.py checks that world, and that data/ is its regeneration): people only in wiki.txt,
the command line's options passed on, as many paraphrases as phrasings (and one more), names that run
out, the feminine forms of family names, ages on and around a birthday, the places of a life never
the birth place, a place's qualifier, the Zipf-like popularity of birth places, and "a" or "an".
"""

import dataclasses
import random
from collections import Counter

import pytest

from instructors.worldgen import FILE_NAMES, make_world
from instructors.worldgen import __main__ as worldgen_main
from instructors.worldgen import biographies, names, people, places
from instructors.worldgen.careers import with_article

LABELLED = ("birth_places_train.tsv", "birth_dev.tsv", "birth_test.tsv")


def asked(text):
    """The people a question file asks about, in order."""
    return [line.split("\t")[0][len("Where was "):-len(" born?")] for line in text.splitlines()]


def biographed(wiki):
    """The people of wiki.txt's lines, in order."""
    return [line.split(". ", 1)[0] for line in wiki.split("\n")]


def test_extra_people_are_only_in_wiki_txt_after_the_splits():
    """Kills the test split running on into the extra people, or the extras left out of wiki.txt."""
    files = make_world(8, n_train=6, n_dev=3, n_test=4, n_extra=5, paraphrases=2, style="short")
    train, dev, test = (asked(files[name]) for name in LABELLED)
    wiki = biographed(files["wiki.txt"])
    assert (len(train), len(dev), len(test)) == (6, 3, 4)
    assert asked(files["birth_test_inputs.tsv"]) == test
    assert wiki == (train + dev + test + wiki[13:18]) * 2 and len(set(wiki[13:18]) - set(train + dev + test)) == 5
    assert not files["wiki.txt"].endswith("\n") and all(files[name].endswith("\n") for name in LABELLED)


def test_the_command_line_passes_every_option_on(tmp_path, capsys):
    """Kills an option dropped or two swapped on the way to write_world, and an out folder whose parents are
    missing refused."""
    out = tmp_path / "a" / "new" / "world"
    worldgen_main.main(["--out", str(out), "--seed", "9", "--train", "5", "--dev", "2", "--test", "3",
                        "--extra", "4", "--paraphrases", "3", "--style", "short", "--name_link", "0.25"])
    expected = make_world(9, n_train=5, n_dev=2, n_test=3, n_extra=4, paraphrases=3, style="short",
                          name_from_birth_country=0.25)
    assert {name: (out / name).read_text(encoding="ascii") for name in FILE_NAMES} == expected
    assert capsys.readouterr().out.splitlines()[0] == f"{out / 'wiki.txt'} ({len(expected['wiki.txt'])} bytes)"


def person(seed=0, **changes):
    """A person drawn from `seed`, with the `changes` made."""
    rng = random.Random(seed)
    return dataclasses.replace(people.make_person(rng, names.NameMaker(), places.PlaceSampler()), **changes)


@pytest.mark.parametrize("style, died", [("short", None), ("course", None), ("course", people.Date(1990, 5, 6))])
def test_as_many_paraphrases_as_phrasings_are_given_and_one_more_is_refused(style, died):
    """Kills the last phrasing refused (paraphrases up to the number of templates), or 0 taken."""
    subject = person(1, died=died, death_place=places.PLACES[3] if died else None, born=people.Date(1950, 5, 6))
    count = len(biographies.templates_for(subject, style))
    lines = biographies.biographies(subject, random.Random(2), style, paraphrases=count)
    assert len(set(lines)) == count and all(line.startswith(subject.name.full + ". ") for line in lines)
    for wrong in (0, count + 1):
        with pytest.raises(ValueError, match=f"paraphrases must be between 1 and {count}"):
            biographies.biographies(subject, random.Random(2), style, paraphrases=wrong)
    with pytest.raises(ValueError, match="unknown style 'long'"):
        biographies.biographies(subject, random.Random(2), "long")


def test_a_biography_asked_to_open_with_a_question_does():
    for seed in range(20):
        line, = biographies.biographies(person(seed), random.Random(seed), "course", open_with_question=True)
        assert line.split(". ", 1)[1].startswith(biographies.QUESTION_OPENING), line


def test_dates_are_written_day_first_or_month_first():
    date = people.Date(1901, 3, 7)
    assert biographies.format_date(date, True) == "7 March 1901"
    assert biographies.format_date(date, False) == "March 7, 1901"
    days = Counter(biographies.describe(person(), random.Random(seed), "course")["bday"][0].isdigit()
                   for seed in range(200))
    assert 60 < days[True] < 140


@pytest.mark.parametrize("born, on, age", [((1900, 6, 15), (1950, 6, 15), 50), ((1900, 6, 15), (1950, 6, 14), 49),
                                           ((1900, 6, 15), (1950, 5, 30), 49), ((1900, 6, 15), (1950, 7, 1), 50),
                                           ((1900, 12, 31), (1901, 1, 1), 0)])
def test_an_age_counts_whole_years_a_birthday_included(born, on, age):
    assert people.age_on(people.Date(*born), people.Date(*on)) == age


def test_the_places_of_a_life_are_never_the_birth_place_nor_what_holds_it():
    """Kills the birth place, its qualifier or country, or the first home, drawn as another place."""
    for seed in range(300):
        p = person(seed)
        birth = p.birth_place
        excluded = {birth.name, birth.qualifier, birth.country.name}
        for place in (p.home, p.second_home, p.study_place, p.death_place):
            assert place is None or place.name not in excluded, (seed, place, birth)
        assert p.second_home.name != p.home.name and not p.study_place.is_country
        assert (p.died is None) == (p.death_place is None)
        assert p.move_year <= (p.died.year if p.died else people.LAST_YEAR)


def test_a_places_qualifier_is_its_own_else_its_countrys_and_a_country_has_none():
    by_name = {place.name: place for place in places.PLACES}
    assert by_name["Chicago"].qualifier == "Illinois" and by_name["Chicago"].country.name == "United States"
    assert by_name["London"].qualifier == "England" and by_name["England"].qualifier is None
    assert by_name["England"].is_country and not by_name["London"].is_country
    assert len(by_name) == len(places.PLACES)


def test_birth_places_are_zipf_like_and_avoided_places_never_drawn():
    sampler, rng = places.PlaceSampler(), random.Random(5)
    drawn = Counter(sampler.draw(rng).name for _ in range(20000))
    assert drawn.most_common(1)[0][0] == "London" and 0.035 < drawn["London"] / 20000 < 0.07
    assert drawn["London"] > drawn["Paris"] > drawn["Berlin"]
    avoided = Counter(sampler.draw(rng, avoid={"London", "Paris"}).name for _ in range(2000))
    assert not {"London", "Paris"} & set(avoided)


@pytest.mark.parametrize("family, culture, female", [
    ("Kowalski", "polish", "Kowalska"), ("Novy", "czech", "Nova"), ("Svoboda", "czech", "Svobodova"),
    ("Novak", "czech", "Novakova"), ("Ivanov", "russian", "Ivanova"), ("Papadopoulos", "greek", "Papadopoulou"),
    ("Smith", "english", "Smith"), ("Nowak", "polish", "Nowak")])
def test_a_family_name_takes_its_cultures_feminine_form(family, culture, female):
    """Kills the catch-all empty ending cutting the name to nothing."""
    assert names.feminine(family, culture) == female


def test_names_that_run_out_are_refused_rather_than_given_twice(monkeypatch):
    monkeypatch.setitem(names.PARTS, "tiny", (["Al"], ["Bea"], ["Roe"]))
    maker, rng = names.NameMaker(), random.Random(0)
    assert maker.make(rng, "tiny", female=False).full == "Al Roe"
    assert maker.make(rng, "tiny", female=True).full == "Bea Roe"
    with pytest.raises(ValueError, match="no new tiny name after 1000 tries: the world is too large"):
        maker.make(rng, "tiny", female=False)


@pytest.mark.parametrize("words, said", [("painter", "a painter"), ("opera singer", "an opera singer"),
                                         ("American poet", "an American poet"), ("Irish judge", "an Irish judge"),
                                         ("English chef", "an English chef"), ("Ugandan boxer", "a Ugandan boxer")])
def test_an_article_goes_by_the_first_letter(words, said):
    assert with_article(words) == said
