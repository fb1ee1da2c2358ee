#!/usr/bin/env python3
"""
The tests of the assignment "pretrained Transformers and knowledge access".

    python grader.py                 run every test (hidden ones need a hidden bundle)
    python grader.py 1e-0-basic      run one test; `python grader.py 1e` runs part (e)
    python grader.py --list          the tests, with their points and thresholds
    python grader.py --json results.json --hidden BUNDLE_DIR     as the grading server does

Each test is one function, named after what it judges: its @graded line gives
its id, points, visibility, time limit and thresholds in the seed (Perceiver)
edition, or for a RoPE test in the latest RoPE cohort; another edition grades
the same function under its own id, points and thresholds
(src/assignment/editions.py; the starter's edition, or --edition NAME). Its
body names the files it grades and judges what the probes saw. Basic tests
check the trainer configurations, span corruption and that the perceiver is
one; hidden tests compare the vanilla model with the reference and score
predictions regenerated from the submitted parameters against the
instructors' labels, a RoPE model's once it is one. A test's points depend
only on its own part's code and files. The RoPE editions' written derivation
(1g-0-basic there) is graded by hand, not here.

The probes (run beside the submission, in a sandbox) and the judges are in
src/grading/handout/, the machinery in src/grading/, the assignment's facts in
src/assignment/facts.py. A hidden bundle's tests/*.py add tests written like
these, or replace one of these by its id.
"""

import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))

from assignment.facts import BLOCK_SIZE, COURSE_VOCAB_SIZE, GRADED_SIZE, PAD_CHAR, TRUNCATION_BOUNDS  # noqa: E402
from grading import check, graded, main  # noqa: E402
from grading.handout.answers import answered  # noqa: E402
from grading.handout.configs import judge_configs  # noqa: E402
from grading.handout.models import (FINGERPRINT_SEED, causal_drift, fingerprint_differences,  # noqa: E402
                                    judge_perceiver, judge_perceiver_as_specified, model_fingerprint,
                                    perceiver_anatomy)
from grading.handout.predictions import score_predictions  # noqa: E402
from grading.handout.spans import span_examples  # noqa: E402

# A truncation that reaches either edition's bound (3/4 or 7/8 of the block) and never passes 7/8 follows a handout.
SHORTER_BOUND, LONGER_BOUND = TRUNCATION_BOUNDS


@graded("1c-0-hidden", points=2, visibility="hidden", timeout=180)
def vanilla_structure(ctx):
    """vanilla model: causal, and computes the reference's function"""
    ctx.require_bundle()
    request = dict(variant="vanilla", size=GRADED_SIZE, vocab_size=COURSE_VOCAB_SIZE, seed=FINGERPRINT_SEED, helper=True)
    seen = answered(ctx.run(model_fingerprint, **request))
    for j, drift in causal_drift(seen["logits"]):
        check(drift <= 1e-4, f"changing the tokens from position {j} on changes the logits before it "
                             f"(by up to {drift:.3g}): attention sees the future")
    differences = fingerprint_differences(seen, answered(ctx.run_reference(model_fingerprint, **request)))
    check(not differences, f"the vanilla model is not the reference's: {'; '.join(differences)}")
    return "same parameters and outputs as the reference under the same weights; causal"


@graded("1c-1-basic", points=2, visibility="basic", timeout=60)
def finetune_config_without_pretraining(ctx):
    """finetune config without pretraining, and train() (vanilla)"""
    return judge_configs(ctx, "vanilla", ["finetune_without_pretraining"], trains=True)


@graded("1d-0-hidden", points=2, visibility="hidden", timeout=300, min_correct=1)
def nopretrain_dev(ctx):
    """no pretraining: dev predictions, at least one correct"""
    return score_predictions(ctx, "vanilla.nopretrain.dev.predictions")


@graded("1d-1-hidden", points=4, visibility="hidden", timeout=300, min_correct=1)
def nopretrain_test(ctx):
    """no pretraining: test predictions, at least one correct"""
    return score_predictions(ctx, "vanilla.nopretrain.test.predictions")


@graded("1e-0-basic", points=5, visibility="basic", timeout=60)
def span_truncation(ctx):
    """span corruption: truncation length"""
    examples = span_examples(ctx, BLOCK_SIZE)
    for e in examples:
        check(4 <= e.kept() <= min(LONGER_BOUND, len(e.document)),
              f"an example keeps {e.kept()} characters of a {len(e.document)}-character document; "
              f"truncation should keep between 4 and int(block_size * 7/8) = {LONGER_BOUND}: {e.shown()}")
    lengths = [e.kept() for e in examples if len(e.document) >= LONGER_BOUND]
    check(max(lengths) >= SHORTER_BOUND,
          f"on long documents no example keeps more than {max(lengths)} characters: truncation should reach "
          f"int(block_size * 3/4) = {SHORTER_BOUND} (the 2024 starters' bound) or int(block_size * 7/8) = "
          f"{LONGER_BOUND} (the Fall 2023 starter's)")
    check(len(set(lengths)) >= 30 and max(lengths) - min(lengths) >= BLOCK_SIZE // 2,
          f"on long documents the truncated length should be random between 4 and the bound, "
          f"but only {len(set(lengths))} lengths between {min(lengths)} and {max(lengths)} came up")
    return f"the longest truncation on long documents keeps {max(lengths)} characters"


