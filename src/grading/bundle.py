"""
The hidden bundle: what the instructors keep off the students' machines.

A bundle is a directory, given by --hidden or the GRADER_HIDDEN_DIR
environment variable, holding

    *.tsv            labelled question files ("question<TAB>answer" lines, read
                     by the rules of assignment/question_files.py), e.g.
                     birth_dev.tsv and birth_test.tsv
    tests/*.py       optional: hidden tests, written as grader.py's are (@graded,
                     ctx, probes); each adds a test, or replaces the test of
                     grader.py with the same id (registry.load_bundle_tests)
    thresholds.json  optional: {"<test id>": {"min_accuracy": 0.1, "min_correct": 1,
                     "min_agreement": 0.98}, ...} overriding, test by test, the
                     thresholds its @graded line gives
    grading.json     optional: {"predictions": "regenerate" (the default) or "files",
                     "model": {"n_layer": .., "n_head": .., "n_embd": .., "block_size": ..,
                     "bottleneck_dim": ..}}: whether prediction tests regenerate the
                     predictions from the submitted parameters or grade the files as
                     they are, and the size of the graded model (default: the tests')
    vocabulary.json  the pretraining vocabulary, a JSON string of the characters in id
                     order (needed to regenerate predictions)
    reference/       optional: a copy of the reference solution package, for the
                     tests that compare a submission's model with it and for
                     regenerating predictions
    runtime/decoding/  optional: the stages' decoder, as src/runtime/decoding has it
                     (the bundle is put first on the trusted process's path)

Everything but reference/, runtime/ and tests/ is read into memory when the
bundle is loaded, before any submission code runs; the tests are imported by
the grading process (cli.py), never shipped to students.

local_labels() makes the bundle of a local check instead: labelled files the
student has (their dev set), the prediction files graded as they are, and the
tests that need anything else not graded here.
"""

import json
import os
from dataclasses import dataclass

from assignment.question_files import InputError, read_question_file

HIDDEN_ENV = "GRADER_HIDDEN_DIR"
THRESHOLD_FIELDS = ("min_accuracy", "min_correct", "min_agreement")
PREDICTION_MODES = ("regenerate", "files")
MODEL_FIELDS = ("n_layer", "n_head", "n_embd", "block_size", "bottleneck_dim")


class BundleError(Exception):
    """The hidden bundle is missing something a test needs, or is malformed."""


@dataclass
class HiddenBundle:
    path: str
    labels: dict  # file name -> list of (question, answer), in question order
    thresholds: dict  # key -> {"min_accuracy": float, "min_correct": int, "min_agreement": float}
    reference: str  # path of the reference package, or None
    predictions: str = "regenerate"  # how prediction tests grade: "regenerate" or "files"
    model: dict = None  # the graded model's size, as MODEL_FIELDS; None: the tests' own
    vocabulary: str = None  # the pretraining vocabulary's characters in id order, or None
    runtime: str = None  # the path entry holding the `runtime.decoding` package (the bundle's path), or None
    tests: tuple = ()  # paths of the hidden test files (tests/*.py)
    local: bool = False  # a local check's labels (local_labels), not the instructors' bundle

    def answers(self, filename):
        """The answers of labelled file `filename` in the bundle."""
        return [answer for _, answer in self.questions_and_answers(filename)]

    def questions(self, filename):
        """The questions of labelled file `filename` in the bundle."""
        return [question for question, _ in self.questions_and_answers(filename)]

    def questions_and_answers(self, filename):
        if filename not in self.labels:
            raise BundleError(f"the hidden bundle {self.path} has no {filename}")
        return self.labels[filename]


def read_json(path):
    """The JSON document at `path`; BundleError when it is not JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except ValueError as error:
        raise BundleError(f"{path} is not valid JSON: {error}")


def read_labels(path):
    """The (question, answer) pairs of a labelled question file, read by read_question_file's rules."""
    try:
        return [(line.question, line.place) for line in read_question_file(path, labelled=True)]
    except InputError as error:
        raise BundleError(str(error)) from None


