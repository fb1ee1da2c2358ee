"""
The layout of src/: every import points downward (no cycle; each package
imports only the packages below it), each package says who owns it, and the
stage table of assignment/facts.py is the one that run.sh, the README and
grader.py's prediction tests follow.
"""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assignment import facts
from submission.dataset import CharCorruptionDataset

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
# Who may import whom: a package imports itself and the packages listed for it, nothing else of src/.
ALLOWED = {
    "assignment": set(),
    "submission": set(),
    "grading": {"assignment"},
    "runtime": {"assignment", "submission"},
    "stages": {"assignment", "submission", "runtime"},
    "run": {"assignment", "submission", "runtime"},
    "instructors": {"assignment", "submission", "runtime", "stages", "grading", "run"},
}
# The one import against the order: the regeneration probe decodes as the stages do, with the
# bundle's copy of their decoder (runtime/) on the trusted process's path.
UPWARD = {("grading.handout.predictions", "runtime.decoding")}


def module_name(path):
    """The dotted module name of a .py file under src/."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def src_modules():
    return {module_name(path): path for path in SRC.rglob("*.py") if "__pycache__" not in path.parts}


def imported_modules(path, name, known):
    """The modules of `known` that the file at `path` (module `name`) imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph():
    known = src_modules()
    return {name: imported_modules(path, name, known) for name, path in known.items()}


def find_cycle(graph):
    """One import cycle of the graph as a list of modules, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_no_import_cycle_under_src():
    assert find_cycle(import_graph()) is None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]


def test_imports_of_a_relative_cycle_are_seen(tmp_path):
    """The graph reads relative imports inside functions too (a lazy import cannot hide a cycle)."""
    known = {"pkg.a": None, "pkg.b": None}
    (tmp_path / "b.py").write_text("def f():\n    from .a import x\n")
    assert imported_modules(tmp_path / "b.py", "pkg.b", known) == {"pkg.a"}


def test_every_import_points_downward():
    wrong = []
    for name, imported in import_graph().items():
        top = name.split(".")[0]
        for other in imported:
            other_top = other.split(".")[0]
            if other_top != top and other_top not in ALLOWED[top] and (name, other) not in UPWARD:
                wrong.append(f"{name} imports {other}")
    assert wrong == []


@pytest.mark.parametrize("package", ["assignment", "submission", "runtime", "stages", "grading", "instructors"])
def test_each_package_says_what_it_is(package):
    docstring = ast.get_docstring(ast.parse((SRC / package / "__init__.py").read_text(encoding="utf-8")))
    assert docstring and len(docstring.split()) >= 10


def test_src_holds_only_the_packages_and_run_py():
    entries = {path.name for path in SRC.iterdir() if path.name != "__pycache__"}
    assert entries == {"run.py", "assignment", "submission", "runtime", "stages", "grading", "instructors"}


MINGPT_TRAINER_FIELDS = {"max_epochs", "batch_size", "learning_rate", "betas", "grad_norm_clip", "weight_decay",
                         "lr_decay", "warmup_tokens", "final_tokens", "ckpt_path", "num_workers"}  # minGPT's, 2020


def definitions(name):
    """{top-level name: the names its class body defines (None for a function)} of src/submission/<name>."""
    tree = ast.parse((SRC / "submission" / name).read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            found[node.name] = {target.id for item in node.body if isinstance(item, ast.Assign)
                                for target in item.targets} | {item.name for item in node.body
                                                               if isinstance(item, ast.FunctionDef)}
        elif isinstance(node, ast.FunctionDef):
            found[node.name] = None
    return found


def test_the_students_trainer_is_minGPTs_with_a_writer_and_callbacks():
    """minGPT's TrainerConfig and a writer; a Trainer with minGPT's callbacks (add_callback,
    trigger_callbacks) as its one plug-in point and a replaceable train_step."""
    trainer = definitions("trainer.py")
    assert set(trainer) == {"TrainerConfig", "Trainer", "learning_rate", "optimizer_groups"}
    fields = trainer["TrainerConfig"] - {"__init__"}
    assert MINGPT_TRAINER_FIELDS <= fields and len(fields - MINGPT_TRAINER_FIELDS) <= 3
    assert fields - MINGPT_TRAINER_FIELDS == {"writer"}
    assert trainer["Trainer"] == {"__init__", "add_callback", "trigger_callbacks", "save_checkpoint", "test_loss",
                                  "train_step", "train"}


def method(tree, class_name, name):
    """The ast of method `name` of class `class_name` in a module's tree."""
    (found,) = [item for node in tree.body if isinstance(node, ast.ClassDef) and node.name == class_name
                for item in node.body if isinstance(item, ast.FunctionDef) and item.name == name]
    return found


