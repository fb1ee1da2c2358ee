"""
The table of the course's editions (src/assignment/editions.py): each
edition's tests add up to the assignment's points, each test's id names the
part of the function it judges in that edition, the seed edition is what
grader.py grades, each RoPE cohort has its thresholds, and each second
model's initializer takes the arguments its edition's starter passes.
"""

import re

import pytest

from assignment import editions
from assignment.editions import EDITIONS, SEED_EDITION, edition
from submission import GPTConfig, helper

from grader_fixtures import GRADER_TESTS

TEST_ID = re.compile(r"^1([a-h])-(\d+)-(basic|hidden)$")
# The function whose part a test's part letter is, for each kind of test but the predictions without pretraining
# (the part after the vanilla model's in both editions) and the written RoPE derivation (part g).
JUDGED_FUNCTION = {
    "vanilla_structure": "initialize_vanilla_model", "finetune_config_without_pretraining": "initialize_vanilla_model",
    "span_truncation": "CharCorruptionDataset.__getitem__", "span_rearrangement": "CharCorruptionDataset.__getitem__",
    "span_shift": "CharCorruptionDataset.__getitem__", "span_masked_length": "CharCorruptionDataset.__getitem__",
    "pretrain_config": "pretrain", "pretrained_dev": "pretrain", "pretrained_test": "pretrain",
    "perceiver_config": "initialize_perceiver_model", "perceiver_dev": "initialize_perceiver_model",
    "perceiver_test": "initialize_perceiver_model", "rope_dev": "initialize_rope_model",
    "rope_test": "initialize_rope_model"}


@pytest.mark.parametrize("name", list(EDITIONS))
def test_each_edition_grades_64_points_in_tests_numbered_from_zero_within_each_part(name):
    tests = EDITIONS[name].tests
    assert EDITIONS[name].points == 64
    ids = [TEST_ID.match(t.id) for t in tests]
    assert all(ids) and len({t.id for t in tests}) == len(tests)
    numbers = {}
    for match in ids:
        numbers.setdefault(match.group(1), []).append(int(match.group(2)))
    assert all(sorted(n) == list(range(len(n))) for n in numbers.values()), numbers


@pytest.mark.parametrize("name", list(EDITIONS))
def test_a_tests_part_letter_is_the_part_of_the_function_it_judges(name):
    this = EDITIONS[name]
    for graded in this.tests:
        letter = TEST_ID.match(graded.id).group(1)
        if graded.judges == "rope_written":
            assert letter == "g" and this.second_model == "rope"
        elif graded.judges.startswith("nopretrain_"):
            assert letter == chr(ord(this.parts["initialize_vanilla_model"]) + 1), graded.id
        else:
            assert letter in this.parts[JUDGED_FUNCTION[graded.judges]], (graded.id, graded.judges)


def test_the_seed_edition_is_what_grader_py_grades():
    seed = EDITIONS[SEED_EDITION]
    assert seed.second_model == "perceiver"
    assert {t.id: t.points for t in seed.tests} == {i: t.points for i, t in GRADER_TESTS.items()}
    assert {t.id: dict(t.thresholds) for t in seed.tests} == {i: dict(t.thresholds) for i, t in GRADER_TESTS.items()}


def test_the_editions_share_their_judges_and_differ_in_ids_and_the_second_model():
    by_model = {}
    for this in EDITIONS.values():
        by_model.setdefault(this.second_model, set()).add(tuple((t.id, t.judges, t.points) for t in this.tests))
    assert set(by_model) == {"perceiver", "rope"}
    assert all(len(kinds) == 1 for kinds in by_model.values())  # one set of tests a second model
    perceiver, rope = (next(iter(by_model[m])) for m in ("perceiver", "rope"))
    shared = {j for _, j, _ in perceiver} & {j for _, j, _ in rope}
    assert len(shared) == 11  # the vanilla model, span corruption and pretraining
    assert {i for i, j, _ in perceiver if j in shared} != {i for i, j, _ in rope if j in shared}


def test_each_rope_cohort_has_its_prediction_thresholds():
    expected = {"winter2025": (0.022, 0.016), "spring2025": (0.022, 0.016), "fall2025": (0.022, 0.016),
                "winter2026": (0.22, 0.16), "spring2026": (0.22, 0.16)}
    for name, (dev, test) in expected.items():
        thresholds = {t.judges: t.thresholds["min_accuracy"] for t in EDITIONS[name].tests if t.judges.startswith("rope_")
                      and t.judges != "rope_written"}
        assert thresholds == {"rope_dev": dev, "rope_test": test}, name
    assert {n for n, e in EDITIONS.items() if e.second_model == "rope"} == set(expected)
    assert [e.truncation for e in EDITIONS.values()].count(editions.Fraction(7, 8)) == 1  # Fall 2023 only


@pytest.mark.parametrize("name", list(EDITIONS))
def test_the_second_models_initializer_takes_what_its_edition_passes(name):
    """Call the reference's initializer as the edition's starter writes its signature; it builds that model."""
    this = EDITIONS[name]
    function, arguments = re.match(r"^(\w+)\((.*)\)$", this.second_initializer).groups()
    keywords = dict(a.strip().split("=") for a in arguments.split(",")[1:])
    config = GPTConfig(10, 8, n_layer=2, n_head=2, n_embd=8)
    model = getattr(helper, function)(config, **{k: int(v) for k, v in keywords.items()})
    assert getattr(model, this.second_model)


def test_an_unknown_edition_is_refused_naming_them_all():
    assert edition("fall2025").course == "XCS224N Fall 2025"
    with pytest.raises(ValueError) as refused:
        edition("summer2025")
    assert all(name in str(refused.value) for name in EDITIONS)
