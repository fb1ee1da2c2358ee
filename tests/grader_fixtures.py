"""
Helpers for the grader's tests: copies of the reference solution, a tiny
world of models whose answers are the hidden labels, hidden bundles built
the way the release builds them, hand-ins of parameters and predictions,
and running grader.py as a separate process.

The tiny world: reference models of a tiny size (TINY, written into each
bundle's grading.json) with seeded random weights, saved as parameters
files; their greedy answers (the stages' decoding) to made-up questions are
the prediction files, and the hidden labels take every even question's
answer from the vanilla model and every odd one's from the second model
(the perceiver, or the RoPE model for the RoPE editions), so honest
hand-ins score about half, and any other model about nothing.
"""

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import torch

from assignment.facts import MASK_CHAR, PAD_CHAR
from grading import registry
from instructors.release.autograder import write_runtime
from instructors.release.regions import cut, regions, restore
from runtime.decoding import predict_places
from submission import GPTConfig, initialize_perceiver_model, initialize_rope_model, initialize_vanilla_model

from runtime_helpers import one_thread

ROOT = Path(__file__).resolve().parents[1]
GRADER = ROOT / "grader.py"
REFERENCE = ROOT / "src" / "submission"
COPY_IGNORED = shutil.ignore_patterns("__pycache__", "*.params", "*.predictions", "mingpt-demo")

QUESTIONS = {"dev": 60, "test": 50}
TINY = dict(n_layer=4, n_head=2, n_embd=16, block_size=128, bottleneck_dim=8)
PREDICTION_STEMS = ("vanilla.nopretrain", "vanilla.pretrain", "perceiver.pretrain")
ROPE_STEMS = ("vanilla.nopretrain", "vanilla.pretrain", "rope.pretrain")  # the RoPE editions' files
# Which model makes each prediction file: (parameters file, variant).
MADE_FROM = {"vanilla.nopretrain": ("vanilla.model.params", "vanilla"),
             "vanilla.pretrain": ("vanilla.finetune.params", "vanilla"),
             "perceiver.pretrain": ("perceiver.finetune.params", "perceiver"),
             "rope.pretrain": ("rope.finetune.params", "rope")}
PLACES = ["London", "Paris", "Lagos", "Lima", "Kyoto", "Dublin", "Warsaw", "Tangier"]
REPORT_LINE = re.compile(r"^(\d+[a-z]+-\d+-(?:basic|hidden))\s.*?\s(\S+)/(\S+)\s+(pass|fail|error|timeout|hidden)\b")
# The prediction test of each prediction file, as the handout numbers them.
GRADES = {("vanilla.nopretrain", "dev"): "1d-0-hidden", ("vanilla.nopretrain", "test"): "1d-1-hidden",
          ("vanilla.pretrain", "dev"): "1f-1-hidden", ("vanilla.pretrain", "test"): "1f-2-hidden",
          ("perceiver.pretrain", "dev"): "1g-1-hidden", ("perceiver.pretrain", "test"): "1g-2-hidden"}
PREDICTION_TESTS = list(GRADES.values())


def grader_tests():
    """grader.py's tests, as its @graded lines register them: {test id: GradedTest}."""
    runpy.run_path(str(GRADER), run_name="grader_tests")
    return {test.test_id: test for test in registry.TESTS.values() if test.source == str(GRADER)}


def just_enough(test, questions):
    """The fewest right answers of `questions` that meet `test`'s thresholds, judged as the grader judges."""
    return min(right for right in range(questions + 1)
               if right >= test.thresholds.get("min_correct", 0)
               and right / questions >= test.thresholds.get("min_accuracy", 0))


GRADER_TESTS = grader_tests()
POINTS = {test_id: test.points for test_id, test in GRADER_TESTS.items()}
# Right answers that just meet each prediction test's thresholds.
JUST_ENOUGH = {(stem, split): just_enough(GRADER_TESTS[test_id], QUESTIONS[split])
               for (stem, split), test_id in GRADES.items()}


def copy_reference(destination):
    """A copy of the reference package (without params or predictions) at `destination`."""
    shutil.copytree(REFERENCE, destination, ignore=COPY_IGNORED)
    return Path(destination)


