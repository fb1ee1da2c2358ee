"""
The prediction scores of this assignment's grading
(src/grading/handout/predictions.py), tested in-process: the files scored
as handed in or against predictions regenerated from their parameters
(with the reference's model, or the submission's own where the parameters
do not fit it), and the judges held at their edges: files with any line
ends, a line more or fewer than the questions, accuracies and agreements
exactly at their thresholds (hypothesis properties, derandomized so that
CI sees the same examples on every run). (The rest of the suite runs
grader.py in other processes, which a mutation run cannot trace to a
function.)
"""

import types
from fractions import Fraction
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import submission
from runtime.decoding import predict_places
from assignment import facts
from grading import BundleError
from grading.bundle import HiddenBundle, read_labels
from grading.context import TestFailure as Failed
from grading.handout import answers, models, predictions
from grading.handout import predictions as judges

from grading_helpers import STAGE_FILE, scoring_context
from handout_helpers import TINY, InProcess, anatomy, failure, fingerprinted
from runtime_helpers import EDGE, joined, line_ends, path_of


def test_vocabulary_numbers_the_characters_in_order():
    vocabulary = predictions.Vocabulary("ab?")
    assert vocabulary.itos == {0: "a", 1: "b", 2: "?"} and vocabulary.stoi == {"a": 0, "b": 1, "?": 2}
    assert (vocabulary.PAD_CHAR, vocabulary.MASK_CHAR) == (facts.PAD_CHAR, facts.MASK_CHAR)


def test_accuracy_summary_counts_stripped_answers_against_both_thresholds():
    answers = ["London", "Kyoto", "Lima", "Lagos"]
    assert predictions.accuracy_summary([" London ", "Kyoto\t", "x", "y"], answers, {"min_accuracy": 0.5}, "f") == \
        "2 of 4 correct (50.0%)"
    assert failure(predictions.accuracy_summary, ["London", "x", "y", "z"], answers, {"min_accuracy": 0.3}, "dev") == \
        "dev: 1 of 4 correct (25.0%); needed at least 30%"
    both = {"min_correct": 1, "min_accuracy": 0.1}
    assert failure(predictions.accuracy_summary, ["x"] * 4, answers, both, "dev") == \
        "dev: 0 of 4 correct (0.0%); needed at least 10% and at least 1 correct"
    assert predictions.accuracy_summary(["London", "x", "y", "z"], answers, {"min_correct": 1}, "dev") == \
        "1 of 4 correct (25.0%)"
    assert predictions.accuracy_summary(["x"] * 4, answers, {}, "dev") == "0 of 4 correct (0.0%)"


# ---- prediction scores ----------------------------------------------------------------------------

class Graded(InProcess):
    """A ctx for the prediction tests: a bundle, the submission's files, the test's thresholds, canned answers."""

    def __init__(self, scratch, predicted, mode="regenerate", thresholds=None, reference=None, canned=None,
                 answers=("London", "Kyoto", "Lima", "Lagos")):
        labels = {"birth_dev.tsv": [(f"Where was P{i} born?", a) for i, a in enumerate(answers)]}
        bundle = HiddenBundle(str(scratch), labels, {}, reference=None if reference is None else str(scratch),
                              predictions=mode, vocabulary="abc")
        super().__init__(scratch, bundle=bundle, canned=canned, reference=reference)
        self.predicted, self.shared_paths, self.asked = predicted, [], []
        self.limits = thresholds or {"min_accuracy": 0.5}

    def predictions(self, filename, stage):
        self.asked.append((filename, stage))
        return self.predicted

    def answers(self, filename):
        return self.bundle.answers(filename)

    def questions(self, filename):
        return self.bundle.questions(filename)

    def threshold(self):
        return self.limits

    def params(self, filename, stage):
        self.asked.append((filename, stage))
        return f"/private/{filename}"

    def shared(self, path):
        self.shared_paths.append(path)
        return f"/scratch/{Path(path).name}"


def score(ctx, perceiver=False):
    return predictions.score_predictions(ctx, f"{'perceiver' if perceiver else 'vanilla'}.pretrain.dev.predictions")


FINGERPRINT = fingerprinted()


def regenerated(predictions, misfit=(), perceiver=True, shapes=None, rope=True):
    return {"value": {"fingerprint": FINGERPRINT, "predictions": list(predictions), "misfit": list(misfit),
                      "shapes": shapes or {"w": [2, 3]}, "perceiver": perceiver, "rope": rope}}


