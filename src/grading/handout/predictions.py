"""
Parts (d), (f) and (g), the predictions: a prediction file is scored against
the hidden labels of the questions its stage answers (the stage table in
assignment.facts says which stage makes it, from which parameters file and
variant).

With the bundle's "regenerate" mode (the default) the answers scored are the
ones regenerated from the submitted parameters: in a trusted process with the
reference's model where the submission's model computes the reference's
function, else with the submission's own classes in the sandbox; the file
must agree with them on min_agreement of the questions. In "files" mode the
file is scored as it is, and a perceiver's file counts only if the
submission builds a perceiver.
"""

import math

from assignment.facts import COURSE_VOCAB_SIZE, GRADED_SIZE, GRADED_STAGES, MAKER, MASK_CHAR, PAD_CHAR, labels
from assignment.not_written_yet import error_line, not_the_model, reported

from grading.bundle import BundleError
from grading.context import check
from grading.handout.answers import answered
from grading.handout.models import (FINGERPRINT_SEED, build_model, fingerprint, fingerprint_differences,
                                    judge_perceiver, model_fingerprint, module_shapes,
                                    perceiver_anatomy)
from grading.handout.rope import judge_rope, rope_anatomy
from grading.registry import probe

MIN_AGREEMENT = 0.85  # fp32 and bf16 answers of the same params differed by at most 8.4% where measured


class Vocabulary:
    """What decoding needs of a dataset: the vocabulary's stoi, itos and MASK character."""

    def __init__(self, characters):
        self.MASK_CHAR, self.PAD_CHAR = MASK_CHAR, PAD_CHAR
        self.itos = dict(enumerate(characters))
        self.stoi = {c: i for i, c in self.itos.items()}


@probe
@reported
def regenerated_predictions(sub, variant, size, params_path, vocabulary, questions, seed):
    """
    The fingerprint of `sub`'s model of `variant` and `size`, the shapes in the
    parameters file, whether they fit the model, and if so the model's
    greedy answers to `questions` with those parameters (the stages' batched,
    cached decoding), and whether the model is a perceiver, and a RoPE model (a
    rope_cache buffer and no learnt position embedding).
    """
    import torch
    from runtime.decoding import predict_places
    torch.manual_seed(seed)
    model, _ = build_model(sub, variant, len(vocabulary), size)
    result = {"fingerprint": fingerprint(model, len(vocabulary), seed), "predictions": None}
    try:
        state = torch.load(params_path, map_location="cpu", weights_only=True)
        shapes = {name: list(tensor.shape) for name, tensor in state.items()}
    except Exception as error:
        return dict(result, unloadable=error_line(error))
    result["shapes"] = shapes
    expected = {name: list(t.shape) for name, t in model.state_dict().items()}
    wrong = sorted(n for n in set(expected) | set(shapes) if expected.get(n) != shapes.get(n))
    result["misfit"] = [f"{n} is {shapes.get(n, 'missing')} there, {expected.get(n, 'absent')} in the model"
                        for n in wrong[:3]]
    if wrong:
        return result
    model.load_state_dict(state)
    vocabulary = Vocabulary(vocabulary)
    unknown = sorted({c for q in questions for c in q} - set(vocabulary.stoi))
    if unknown:
        raise ValueError(f"the hidden questions hold characters outside the vocabulary: {''.join(unknown)!r}")
    with torch.no_grad():
        _, seen = module_shapes(model, torch.zeros(1, size["block_size"], dtype=torch.long), size["n_embd"])
    result["perceiver"] = any(size["bottleneck_dim"] in s["outputs"] for s in seen)
    result["rope"] = rotates_positions(state)
    result["predictions"] = predict_places(model, questions, vocabulary, "cpu")
    return result


def rotates_positions(state):
    """Whether a state_dict is a RoPE model's: a rope_cache buffer, and no learnt position embedding."""
    return any(name.endswith("rope_cache") for name in state) and "pos_emb" not in state


def needed(threshold):
    """A threshold in words: 'at least 10%' and/or 'at least 1 correct'."""
    words = [f"at least {100 * threshold['min_accuracy']:g}%"] if "min_accuracy" in threshold else []
    words += [f"at least {threshold['min_correct']:g} correct"] if "min_correct" in threshold else []
    return " and ".join(words)


def accuracy_summary(predicted, answers, threshold, what):
    """Check `predicted` against the answers and the threshold; returns the summary."""
    correct = sum(p.strip() == a for p, a in zip(predicted, answers))
    accuracy = correct / len(answers)
    summary = f"{correct} of {len(answers)} correct ({100 * accuracy:.1f}%)"
    short = {name: value for name, value in threshold.items()
             if name == "min_accuracy" and accuracy < value or name == "min_correct" and correct < value}
    check(not short, f"{what}: {summary}; needed {needed(short)}")
    return summary


