"""
Each part graded on its own work, as a fair instructor would (issue 21), and
the student's mistakes the grader sees named in one line (issue 18).

Every case is a submission built from the reference with the release's
region tools (parts left unwritten as the starter has them) plus small
edits, handed in with the tiny models' files, graded by grader.py with a
hidden bundle as the release builds it; the points each test must give are
written in the case. Cases of full points whose edits change different files
and whose tests differ are handed in together (TOGETHER), one grading run for
them all: an edit that one of its tests wrongly penalised would fail that test
there too.
"""

from dataclasses import dataclass, field

import pytest

from grader_fixtures import (POINTS, copy_reference, cut_regions, hand_in, in_background, leave_unwritten,
                             make_bundle, points_and_outputs, run_grader)
from submission_variants import apply_edit

ALL_TESTS = tuple(POINTS)
VANILLA_STEMS = ("vanilla.nopretrain", "vanilla.pretrain")


def full(*tests):
    """Full points for each of `tests`."""
    return {test: POINTS[test] for test in tests}


def only(parts, tests=ALL_TESTS):
    """Full points for the tests of `parts` (e.g. 'ce'), none for the other `tests`."""
    return {test: POINTS[test] if test[1] in parts else 0 for test in tests}


@dataclass(frozen=True)
class Case:
    expected: dict  # test id -> points it must give
    unwritten: tuple = ()  # handout parts whose regions are left as the starter has them
    edits: tuple = ()  # names of submission_variants.EDITS
    stems: tuple = ("vanilla.nopretrain", "vanilla.pretrain", "perceiver.pretrain")  # files handed in
    variants: dict = field(default_factory=dict)  # stem -> the variant of model its files come from
    files_mode: bool = False  # grade prediction files as they are (grading.json)
    shown: tuple = ()  # text the report must show


CONFIG_TESTS = ("1c-1-basic", "1f-0-basic", "1g-0-basic")
SPAN_TESTS = ("1e-0-basic", "1e-1-basic", "1e-2-basic", "1e-3-basic")
PERCEIVER_TESTS = ("1g-0-basic", "1g-1-hidden", "1g-2-hidden")
FLAG = "part (g): initialize_perceiver_model builds a GPT without down and up blocks: set mconf.perceiver = True"
TRAINS_ITSELF = "finetune() trains the model itself (it calls train())"