def test_files_mode_scores_the_file_as_it_is(tmp_path):
    ctx = Graded(tmp_path, ["London", "Kyoto", "x", "y"], mode="files")
    assert score(ctx) == "2 of 4 correct (50.0%)"
    assert ctx.calls == [] and ctx.asked == [("vanilla.pretrain.dev.predictions", "vanilla_eval_dev_with_pretrain")]
    ctx.predicted = ["x", "y", "Lima", "z"]
    assert failure(score, ctx) == "vanilla.pretrain.dev.predictions: 1 of 4 correct (25.0%); needed at least 50%"
    short = Graded(tmp_path, ["London"], mode="files")
    assert failure(score, short) == ("vanilla.pretrain.dev.predictions has 1 predictions for 4 questions in "
                                     "birth_dev.tsv: rerun ./run.sh vanilla_eval_dev_with_pretrain")
    longer = Graded(tmp_path, ["London", "London", "Kyoto", "Lima", "Lagos"], mode="files")
    assert failure(score, longer).startswith("vanilla.pretrain.dev.predictions has 5 predictions for 4 questions")
    empty = Graded(tmp_path, [], mode="files", answers=())
    assert failure(score, empty) == "the hidden birth_dev.tsv has no questions"


def test_files_mode_still_checks_the_perceiver_is_one(tmp_path):
    ctx = Graded(tmp_path, ["London", "Kyoto", "x", "y"], mode="files",
                 canned={"perceiver_anatomy": {"value": anatomy(down=False)}})
    assert "no block gives m = 32 positions" in failure(score, ctx, perceiver=True)
    assert ctx.calls == [("perceiver_anatomy", {"vocab_size": 256, "seed": models.FINGERPRINT_SEED})]


def test_regenerating_needs_a_reference_and_a_vocabulary(tmp_path):
    told = ('^regenerating predictions needs reference/ and vocabulary.json \\(or grading.json '
            '{"predictions": "files"}\\)$')
    ctx = Graded(tmp_path, ["London"] * 4)
    with pytest.raises(BundleError, match=told):
        score(ctx)
    ctx = Graded(tmp_path, ["London"] * 4, reference={})
    ctx.bundle.vocabulary = None
    with pytest.raises(BundleError, match=told):
        score(ctx)


def test_predictions_regenerated_with_the_reference_model_and_the_file_agreeing(tmp_path):
    reference = {"regenerated_predictions": regenerated(["London", "Kyoto", "Lima", "x"])}
    ctx = Graded(tmp_path, ["London ", "Kyoto", "Lima", "y"], reference=reference,
                 canned={"model_fingerprint": {"value": FINGERPRINT}}, thresholds={"min_accuracy": 0.5,
                                                                                   "min_agreement": 0.75})
    assert score(ctx) == ("3 of 4 correct (75.0%); regenerated from vanilla.finetune.params with the reference's "
                          "model; the file agrees on 3 of 4")
    request = dict(variant="vanilla", size=facts.GRADED_SIZE, vocabulary="abc",
                   questions=[f"Where was P{i} born?" for i in range(4)], seed=models.FINGERPRINT_SEED)
    assert ctx.calls == [("reference regenerated_predictions", dict(params_path="/private/vanilla.finetune.params",
                                                                     **request)),
                         ("model_fingerprint", dict(variant="vanilla", size=facts.GRADED_SIZE, vocab_size=3,
                                                    seed=models.FINGERPRINT_SEED))]
    assert ctx.asked == [("vanilla.pretrain.dev.predictions", "vanilla_eval_dev_with_pretrain"),
                         ("vanilla.finetune.params", "vanilla_finetune_with_pretrain")]
    ctx.bundle.model = dict(TINY)
    score(ctx)
    assert ctx.calls[-1][1]["size"] == TINY


def test_the_file_and_the_regenerated_answers_agree_whatever_whitespace_either_keeps(tmp_path):
    """Kills the whitespace around a regenerated answer counted as a difference from the file's (it is
    scored without it)."""
    reference = {"regenerated_predictions": regenerated([" London", "Kyoto ", "Lima", "\tLagos"])}
    ctx = Graded(tmp_path, ["London", " Kyoto", "Lima ", "Lagos"], reference=reference,
                 canned={"model_fingerprint": {"value": FINGERPRINT}}, thresholds={"min_accuracy": 0.5,
                                                                                   "min_agreement": 1.0})
    assert score(ctx).endswith("4 of 4 correct (100.0%); regenerated from vanilla.finetune.params with the "
                               "reference's model; the file agrees on 4 of 4")