def read_thresholds(path):
    """thresholds.json's entries, {test id: {field: number}}; {} without one (check_thresholds checks the ids)."""
    if not os.path.exists(path):
        return {}
    given = read_json(path)
    if not isinstance(given, dict):
        raise BundleError(f"{path} must hold an object of threshold entries")
    for key, entry in given.items():
        if (not isinstance(entry, dict) or not entry or set(entry) - set(THRESHOLD_FIELDS)
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in entry.values())):
            raise BundleError(f"{path}: {key!r} must map some of {THRESHOLD_FIELDS} to numbers")
    return given


def check_thresholds(bundle, tests):
    """Raise BundleError unless every entry of the bundle's thresholds.json names a test that has thresholds."""
    known = sorted(test.test_id for test in tests if test.thresholds)
    for key in bundle.thresholds:
        if key not in known:
            raise BundleError(f"{os.path.join(bundle.path, 'thresholds.json')}: unknown threshold {key!r}; "
                              f"the tests with thresholds are {', '.join(known)}")


def read_settings(path):
    """(prediction mode, model size or None) from grading.json; the defaults when there is none."""
    if not os.path.exists(path):
        return "regenerate", None
    settings = read_json(path)
    if not isinstance(settings, dict) or set(settings) - {"predictions", "model"}:
        raise BundleError(f"{path} must be an object with 'predictions' and/or 'model'")
    mode = settings.get("predictions", "regenerate")
    if mode not in PREDICTION_MODES:
        raise BundleError(f"{path}: unknown predictions setting {mode!r}; use 'regenerate' or 'files'")
    model = settings.get("model")
    if model is not None and (not isinstance(model, dict) or set(model) != set(MODEL_FIELDS)
                              or not all(type(v) is int and v > 0 for v in model.values())):
        raise BundleError(f"{path}: 'model' must give each of {', '.join(MODEL_FIELDS)} as a positive integer")
    return mode, model


def read_vocabulary(path):
    """The characters of vocabulary.json in id order, or None without one."""
    if not os.path.exists(path):
        return None
    vocabulary = read_json(path)
    if not isinstance(vocabulary, str) or len(set(vocabulary)) != len(vocabulary) or len(vocabulary) < 3:
        raise BundleError(f"{path} must hold one JSON string: the vocabulary's distinct characters in id order")
    return vocabulary


def package_folder(path, name):
    """`path` when it is a folder holding package `name`'s __init__.py, None when it does not exist."""
    if not os.path.isdir(path):
        return None
    if not os.path.isfile(os.path.join(path, name, "__init__.py")):
        raise BundleError(f"{path} is not a package: it has no {os.path.join(name, '__init__.py')}")
    return path


def test_files(path):
    """The hidden test files of tests/ (sorted), or () without the folder."""
    if not os.path.isdir(path):
        return ()
    return tuple(os.path.join(path, name) for name in sorted(os.listdir(path)) if name.endswith(".py"))


def load_bundle(path):
    """Read the hidden bundle at `path`; raises BundleError when it is not a usable bundle."""
    if not os.path.isdir(path):
        raise BundleError(f"hidden bundle {path} is not a directory")
    path = os.path.abspath(path)
    labels = {name: read_labels(os.path.join(path, name))
              for name in sorted(os.listdir(path)) if name.endswith(".tsv")}
    mode, model = read_settings(os.path.join(path, "grading.json"))
    return HiddenBundle(path, labels, read_thresholds(os.path.join(path, "thresholds.json")),
                        reference=package_folder(os.path.join(path, "reference"), ""),
                        predictions=mode, model=model,
                        vocabulary=read_vocabulary(os.path.join(path, "vocabulary.json")),
                        runtime=path if package_folder(os.path.join(path, "runtime"), "decoding") else None,
                        tests=test_files(os.path.join(path, "tests")))


def local_labels(paths):
    """The bundle of a local check: the labelled files at `paths`, prediction files graded as they are."""
    labels = {}
    for path in paths:
        if not os.path.isfile(path):
            raise BundleError(f"labels {path} not found")
        labels[os.path.basename(path)] = read_labels(path)
    return HiddenBundle(f"labels {', '.join(paths)}", labels, {}, reference=None, predictions="files", local=True)