def regenerate(ctx, stage, vocabulary):
    """The predictions regenerated from the parameters that `stage` reads, and how they were made."""
    params_file, variant = stage.params_in, stage.variant
    bundle = ctx.require_bundle()
    if bundle.reference is None or not vocabulary:
        raise BundleError("regenerating predictions needs reference/ and vocabulary.json "
                          "(or grading.json {\"predictions\": \"files\"})")
    params = ctx.params(params_file, MAKER[params_file])
    size, questions = bundle.model or GRADED_SIZE, ctx.questions(labels(stage))
    request = dict(variant=variant, size=size, vocabulary=vocabulary, questions=questions, seed=FINGERPRINT_SEED)
    reference = answered(ctx.run_reference(regenerated_predictions, params_path=params, **request))
    check("unloadable" not in reference, f"{params_file} cannot be read: {reference.get('unloadable')}")
    m, d = size["bottleneck_dim"], size["n_embd"]
    check(variant != "perceiver" or any(s in ([1, m, d], [m, d]) for s in reference["shapes"].values()),
          f"{params_file} holds no bottleneck of shape ({m}, {d}): these are not a perceiver's parameters "
          f"(initialize_perceiver_model must set mconf.perceiver = True)")
    check(variant != "rope" or rotates_positions(reference["shapes"]),
          f"{params_file} holds a learnt position embedding or no rope_cache: these are not a RoPE model's "
          f"parameters (initialize_rope_model must set mconf.rope = True)")
    submitted = ctx.run(model_fingerprint, variant=variant, size=size, vocab_size=len(vocabulary),
                        seed=FINGERPRINT_SEED)
    differences = (["the parameters do not fit the reference's model: " + "; ".join(reference["misfit"])]
                   if reference["misfit"] else [])
    differences += (fingerprint_differences(submitted["value"], reference["fingerprint"]) if "value" in submitted
                    else [submitted["failure"]])
    if not differences:
        return reference["predictions"], f"regenerated from {params_file} with the reference's model"
    own = answered(ctx.run(regenerated_predictions, params_path=ctx.shared(params), **request))
    check("unloadable" not in own, f"{params_file} cannot be read: {own.get('unloadable')}")
    check(not own["misfit"], f"{params_file} does not fit the submitted model: " + "; ".join(own["misfit"]))
    if variant in ("perceiver", "rope"):
        check(own[variant], not_the_model(variant))
    return own["predictions"], (f"regenerated from {params_file} with the submitted model's code, in the sandbox, "
                                f"because {differences[0]}")


def score_predictions(ctx, predictions_file):
    """
    Score the submission's `predictions_file` against the hidden labels, with
    the test's thresholds (its own, or the bundle's thresholds.json for it);
    returns the summary for the report.
    """
    stage = GRADED_STAGES[MAKER[predictions_file]]
    predicted = ctx.predictions(predictions_file, stage.name)
    bundle = ctx.require_bundle()
    answers = ctx.answers(labels(stage))
    check(answers, f"the hidden {labels(stage)} has no questions")
    check(len(predicted) == len(answers),
          f"{predictions_file} has {len(predicted)} predictions for {len(answers)} questions in {labels(stage)}: "
          f"rerun ./run.sh {stage.name}")
    threshold = ctx.threshold()
    if stage.variant == "rope":  # the course grades only the predictions: these must be a RoPE model's
        judge_rope(answered(ctx.run(rope_anatomy, vocab_size=COURSE_VOCAB_SIZE, seed=FINGERPRINT_SEED)))
    if bundle.predictions == "files":
        if stage.variant == "perceiver":
            judge_perceiver(answered(ctx.run(perceiver_anatomy, vocab_size=COURSE_VOCAB_SIZE, seed=FINGERPRINT_SEED)))
        return accuracy_summary(predicted, answers, threshold, predictions_file)
    regenerated, how = regenerate(ctx, stage, bundle.vocabulary)
    summary = accuracy_summary(regenerated, answers, threshold, f"{predictions_file} ({how})")
    differ = sum(p.strip() != r.strip() for p, r in zip(predicted, regenerated))
    agreement = threshold.get("min_agreement", MIN_AGREEMENT)
    allowed = math.floor((1 - agreement) * len(answers) + 1e-9)
    check(differ <= allowed, f"{predictions_file}: {differ} of {len(answers)} answers differ from those {how}; "
                             f"at most {allowed} may ({100 * agreement:g}% agreement)")
    return f"{summary}; {how}; the file agrees on {len(answers) - differ} of {len(answers)}"
