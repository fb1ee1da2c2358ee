"""
Tests of the generated biography worlds (src/instructors/worldgen) and of the committed
default world in data/.
"""

import os
import re
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from instructors.worldgen import FILE_NAMES, make_world, write_world
from instructors.worldgen.places import PLACES

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
COURSE_DATA = REPO.parent / "shared" / "data"
SMALL = dict(n_train=40, n_dev=10, n_test=10, n_extra=5)
QUESTION = re.compile(r"^Where was (.+) born\?$")
LABELLED = ("birth_places_train.tsv", "birth_dev.tsv", "birth_test.tsv")


def read_committed():
    return {name: (DATA / name).read_text(encoding="ascii") for name in FILE_NAMES}


@pytest.fixture(scope="module")
def committed():
    return read_committed()


def labelled_rows(text):
    """[(person name, answer)] of a "question<TAB>answer" file."""
    rows = []
    for line in text.splitlines():
        question, answer = line.split("\t")
        rows.append((QUESTION.match(question).group(1), answer))
    return rows


def biographies_by_name(wiki):
    """{person name: [biography text without the leading "Name. "]}."""
    by_name = {}
    for line in wiki.split("\n"):
        name, text = line.split(". ", 1)
        by_name.setdefault(name, []).append(text)
    return by_name


def mentions(pattern, text):
    return re.search(r"\b" + re.escape(pattern) + r"\b", text) is not None


def run_cli(args, out_dir, hash_seed="0"):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), PYTHONHASHSEED=hash_seed)
    subprocess.run([sys.executable, "-m", "instructors.worldgen", *args, "--out", str(out_dir)],
                   cwd=REPO, env=env, check=True, capture_output=True)
    return {name: (out_dir / name).read_bytes() for name in FILE_NAMES}


def test_same_seed_gives_same_bytes(tmp_path):
    first = write_world(tmp_path / "first", seed=5, **SMALL)
    second = write_world(tmp_path / "second", seed=5, **SMALL)
    assert [p.name for p in first] == list(FILE_NAMES)
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_bytes_do_not_depend_on_string_hashing(tmp_path):
    args = ["--seed", "5", "--train", "30", "--dev", "5", "--test", "5", "--paraphrases", "2"]
    assert run_cli(args, tmp_path / "a", hash_seed="1") == run_cli(args, tmp_path / "b", hash_seed="2")


def test_different_seed_gives_different_world():
    first, second = make_world(1, **SMALL), make_world(2, **SMALL)
    for name in FILE_NAMES:
        assert first[name] != second[name], name


def documented_command():
    """The worldgen arguments of the command that data/README.md says made data/."""
    lines = [line for line in (DATA / "README.md").read_text().splitlines() if "-m instructors.worldgen" in line]
    assert len(lines) == 1, "data/README.md should show exactly one worldgen command"
    words = shlex.split(lines[0].strip().strip("`"))
    args = words[words.index("instructors.worldgen") + 1 :]
    out = args.index("--out")
    assert args[out + 1] == "data"
    return args[:out] + args[out + 2 :]


def test_committed_data_equals_documented_regeneration(tmp_path):
    fresh = run_cli(documented_command(), tmp_path)
    for name in FILE_NAMES:
        assert (DATA / name).read_bytes() == fresh[name], name


def test_committed_world_has_course_shape(committed):
    sizes = [len(committed[name].splitlines()) for name in LABELLED]
    assert sizes == [2000, 500, 437]
    documents = committed["wiki.txt"].split("\n")
    assert len(documents) >= sum(sizes)
    assert all(documents), "wiki.txt has an empty document"
    assert 300_000 <= len(committed["wiki.txt"]) <= 500_000


def test_splits_are_disjoint_and_names_unique(committed):
    splits = [[name for name, _ in labelled_rows(committed[f])] for f in LABELLED]
    for names in splits:
        assert len(set(names)) == len(names)
    train, dev, test = (set(names) for names in splits)
    assert not train & dev and not train & test and not dev & test
    wiki_names = [line.split(". ", 1)[0] for line in committed["wiki.txt"].split("\n")]
    assert len(set(wiki_names)) == len(wiki_names)


def test_every_answer_appears_in_its_biography(committed):
    bios = biographies_by_name(committed["wiki.txt"])
    for file_name in LABELLED:
        for name, answer in labelled_rows(committed[file_name]):
            assert name in bios, name
            for text in bios[name]:
                assert mentions(answer, text), (name, answer, text)


def test_most_frequent_place_baseline_on_dev(committed):
    train = labelled_rows(committed["birth_places_train.tsv"])
    dev = labelled_rows(committed["birth_dev.tsv"])
    top_place, _ = Counter(answer for _, answer in train).most_common(1)[0]
    accuracy = sum(answer == top_place for _, answer in dev) / len(dev)
    assert 0.03 <= accuracy <= 0.08, (top_place, accuracy)


