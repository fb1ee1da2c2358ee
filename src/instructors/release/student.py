"""
Assemble the starter tree a student receives (OUT/student) from this repository.

What goes in, by the layout of src/ (see each package's docstring):
  - the top-level files students run or install from (TOP_FILES), among them
    run.sh with one refusal in place of the instructors' stages, and
    grader.py, whose hidden tests are listed but whose data stays in the
    hidden bundle, and the LICENSE the student files point to;
  - every file of src/ but the instructors' package (src/instructors/) and
    LEFT_OUT: run.py, the assignment's facts (src/assignment/), the runtime
    (src/runtime/), the other stages (src/stages/) and the grader's machinery
    (src/grading/);
  - src/submission's .py files as the seed edition (the perceiver's) has
    them, the other editions' blocks left out (see edition_blocks.py), with
    their regions cut (see regions.py), and nothing else of it but the
    NOTEBOOKS, so no params or predictions;
  - the course data students train and evaluate on (DATA_FILES), without the
    test labels;
  - a student README made from templates/README.student.md, which lists the
    thresholds of grader.py's tests (with the release's thresholds.json on top).
"""

import json
import os
import re
import runpy
import shutil

from assignment.editions import EDITIONS, SEED_EDITION
from assignment.facts import DATA_FILES, OTHER_STAGES, PYTHON_MINIMUM, deliverables
from grading import registry
from grading.handout.predictions import needed

from assignment.measured import CPU_PRETRAINING_MINUTES, GPU

from . import regions
from .edition_blocks import for_edition, relabel
from .readme_tables import graded_stage, part_table, stage_table

TOP_FILES = ("run.sh", "grader.py", "LICENSE")
# run.sh's branches of the instructors' stages, between these lines: the starter's run.sh has one refusal of
# them in their place, so that it holds only what the starter runs.
INSTRUCTORS_BEGIN = "    # >>> the instructors' stages: a release writes one refusal of them in their place\n"
INSTRUCTORS_END = "    # <<< the instructors' stages\n"
# What the starter's code and notebooks import beyond the standard library, as requirements.txt names them:
# the stages and the grader, and matplotlib for ./run.sh plot and the notebooks' figures. The starter's
# requirements.txt keeps the repository's lines of these; its environment.yml installs that list.
STUDENT_PACKAGES = ("torch", "numpy", "tqdm", "matplotlib")
# The notebooks students open first: the handout's minGPT demo, and attention for the written part; the RoPE
# editions' written part (g) has its own.
NOTEBOOKS = ("src/submission/mingpt-demo/play_char.ipynb", "notebooks/attention.ipynb")
EDITION_NOTEBOOKS = {"perceiver": (), "rope": ("notebooks/rope.ipynb",)}
SECOND_MODEL_WORDS = {"perceiver": "a simplified Perceiver-AR",
                      "rope": "one whose attention rotates queries and keys by position (RoPE)"}
ROPE_NOTEBOOK = (" A third, `notebooks/rope.ipynb`, checks numerically what part (g) asks you to\n"
                 "derive: the rotation as a block-diagonal matrix, and why a query's score with a key depends\n"
                 "only on their distance.")
COMPILE_WORDS = ("\n- `./run.sh <stage> compile` (the handout's way to ask for `torch.compile`) is\n"
                 "  accepted and trains eager, saying so in one line: on the GPU measured, no\n"
                 "  compiled way of the pretraining step was faster than eager.")
SUBMISSION = "submission"
INSTRUCTORS = "instructors"
# Files of the shipped packages that the starter leaves out: the perceiver's
# decoding cache, which writes out the blocks of part (g) (the code that
# imports it does without), and the measured figures that only the release
# reads, to write the starter's README.
LEFT_OUT = ("src/runtime/decoding/perceiver_cache.py", "src/assignment/measured.py")
TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
FACTS = "src/assignment/facts.py"
UNSET_EDITION = "\nEDITION = None\n"  # this repository's line in FACTS: every edition


class ReleaseError(Exception):
    """A release that cannot be made as asked; its message is one line for the instructor."""


def require_files(folder, relative_paths):
    """Raise ReleaseError naming the first of relative_paths missing from folder."""
    for path in relative_paths:
        if not os.path.isfile(os.path.join(folder, path)):
            raise ReleaseError(f"{os.path.join(folder, path)} is missing, and the starter needs it")


def copy_file(source, destination):
    """Copy one file with its mode (run.sh stays executable), making folders as needed."""
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    shutil.copy2(source, destination)


