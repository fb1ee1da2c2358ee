"""
Assemble the grading server's bundle (OUT/autograder) next to a finished starter tree.

    OUT/autograder/
      setup.sh           run once when the grading image is built: installs the dependencies
      run_autograder     run for each submission (see templates/run_autograder)
      deliverables.txt   the 18 file names run_autograder takes from a submission
      starter/           a clean copy of OUT/student: the tree a submission is graded in
      hidden/            the hidden bundle, as grading/bundle.py reads it:
        birth_dev.tsv, birth_test.tsv   the labelled question files
        thresholds.json, grading.json   when the instructor gives them
        vocabulary.json                 the pretraining vocabulary (wiki.txt's), for regenerating predictions
        reference/                      the reference solution's .py files: structure checks, regeneration
        runtime/decoding/               the stages' decoder (src/runtime/decoding/), with the perceiver's cache
                                        that the starter lacks: predictions are regenerated as the stages
                                        make them
        tests/                          the instructors' hidden tests (--tests), when given
"""

import json
import os
import shutil
import stat

from assignment.editions import SEED_EDITION
from assignment.facts import CORPUS, DEV_QUESTIONS, TEST_LABELS, deliverables
from assignment.question_files import read_question_file
from runtime.inputs import pretraining_dataset
from runtime.params import vocabulary_string

from .student import SUBMISSION, TEMPLATES, ReleaseError

SCRIPTS = ("setup.sh", "run_autograder")


def questions(path, labelled):
    """The questions of a question file, in order; `labelled` as read_question_file takes it."""
    return [line.question for line in read_question_file(path, labelled)]


def check_test_labels(labels_path, inputs_path):
    """Raise InputError unless the labels are a labelled question file and the test inputs one of questions
    alone (shipped to students, they must not carry answers), ReleaseError unless both ask the same
    questions in the same order."""
    if questions(labels_path, labelled=True) != questions(inputs_path, labelled=False):
        raise ReleaseError(f"{labels_path} does not ask the questions of {inputs_path}, in the same order")


def write_vocabulary(corpus_path, hidden_dir):
    """vocabulary.json: the characters of the pretraining corpus in id order, as the stages stamp them."""
    with open(os.path.join(hidden_dir, "vocabulary.json"), "w", encoding="utf-8") as f:
        json.dump(vocabulary_string(pretraining_dataset(corpus_path)), f)


def write_runtime(repo_dir, hidden_dir):
    """runtime/decoding/: the decoder the stages use (with runtime/__init__.py), to regenerate predictions with."""
    source = os.path.join(repo_dir, "src", "runtime")
    shutil.copytree(os.path.join(source, "decoding"), os.path.join(hidden_dir, "runtime", "decoding"),
                    ignore=lambda folder, names: [n for n in names if not n.endswith(".py")])
    shutil.copyfile(os.path.join(source, "__init__.py"), os.path.join(hidden_dir, "runtime", "__init__.py"))


def write_hidden_bundle(repo_dir, data_dir, labels_path, settings, hidden_dir, test_paths=()):
    """The hidden bundle: labels, the settings files given ({name: path or None}), the vocabulary,
    the reference solution's .py files, the decoding runtime and the hidden tests at `test_paths`."""
    os.makedirs(hidden_dir)
    shutil.copyfile(os.path.join(data_dir, DEV_QUESTIONS), os.path.join(hidden_dir, DEV_QUESTIONS))
    shutil.copyfile(labels_path, os.path.join(hidden_dir, TEST_LABELS))
    for name, path in settings.items():
        if path is not None:
            shutil.copyfile(path, os.path.join(hidden_dir, name))
    write_vocabulary(os.path.join(data_dir, CORPUS), hidden_dir)
    shutil.copytree(os.path.join(repo_dir, "src", SUBMISSION), os.path.join(hidden_dir, "reference"),
                    ignore=lambda folder, names: [n for n in names if not n.endswith(".py")])
    write_runtime(repo_dir, hidden_dir)
    for path in test_paths:
        os.makedirs(os.path.join(hidden_dir, "tests"), exist_ok=True)
        shutil.copyfile(path, os.path.join(hidden_dir, "tests", os.path.basename(path)))


def write_scripts(autograder_dir):
    """setup.sh and run_autograder from the templates, executable."""
    for name in SCRIPTS:
        path = os.path.join(autograder_dir, name)
        shutil.copyfile(os.path.join(TEMPLATES, name), path)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def build_autograder(repo_dir, data_dir, labels_path, settings, student_dir, out_dir, test_paths=(),
                     edition=SEED_EDITION):
    """Write the autograder bundle of `edition` into out_dir (which must not exist yet), from its starter in
    student_dir, whose facts name the edition that its grader.py grades."""
    os.makedirs(out_dir)
    write_scripts(out_dir)
    with open(os.path.join(out_dir, "deliverables.txt"), "w", encoding="utf-8") as f:
        f.write("".join(name + "\n" for name in deliverables(edition)))
    shutil.copytree(student_dir, os.path.join(out_dir, "starter"), symlinks=True)
    write_hidden_bundle(repo_dir, data_dir, labels_path, settings, os.path.join(out_dir, "hidden"), test_paths)
