"""
grader.py's own checks, judged in-process as a grading run judges them but
on probe answers made here: the span-corruption tests on the examples of
the reference's dataset and of its 2024 edition (truncation to 3/4 of the
block), and on examples built to sit exactly at each bound the tests set or
one past it; the structure tests on fingerprints and anatomies made up to
be right, or wrong in one way each; the stages and files each test judges;
and each test's points and thresholds, the course's. (tests/test_grader.py
runs the same tests end to end, in processes.)
"""

import contextlib
import random
import runpy
import shutil
import sys
import tempfile
import types
from pathlib import Path

import pytest
import torch

import submission
from assignment.facts import (BLOCK_SIZE, BOTTLENECK_DIM, DEV_QUESTIONS, GRADED_MODEL, GRADED_TRAINING, MASK_CHAR,
                              PAD_CHAR, TEST_LABELS, TRAINER_DEFAULTS, TRUNCATION_BOUNDS)
from grading import registry
from grading.bundle import HiddenBundle
from grading.context import Context, NotGraded
from grading.context import TestFailure as Failed
from grading.handout import configs, models, spans

from submission_variants import apply_edit

ROOT = Path(__file__).resolve().parents[1]
GRADER_PATH = ROOT / "grader.py"
GRADER = runpy.run_path(str(GRADER_PATH), run_name="grader_judged")  # its functions, by name
SHORTER, LONGER = TRUNCATION_BOUNDS
SPAN_TESTS = ("span_truncation", "span_rearrangement", "span_shift", "span_masked_length")


class Judged:
    """A test's context: probes run here on `sub`, or answer from `canned` (probe name -> answer); the
    reference's probes answer from `reference`; a bundle only where `bundle`."""

    def __init__(self, scratch, sub=submission, canned=None, reference=None, bundle=True):
        self.scratch, self.sub, self.canned, self.reference, self.bundle = str(scratch), sub, canned or {}, \
            reference or {}, bundle

    def run(self, probe, **kwargs):
        if probe.__name__ in self.canned:
            return self.canned[probe.__name__](**kwargs)
        with torch.random.fork_rng(), random_kept():
            return probe(self.sub, **kwargs)

    def once(self, key, compute):
        return compute()  # a ctx of one test: nothing computed before it

    def run_reference(self, probe, **kwargs):
        return self.reference[probe.__name__](**kwargs)

    def require_bundle(self):
        if not self.bundle:
            raise NotGraded("graded on submission")
        return self.bundle


@contextlib.contextmanager
def random_kept():
    """Put the global `random` state back after a probe seeds it."""
    state = random.getstate()
    try:
        yield
    finally:
        random.setstate(state)


def judge(name, ctx):
    """grader.py's test function `name` on `ctx`: its note when it passes, else the failure's message."""
    try:
        return "pass", GRADER[name](ctx)
    except Failed as failure:
        return "fail", str(failure)


# ---- span corruption: the reference and other editions of the dataset ------------------------------

def edition(tmp_path, name):
    """The reference's dataset.py edited as submission_variants.EDITS[name] says, as a package of one class."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    shutil.copyfile(ROOT / "src" / "submission" / "dataset.py", folder / "dataset.py")
    apply_edit(name, folder)
    sub = types.ModuleType("edition")
    sub.CharCorruptionDataset = runpy.run_path(str(folder / "dataset.py"), run_name="edited")["CharCorruptionDataset"]
    return sub


def span_verdicts(tmp_path, sub):
    """The verdict of each span test on the examples of `sub`'s dataset (its probe run once, here)."""
    answers = {}

    def answer(**kwargs):
        if not answers:
            answers.update(Judged(tmp_path, sub).run(spans.corruption_examples, **kwargs))
        return answers
    return {name: judge(name, Judged(tmp_path, canned={"corruption_examples": answer}))[0] for name in SPAN_TESTS}


def test_the_reference_and_each_editions_bound_pass_every_span_test(tmp_path):
    """Kills a truncation bound to be passed rather than reached (the 3/4 edition's longest is 96), or
    either edition's bound read for the other."""
    assert span_verdicts(tmp_path, submission) == dict.fromkeys(SPAN_TESTS, "pass")
    three_quarters = edition(tmp_path, "truncation to 3/4 of the block")
    assert span_verdicts(tmp_path, three_quarters) == dict.fromkeys(SPAN_TESTS, "pass")


# ---- span corruption: examples built at each bound -----------------------------------------------