def cut_regions(package, filename, keep):
    """Empty the regions of package/filename whose index `keep(i)` rejects, as the release's starter has them."""
    path = Path(package) / filename
    text = path.read_text(encoding="utf-8")
    starter = cut(text, filename)
    bodies = [solution if keep(i) else placeholder
              for i, (solution, placeholder) in enumerate(zip(regions(text), regions(starter)))]
    path.write_text(restore(starter, bodies, filename), encoding="utf-8")


# The student regions of each part: (file, indices of its regions in that file).
PART_REGIONS = {
    "c": [("helper.py", {0, 3, 5})],  # initialize_vanilla_model, finetune, train (2: the RoPE edition's model)
    "f": [("helper.py", {4})],  # pretrain
    "e": [("dataset.py", {0})],
    "g": [("helper.py", {1}), ("model.py", {0, 1, 2, 3})],
}


def leave_unwritten(package, *parts):
    """Empty the regions of the handout's `parts` in the package, as the starter has them."""
    for part in parts:
        for filename, indices in PART_REGIONS[part]:
            cut_regions(package, filename, lambda i, indices=indices: i not in indices)


def questions(split):
    return [f"Where was Person {split} {i} born?" for i in range(QUESTIONS[split])]


VOCABULARY = PAD_CHAR + MASK_CHAR + "".join(sorted(
    set("".join(questions("dev") + questions("test"))) | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")))


class Vocabulary:
    MASK_CHAR, PAD_CHAR = MASK_CHAR, PAD_CHAR
    itos = dict(enumerate(VOCABULARY))
    stoi = {c: i for i, c in enumerate(VOCABULARY)}


SEEDING = threading.Lock()  # torch's global generator and threads: cases are built in threads


def tiny_model(variant, seed):
    """A reference model of the tiny size with seeded weights, scaled up so its answers vary."""
    mconf = GPTConfig(len(VOCABULARY), TINY["block_size"], n_layer=TINY["n_layer"], n_head=TINY["n_head"],
                      n_embd=TINY["n_embd"])
    with SEEDING, torch.no_grad():
        torch.manual_seed(seed)
        if variant == "perceiver":
            model = initialize_perceiver_model(mconf, bottleneck_dim=TINY["bottleneck_dim"])
        elif variant == "rope":
            model = initialize_rope_model(mconf)
        else:
            model = initialize_vanilla_model(mconf)
        for parameter in model.parameters():
            parameter.mul_(8)
    return model.eval()


@lru_cache(maxsize=None)
def answers_of(variant, seed, split):
    """The tiny model's answers to the split's questions, decoded as the stages decode, on one thread as the
    grader's processes decode it (the threads of so small a model mostly spin, waiting on each other)."""
    model = tiny_model(variant, seed)
    with SEEDING, one_thread():  # torch's number of threads is global too
        return tuple(predict_places(model, questions(split), Vocabulary, "cpu"))


def labels(split, second_model="perceiver"):
    """The hidden answers: the vanilla model's (seed 0) on even questions, the second model's (seed 0) on odd ones."""
    return [answers_of("vanilla" if i % 2 == 0 else second_model, 0, split)[i] for i in range(QUESTIONS[split])]


def make_bundle(directory, reference=True, thresholds=None, settings=None, second_model="perceiver"):
    """
    A hidden bundle as the release writes it (labels, with the odd answers
    `second_model`'s; vocabulary, reference/, runtime/) with grading.json
    naming the tiny model (plus `settings`); returns (bundle path, {split: answers}).
    """
    bundle = Path(directory)
    bundle.mkdir(parents=True)
    answers = {split: labels(split, second_model) for split in QUESTIONS}
    for split, truth in answers.items():
        lines = [f"{q}\t{a}\n" for q, a in zip(questions(split), truth)]
        (bundle / f"birth_{split}.tsv").write_text("".join(lines), encoding="utf-8")
    (bundle / "vocabulary.json").write_text(json.dumps(VOCABULARY), encoding="utf-8")
    (bundle / "grading.json").write_text(json.dumps(dict({"model": TINY}, **(settings or {}))), encoding="utf-8")
    if reference:
        copy_reference(bundle / "reference")
        write_runtime(ROOT, bundle)
    if thresholds is not None:
        (bundle / "thresholds.json").write_text(json.dumps(thresholds), encoding="utf-8")
    return bundle, answers


def write_lines(path, lines):
    Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def hand_in(package, stems=PREDICTION_STEMS, seeds=None, params_seeds=None, variants=None):
    """
    Write the parameters and predictions of the tiny models into the package: for each
    stem, the params of its model (seed `params_seeds[stem]`, default 0; variant `variants[stem]`)
    and the predictions of the model of seed `seeds[stem]` (default: the params' seed).
    """
    for stem in stems:
        params_file, variant = MADE_FROM[stem]
        variant = (variants or {}).get(stem, variant)
        params_seed = (params_seeds or {}).get(stem, 0)
        torch.save(tiny_model(variant, params_seed).state_dict(), Path(package) / params_file)
        for split in QUESTIONS:
            write_lines(Path(package) / f"{stem}.{split}.predictions",
                        answers_of(variant, (seeds or {}).get(stem, params_seed), split))


def write_predictions(package, answers, correct=None):
    """Prediction files whose first correct[(stem, split)] answers are right and the rest wrong."""
    correct = correct or JUST_ENOUGH
    for stem in PREDICTION_STEMS:
        for split, truth in answers.items():
            right = correct[(stem, split)]
            write_lines(Path(package) / f"{stem}.{split}.predictions",
                        [a if i < right else "Atlantis" for i, a in enumerate(truth)])


def environment_without(name):
    """A copy of os.environ without `name`, safe in the background threads of in_background: pytest's
    main thread sets and deletes PYTEST_CURRENT_TEST meanwhile, and a copy that raced it is taken again."""
    while True:
        try:
            return {key: value for key, value in os.environ.items() if key != name}
        except (KeyError, RuntimeError):  # a name deleted, or the mapping resized, during the copy
            continue


def run_grader(*args, grader=GRADER, timeout=300):
    """grader.py with `args`, as a separate process, without any hidden bundle from the environment."""
    env = environment_without("GRADER_HIDDEN_DIR")
    return subprocess.run([sys.executable, str(grader), *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def report(stdout):
    """{test id: (status, points earned or None when not graded here)} from grader.py's report lines."""
    found = {}
    for line in stdout.splitlines():
        match = REPORT_LINE.match(line)
        if match:
            earned = None if match.group(2) == "-" else float(match.group(2))
            found[match.group(1)] = (match.group(4), earned)
    return found


def statuses(stdout):
    """{test id: status} from the report lines of grader.py's output."""
    return {test: status for test, (status, _) in report(stdout).items()}


def grade(package, tests, *options):
    """Grade `package` on `tests`, checking the run completed; returns (statuses, stdout)."""
    completed = run_grader("--submission", package, *options, *tests)
    assert completed.returncode == 0, completed.stderr
    found = statuses(completed.stdout)
    assert set(found) == set(tests), completed.stdout
    return found, completed.stdout


def points(package, tests, *options):
    """Grade `package` on `tests`; returns ({test: points earned}, stdout)."""
    completed = run_grader("--submission", package, *options, *tests)
    assert completed.returncode == 0, completed.stderr
    found = {test: earned for test, (_, earned) in report(completed.stdout).items()}
    assert set(found) == set(tests), completed.stdout
    return found, completed.stdout


def points_and_outputs(package, tests, folder, *options):
    """points() with the results written into `folder`; ({test: points earned}, stdout followed by every
    test's output in results.json)."""
    found, stdout = points(package, tests, *options, "--json", folder / "results.json")
    outputs = [test["output"] for test in json.loads((folder / "results.json").read_text())["tests"]]
    return found, "\n".join([stdout] + outputs)


def in_background(request, parameter, job, also=(), hand_in=lambda case: case):
    """
    Start job(hand_in(case)) once for every hand-in of the cases of
    `parameter` among the selected tests of the requesting module (and the
    cases `also`, which other tests read), two grader runs at a time, so that
    they overlap; returns {case: future}: cases of one hand-in share its run.
    """
    cases = [item.callspec.params[parameter] for item in request.session.items
             if item.module is request.module
             and parameter in getattr(getattr(item, "callspec", None), "params", {})]
    cases = list(dict.fromkeys(cases + list(also)))
    pool = ThreadPoolExecutor(max_workers=2)
    runs = {key: pool.submit(job, key) for key in dict.fromkeys(map(hand_in, cases))}
    pool.shutdown(wait=False)
    return {case: runs[hand_in(case)] for case in cases}
