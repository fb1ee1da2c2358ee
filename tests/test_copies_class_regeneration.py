"""
A class's answers regenerated from its parameters (src/instructors/copies/class_regeneration.py), with
the trusted regeneration stood in for by one that answers each question with its own name: each
parameters file an evaluation stage reads is answered once, on the bundle's dev and then test
questions (only those the bundle labels), and the answers are split back into the prediction files in
that order; a file from a zip is copied into the scratch folder for its turn and removed after; a file
that cannot be read or regenerated is one line, and the rest is still regenerated.
"""

import os
import zipfile

import pytest

from assignment.facts import DEV_QUESTIONS, TEST_LABELS
from grading.bundle import HiddenBundle
from instructors.copies import class_regeneration
from instructors.copies.grader_regeneration import Unregenerated
from instructors.copies.handins import read_hand_ins

LABELS = {DEV_QUESTIONS: [("dev 1", "a"), ("dev 2", "b")], TEST_LABELS: [("test 1", "c"), ("test 2", "d"),
                                                                         ("test 3", "e")]}


@pytest.fixture
def calls(monkeypatch):
    """The regenerations asked for, as (params file's bytes, variant, questions); each answer is its
    question with the file's bytes, and a file holding b'refused' is not regenerated."""
    asked = []

    def regenerate(bundle, path, variant, questions, timeout):
        with open(path, "rb") as f:
            data = f.read()
        asked.append((data, variant, questions))
        if data == b"refused":
            raise Unregenerated("it does not fit the reference's model (head.weight)")
        return [f"{question} by {data.decode()}" for question in questions]
    monkeypatch.setattr(class_regeneration, "regenerated_answers", regenerate)
    return asked


def make_class(tmp_path):
    """ann: a folder with two parameters files and a prediction file; ben: a zip with one; the hand-ins."""
    folder = tmp_path / "class"
    (folder / "ann").mkdir(parents=True)
    (folder / "ann" / "vanilla.model.params").write_bytes(b"ann model")
    (folder / "ann" / "vanilla.finetune.params").write_bytes(b"ann finetune")
    (folder / "ann" / "vanilla.pretrain.dev.predictions").write_text("x\ny\n")
    with zipfile.ZipFile(folder / "ben.zip", "w") as archive:
        archive.writestr("src/submission/perceiver.finetune.params", b"ben perceiver")
    hand_ins, problems = read_hand_ins(str(folder))
    assert problems == []
    return hand_ins


def regenerate(tmp_path, hand_ins, labels, jobs=1):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    problems = []
    found = class_regeneration.regenerate_class(hand_ins, HiddenBundle("bundle", labels, {}, None), str(scratch),
                                                jobs, 60, problems)
    assert os.listdir(scratch) == []
    return found, problems


def test_each_parameters_file_answers_the_dev_then_test_questions_split_back_into_its_files(tmp_path, calls):
    """Kills the answers split in another order than asked, a zip's copy left in the scratch folder, and
    the hand-ins regenerated counted by files."""
    found, problems = regenerate(tmp_path, make_class(tmp_path), LABELS, jobs=2)
    questions = ["dev 1", "dev 2", "test 1", "test 2", "test 3"]
    assert sorted(calls) == [(b"ann finetune", "vanilla", questions), (b"ann model", "vanilla", questions),
                             (b"ben perceiver", "perceiver", questions)]
    assert problems == [] and (found.files, found.hand_ins) == (3, 2)
    assert found.answers == {
        (0, "vanilla.nopretrain.dev.predictions"): ["dev 1 by ann model", "dev 2 by ann model"],
        (0, "vanilla.nopretrain.test.predictions"): [f"test {k} by ann model" for k in (1, 2, 3)],
        (0, "vanilla.pretrain.dev.predictions"): ["dev 1 by ann finetune", "dev 2 by ann finetune"],
        (0, "vanilla.pretrain.test.predictions"): [f"test {k} by ann finetune" for k in (1, 2, 3)],
        (1, "perceiver.pretrain.dev.predictions"): ["dev 1 by ben perceiver", "dev 2 by ben perceiver"],
        (1, "perceiver.pretrain.test.predictions"): [f"test {k} by ben perceiver" for k in (1, 2, 3)]}


def test_only_the_questions_the_bundle_labels_are_answered(tmp_path, calls):
    found, _ = regenerate(tmp_path, make_class(tmp_path)[1:], {DEV_QUESTIONS: LABELS[DEV_QUESTIONS]})
    assert calls == [(b"ben perceiver", "perceiver", ["dev 1", "dev 2"])]
    assert found.answers == {(0, "perceiver.pretrain.dev.predictions"): ["dev 1 by ben perceiver",
                                                                          "dev 2 by ben perceiver"]}
    assert regenerate(tmp_path / "none", make_class(tmp_path / "none"), {})[0].files == 0


def test_a_file_that_cannot_be_read_or_regenerated_is_one_line_and_the_rest_is_regenerated(tmp_path, calls):
    hand_ins = make_class(tmp_path)
    (tmp_path / "class" / "ann" / "vanilla.model.params").write_bytes(b"refused")
    (tmp_path / "class" / "ben.zip").write_bytes(b"no longer a zip")
    found, problems = regenerate(tmp_path, hand_ins, LABELS)
    assert sorted(problems) == [
        "ann: vanilla.model.params not regenerated: it does not fit the reference's model (head.weight); its "
        "prediction files are compared as submitted",
        "ben: perceiver.finetune.params cannot be read (BadZipFile: File is not a zip file): not compared"]
    assert sorted(found.answers) == [(0, "vanilla.pretrain.dev.predictions"), (0, "vanilla.pretrain.test.predictions")]
    assert (found.files, found.hand_ins) == (3, 2)


def test_a_rope_cohorts_hand_in_is_regenerated_as_the_rope_model(tmp_path, calls):
    """Kills the RoPE edition's parameters left out of the report, or regenerated as another variant's."""
    (tmp_path / "class" / "cai").mkdir(parents=True)
    (tmp_path / "class" / "cai" / "rope.finetune.params").write_bytes(b"cai rope")
    hand_ins, problems = read_hand_ins(str(tmp_path / "class"))
    found, problems = regenerate(tmp_path, hand_ins, LABELS)
    assert problems == [] and calls == [(b"cai rope", "rope", ["dev 1", "dev 2", "test 1", "test 2", "test 3"])]
    assert found.answers == {(0, "rope.pretrain.dev.predictions"): ["dev 1 by cai rope", "dev 2 by cai rope"],
                             (0, "rope.pretrain.test.predictions"): [f"test {k} by cai rope" for k in (1, 2, 3)]}
