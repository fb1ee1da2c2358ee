"""
Predictions tied to the submitted parameters (issue 14): each hidden
prediction test regenerates the prediction file from the submitted
parameters on the hidden questions, scores what it regenerated, and
requires the submitted file to agree with it.

Every case is the reference handed in with the tiny models' files (see
grader_fixtures), then changed as the case says, graded by grader.py with a
hidden bundle as the release builds it. The cases of TOGETHER change
different files of one hand-in, graded once: the files a test reads are
changed by its own case alone.
"""

import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from grading.handout.predictions import MIN_AGREEMENT

from grader_fixtures import (POINTS, PREDICTION_STEMS, PREDICTION_TESTS, QUESTIONS, ROOT,
                             copy_reference, hand_in, in_background, labels, make_bundle, points_and_outputs,
                             write_lines)
from submission_variants import apply_edit

ALLOWED = math.floor((1 - MIN_AGREEMENT) * QUESTIONS["dev"] + 1e-9)  # answers of 60 that may differ


def copy_labels(package):
    """Prediction files copied from the hidden labels."""
    for stem in PREDICTION_STEMS:
        for split in QUESTIONS:
            write_lines(Path(package) / f"{stem}.{split}.predictions", labels(split))


def change_answers(count, name="vanilla.pretrain.dev.predictions"):
    """Change the first `count` answers of the prediction file `name` to 'Atlantis'."""
    def change(package):
        path = Path(package) / name
        answers = path.read_text(encoding="utf-8").splitlines()
        write_lines(path, ["Atlantis"] * count + answers[count:])
    return change


def record_imports(package):
    """Make the submission append, for each process importing it, the process's command line and the files
    of the calls that import it (a tab between) to ../imports.txt."""
    imports = Path(package).parent / "imports.txt"
    imports.touch(mode=0o666)
    with open(Path(package) / "__init__.py", "a", encoding="utf-8") as f:
        f.write(f"\ntry:\n    open({str(imports)!r}, 'a').write(repr(__import__('sys').argv) + '\\t' + "
                "repr([frame.filename for frame in __import__('traceback').extract_stack()]) + '\\n')\n"
                "except OSError:\n    pass\n")


def remove(name):
    return lambda package: (Path(package) / name).unlink()


def garble(name):
    return lambda package: (Path(package) / name).write_bytes(b"not a parameters file")


@dataclass(frozen=True)
class Case:
    expected: dict  # test id -> points it must give
    change: object = None  # change(package) after the honest hand-in
    hand_in: dict = None  # hand_in's keyword arguments
    edit: str = None  # a submission_variants.EDITS name
    settings: dict = None  # grading.json's settings besides the model
    thresholds: dict = None
    shown: tuple = ()


HONEST = "honest parameters and predictions"
ANOTHER_SEED = {stem: 3 for stem in PREDICTION_STEMS}
NONE = dict.fromkeys(PREDICTION_TESTS, 0)
DEV = "1f-1-hidden"