@graded("1e-1-basic", points=5, visibility="basic", timeout=60)
def span_rearrangement(ctx):
    """span corruption: prefix MASK suffix MASK masked, then PADs"""
    for e in span_examples(ctx, BLOCK_SIZE):
        check(PAD_CHAR not in e.text.rstrip(PAD_CHAR), f"PAD characters should come only at the end: {e.shown()}")


@graded("1e-2-basic", points=5, visibility="basic", timeout=60)
def span_shift(ctx):
    """span corruption: y is x shifted by one, both LongTensors"""
    for e in span_examples(ctx, BLOCK_SIZE):
        check(e.types == ["torch.int64", "torch.int64"], f"x and y should be LongTensors, not {e.types}")
        check(len(e.x) == len(e.y) and len(e.x) in (BLOCK_SIZE - 1, BLOCK_SIZE),
              f"x and y should each hold block_size - 1 = {BLOCK_SIZE - 1} ids (block_size is accepted too), "
              f"not {len(e.x)} and {len(e.y)}")
        check(e.x[1:] == e.y[:-1], f"y should be x shifted left by one: {e.shown()}")


@graded("1e-3-basic", points=5, visibility="basic", timeout=60)
def span_masked_length(ctx):
    """span corruption: masked length about 1/4, random"""
    examples = span_examples(ctx, BLOCK_SIZE)
    kept = [e.kept() for e in examples]
    masked = [len(e.pieces()[2]) for e in examples]
    ratio = statistics.mean(masked) / statistics.mean(kept)
    check(0.2 <= ratio <= 0.3, f"the masked content averages {100 * ratio:.1f}% of the truncated length; "
                               f"it should be about a quarter")
    spread = statistics.pstdev(m - k / 4 for m, k in zip(masked, kept))
    check(spread >= 1.0, f"the masked length hardly varies (spread {spread:.2f} characters): it should be random")
    return f"masked content averages {100 * ratio:.1f}% of the truncated length"


@graded("1f-0-basic", points=7, visibility="basic", timeout=60)
def pretrain_config(ctx):
    """pretrain config, and finetune config with pretraining (vanilla)"""
    return judge_configs(ctx, "vanilla", ["pretrain", "finetune_with_pretraining"])


@graded("1f-1-hidden", points=5, visibility="hidden", timeout=300, min_accuracy=0.10)
def pretrained_dev(ctx):
    """vanilla pretrained: dev accuracy"""
    return score_predictions(ctx, "vanilla.pretrain.dev.predictions")


@graded("1f-2-hidden", points=8, visibility="hidden", timeout=300, min_accuracy=0.09)
def pretrained_test(ctx):
    """vanilla pretrained: test accuracy"""
    return score_predictions(ctx, "vanilla.pretrain.test.predictions")


@graded("1g-0-basic", points=4, visibility="basic", timeout=90, second_model="perceiver")
def perceiver_config(ctx):
    """perceiver: a causal perceiver as specified, and its finetune config"""
    anatomy = answered(ctx.run(perceiver_anatomy, vocab_size=COURSE_VOCAB_SIZE, seed=FINGERPRINT_SEED))
    judge_perceiver(anatomy)
    judge_perceiver_as_specified(anatomy)
    return judge_configs(ctx, "perceiver", ["finetune_with_pretraining"])


@graded("1g-1-hidden", points=5, visibility="hidden", timeout=300, second_model="perceiver", min_accuracy=0.024)
def perceiver_dev(ctx):
    """perceiver pretrained: dev accuracy"""
    return score_predictions(ctx, "perceiver.pretrain.dev.predictions")


@graded("1g-2-hidden", points=5, visibility="hidden", timeout=300, second_model="perceiver", min_accuracy=0.02)
def perceiver_test(ctx):
    """perceiver pretrained: test accuracy"""
    return score_predictions(ctx, "perceiver.pretrain.test.predictions")


@graded("1h-0-hidden", points=5, visibility="hidden", timeout=300, second_model="rope", min_accuracy=0.22)
def rope_dev(ctx):
    """RoPE pretrained: a RoPE model as the handout states it, and its dev accuracy"""
    return score_predictions(ctx, "rope.pretrain.dev.predictions")


@graded("1h-1-hidden", points=5, visibility="hidden", timeout=300, second_model="rope", min_accuracy=0.16)
def rope_test(ctx):
    """RoPE pretrained: a RoPE model as the handout states it, and its test accuracy"""
    return score_predictions(ctx, "rope.pretrain.test.predictions")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], tests_file=__file__, preload=("torch", "numpy", "tqdm")))