def test_a_file_that_disagrees_with_its_parameters_fails(tmp_path):
    reference = {"regenerated_predictions": regenerated(["London", "Kyoto", "Lima", "x"])}
    ctx = Graded(tmp_path, ["London", "Kyoto", "a", "b"], reference=reference,
                 canned={"model_fingerprint": {"value": FINGERPRINT}}, thresholds={"min_accuracy": 0.5,
                                                                                   "min_agreement": 0.75})
    assert failure(score, ctx) == (
        "vanilla.pretrain.dev.predictions: 2 of 4 answers differ from those regenerated from "
        "vanilla.finetune.params with the reference's model; at most 1 may (75% agreement)")
    ctx.limits = {"min_accuracy": 0.5}
    assert "at most 0 may (85% agreement)" in failure(score, ctx)
    ctx.predicted = ["London", "Kyoto", "Lima", "b"]
    ctx.limits = {"min_accuracy": 0.5, "min_agreement": 0.75}
    assert score(ctx).endswith("the file agrees on 3 of 4")


def test_regenerated_predictions_are_held_to_the_threshold(tmp_path):
    reference = {"regenerated_predictions": regenerated(["London", "x", "y", "z"])}
    ctx = Graded(tmp_path, ["London", "x", "y", "z"], reference=reference,
                 canned={"model_fingerprint": {"value": FINGERPRINT}})
    assert failure(score, ctx) == ("vanilla.pretrain.dev.predictions (regenerated from vanilla.finetune.params with "
                                   "the reference's model): 1 of 4 correct (25.0%); needed at least 50%")


def test_unreadable_or_foreign_parameters_fail(tmp_path):
    unloadable = {"regenerated_predictions": {"value": {"fingerprint": FINGERPRINT, "unloadable": "EOFError: x"}}}
    ctx = Graded(tmp_path, ["London"] * 4, reference=unloadable)
    assert failure(score, ctx) == "vanilla.finetune.params cannot be read: EOFError: x"
    vanilla = {"regenerated_predictions": regenerated(["London"] * 4, shapes={"w": [256, 32], "v": [1, 32, 255]})}
    ctx = Graded(tmp_path, ["London"] * 4, reference=vanilla)
    assert failure(score, ctx, perceiver=True) == (
        "perceiver.finetune.params holds no bottleneck of shape (32, 256): these are not a perceiver's parameters "
        "(initialize_perceiver_model must set mconf.perceiver = True)")
    assert "holds no bottleneck of shape (32, 256)" in failure(
        score, Graded(tmp_path, ["London"] * 4, reference={"regenerated_predictions": regenerated(
            ["London"] * 4, shapes={"w": [32, 255], "v": [2, 32, 256]})}), perceiver=True)
    for shape in ([32, 256], [1, 32, 256]):
        ctx = Graded(tmp_path, ["London"] * 4, reference={"regenerated_predictions": regenerated(
            ["London"] * 4, shapes={"w": shape})}, canned={"model_fingerprint": {"value": FINGERPRINT}},
            answers=["London"] * 4)
        assert score(ctx, perceiver=True).startswith("4 of 4 correct")


def test_a_rope_files_parameters_must_be_a_rope_models(tmp_path):
    """Kills a RoPE stage scored from a plain GPT's parameters (a learnt position embedding, no rope_cache),
    or from the submitted model's own code where that model is not a RoPE model."""
    def rope(shapes, **own):
        canned = {"model_fingerprint": {"value": FINGERPRINT}}
        if own:
            canned["regenerated_predictions"] = regenerated(["London"] * 4, **own)
        return Graded(tmp_path, ["London"] * 4, answers=["London"] * 4, canned=canned, reference={
            "regenerated_predictions": regenerated(["London"] * 4, shapes=shapes, misfit=["w"] if own else ())})
    score_rope = lambda ctx: predictions.score_predictions(ctx, "rope.pretrain.dev.predictions")  # noqa: E731
    cache = "blocks.0.attn.rope_cache"
    assert failure(score_rope, rope({"pos_emb": [1, 128, 256], cache: [128, 16, 2]})) == (
        "rope.finetune.params holds a learnt position embedding or no rope_cache: these are not a RoPE model's "
        "parameters (initialize_rope_model must set mconf.rope = True)")
    assert "no rope_cache" in failure(score_rope, rope({"tok_emb.weight": [256, 256]}))
    assert score_rope(rope({cache: [128, 16, 2]})).startswith("4 of 4 correct")
    assert failure(score_rope, rope({cache: [128, 16, 2]}, rope=False)) == (
        "part (h): initialize_rope_model builds a GPT without rotary position embeddings: set mconf.rope = True")
    assert score_rope(rope({cache: [128, 16, 2]}, rope=True)).startswith("4 of 4 correct")


