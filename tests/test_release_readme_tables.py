"""
The starter README's tables (src/instructors/release/readme_tables.py), made
from the facts: each edition's parts with the files and functions of the
reference's package, and its graded stages with what a full run on a GPU
took and ended with.
"""

import inspect
import re
import runpy
from pathlib import Path

import pytest

from assignment.editions import EDITIONS
from assignment.facts import stages_of
from assignment.measured import GPU, STAGE_FIGURES
from grading import registry
from instructors.release import readme_tables

SUBMISSION = Path(__file__).resolve().parents[1] / "src" / "submission"
GRADER = Path(__file__).resolve().parents[1] / "grader.py"
PREDICTIONS = re.compile(r'score_predictions\(ctx, "([^"]+)"\)')


def rows(table):
    """The cells of a markdown table's rows, without its header and rule."""
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]


@pytest.mark.parametrize("edition", ["fall2023", "winter2025", "spring2026"])
def test_each_part_lists_the_editions_functions_and_the_files_that_define_them(edition):
    """Kills a function left out of its part (or of one of its two parts), a part letter of another
    edition, a file named that does not define the part's functions, or a test of another part."""
    listed = {}
    ids = [graded.id for graded in EDITIONS[edition].tests]
    stages = {test_id: f"stage_{number}" if number % 2 else None for number, test_id in enumerate(ids)}
    for part, files, functions, tests in rows(readme_tables.part_table(edition, SUBMISSION, stages)):
        assert tests == ", ".join(i + (f" (`{stages[i]}`)" if stages[i] else "") for i in ids if i[1] == part[1]), part
        if functions == "no code here (see the handout)":
            assert files == "" and part not in EDITIONS[edition].parts.values()
            continue
        names = [name.strip("` ") for name in functions.split(",")]
        listed[part] = names
        defining = {readme_tables.definitions(SUBMISSION)[name] for name in names}
        assert sorted(defining) == [file.strip("` ") for file in files.split(",")]
    wanted = {}
    for function, letters in EDITIONS[edition].parts.items():
        for letter in letters.split(" and "):
            wanted.setdefault(f"({letter})", []).append(function)
    assert listed == wanted and list(listed) == sorted(listed)
    assert {i[1] for i in ids} <= {part[1] for part, *_ in rows(readme_tables.part_table(edition, SUBMISSION, stages))}


@pytest.mark.parametrize("edition", ["fall2023", "winter2025", "spring2026"])
def test_each_test_that_grades_a_stages_file_names_that_stage(registered, edition):
    """Kills a part table whose tests name no stage, or another stage than the one that writes the file the
    test grades (as grader.py's own code names it): the predictions tests name their evaluation stage, the
    tests of code and configurations none."""
    runpy.run_path(str(GRADER), run_name="readme_tables")
    with registry.grading(edition):
        graded = {test.test_id: readme_tables.graded_stage(test.function, edition) for test in registry.select([])}
        sources = {test.test_id: inspect.getsource(test.function) for test in registry.select([])}
    by_file = {stage.writes: stage.name for stage in stages_of(edition)}
    for test in EDITIONS[edition].tests:
        scored = PREDICTIONS.search(sources.get(test.id, ""))
        assert graded.get(test.id) == (by_file[scored.group(1)] if scored else None), test.id
    assert sorted(stage for stage in graded.values() if stage) == sorted(
        stage.name for stage in stages_of(edition) if stage.function == "evaluate")


def test_a_test_that_names_the_files_of_two_stages_is_refused():
    def both(ctx):
        return "vanilla.model.params", "vanilla.pretrain.params"
    with pytest.raises(ValueError, match="both names the files of 2 stages: vanilla_finetune_without_pretrain, "):
        readme_tables.graded_stage(both, "fall2023")


def test_methods_and_functions_are_found_in_their_files():
    where = readme_tables.definitions(SUBMISSION)
    assert where["CharCorruptionDataset.__getitem__"] == "dataset.py"
    assert where["apply_rotary_emb"] == "attention.py" and where["initialize_vanilla_model"] == "helper.py"


@pytest.mark.parametrize("edition", ["fall2023", "spring2026"])
def test_the_stage_table_is_the_editions_stages_with_their_measured_figures(edition):
    """Kills a stage typed in by hand and gone from the facts, another edition's stage, or a figure not
    the measured one."""
    table = readme_tables.stage_table(edition)
    assert GPU in table.splitlines()[0]
    found = rows(table)
    assert [row[0] for row in found] == [f"`./run.sh {stage.name}`" for stage in stages_of(edition)]
    assert [row[1] for row in found] == [f"`{stage.writes}`" for stage in stages_of(edition)]
    for stage, (_, _, took, cpu, end) in zip(stages_of(edition), found):
        figures = STAGE_FIGURES.get(stage.name)
        assert took == ("not yet measured" if figures is None else f"{figures.seconds} s")
        assert end == readme_tables.healthy_end(stage, figures)
        assert cpu == {"pretrain": "5.9 h", "finetune": "2 min" if stage.params_in else "16 min",
                       "evaluate": "seconds"}[stage.function], stage.name


def test_a_healthy_end_is_the_dev_accuracy_or_the_last_loss_or_not_yet_measured():
    """Kills a healthy end left blank where it was never measured (the perceiver's finetuning, the RoPE
    stages), one given to a test stage, which prints no accuracy, or another figure than the measured one."""
    stage = {stage.name: stage for stage in stages_of("spring2026") + stages_of("fall2023")}
    ends = {name: readme_tables.healthy_end(stage[name], STAGE_FIGURES.get(name)) for name in stage}
    assert ends["vanilla_eval_dev_with_pretrain"] == "dev accuracy 28.4%"
    assert ends["vanilla_pretrain"] == "loss near 0.52"
    assert ends["perceiver_finetune_with_pretrain"] == ends["rope_pretrain"] == "not yet measured"
    assert ends["rope_eval_dev_with_pretrain"] == "not yet measured"
    assert ends["vanilla_eval_test_with_pretrain"] == ends["rope_eval_test_with_pretrain"] == ""