def test_vocabulary_fits_the_model(committed):
    characters = sorted(set(committed["wiki.txt"]) | {"\n"})
    assert len(characters) + 2 <= 256
    for text in committed.values():
        assert text.isascii()


def test_question_files_have_one_tab_a_line_and_inputs_none(committed):
    for file_name in LABELLED:
        text = committed[file_name]
        assert text.endswith("\n")
        for line in text[:-1].split("\n"):
            assert line.count("\t") == 1, line
            question, answer = line.split("\t")
            assert QUESTION.match(question) and answer.strip() == answer != ""
    inputs = committed["birth_test_inputs.tsv"]
    assert "\t" not in inputs
    labels = committed["birth_test.tsv"]
    assert inputs.splitlines() == [line.split("\t")[0] for line in labels.splitlines()]


def test_question_characters_occur_in_the_corpus_even_of_tiny_worlds():
    for seed in range(30):
        style = ("course", "short")[seed % 2]
        files = make_world(seed, n_train=2, n_dev=1, n_test=1, style=style)
        asked = set("".join(files[name] for name in LABELLED)) - {"\t", "\n"}
        assert asked <= set(files["wiki.txt"]), (seed, asked - set(files["wiki.txt"]))


PLACE_NAMES_LONGEST_FIRST = sorted((p.name for p in PLACES), key=len, reverse=True)


def other_places(text, birth_place):
    """Known places mentioned in the text, other than the birth place and what contains it."""
    found = set()
    for name in PLACE_NAMES_LONGEST_FIRST:
        if name in text and mentions(name, text):
            found.add(name)
            text = text.replace(name, "|")
    return found - {birth_place.name, birth_place.qualifier, birth_place.country.name}


def test_biographies_mention_another_place_for_most_people(committed):
    places = {p.name: p for p in PLACES}
    bios = biographies_by_name(committed["wiki.txt"])
    people = [row for f in LABELLED for row in labelled_rows(committed[f])]
    with_other = sum(bool(other_places(bios[name][0], places[answer])) for name, answer in people)
    assert with_other / len(people) >= 0.8


def test_paraphrased_short_world_states_birth_place_early_in_every_phrasing():
    files = make_world(3, n_train=30, n_dev=10, n_test=10, paraphrases=4, style="short")
    bios = biographies_by_name(files["wiki.txt"])
    assert len(files["wiki.txt"].split("\n")) == 4 * 50
    for file_name in LABELLED:
        for name, answer in labelled_rows(files[file_name]):
            texts = bios[name]
            assert len(texts) == len(set(texts)) == 4
            for text in texts:
                assert mentions(answer, text[: len(name) + 40 + len(answer)]), text


def test_paraphrases_keep_the_same_people():
    one = make_world(4, paraphrases=1, **SMALL)
    three = make_world(4, paraphrases=3, style="short", **SMALL)
    for file_name in LABELLED:
        assert one[file_name] == three[file_name]


def test_all_files_parse_with_the_project_datasets(committed):
    from submission import CharCorruptionDataset, NameDataset

    pretrain = CharCorruptionDataset(committed["wiki.txt"], 128)
    assert len(pretrain) == len(committed["wiki.txt"].split("\n"))
    x, y = pretrain[0]
    assert x.shape == y.shape == (127,)
    for file_name in LABELLED:
        dataset = NameDataset(committed[file_name], pretrain)
        assert len(dataset) == len(committed[file_name].splitlines())
        for index in range(len(dataset)):
            x, y = dataset[index]
            assert x.shape == y.shape == (127,)


@pytest.mark.skipif(not COURSE_DATA.is_dir(), reason="the course's data is not beside the repository")
def test_committed_world_shares_no_person_or_line_with_course_data(committed):
    course = {p.name: p.read_text(encoding="utf-8") for p in COURSE_DATA.iterdir() if p.is_file()}
    course_lines = {line for text in course.values() for line in text.split("\n")}
    course_names = {line.split(". ", 1)[0] for line in course["wiki.txt"].split("\n")}
    course_names |= {line.split("\t")[0][len("Where was ") : -len(" born?")]
                     for f in ("birth_places_train.tsv", "birth_dev.tsv", "birth_test_inputs.tsv")
                     for line in course[f].splitlines()}
    for text in committed.values():
        assert not (set(text.split("\n")) - {""}) & course_lines
    assert not set(biographies_by_name(committed["wiki.txt"])) & course_names


def test_paraphrases_come_in_rounds_of_every_person():
    """Kills a person's paraphrases listed together: read in file order, as the course's trainer
    reads it, a batch would hold a handful of people said over and over."""
    files = make_world(6, n_train=12, n_dev=4, n_test=4, paraphrases=3, style="short")
    names = [line.split(". ", 1)[0] for line in files["wiki.txt"].split("\n")]  # (3 * 20,)
    first_round = names[:20]
    assert len(set(first_round)) == 20
    assert names == first_round * 3