def starter_run_sh(repo_dir):
    """The starter's run.sh: the repository's, its instructors' branches made one that refuses them all."""
    with open(os.path.join(repo_dir, "run.sh"), encoding="utf-8") as f:
        text = f.read()
    if text.count(INSTRUCTORS_BEGIN) != 1 or text.count(INSTRUCTORS_END) != 1 \
            or text.index(INSTRUCTORS_BEGIN) > text.index(INSTRUCTORS_END):
        raise ReleaseError("run.sh does not hold the lines around the instructors' stages once each, in order")
    before, rest = text.split(INSTRUCTORS_BEGIN)
    stages = " | ".join(name for name, (audience, _) in OTHER_STAGES.items() if audience == "instructors")
    refusal = f"    {stages})  # their tools are the instructors' only\n        instructors_stage ;;\n"
    return before + refusal + rest.split(INSTRUCTORS_END)[1]


def starter_sources(repo_dir):
    """The src/ files to copy as they are (paths relative to repo_dir): all but the
    student package (cut separately), the instructors' package and LEFT_OUT."""
    src_dir = os.path.join(repo_dir, "src")
    files = []
    for folder, subfolders, names in os.walk(src_dir):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__"
                               and os.path.join(folder, name) not in (os.path.join(src_dir, SUBMISSION),
                                                                      os.path.join(src_dir, INSTRUCTORS)))
        files += [os.path.relpath(os.path.join(folder, name), repo_dir) for name in names if name.endswith(".py")]
    return sorted(path for path in files if path not in LEFT_OUT)


def set_edition(facts_path, edition):
    """Name `edition` in the starter's facts.py, whose stages, deliverables and parts then are that edition's."""
    with open(facts_path, encoding="utf-8") as f:
        text = f.read()
    if text.count(UNSET_EDITION) != 1:
        raise ReleaseError(f"{facts_path} does not hold the line {UNSET_EDITION.strip()!r} once, where the "
                           f"starter's edition goes")
    with open(facts_path, "w", encoding="utf-8") as f:
        f.write(text.replace(UNSET_EDITION, f"\nEDITION = {edition!r}\n"))


def with_initializer(text, edition):
    """`text` with the second model's initializer defined as `edition`'s starter writes it (the RoPE
    model's took the perceiver's unused bottleneck_dim in Winter 2025 only), and the reference's line on an
    argument the signature lacks left out."""
    signature = EDITIONS[edition].second_initializer
    name = signature.split("(")[0]
    text = re.sub(rf"^def {name}\(.*\):$", lambda _: f"def {signature}:", text, flags=re.MULTILINE)
    if "bottleneck_dim" not in signature:
        text = re.sub(r"^ *`bottleneck_dim` is unused:.*\n", "", text, flags=re.MULTILINE)
    return text


def write_cut_submission(src_dir, out_src_dir, edition=SEED_EDITION):
    """Write every .py file of src/submission as `edition` has it (its second model's blocks, its part
    labels), its regions cut; return how many regions were cut."""
    package_dir = os.path.join(src_dir, SUBMISSION)
    count = 0
    for name in sorted(os.listdir(package_dir)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(package_dir, name), encoding="utf-8", newline="") as f:
            text = f.read()
        path = os.path.join(SUBMISSION, name)
        text = with_initializer(relabel(for_edition(text, EDITIONS[edition].second_model, path), edition), edition)
        starter = regions.cut(text, path)
        try:
            compile(starter, path, "exec")
        except SyntaxError as error:
            raise ReleaseError(f"the cut {path} does not compile: {error}") from error
        count += len(regions.locate(text, path))
        os.makedirs(os.path.join(out_src_dir, SUBMISSION), exist_ok=True)
        with open(os.path.join(out_src_dir, path), "w", encoding="utf-8", newline="") as f:
            f.write(starter)
    return count


def requirement_name(line):
    """The package a requirements.txt line names ('' for a comment or a blank line)."""
    return re.split(r"[=<>!~;\s\[]", line.strip(), maxsplit=1)[0] if not line.lstrip().startswith("#") else ""