def test_a_rope_stage_judges_the_submitted_rope_whether_files_are_graded_or_regenerated(tmp_path):
    """Kills a RoPE stage's predictions scored without judging the submission's rotation (part h): in
    either mode the rope_anatomy probe is run first, and a rotation unlike the handout's earns nothing."""
    for mode in ("files", "regenerate"):
        ctx = Graded(tmp_path, ["London"] * 4, mode=mode, answers=["London"] * 4,
                     canned={"rope_anatomy": {"value": {"cache_shape": [1, 1, 1]}}})
        said = failure(lambda graded: predictions.score_predictions(graded, "rope.pretrain.dev.predictions"), ctx)
        assert said.startswith("part (h): precompute_rotary_emb(") and "has shape (1, 1, 1)" in said, mode
        assert ctx.calls == [("rope_anatomy", {"vocab_size": 256, "seed": models.FINGERPRINT_SEED})], mode


def test_a_model_unlike_the_reference_regenerates_with_its_own_code(tmp_path):
    reference = {"regenerated_predictions": regenerated(["x"] * 4, misfit=["w is [3] there, [2] in the model",
                                                                          "v is missing there"])}
    own = regenerated(["London", "Kyoto", "Lima", "x"])
    ctx = Graded(tmp_path, ["London", "Kyoto", "Lima", "x"], reference=reference,
                 canned={"model_fingerprint": {"value": FINGERPRINT}, "regenerated_predictions": own})
    assert score(ctx) == (
        "3 of 4 correct (75.0%); regenerated from vanilla.finetune.params with the submitted model's code, in the "
        "sandbox, because the parameters do not fit the reference's model: w is [3] there, [2] in the model; "
        "v is missing there; the file agrees on 4 of 4")
    assert ctx.shared_paths == ["/private/vanilla.finetune.params"]
    assert ctx.calls[-1][1]["params_path"] == "/scratch/vanilla.finetune.params"
    assert ctx.calls[-1][1]["questions"] == [f"Where was P{i} born?" for i in range(4)]


def test_a_fingerprint_unlike_the_reference_names_the_difference(tmp_path):
    reference = {"regenerated_predictions": regenerated(["x"] * 4)}
    own = regenerated(["London", "Kyoto", "Lima", "x"])
    other = fingerprinted(logits=((5.0, 2.0),))
    ctx = Graded(tmp_path, ["London", "Kyoto", "Lima", "x"], reference=reference,
                 canned={"model_fingerprint": {"value": other}, "regenerated_predictions": own})
    assert "because with the same weights the logits differ from the reference's by 4" in score(ctx)
    ctx.canned["model_fingerprint"] = {"failure": "part (c): GPT broke", "traceback": ""}
    assert "because part (c): GPT broke;" in score(ctx)


def test_the_submitted_models_own_regeneration_must_work(tmp_path):
    reference = {"regenerated_predictions": regenerated(["x"] * 4, misfit=["w differs"])}
    cases = {
        "vanilla.finetune.params cannot be read: OSError: gone":
            {"fingerprint": FINGERPRINT, "unloadable": "OSError: gone"},
        "vanilla.finetune.params does not fit the submitted model: a; b":
            dict(regenerated(["x"] * 4, misfit=["a", "b"])["value"]),
    }
    for told, own in cases.items():
        ctx = Graded(tmp_path, ["x"] * 4, reference=reference,
                     canned={"model_fingerprint": {"value": FINGERPRINT}, "regenerated_predictions": {"value": own}})
        assert failure(score, ctx) == told
    ctx = Graded(tmp_path, ["London"] * 4, answers=["London"] * 4, reference={"regenerated_predictions": regenerated(
        ["x"] * 4, misfit=["w differs"], shapes={"C": [32, 256]})},
        canned={"model_fingerprint": {"value": FINGERPRINT},
                "regenerated_predictions": regenerated(["London"] * 4, perceiver=False)})
    assert failure(score, ctx, perceiver=True) == ("part (g): initialize_perceiver_model builds a GPT without down and "
                                                   "up blocks: set mconf.perceiver = True")
    ctx.canned["regenerated_predictions"] = regenerated(["London"] * 4, perceiver=True)
    assert score(ctx, perceiver=True).startswith("4 of 4 correct")