CASES = {
    # issue 21: each part on its own work
    "(c)-(f) done, (g) not": Case(only("cdef"), unwritten=("g",), stems=VANILLA_STEMS,
                                  shown=("part (g): initialize_perceiver_model returned None: it is not written yet",)),
    "(c) and (e) only": Case(only("cde"), unwritten=("f", "g"), stems=("vanilla.nopretrain",),
                             shown=("part (f): pretrain returned no TrainerConfig: it is not written yet",)),
    "(e) only": Case(only("e"), unwritten=("c", "f", "g"), stems=(),
                     shown=("part (c): initialize_vanilla_model returned None: it is not written yet",)),
    # issue 21: behaviour over names, the handout over the reference's choices
    "MLP as a plain nn.Sequential": Case(full("1c-0-hidden", "1d-0-hidden", "1g-0-basic", "1g-1-hidden"),
                                         edits=("MLP as a plain nn.Sequential",)),
    "x and y of block_size ids": Case(full(*SPAN_TESTS), edits=("x and y of block_size ids",)),
    "layer norm on the input instead of C": Case(full("1g-0-basic"), edits=("layer norm on the input instead of C",)),
    "no residual on C": Case(full("1g-0-basic"), edits=("no residual on C",)),
    "perceiver flag forgotten": Case(dict.fromkeys(PERCEIVER_TESTS, 0), edits=("perceiver flag forgotten",),
                                     variants={"perceiver.pretrain": "vanilla"},
                                     shown=(FLAG, "perceiver.finetune.params holds no bottleneck of shape (8, 16)")),
    "perceiver flag forgotten, files graded as they are": Case(
        dict.fromkeys(PERCEIVER_TESTS, 0), edits=("perceiver flag forgotten",), files_mode=True,
        variants={"perceiver.pretrain": "vanilla"}, shown=(FLAG,)),
    "one attention module shared by all blocks": Case(
        full("1c-1-basic", "1f-0-basic") | {"1c-0-hidden": 0}, edits=("one attention module shared by all blocks",),
        shown=("modules are shared between blocks (blocks.1.attn.key.weight is blocks.0.attn.key.weight",)),
    "finetune() calls train()": Case(dict.fromkeys(CONFIG_TESTS, 0), edits=("finetune() calls train()",),
                                     shown=(f"part (c and f): {TRAINS_ITSELF}",)),
    "finetune() calls train(), on a machine ten times slower": Case(
        dict.fromkeys(CONFIG_TESTS, 0), edits=("finetune() calls train()", "a Trainer that takes 2 s to build"),
        shown=(f"part (c and f): {TRAINS_ITSELF}",)),
    "num_workers=0": Case(full(*CONFIG_TESTS), edits=("num_workers=0",)),
    # issue 18: the student's mistakes, named in one line where the grader sees them
    "non-causal DownProjectBlock": Case(full("1c-0-hidden") | {"1g-0-basic": 0}, edits=("non-causal DownProjectBlock",),
                                        shown=("part (g): the perceiver is not causal",)),
    "UpProjectBlock with swapped inputs": Case(
        full("1c-0-hidden") | {"1g-0-basic": 0}, edits=("UpProjectBlock with swapped inputs",),
        shown=("part (g): the perceiver's forward pass at block size raises RuntimeError",
               "(in UpProjectBlock.forward)")),
    # issue 25: every edition of the course's files, and code changed outside the regions
    "truncation to 3/4 of the block (the 2024 starters)": Case(full(*SPAN_TESTS),
                                                               edits=("truncation to 3/4 of the block",)),
    "truncation to half the block": Case(full(*SPAN_TESTS) | {"1e-0-basic": 0}, edits=("truncation to half the block",),
                                         shown=("truncation should reach int(block_size * 3/4) = 96 (the 2024 "
                                                "starters' bound) or int(block_size * 7/8) = 112 (the Fall 2023 "
                                                "starter's)",)),
    "C drawn with xavier_normal_": Case(dict(full(*PERCEIVER_TESTS), **{"1g-0-basic": 0}),
                                        edits=("C drawn with xavier_normal_",),
                                        shown=("starts as a normal distribution (xavier_normal_ or randn?)",)),
    "C drawn with xavier_normal_, files graded as they are": Case(
        dict(full(*PERCEIVER_TESTS), **{"1g-0-basic": 0}), edits=("C drawn with xavier_normal_",), files_mode=True),
    "train() saves through the trainer's ckpt_path": Case(full("1c-1-basic"),
                                                          edits=("train() saves through the trainer's ckpt_path",)),
    "GPT.__init__ takes one more argument": Case(
        full("1c-1-basic", "1f-0-basic"), edits=("GPT.__init__ takes one more argument",
                                                 "the helpers pass GPT's extra argument"),
        shown=("the model was built with initialize_vanilla_model, because GPT(config) raised TypeError",)),
    "all-zero span examples": Case(dict.fromkeys(SPAN_TESTS, 0), edits=("all-zero span examples",),
                                   shown=("an example is not a span corruption of its own document",)),
}
# Cases of full points, their edits in different files, their tests different: one hand-in a group. Four cases
# judge 1g-0-basic, so they are in four hand-ins (two of them alone).
TOGETHER = (("x and y of block_size ids", "layer norm on the input instead of C",
             "train() saves through the trainer's ckpt_path"),
            ("truncation to 3/4 of the block (the 2024 starters)", "no residual on C"))