def test_the_students_trainer_is_one_loop_that_calls_its_callbacks_and_nothing_else_of_the_stages():
    """Kills a second loop through train() and a call out to anything of the trainer but its own
    step, test loss, checkpoint and callbacks: train() is one loop over the epochs around one loop
    over the batches, each step through self.train_step, and it triggers the three events in order."""
    tree = ast.parse((SRC / "submission" / "trainer.py").read_text(encoding="utf-8"))
    train = method(tree, "Trainer", "train")
    epochs = [node for node in train.body if isinstance(node, (ast.For, ast.While))]
    assert len(epochs) == 1
    batches = [node for node in epochs[0].body if isinstance(node, (ast.For, ast.While))]
    assert len(batches) == 1
    calls = [node.func.attr for node in ast.walk(train) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
             and node.func.value.id == "self"]
    assert set(calls) == {"test_loss", "save_checkpoint", "train_step", "trigger_callbacks"}
    triggers = sorted((node.lineno, node.args[0].value) for node in ast.walk(train) if isinstance(node, ast.Call)
                      and isinstance(node.func, ast.Attribute) and node.func.attr == "trigger_callbacks")
    assert [event for _, event in triggers] == ["on_train_start", "on_batch_end", "on_epoch_end"]


def test_each_attention_layer_is_one_class_with_one_forward():
    assert definitions("attention.py") == {"CausalSelfAttention": {"__init__", "forward"},
                                           "CausalCrossAttention": {"forward"}}  # CausalSelfAttention's layers


def test_the_students_files_import_only_torch_numpy_tqdm_and_the_standard_library():
    allowed = {"torch", "numpy", "tqdm"} | set(sys.stdlib_module_names)
    imported = set()
    for path in (SRC / "submission").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                imported.add(node.module.split(".")[0])
    assert imported and imported <= allowed


# ---------------------------------------------------------------- the stage table

def test_the_handouts_dataset_gives_the_reserved_characters_the_ids_the_grader_decodes():
    dataset = CharCorruptionDataset("Ada. Born in London.\n", facts.BLOCK_SIZE)
    assert (dataset.PAD_CHAR, dataset.MASK_CHAR) == (facts.PAD_CHAR, facts.MASK_CHAR)
    assert (dataset.stoi[facts.PAD_CHAR], dataset.stoi[facts.MASK_CHAR]) == (0, 1)


def readme_stage_table():
    """{stage: (reads, writes)} of the README's table of graded stages."""
    rows = {}
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in facts.GRADED_STAGES:
            rows[cells[0]] = ([name.strip().strip("`").split(" ")[0] for name in cells[1].split(",")], cells[2])
    return rows


def test_the_readmes_stage_table_is_the_stage_table():
    rows = readme_stage_table()
    assert list(rows) == list(facts.GRADED_STAGES)
    for stage in facts.STAGES:
        reads, writes = rows[stage.name]
        assert writes == stage.writes
        assert reads == [name for _, name in facts.reads(stage)]


def run_sh(*args):
    return subprocess.run(["bash", str(REPO / "run.sh"), *args], capture_output=True, text=True, timeout=60)


def test_run_sh_help_lists_the_table_with_its_files():
    listed = {line.split()[0]: line for line in run_sh("help").stdout.splitlines() if line.startswith("  ")}
    for stage in facts.STAGES:
        assert stage.writes in listed[stage.name]
        if stage.params_in:
            assert stage.params_in in listed[stage.name]
    assert set(facts.OTHER_STAGES) <= set(listed)


def test_run_sh_dispatches_every_graded_stage_through_the_table():
    """run.sh knows the graded stages only from the table: it has no case of its own for any."""
    text = (REPO / "run.sh").read_text(encoding="utf-8")
    assert not [name for name in facts.GRADED_STAGES if re.search(rf"\b{name}\)", text)]
    assert run_sh("--no-such-stage-").returncode == 2


def test_the_deliverables_are_the_code_and_every_stages_output():
    assert len(facts.DELIVERABLES) == 18 == len(set(facts.DELIVERABLES))
    assert set(facts.DELIVERABLES) - set(facts.CODE_FILES) == {stage.writes for stage in facts.STAGES}
    assert all(os.path.isfile(SRC / "submission" / name) for name in facts.CODE_FILES)


def test_every_prediction_file_of_the_table_is_scored_by_one_test_of_grader_py():
    calls = [node for node in ast.walk(ast.parse((REPO / "grader.py").read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "score_predictions"]
    scored = [call.args[1].value for call in calls]
    assert sorted(scored) == sorted(stage.writes for stage in facts.STAGES if stage.function == "evaluate")