def test_the_reference_regenerates_its_own_predictions(tmp_path):
    torch.manual_seed(0)
    vocabulary = facts.PAD_CHAR + facts.MASK_CHAR + " ?ABLWabdehilnorsw"
    size = dict(TINY, block_size=32)
    model, _ = models.build_model(submission, "vanilla", len(vocabulary), size)
    torch.save(model.state_dict(), tmp_path / "v.params")
    questions = ["Where was Ada born?", "Where was Bo born?"]
    found = answers.answered(predictions.regenerated_predictions(
        submission, variant="vanilla", size=size, params_path=str(tmp_path / "v.params"), vocabulary=vocabulary,
        questions=questions, seed=5))
    assert found["misfit"] == [] and found["perceiver"] is False
    assert len(found["predictions"]) == 2 and all(isinstance(p, str) for p in found["predictions"])
    assert found["shapes"]["tok_emb.weight" if "tok_emb.weight" in found["shapes"] else next(iter(found["shapes"]))]
    assert found["fingerprint"] == models.fingerprint(
        models.build_model(submission, "vanilla", len(vocabulary), size)[0], len(vocabulary), 5)


def test_a_rope_models_parameters_regenerate_the_stages_answers_and_are_told_from_a_gpts(tmp_path):
    """Kills a RoPE model built as a plain GPT (with a learnt position embedding), its answers regenerated
    otherwise than the stages make them, or a plain GPT's parameters taken for a RoPE model's."""
    torch.manual_seed(0)
    vocabulary = facts.PAD_CHAR + facts.MASK_CHAR + " ?ABLWabdehilnorsw"
    size = dict(TINY, block_size=32)
    model, _ = models.build_model(submission, "rope", len(vocabulary), size)
    assert any(name.endswith("rope_cache") for name in model.state_dict()) and not hasattr(model, "pos_emb")
    torch.save(model.state_dict(), tmp_path / "r.params")
    questions = ["Where was Ada born?", "Where was Bo born?"]
    found = answers.answered(predictions.regenerated_predictions(
        submission, variant="rope", size=size, params_path=str(tmp_path / "r.params"), vocabulary=vocabulary,
        questions=questions, seed=5))
    assert found["misfit"] == [] and found["rope"] is True and found["perceiver"] is False
    assert found["predictions"] == predict_places(model, questions, predictions.Vocabulary(vocabulary), "cpu")
    torch.save(models.build_model(submission, "vanilla", len(vocabulary), size)[0].state_dict(), tmp_path / "v.params")
    found = answers.answered(predictions.regenerated_predictions(
        submission, variant="vanilla", size=size, params_path=str(tmp_path / "v.params"), vocabulary=vocabulary,
        questions=questions, seed=5))
    assert found["rope"] is False and predictions.rotates_positions(found["shapes"]) is False


def test_parameters_that_do_not_fit_name_their_first_three_misfits(tmp_path):
    """Kills a misfit told by one tensor only, or by tensors in no fixed order."""
    vocabulary = facts.PAD_CHAR + facts.MASK_CHAR + " ?ABLWabdehilnorsw"
    size = dict(TINY, block_size=32)
    state = models.build_model(submission, "vanilla", len(vocabulary), size)[0].state_dict()
    wrong = sorted(state)[1:5]
    torch.save({name: torch.zeros(3) if name in wrong else tensor for name, tensor in state.items()},
               tmp_path / "v.params")
    found = answers.answered(predictions.regenerated_predictions(
        submission, variant="vanilla", size=size, params_path=str(tmp_path / "v.params"), vocabulary=vocabulary,
        questions=["Where was Ada born?"], seed=5))
    assert found["predictions"] is None
    assert found["misfit"] == [f"{name} is [3] there, {list(state[name].shape)} in the model" for name in wrong[:3]]


# ---- prediction scores at their edges: line ends, line counts, thresholds ------------------------------

def snapshot_of(files):
    """A snapshot of the hand-in's prediction files `files` (name -> text), as read."""
    return types.SimpleNamespace(folder="/hand_in", files=files, params={})