HAND_IN = {name: group for group in TOGETHER for name in group}
# train() still `pass` and initialize_vanilla_model returning None: one region each left unwritten.
REGION_CASES = {
    "train() still pass": (5, Case({"1c-1-basic": 0, "1f-0-basic": 7},
                                   shown=("part (c): train never calls trainer.train(): it is not written yet",))),
    "initialize_vanilla_model returns None": (0, Case(
        {"1c-0-hidden": 0, "1c-1-basic": 0, "1f-0-basic": 7, "1d-0-hidden": 2},
        shown=("part (c): initialize_vanilla_model returned None: it is not written yet",))),
}


def case_of(name):
    """(the region of helper.py it leaves unwritten or None, the Case) of the case `name`."""
    return REGION_CASES.get(name, (None, CASES.get(name)))


def build(root, names):
    """The submission of the cases `names` (one, or a group of TOGETHER) and its bundle under `root`; returns
    (package, bundle, the tests of their tables)."""
    package = copy_reference(root / "submission")
    cases = []
    for region, case in map(case_of, names):
        leave_unwritten(package, *case.unwritten)
        if region is not None:
            cut_regions(package, "helper.py", lambda i, region=region: i != region)
        for edit in case.edits:
            apply_edit(edit, package)
        cases.append(case)
    first, tests = cases[0], [test for case in cases for test in case.expected]
    assert len(cases) == 1 or len(set(tests)) == len(tests) and all(case.expected == full(*case.expected)
                                                                    for case in cases), names
    assert all((c.stems, c.variants, c.files_mode) == (first.stems, first.variants, first.files_mode) for c in cases)
    hand_in(package, stems=first.stems, variants=first.variants)
    bundle, _ = make_bundle(root / "bundle", settings={"predictions": "files"} if first.files_mode else None)
    return package, bundle, tests


@pytest.fixture(scope="module")
def fair_runs(request, tmp_path_factory):
    """Each hand-in graded on the tests of its cases' tables: {case name: future of (points, the report and every
    test's output)}."""
    def graded_hand_in(names):
        root = tmp_path_factory.mktemp("case")
        package, bundle, tests = build(root, names)
        return points_and_outputs(package, tests, root, "--hidden", bundle)

    return in_background(request, "fair_case", graded_hand_in, also=["(e) only"],
                         hand_in=lambda name: HAND_IN.get(name, (name,)))


@pytest.mark.parametrize("fair_case", list(CASES) + list(REGION_CASES))
def test_each_part_is_graded_on_its_own_work(fair_case, fair_runs):
    found, stdout = fair_runs[fair_case].result()
    _, case = case_of(fair_case)
    assert {test: found[test] for test in case.expected} == {test: float(p) for test, p in case.expected.items()}, \
        stdout
    for text in case.shown:
        assert text in stdout, stdout


def test_a_missing_part_is_named_first_in_one_line(fair_runs):
    """The unwritten function comes first in the failure's details, before any traceback."""
    _, stdout = fair_runs["(e) only"].result()
    details = stdout.split("Details:")[1].splitlines()
    first_lines = {line.split()[0]: details[number + 1].strip()
                   for number, line in enumerate(details) if line.startswith("1") and "(fail)" in line}
    assert first_lines["1c-0-hidden"] == first_lines["1c-1-basic"] == \
        "part (c): initialize_vanilla_model returned None: it is not written yet"
    assert first_lines["1f-0-basic"] == "part (f): pretrain returned no TrainerConfig: it is not written yet"
    assert first_lines["1g-0-basic"] == "part (g): initialize_perceiver_model returned None: it is not written yet"


def test_an_unknown_grading_setting_is_refused_in_one_line(tmp_path):
    package = copy_reference(tmp_path / "submission")
    bundle, _ = make_bundle(tmp_path / "bundle", settings={"predictions": "both"})
    completed = run_grader("--submission", package, "--hidden", bundle, "1d-0-hidden")
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        f"grader: {bundle / 'grading.json'}: unknown predictions setting 'both'; use 'regenerate' or 'files'"]