def write_requirements(repo_dir, out_dir):
    """The starter's requirements.txt (the repository's lines of STUDENT_PACKAGES, pins and all) and an
    environment.yml of the repository's name, channels and Python that installs it."""
    with open(os.path.join(repo_dir, "requirements.txt"), encoding="utf-8") as f:
        kept = [line.strip() for line in f if requirement_name(line) in STUDENT_PACKAGES]
    missing = [name for name in STUDENT_PACKAGES if name not in map(requirement_name, kept)]
    if missing:
        raise ReleaseError(f"requirements.txt does not list {', '.join(missing)}, which the starter needs")
    with open(os.path.join(out_dir, "requirements.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(kept) + "\n")
    with open(os.path.join(repo_dir, "environment.yml"), encoding="utf-8") as f:
        body = [line for line in f if not line.startswith("#")]
    name, python = environment_name(repo_dir), "%d.%d" % PYTHON_MINIMUM
    with open(os.path.join(out_dir, "environment.yml"), "w", encoding="utf-8") as f:
        f.write(f"# conda env create -f environment.yml && conda activate {name}\n"
                f"# The pip list is requirements.txt's: {', '.join(STUDENT_PACKAGES)}.\n"
                f"# Python {python} or newer runs the code.\n" + "".join(body))


def environment_name(repo_dir):
    """The conda environment's name: the `name:` line of environment.yml."""
    with open(os.path.join(repo_dir, "environment.yml"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("name:"):
                return line.split(":", 1)[1].strip()
    raise ReleaseError("environment.yml has no 'name:' line, which the student README needs")


def thresholds_in_words(repo_dir, thresholds_path=None, edition=SEED_EDITION):
    """A line for each test of grader.py that has thresholds in `edition`: its id, description and threshold
    in words."""
    runpy.run_path(os.path.join(repo_dir, "grader.py"), run_name="release")
    given = {}
    if thresholds_path is not None:
        with open(thresholds_path, encoding="utf-8") as f:
            given = json.load(f)
    with registry.grading(edition):
        return "\n".join(f"- `{test.test_id}` ({test.description}): "
                         f"{needed(dict(test.thresholds, **given.get(test.test_id, {})))}"
                         for test in registry.select([]) if test.thresholds)


def write_readme(repo_dir, out_dir, thresholds_path=None, edition=SEED_EDITION):
    """The student README, with the environment's name, the deliverables, the tests' thresholds, and the
    edition's parts (of the cut package in out_dir) and stages."""
    with open(os.path.join(TEMPLATES, "README.student.md"), encoding="utf-8") as f:
        template = f.read()
    listed = "\n".join(f"{number}. src/submission/{name}"
                       for number, name in enumerate(deliverables(edition), start=1))
    thresholds = thresholds_in_words(repo_dir, thresholds_path, edition)
    second_model = EDITIONS[edition].second_model
    with registry.grading(edition):  # grader.py's tests, as thresholds_in_words registered them
        graded = {test.test_id: graded_stage(test.function, edition) for test in registry.select([])}
    parts = part_table(edition, os.path.join(out_dir, "src", SUBMISSION),
                       {test.id: graded.get(test.id) for test in EDITIONS[edition].tests})
    text = (template.replace("{environment}", environment_name(repo_dir)).replace("{deliverables}", listed)
            .replace("{thresholds}", thresholds).replace("{parts}", parts)
            .replace("{stages}", stage_table(edition)).replace("{gpu}", GPU)
            .replace("{cpu_hours}", f"{CPU_PRETRAINING_MINUTES / 60:.0f}")
            .replace("{second_model}", SECOND_MODEL_WORDS[second_model])
            .replace("{rope_notebook}", ROPE_NOTEBOOK if second_model == "rope" else "")
            .replace("{compile}", COMPILE_WORDS if second_model == "rope" else ""))
    with open(os.path.join(out_dir, "README.md"), "w", encoding="utf-8") as f:
        f.write(text)


def build_student(repo_dir, data_dir, out_dir, thresholds_path=None, edition=SEED_EDITION):
    """
    Write the starter tree of `edition` into out_dir (which must not exist
    yet) and return the number of regions cut.
    """
    notebooks = NOTEBOOKS + EDITION_NOTEBOOKS[EDITIONS[edition].second_model]
    require_files(repo_dir, TOP_FILES + notebooks + ("src/run.py", "requirements.txt", "environment.yml"))
    require_files(data_dir, DATA_FILES)
    run_sh = starter_run_sh(repo_dir)
    os.makedirs(out_dir)
    for path in TOP_FILES + notebooks + tuple(starter_sources(repo_dir)):
        copy_file(os.path.join(repo_dir, path), os.path.join(out_dir, path))
    with open(os.path.join(out_dir, "run.sh"), "w", encoding="utf-8") as f:
        f.write(run_sh)
    write_requirements(repo_dir, out_dir)
    set_edition(os.path.join(out_dir, FACTS), edition)
    cut_count = write_cut_submission(os.path.join(repo_dir, "src"), os.path.join(out_dir, "src"), edition)
    for name in DATA_FILES:
        copy_file(os.path.join(data_dir, name), os.path.join(out_dir, "data", name))
    write_readme(repo_dir, out_dir, thresholds_path, edition)
    return cut_count