@EDGE
@given(count=st.integers(1, 8), data=st.data())
def test_labels_and_predictions_with_any_line_ends_score_as_written(tmp_path_factory, count, data):
    """Kills a label or prediction misread at a \\r\\n or lone \\r (a right answer scored wrong, or the
    count off by one)."""
    places = [f"P{i}" for i in range(count)]
    correct = data.draw(st.integers(0, count))
    predicted = places[:correct] + ["x"] * (count - correct)
    folder = tmp_path_factory.mktemp("score")
    labels = read_labels(path_of(folder, "birth_dev.tsv", joined([f"Where was {p} born?\t{p}" for p in places],
                                                                    *data.draw(line_ends(count)))))
    files = {STAGE_FILE: joined(predicted, *data.draw(line_ends(count)))}
    summary = judges.score_predictions(scoring_context(snapshot_of(files), labels), STAGE_FILE)
    assert summary == f"{correct} of {count} correct ({100 * correct / count:.1f}%)"


@EDGE
@given(count=st.integers(1, 8), off=st.sampled_from([-1, 1, "empty"]), ends=st.data())
def test_a_file_with_a_line_more_or_fewer_or_none_is_refused_naming_the_stage(count, off, ends):
    """Kills predictions paired with the wrong questions when the file is a line short or long, and an
    empty file scored as all wrong rather than refused."""
    lines = 0 if off == "empty" else count + off
    text = joined(["London"] * lines, *ends.draw(line_ends(lines)))
    ctx = scoring_context(snapshot_of({STAGE_FILE: text}), [(f"Q{i}", "London") for i in range(count)])
    with pytest.raises(Failed, match=f"^{STAGE_FILE} has {lines} predictions for {count} questions in "
                                     "birth_dev.tsv: rerun ./run.sh vanilla_eval_dev_with_pretrain$"):
        judges.score_predictions(ctx, STAGE_FILE)


DENOMINATORS = [1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000]  # k/n is a 3-digit decimal


@st.composite
def at_a_threshold(draw):
    """(n, k, a threshold as a JSON file gives it, the same as a fraction, a count): the threshold is k/n,
    or 0.001 below it, strictly between two counts where n < 1000; the count is k - 1, k or k + 1."""
    n = draw(st.sampled_from(DENOMINATORS))
    k = draw(st.integers(0, n))
    thousandths = k * (1000 // n) - draw(st.integers(0, min(1, k)))
    count = draw(st.sampled_from([c for c in (k - 1, k, k + 1) if 0 <= c <= n]))
    return n, k, float(f"{thousandths}e-3"), Fraction(thousandths, 1000), count


def passes(judge, *args):
    """Whether judge(*args) passes rather than fails the test."""
    try:
        judge(*args)
    except Failed:
        return False
    return True


@EDGE
@given(edge=at_a_threshold())
def test_an_accuracy_at_its_threshold_meets_it_and_one_answer_fewer_does_not(edge):
    """Kills a threshold compared with > (a file exactly at it failed) or with rounding that lets one
    answer too few pass, for min_accuracy and for min_correct."""
    n, k, threshold, exact, correct = edge
    answers = [f"P{i}" for i in range(n)]
    predicted = answers[:correct] + ["x"] * (n - correct)
    assert passes(judges.accuracy_summary, predicted, answers, {"min_accuracy": threshold}, "f") == \
        (Fraction(correct, n) >= exact)
    assert passes(judges.accuracy_summary, predicted, answers, {"min_correct": k}, "f") == (correct >= k)


@EDGE
@given(edge=at_a_threshold())
def test_a_file_agreeing_exactly_at_min_agreement_passes_and_one_answer_less_fails(edge):
    """Kills an agreement check that refuses a file exactly at min_agreement or lets one more differing
    answer through (floating-point rounding of (1 - agreement) * n)."""
    n, _, agreement, exact, agreeing = edge
    answers = [f"P{i}" for i in range(n)]
    file = "".join(f"{a}\n" for a in answers[:agreeing]) + "x\n" * (n - agreeing)
    ctx = scoring_context(snapshot_of({STAGE_FILE: file}), [(f"Q{i}", a) for i, a in enumerate(answers)],
                          mode="regenerate", thresholds={"min_agreement": agreement})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(judges, "regenerate", lambda ctx, stage, vocabulary: (answers, "regenerated"))
        passed = passes(judges.score_predictions, ctx, STAGE_FILE)
    assert passed == (Fraction(agreeing, n) >= exact)
