"""
./run.sh help (src/stages/help.py): every graded stage, in the stage
table's order, with what it reads (its params and questions, the test
questions as $TEST_FILE; wiki.txt, which every stage reads, left out) and
what it writes; the other stages, the instructors' only in a checkout that
has their tools; and --graded, the names run.sh checks a stage against.
"""

import re

import pytest

from assignment.facts import GRADED_STAGES, OTHER_STAGES
from stages import help as stage_help

STUDENT_STAGES = {"london_baseline", "plot", "score_dev", "collect_submission", "help"}


def listed(text):
    """{name: description} of the lines of a stage list ('  name   description'), in order."""
    return {match[1]: match[2] for match in re.finditer(r"^  (\S+) +(\S.*)$", text, re.M)}


def printed(capsys, *argv):
    stage_help.main(list(argv))
    return capsys.readouterr().out


@pytest.mark.parametrize("stage, line", [
    ("vanilla_pretrain", "span-corruption pretraining of the vanilla GPT on wiki.txt: vanilla.pretrain.params"),
    ("rope_finetune_with_pretrain", "finetune the pretrained RoPE model: rope.pretrain.params, birth_places_train.tsv "
                                    "-> rope.finetune.params"),
    ("vanilla_finetune_without_pretrain",
     "train a vanilla GPT from scratch on the training questions: birth_places_train.tsv -> vanilla.model.params"),
    ("perceiver_eval_dev_with_pretrain",
     "answer the dev questions, print accuracy: perceiver.finetune.params, birth_dev.tsv -> "
     "perceiver.pretrain.dev.predictions"),
    ("vanilla_eval_test_with_pretrain",
     "answer the test questions: vanilla.finetune.params, $TEST_FILE -> vanilla.pretrain.test.predictions"),
])
def test_a_graded_stage_says_what_it_reads_and_writes(capsys, stage, line):
    """Kills the test questions shown as the data folder's file (TEST_FILE replaces it), wiki.txt listed
    among the inputs, or an arrow with nothing before it."""
    assert listed(printed(capsys))[stage] == line


def test_every_stage_is_listed_once_the_graded_ones_first_and_in_order(capsys):
    """Kills a stage left out or listed twice, and the graded stages out of the table's order."""
    text = printed(capsys)
    names = [match[1] for match in re.finditer(r"^  (\S+) ", text, re.M)]
    assert names == list(GRADED_STAGES) + list(OTHER_STAGES)
    assert text.startswith("usage: ./run.sh <stage> [options]\n") and "RESUME=1" in text


def test_the_student_starter_lists_only_the_stages_it_can_run(capsys, tmp_path, monkeypatch):
    """Kills the instructors' stages (demo, release, ...) listed in a checkout without src/instructors."""
    monkeypatch.setattr(stage_help, "INSTRUCTORS_DIR", str(tmp_path / "instructors"))
    others = set(listed(printed(capsys))) - set(GRADED_STAGES)
    assert others == STUDENT_STAGES
    (tmp_path / "instructors").mkdir()
    assert set(listed(printed(capsys))) - set(GRADED_STAGES) == set(OTHER_STAGES)


def test_graded_prints_the_graded_stages_names_one_a_line(capsys):
    """Kills another list than the one run.sh checks a stage's name against."""
    assert printed(capsys, "--graded") == "".join(f"{name}\n" for name in GRADED_STAGES)
