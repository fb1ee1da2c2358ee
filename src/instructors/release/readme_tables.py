"""
The tables of the starter's README, made from the facts instead of typed:
the handout's parts, each with the files and functions students write for
it (the edition's part letters, assignment/editions.py) and the tests that
grade it (the grader's registry), each with the stage whose file it grades;
and the graded stages, each with the file it writes and what a full run of
it took and ended with on a GPU (assignment/measured.py).
"""

import ast
import inspect
import os
import textwrap

from assignment.editions import EDITIONS
from assignment.facts import stages_of
from assignment.measured import CPU, GPU, STAGE_FIGURES, cpu_minutes

from .checks import definitions as defined_in


def definitions(submission_dir):
    """{name: file} of the package's functions and classes, and 'Class.method' of their methods."""
    where = {}
    for name in sorted(os.listdir(submission_dir)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(submission_dir, name), encoding="utf-8") as f:
            where.update(dict.fromkeys(defined_in(name, f.read()), name))
    return where


def graded_stage(function, edition):
    """The stage of `edition` whose file a graded test's `function` grades: the one that writes a file its
    code names ('vanilla.pretrain.dev.predictions'), or None for a test that grades no stage's file."""
    code = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(function))))
    named = {node.value for node in ast.walk(code) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    stages = [stage.name for stage in stages_of(edition) if stage.writes in named]
    if len(stages) > 1:
        raise ValueError(f"{function.__name__} names the files of {len(stages)} stages: {', '.join(stages)}")
    return stages[0] if stages else None


def part_table(edition, submission_dir, tests=None):
    """| part | files | functions | tests | of each part letter of `edition`, in the letters' order, with
    the files of the package in `submission_dir` that define them (a function missing there is the
    release checks' to refuse) and the tests of the part among `tests`, {id: the stage whose file it
    grades, or None} ('1c-0-hidden' is part c's), each with its stage."""
    functions = {}  # letter -> the functions of that part
    for function, letters in EDITIONS[edition].parts.items():
        for letter in letters.split(" and "):
            functions.setdefault(letter, []).append(function)
    where = definitions(submission_dir)
    graded = {}  # letter -> its tests, each with the stage whose file it grades
    for test_id, stage in (tests or {}).items():
        graded.setdefault(test_id.split("-")[0].lstrip("0123456789"), []).append(
            test_id + (f" (`{stage}`)" if stage else ""))
    rows = ["| part | files | what you write | graded by (the stage whose file it grades) |", "|---|---|---|---|"]
    for letter in sorted(set(functions) | set(graded)):
        names = functions.get(letter, [])
        files = sorted({where[name] for name in names if name in where})
        written = ', '.join(f'`{name}`' for name in names) or "no code here (see the handout)"
        rows.append(f"| ({letter}) | {', '.join(f'`{file}`' for file in files)} | {written} | "
                    f"{', '.join(graded.get(letter, []))} |")
    return "\n".join(rows)


def healthy_end(stage, figures):
    """What a healthy full run of `stage` ends with, in words: its dev accuracy or last loss as `figures`
    give them, 'not yet measured' where they do not, and '' for a test stage, which prints no accuracy."""
    if stage.questions == 'test':
        return ""
    if figures is not None and figures.dev_accuracy is not None:
        return f"dev accuracy {100 * figures.dev_accuracy:.1f}%"
    if figures is not None and figures.last_loss is not None:
        return f"loss near {figures.last_loss:.2f}"
    return "not yet measured"


def stage_table(edition):
    """| command | writes | time on the GPU | on a CPU | healthy end | of each graded stage of `edition`."""
    rows = [f"| stage | writes (in `src/submission/`) | on {GPU} | on {CPU}, estimated from the vanilla model's steps "
            "| a healthy run ends with |",
            "|---|---|---|---|---|"]
    for stage in stages_of(edition):
        figures = STAGE_FIGURES.get(stage.name)
        took = "not yet measured" if figures is None else f"{figures.seconds} s"
        minutes = cpu_minutes(stage)
        cpu = f"{minutes / 60:.1f} h" if minutes >= 60 else f"{minutes:.0f} min" if minutes >= 1 else "seconds"
        rows.append(f"| `./run.sh {stage.name}` | `{stage.writes}` | {took} | {cpu} | {healthy_end(stage, figures)} |")
    return "\n".join(rows)
