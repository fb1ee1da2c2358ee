"""
RoPE hand-ins of the course's RoPE cohorts graded end to end, as the
autograder runs grader.py (a separate process, --edition, a hidden bundle as
the release builds it): each gets the points a fair instructor gives.

- The reference, handed in with the tiny world's RoPE files (see
  grader_fixtures: the labels' odd answers are its RoPE model's), gets every
  test of a 2026 cohort, and with the Winter 2025 starter's
  initialize_rope_model(mconf, bottleneck_dim=32) every test of Winter 2025,
  under that cohort's ids and points; its rope.finetune.params has the
  course's keys and is regenerated.
- The later starters' initialize_rope_model(mconf) with a RoPE of another
  layout (a cache by torch.polar, the rotation in complex numbers) earns
  part (h)'s points.
- RoPE predictions not made from the handed-in parameters earn none.
- A wrong RoPE (a learnt position embedding kept, the values rotated too)
  loses part (h)'s points and only those, with its files graded as they are
  (every test graded but the span corruption's, which read dataset.py alone).
"""

from dataclasses import dataclass, field

import pytest
import torch

from assignment.editions import EDITIONS

from grader_fixtures import (QUESTIONS, ROPE_STEMS, TINY, copy_reference, hand_in, in_background, make_bundle,
                             points_and_outputs)
from submission_variants import apply_edit

NOT_GRADED_HERE = {"rope_written"}  # the written RoPE derivation, graded by hand
CODE_JUDGES = {"rope_dev", "rope_test"}  # part (h): the RoPE code, then its predictions
SPAN_JUDGES = {"span_truncation", "span_rearrangement", "span_shift", "span_masked_length"}  # dataset.py's


def full(edition):
    """{test id: points} of every test of `edition` that grader.py grades."""
    return {t.id: t.points for t in EDITIONS[edition].tests if t.judges not in NOT_GRADED_HERE}


def part_h(edition, earned=True):
    """{test id: points} of `edition`'s part (h) tests: full points, or none."""
    return {t.id: t.points if earned else 0 for t in EDITIONS[edition].tests if t.judges in CODE_JUDGES}


def without_part_h(edition):
    """The tests of `edition` that build models at full points but part (h)'s, at none."""
    spans = {t.id for t in EDITIONS[edition].tests if t.judges in SPAN_JUDGES}
    return {test: p for test, p in full(edition).items() if test not in spans} | part_h(edition, earned=False)


@dataclass(frozen=True)
class Case:
    edition: str
    expected: dict  # test id -> points it must give
    edits: tuple = ()  # names of submission_variants.EDITS
    hand_in: dict = field(default_factory=dict)  # hand_in's keyword arguments besides the stems
    files_mode: bool = False  # grade prediction files as they are (grading.json)
    shown: tuple = ()  # text the report must show


REGENERATED = "regenerated from rope.finetune.params with the reference's model"
REFERENCE_2026 = "the reference, Spring 2026"

CASES = {
    "the reference with the Winter 2025 starter's initializer, Winter 2025": Case(
        "winter2025", full("winter2025"), edits=("initialize_rope_model(mconf, bottleneck_dim=32), the Winter 2025 "
                                                 "starter's",), shown=(REGENERATED,)),
    REFERENCE_2026: Case("spring2026", full("spring2026"), shown=(REGENERATED,)),
    "a RoPE in complex numbers": Case(
        "spring2025", part_h("spring2025"),
        edits=("initialize_rope_model(mconf), the later starters'", "RoPE cache by torch.polar",
               "RoPE rotation in complex numbers"), shown=(REGENERATED,)),
    "RoPE predictions of other parameters": Case(
        "winter2026", part_h("winter2026", earned=False),
        hand_in=dict(params_seeds={"rope.pretrain": 3}, seeds={"rope.pretrain": 0}),
        shown=(f"rope.pretrain.dev.predictions ({REGENERATED}): 0 of 60 correct (0.0%); needed at least 22%",)),
    "a learnt position embedding kept": Case(
        "winter2026", without_part_h("winter2026"), edits=("RoPE model keeps the learnt position embedding",),
        files_mode=True, shown=("part (h): the RoPE model keeps a learnt position embedding (pos_emb)",)),
    "the values rotated too": Case(
        "fall2025", without_part_h("fall2025"), edits=("values rotated too",), files_mode=True,
        shown=("part (h): on one token repeated, the RoPE model's logits change with the position",)),
}


@pytest.fixture(scope="module")
def rope_runs(request, tmp_path_factory):
    """Each case graded on the tests of its table: {name: future of (points, every test's output, package)}."""
    def graded_case(name):
        case, root = CASES[name], tmp_path_factory.mktemp("rope")
        package = copy_reference(root / "submission")
        for edit in case.edits:
            apply_edit(edit, package)
        hand_in(package, stems=ROPE_STEMS, **case.hand_in)
        bundle, _ = make_bundle(root / "bundle", second_model="rope",
                                settings={"predictions": "files"} if case.files_mode else None)
        found, shown = points_and_outputs(package, list(case.expected), root, "--edition", case.edition,
                                          "--hidden", bundle)
        return found, shown, package

    return in_background(request, "rope_case", graded_case, also=[REFERENCE_2026])


@pytest.mark.parametrize("rope_case", CASES)
def test_each_rope_hand_in_gets_a_fair_instructors_points(rope_case, rope_runs):
    found, stdout, _ = rope_runs[rope_case].result()
    assert found == {test: float(p) for test, p in CASES[rope_case].expected.items()}, stdout
    for text in CASES[rope_case].shown:
        assert text in stdout, stdout


def test_parameters_with_the_courses_keys_are_loaded_and_regenerated(rope_runs):
    """The handed-in state_dict has the course's keys: a rope_cache buffer in every block, no pos_emb; both
    RoPE prediction files were regenerated from it and agree with it on every question."""
    _, stdout, package = rope_runs[REFERENCE_2026].result()
    keys = set(torch.load(package / "rope.finetune.params", weights_only=True))
    assert {f"blocks.{i}.attn.rope_cache" for i in range(TINY["n_layer"])} <= keys
    assert not [key for key in keys if "pos_emb" in key]
    for split, count in QUESTIONS.items():
        assert f"{REGENERATED}; the file agrees on {count} of {count}" in stdout, stdout