def corruption(document, kept, masked):
    """prefix MASK suffix MASK masked MASK PAD... of `document` truncated to `kept` characters."""
    truncated = document[:kept]
    start = (kept - masked) // 2
    text = (truncated[:start] + MASK_CHAR + truncated[start + masked:] + MASK_CHAR + truncated[start:start + masked]
            + MASK_CHAR)
    return text + PAD_CHAR * (BLOCK_SIZE - len(text))


def built(documents, choices, x_length=BLOCK_SIZE - 1, shift=1, dtype="torch.int64"):
    """The span probe's answer for examples (document index, kept, masked) of `choices`."""
    itos = [PAD_CHAR, MASK_CHAR] + sorted(set("".join(documents)))
    stoi = {c: i for i, c in enumerate(itos)}
    examples = []
    for index, kept, masked in choices:
        ids = [stoi[c] for c in corruption(documents[index], kept, masked)]
        ids += [0] * (x_length + 1 - len(ids))
        examples.append({"index": index, "x": ids[:x_length], "y": ids[shift:x_length + shift], "types": [dtype] * 2})
    return {"value": {"itos": [[i, c] for i, c in enumerate(itos)], "examples": examples}}


def random_choices(documents, longest, seed=0):
    """Examples as a dataset draws them: each document truncated at random to 4 to `longest` characters,
    a random quarter or so of it masked."""
    rng = random.Random(seed)
    choices = []
    for i in range(1000):
        index = i % len(documents)
        kept = min(len(documents[index]), rng.randint(4, longest))
        choices.append((index, kept, rng.randint(1, max(1, kept // 2))))
    return choices


def span_judged(tmp_path, name, make, **options):
    """grader.py's span test `name` on the examples make(documents) chooses."""
    def answer(corpus_path, **_):
        with open(corpus_path, encoding="utf-8") as f:
            documents = f.read().split("\n")
        return built(documents, make(documents), **options)
    return judge(name, Judged(tmp_path, canned={"corruption_examples": answer}))


def long_ones(documents, length=None):
    """The indices of the long documents (at least the longer bound), or of those exactly `length` long."""
    return [i for i, d in enumerate(documents) if (len(d) == length if length else len(d) >= LONGER)]


def with_extremes(shortest=None, longest=None):
    """Random examples up to the shorter bound, plus one keeping `shortest` and one keeping `longest`
    characters of the longest document."""
    def make(documents):
        choices = random_choices(documents, SHORTER)
        longest_document = max(range(len(documents)), key=lambda i: len(documents[i]))
        for kept in (shortest, longest):
            if kept is not None:
                choices.append((longest_document, kept, max(1, kept // 4)))
        return choices
    return make


@pytest.mark.parametrize("shortest, status", [(4, "pass"), (3, "fail")])
def test_a_truncation_keeps_at_least_four_characters(tmp_path, shortest, status):
    found, told = span_judged(tmp_path, "span_truncation", with_extremes(shortest=shortest))
    assert found == status
    assert status == "pass" or told.startswith("an example keeps 3 characters of a ")


@pytest.mark.parametrize("longest, status", [(LONGER, "pass"), (LONGER + 1, "fail")])
def test_a_truncation_never_passes_the_longer_bound(tmp_path, longest, status):
    found, told = span_judged(tmp_path, "span_truncation", with_extremes(longest=longest))
    assert found == status
    assert status == "pass" or f"keeps {LONGER + 1} characters" in told


@pytest.mark.parametrize("longest, status", [(SHORTER, "pass"), (SHORTER - 1, "fail")])
def test_the_longest_truncation_on_long_documents_reaches_the_shorter_bound(tmp_path, longest, status):
    """Kills the shorter bound to be passed, and a document exactly the longer bound long not counted
    as a long one: the one example that reaches the bound is on such a document."""
    def make(documents):
        return [(i, min(kept, longest - 1), kept // 4) for i, kept, _ in random_choices(documents, SHORTER)] + \
            [(long_ones(documents, LONGER)[0], longest, longest // 4)]
    found, told = span_judged(tmp_path, "span_truncation", make)
    assert found == status
    assert status == "pass" or told.startswith(f"on long documents no example keeps more than {SHORTER - 1} ")
    assert status == "pass" or (f"= {SHORTER} (the 2024 starters' bound)" in told
                                and f"= {LONGER} (the Fall 2023 starter's)" in told)


@pytest.mark.parametrize("count, spread, status", [(30, BLOCK_SIZE // 2, "pass"), (29, BLOCK_SIZE // 2, "fail"),
                                                   (30, BLOCK_SIZE // 2 - 1, "fail")])
def test_long_documents_need_thirty_lengths_half_a_block_apart(tmp_path, count, spread, status):
    """Kills a truncation taken as random with fewer distinct lengths, or a narrower range of them."""
    lengths = [SHORTER - spread] + [SHORTER - n for n in range(count - 1)]

    def make(documents):
        return [(index, lengths[n % count], 5) for n, index in enumerate(long_ones(documents))]
    found, told = span_judged(tmp_path, "span_truncation", make)
    assert found == status
    assert status == "pass" or told.endswith(f"but only {count} lengths between {SHORTER - spread} and {SHORTER} "
                                             f"came up")


@pytest.mark.parametrize("masked, status", [((15, 25), "pass"), ((25, 35), "pass"), ((14, 25), "fail"),
                                            ((25, 36), "fail"), ((24, 26), "pass"), ((25, 25), "fail")])
def test_the_masked_part_averages_a_fifth_to_three_tenths_and_varies(tmp_path, masked, status):
    """Kills a masked-length ratio bound moved or made strict (exactly 20% and 30% pass, a little
    outside fails) and a spread of exactly one character taken as fixed."""
    def make(documents):
        return [(index, 100, masked[n % 2]) for n, index in enumerate(long_ones(documents))]
    found, told = span_judged(tmp_path, "span_masked_length", make)
    assert found == status
    assert status == "pass" or "should be about a quarter" in told or "it should be random" in told


def test_a_masked_length_always_a_quarter_of_the_truncation_is_not_random(tmp_path):
    """Kills the masked length's randomness judged by its own spread, which truncations of many lengths
    give even to a mask fixed at a quarter of each."""
    def make(documents):
        return [(index, 4 * (1 + n % 24), 1 + n % 24) for n, index in enumerate(long_ones(documents))]
    assert span_judged(tmp_path, "span_masked_length", make) == (
        "fail", "the masked length hardly varies (spread 0.00 characters): it should be random")


@pytest.mark.parametrize("options, status", [({}, "pass"), ({"x_length": BLOCK_SIZE}, "pass"),
                                             ({"x_length": BLOCK_SIZE - 2}, "fail"), ({"shift": 0}, "fail"),
                                             ({"dtype": "torch.int32"}, "fail")])
def test_x_and_y_are_shifted_long_tensors_of_block_size_or_one_less(tmp_path, options, status):
    found, _ = span_judged(tmp_path, "span_shift", lambda documents: random_choices(documents, LONGER), **options)
    assert found == status


# ---- the models -----------------------------------------------------------------------------------

def fingerprint(drift=0.0, position=0):
    """A made-up fingerprint whose logits before `position` of the copy changed from 10 on move by `drift`."""
    logits = [[[0.0] * models.LOGIT_COLUMNS for _ in range(BLOCK_SIZE)] for _ in range(4)]
    logits[1][position][0] = drift
    return {"value": {"parameters": [["w", [1]]], "shared": [], "logits": logits, "built": None}}


@pytest.mark.parametrize("drift, status", [(1e-4, "pass"), (2e-4, "fail")])
def test_the_vanilla_model_is_causal_up_to_its_tolerance(tmp_path, drift, status):
    answer = lambda **_: fingerprint(drift)  # noqa: E731
    ctx = Judged(tmp_path, canned={"model_fingerprint": answer}, reference={"model_fingerprint": answer})
    found, told = judge("vanilla_structure", ctx)
    assert found == status
    assert status == "pass" or told.startswith("changing the tokens from position 10 on changes the logits before it")


def test_the_vanilla_model_must_compute_the_references_function(tmp_path):
    """Kills 1c-0 comparing the submitted model with itself, or not at all."""
    other = fingerprint()
    other["value"]["parameters"] = [["w", [2]]]
    ctx = Judged(tmp_path, canned={"model_fingerprint": lambda **_: fingerprint()},
                 reference={"model_fingerprint": lambda **_: other})
    assert judge("vanilla_structure", ctx) == ("fail", "the vanilla model is not the reference's: parameters differ "
                                                     "from the reference's: w: [1] instead of [2]")


def test_the_vanilla_structure_is_judged_on_part_cs_model_and_needs_the_bundle(tmp_path):
    """Kills 1c-0 building its model from the GPT class (part (c)'s initialize_vanilla_model is what it
    grades), and 1c-0 run without the bundle's reference."""
    unwritten = types.ModuleType("unwritten")
    unwritten.GPT, unwritten.GPTConfig = submission.GPT, submission.GPTConfig
    unwritten.initialize_vanilla_model = lambda config: None
    reference = {"model_fingerprint": lambda **_: fingerprint()}
    found, told = judge("vanilla_structure", Judged(tmp_path, unwritten, reference=reference))
    assert (found, told) == ("fail", "part (c): initialize_vanilla_model returned None: it is not written yet")
    with pytest.raises(NotGraded):
        GRADER["vanilla_structure"](Judged(tmp_path, unwritten, bundle=False))


def anatomy(**changes):
    """A made-up anatomy of the graded perceiver as the handout asks for it, with `changes`."""
    m, d = BOTTLENECK_DIM, GRADED_MODEL["n_embd"]
    bound = (6 / (m + d)) ** 0.5
    latent = {"name": "C", "shape": [m, d], "max": 0.99 * bound, "std": 0.99 * bound / 3 ** 0.5, "grad": True}
    found = {"latents": [latent], "down": True, "up": True, "logits_length": BLOCK_SIZE, "drift": [0.0] * 3,
             "latents_move_logits": 1.0}
    latent.update(changes.pop("latent", {}))
    return {"value": dict(found, **changes)}


def finetune_config():
    """The configuration probe's answer for a perceiver finetuned as the handout's table says."""
    config = dict(GRADED_TRAINING["finetune_with_pretraining"], **TRAINER_DEFAULTS,
                  final_tokens=200 * 13 * configs.CONFIG_BLOCK_SIZE)  # the 12 biographies and the empty last line
    config["betas"] = list(config["betas"])
    return {"value": {"finetune_with_pretraining": {"config": config, "loaded": True, "built": None,
                                                    "train_dataset": "NameDataset"}}}


@pytest.mark.parametrize("changes, told", [
    ({}, None),
    ({"latent": {"std": 0.99 * (6 / 288) ** 0.5 * 0.3}}, "starts as a normal distribution"),
    ({"drift": [0.0, 1.0, 0.0]}, "the perceiver is not causal"),
    ({"up": False}, "no block gives the 128 positions back"),
])
def test_the_perceiver_is_judged_by_its_structure_and_its_specification(tmp_path, changes, told):
    """Kills 1g-0 judging the perceiver's structure but not the rest of the handout's specification
    (C's Xavier-uniform start, causality), or not its structure."""
    ctx = Judged(tmp_path, canned={"perceiver_anatomy": lambda **_: anatomy(**changes),
                                   "trainer_configs": lambda **_: finetune_config()})
    found, message = judge("perceiver_config", ctx)
    assert (found, message) == ("pass", None) if told is None else (found == "fail" and told in message)


# ---- what the course gives each test ---------------------------------------------------------------

COURSE_PART_POINTS = {"1c": 4, "1d": 6, "1e": 20, "1f": 20, "1g": 14}  # docs/grading.md: the course's own split
COURSE_THRESHOLDS = {  # docs/grading.md, "Thresholds": the course's own graders' (Winter 2024)
    "1d-0-hidden": {"min_correct": 1}, "1d-1-hidden": {"min_correct": 1},
    "1f-1-hidden": {"min_accuracy": 0.10}, "1f-2-hidden": {"min_accuracy": 0.09},
    "1g-1-hidden": {"min_accuracy": 0.024}, "1g-2-hidden": {"min_accuracy": 0.02}}


def test_the_tests_give_the_courses_points_and_thresholds():
    """Kills a test's points or threshold changed from the course's: each part's points, 33 basic and
    31 hidden, the prediction tests' thresholds, and a 300 s limit for each prediction test."""
    tests = [t for t in registry.TESTS.values() if t.source == str(GRADER_PATH)]
    assert {part: sum(t.points for t in tests if t.part == part) for part in COURSE_PART_POINTS} == COURSE_PART_POINTS
    assert [sum(t.points for t in tests if t.visibility == v) for v in ("basic", "hidden")] == [33, 31]
    assert {t.test_id: t.thresholds for t in tests if t.thresholds} == COURSE_THRESHOLDS
    assert {t.timeout for t in tests if t.test_id in COURSE_THRESHOLDS} == {300}


# ---- which stages and files each test judges --------------------------------------------------------

def handout_config(stage, **changes):
    """The configuration probe's view of `stage` set up as the handout's table says, with `changes`."""
    config = dict(GRADED_TRAINING[stage], **TRAINER_DEFAULTS, final_tokens=200 * 13 * configs.CONFIG_BLOCK_SIZE)
    config["betas"] = list(config["betas"])
    return {"config": dict(config, **changes), "loaded": True if stage == "finetune_with_pretraining" else None,
            "built": None, "train_dataset": "CharCorruptionDataset" if stage == "pretrain" else "NameDataset"}


CONFIG_STAGES = [("finetune_config_without_pretraining", "vanilla", "finetune_without_pretraining"),
                 ("pretrain_config", "vanilla", "pretrain"),
                 ("pretrain_config", "vanilla", "finetune_with_pretraining"),
                 ("perceiver_config", "perceiver", "finetune_with_pretraining")]


@pytest.mark.parametrize("test, variant, stage", CONFIG_STAGES, ids=[f"{v} {s}" for _, v, s in CONFIG_STAGES])
def test_each_configuration_test_judges_its_own_stages(tmp_path, test, variant, stage):
    """Kills a configuration test that leaves out one of its stages, or judges another variant's: one
    stage of one variant set up wrong fails its test alone."""
    def answer(variant, stages, **_):
        return {"value": {judged: handout_config(judged, max_epochs=1) if (variant, judged) == wrong
                          else handout_config(judged) for judged in stages}}
    wrong = (variant, stage)
    ctx = Judged(tmp_path, canned={"trainer_configs": answer, "perceiver_anatomy": lambda **_: anatomy()})
    names = {name for name, _, _ in CONFIG_STAGES}
    assert {name: judge(name, ctx)[0] for name in names} == {name: "fail" if name == test else "pass" for name in names}


def test_the_finetune_configuration_test_also_runs_train(tmp_path, monkeypatch):
    """Kills 1c-1 judging finetune()'s configuration without running part (c)'s train()."""
    helper = sys.modules[submission.finetune.__module__]
    for owner in (submission, helper):  # the probe replaces these while it runs: put back afterwards
        monkeypatch.setattr(owner, "train", owner.train)
    monkeypatch.setattr(submission.Trainer, "train", submission.Trainer.train)
    monkeypatch.chdir(tmp_path)
    unwritten = types.ModuleType("unwritten")
    for name in ("CharCorruptionDataset", "GPT", "GPTConfig", "Trainer", "finetune", "initialize_vanilla_model"):
        setattr(unwritten, name, getattr(submission, name))
    unwritten.train = lambda model, writing_params_path, trainer_obj: None
    assert judge("finetune_config_without_pretraining", Judged(tmp_path, unwritten)) == (
        "fail", "part (c): train never calls trainer.train(): it is not written yet")


PREDICTION_TESTS = {  # the handout's numbering: the prediction test of each file
    "nopretrain_dev": "vanilla.nopretrain.dev.predictions",
    "nopretrain_test": "vanilla.nopretrain.test.predictions",
    "pretrained_dev": "vanilla.pretrain.dev.predictions",
    "pretrained_test": "vanilla.pretrain.test.predictions",
    "perceiver_dev": "perceiver.pretrain.dev.predictions",
    "perceiver_test": "perceiver.pretrain.test.predictions"}


class Scored(Context):
    """A prediction test's context on a hand-in of `files`, graded as they are, its perceiver canned."""

    def run(self, probe, **kwargs):
        return anatomy()


@pytest.mark.parametrize("name", list(PREDICTION_TESTS))
def test_each_prediction_test_scores_its_own_file(tmp_path, name):
    """Kills a prediction test that scores another stage's file (that file is missing here)."""
    answers = ["London", "Paris", "Lima"]
    labels = [(f"Where was {n} born?", place) for n, place in enumerate(answers)]
    bundle = HiddenBundle(str(tmp_path), {DEV_QUESTIONS: labels, TEST_LABELS: labels}, {}, None, predictions="files")
    test = next(t for t in registry.TESTS.values() if t.function.__name__ == name and t.source == str(GRADER_PATH))
    snapshot = types.SimpleNamespace(folder=str(tmp_path), files={PREDICTION_TESTS[name]: "\n".join(answers) + "\n"},
                                     params={})
    ctx = Scored(test, None, str(tmp_path), snapshot, bundle, str(tmp_path), 0.0)
    assert GRADER[name](ctx) == "3 of 3 correct (100.0%)"