CASES = {
    HONEST: Case({test: POINTS[test] for test in PREDICTION_TESTS}, change=record_imports,
                                              shown=("the file agrees on 60 of 60", "the file agrees on 50 of 50")),
    "predictions copied from the labels, untrained parameters": Case(
        NONE, change=copy_labels, hand_in=dict(params_seeds=ANOTHER_SEED),
        shown=("vanilla.nopretrain.dev.predictions (regenerated from vanilla.model.params with the reference's "
               "model): 0 of 60 correct (0.0%); needed at least 1 correct",)),
    "predictions made with another model's parameters": Case(
        NONE, hand_in=dict(params_seeds=ANOTHER_SEED, seeds={stem: 0 for stem in PREDICTION_STEMS}),
        shown=("0 of 60 correct",)),
    "copied labels, files graded as they are": Case({"1d-0-hidden": 2, DEV: 5}, change=copy_labels,
                                                    hand_in=dict(params_seeds=ANOTHER_SEED),
                                                    settings={"predictions": "files"}),
    "parameters missing": Case({"1d-0-hidden": 0, "1d-1-hidden": 0, DEV: 5}, change=remove("vanilla.model.params"),
                               shown=("vanilla.model.params is missing: make it with ./run.sh "
                                      "vanilla_finetune_without_pretrain",)),
    "parameters unreadable": Case({DEV: 0, "1f-2-hidden": 0}, change=garble("vanilla.finetune.params"),
                                  shown=("vanilla.finetune.params cannot be read: UnpicklingError",)),
    f"{ALLOWED} answers changed": Case({DEV: 5}, change=change_answers(ALLOWED)),
    f"{ALLOWED + 1} answers changed": Case(
        {"1g-1-hidden": 0}, change=change_answers(ALLOWED + 1, "perceiver.pretrain.dev.predictions"),
        shown=(f"perceiver.pretrain.dev.predictions: {ALLOWED + 1} of 60 answers differ from those regenerated from "
               f"perceiver.finetune.params with the reference's model; at most {ALLOWED} may",)),
    "one answer changed, min_agreement 1": Case(
        {DEV: 0}, change=change_answers(1), thresholds={"1f-1-hidden": {"min_accuracy": 0.1,
                                                                      "min_agreement": 1}},
        shown=("1 of 60 answers differ", "at most 0 may (100% agreement)")),
    "a model that is not the reference's: the submitted classes regenerate": Case(
        {"1d-0-hidden": 2, "1g-1-hidden": 5}, edit="logits doubled",
        shown=("regenerated from vanilla.model.params with the submitted model's code, in the sandbox, because with "
               "the same weights the logits differ from the reference's",)),
}


# Cases of the honest hand-in and bundle whose changes touch different files: one hand-in, graded once. Two share
# a test, 1f-1-hidden, at full points in both: it regenerates from vanilla.finetune.params, not the missing
# vanilla.model.params.
TOGETHER = (("parameters missing", f"{ALLOWED} answers changed", f"{ALLOWED + 1} answers changed"),)
HAND_IN = {name: group for group in TOGETHER for name in group}


@pytest.fixture(scope="module")
def regen_runs(request, tmp_path_factory):
    """Each hand-in graded on the tests of its cases' tables: {case name: future of (points, stdout, folder)}."""
    def graded_hand_in(names):
        cases, root = [CASES[name] for name in names], tmp_path_factory.mktemp("regen")
        first, expected = cases[0], {}
        for case in cases:
            assert (case.hand_in, case.edit, case.settings, case.thresholds) == \
                (first.hand_in, first.edit, first.settings, first.thresholds), names
            assert all(expected.setdefault(test, p) == p for test, p in case.expected.items()), names
        package = copy_reference(root / "submission")
        hand_in(package, **(first.hand_in or {}))
        for case in cases:
            if case.change:
                case.change(package)
        if first.edit:
            apply_edit(first.edit, package)
        bundle, _ = make_bundle(root / "bundle", settings=first.settings, thresholds=first.thresholds)
        found, shown = points_and_outputs(package, list(expected), root, "--hidden", bundle)
        return found, shown, root

    return in_background(request, "regen_case", graded_hand_in, also=[HONEST],
                         hand_in=lambda name: HAND_IN.get(name, (name,)))


@pytest.mark.parametrize("regen_case", CASES)
def test_predictions_are_scored_as_regenerated_from_the_parameters(regen_case, regen_runs):
    found, stdout, _ = regen_runs[regen_case].result()
    expected = CASES[regen_case].expected
    assert {test: found[test] for test in expected} == {test: float(p) for test, p in expected.items()}, stdout
    for text in CASES[regen_case].shown:
        assert text in stdout, stdout


def test_the_regenerating_process_never_imports_the_submitted_code(regen_runs):
    """In the honest case every process that imports the submission wrote its command line and calls: none is
    the trusted one, whether a new interpreter (its argument is the grader's src/) or forked (in trusted.py)."""
    _, _, root = regen_runs[HONEST].result()
    imports = [line.split("\t") for line in (root / "imports.txt").read_text().splitlines()]
    assert imports, "the sandboxed probes import the submission, so the file says who imports it"
    assert all("sandbox.py" in calls for _, calls in imports)
    assert not [argv for argv, _ in imports if str(ROOT / "src") in argv]
    assert not [calls for _, calls in imports if str(ROOT / "src" / "grading" / "trusted.py") in calls]
