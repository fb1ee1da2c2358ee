"""
The hidden bundle: what the instructors keep off the students' machines.

A bundle is a directory, given by --hidden or the GRADER_HIDDEN_DIR
environment variable, holding

    *.tsv            labelled question files ("question<TAB>answer" lines),
                     e.g. birth_dev.tsv and birth_test.tsv
    thresholds.json  optional: {"<key>": {"min_accuracy": 0.1, "min_correct": 1}, ...}
                     overriding the tests' default thresholds key by key
    reference/       optional: a copy of the reference solution package, for
                     the tests that compare a submission's model with it

Everything is read into memory when the bundle is loaded, before any
submission code runs.
"""

import copy
import json
import os
from dataclasses import dataclass

HIDDEN_ENV = "GRADER_HIDDEN_DIR"
THRESHOLD_FIELDS = ("min_accuracy", "min_correct")


class BundleError(Exception):
    """The hidden bundle is missing something a test needs, or is malformed."""


@dataclass
class HiddenBundle:
    path: str
    labels: dict  # file name -> list of answers, in question order
    thresholds: dict  # key -> {"min_accuracy": float, "min_correct": int}
    reference: str  # path of the reference package, or None

    def answers(self, filename):
        """The answers of labelled file `filename` in the bundle."""
        if filename not in self.labels:
            raise BundleError(f"the hidden bundle {self.path} has no {filename}")
        return self.labels[filename]


def read_labels(path):
    """The answer column of a "question<TAB>answer" file; every non-empty line needs one."""
    answers = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 2:
                raise BundleError(f"{path}, line {number}: expected 'question<TAB>answer'")
            answers.append(fields[1].strip())
    return answers


def read_thresholds(path, defaults):
    """The defaults, with each key given in thresholds.json replaced by its entry there."""
    thresholds = copy.deepcopy(defaults)
    if not os.path.exists(path):
        return thresholds
    try:
        with open(path, encoding="utf-8") as f:
            given = json.load(f)
    except ValueError as error:
        raise BundleError(f"{path} is not valid JSON: {error}")
    if not isinstance(given, dict):
        raise BundleError(f"{path} must hold an object of threshold entries")
    for key, entry in given.items():
        if key not in defaults:
            raise BundleError(f"{path}: unknown threshold {key!r}; known: {', '.join(sorted(defaults))}")
        if (not isinstance(entry, dict) or not entry or set(entry) - set(THRESHOLD_FIELDS)
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in entry.values())):
            raise BundleError(f"{path}: {key!r} must map some of {THRESHOLD_FIELDS} to numbers")
        thresholds[key] = dict(entry)
    return thresholds


def load_bundle(path, default_thresholds):
    """Read the hidden bundle at `path`; raises BundleError when it is not a usable bundle."""
    if not os.path.isdir(path):
        raise BundleError(f"hidden bundle {path} is not a directory")
    path = os.path.abspath(path)
    labels = {name: read_labels(os.path.join(path, name))
              for name in sorted(os.listdir(path)) if name.endswith(".tsv")}
    thresholds = read_thresholds(os.path.join(path, "thresholds.json"), default_thresholds)
    reference = os.path.join(path, "reference")
    if not os.path.isdir(reference):
        reference = None
    elif not os.path.isfile(os.path.join(reference, "__init__.py")):
        raise BundleError(f"{reference} is not a package: it has no __init__.py")
    return HiddenBundle(path, labels, thresholds, reference)
