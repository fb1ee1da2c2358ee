"""
The layout of src/: every import points downward (no cycle; each package
imports only the packages below it), each package says who owns it, the
student's package keeps what the handout and the grader call (its names and
their signatures, as a lower bound: it may define more) and imports only
torch, numpy, tqdm and the standard library, its trainer is minGPT's
plain loop with callbacks, and the stage table of assignment/facts.py is the
one that run.sh, the README and grader.py's prediction tests follow.
"""

import ast
import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assignment import facts
from submission.attention import CausalCrossAttention, CausalSelfAttention
from submission.dataset import CharCorruptionDataset
from submission.model import GPTConfig
from submission.trainer import TrainerConfig

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
# What the handout's code and the grader call in the student's package, with the arguments they pass
# (self left out): a lower bound, so a file may define more, and a signature may take more arguments
# where they have defaults.
HANDOUT_API = {
    "attention.CausalSelfAttention": "config",
    "attention.CausalSelfAttention.forward": "x",
    "attention.CausalCrossAttention": "config",
    "attention.CausalCrossAttention.forward": "x_kv, x_q",
    "dataset.NameDataset": "data, pretraining_dataset",
    "dataset.CharCorruptionDataset": "data, block_size",
    "helper.initialize_vanilla_model": "mconf",
    "helper.initialize_perceiver_model": "mconf, bottleneck_dim=32",
    "helper.finetune": "reading_params_path, finetune_corpus_path, pretrain_dataset, block_size, model, "
                       "finetune_lr=6e-4, writer=None",
    "helper.pretrain": "pretrain_dataset, block_size, model, pretrain_lr=6e-3, writer=None",
    "helper.train": "model, writing_params_path, trainer_obj",
    "model.GPTConfig": "vocab_size, block_size, **kwargs",
    "model.GPT": "config",
    "model.GPT.forward": "idx, targets=None",
    "model.GPT.get_block_size": "",
    "model.DownProjectBlock": "config",
    "model.DownProjectBlock.forward": "x_input",
    "model.UpProjectBlock": "config",
    "model.UpProjectBlock.forward": "y, x_input",
    "trainer.TrainerConfig": "**kwargs",
    "trainer.Trainer": "model, train_dataset, test_dataset, config",
    "trainer.Trainer.train": "",
    "trainer.Trainer.add_callback": "event, callback",  # minGPT's plug-in points
    "trainer.Trainer.trigger_callbacks": "event",
    "trainer.Trainer.train_step": "batch",  # the step a callback may replace
    "utils.set_seed": "seed",
    "utils.sample": "model, x, steps, temperature=1.0, sample=False, top_k=None",
    "utils.evaluate_places": "filepath, predicted_places",
}
GRADER_NAMES = ("GPT", "GPTConfig", "CharCorruptionDataset", "Trainer", "initialize_vanilla_model",
                "initialize_perceiver_model", "finetune", "pretrain", "train")  # read as submission.<name>


def handout_signature(parameters):
    """The signature of a function whose parameter list is `parameters`, as the handout writes it."""
    return inspect.signature(eval(f"lambda {parameters}: None"))


def signature_problems(function, parameters, method=False):
    """How `function` (a `method`, whose first parameter is self) cannot be called as the handout calls
    a function of `parameters`: each of those by the same name, position, kind and default, and any
    other with a default. An empty list where it can."""
    actual = list(inspect.signature(function).parameters.values())[1 if method else 0:]
    found = {parameter.name: (position, parameter) for position, parameter in enumerate(actual)}
    problems = []
    for position, wanted in enumerate(handout_signature(parameters).parameters.values()):
        where, parameter = found.pop(wanted.name, (None, None))
        if parameter is None:
            problems.append(f"no parameter {wanted.name}")
        elif (parameter.kind, parameter.default) != (wanted.kind, wanted.default):
            problems.append(f"{parameter} where the handout has {wanted}")
        elif wanted.kind is wanted.POSITIONAL_OR_KEYWORD and where != position:
            problems.append(f"{wanted.name} is parameter {where + 1}, not {position + 1}")
    return problems + [f"{parameter} has no default" for _, parameter in found.values()
                       if parameter.default is parameter.empty
                       and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)]


def handout_object(name):
    """The object of the student's package at `name` (module.attribute...)."""
    module, *attributes = name.split(".")
    found = importlib.import_module(f"submission.{module}")
    for attribute in attributes:
        found = getattr(found, attribute)
    return found


@pytest.mark.parametrize("name", HANDOUT_API)
def test_the_handouts_names_take_the_handouts_arguments(name):
    function = handout_object(name)
    assert callable(function)
    assert signature_problems(function, HANDOUT_API[name], method=name.count(".") == 2) == []


def test_the_signature_check_tells_a_missing_moved_changed_or_required_parameter():
    def taken(model, x, steps, temperature=1.0, sample=False, top_k=None, *, seed=0):
        """As the handout, with one more argument."""
    assert signature_problems(taken, HANDOUT_API["utils.sample"]) == []
    assert signature_problems(lambda x, model, steps, temperature=2.0, top_k=None, extra=None, more=1: None,
                              HANDOUT_API["utils.sample"]) == [
        "model is parameter 2, not 1", "x is parameter 1, not 2", "temperature=2.0 where the handout has "
        "temperature=1.0", "no parameter sample", "top_k is parameter 5, not 6"]
    assert signature_problems(lambda self, batch, device: None, "batch", method=True) == ["device has no default"]


def test_the_grader_finds_its_names_in_the_package():
    import submission
    assert [name for name in GRADER_NAMES if not callable(getattr(submission, name, None))] == []


def test_the_trainer_config_has_mingpts_fields_and_a_writer():
    assert MINGPT_TRAINER_FIELDS | {"writer"} <= set(vars(TrainerConfig))


def test_cross_attention_has_self_attentions_layers():
    """The perceiver's blocks attend with CausalCrossAttention: built from one config, it has the
    parameters of CausalSelfAttention, by name and shape."""
    config = GPTConfig(10, 8, n_layer=1, n_head=2, n_embd=8)
    shapes = [{name: tuple(value.shape) for name, value in layer(config).state_dict().items()}
              for layer in (CausalSelfAttention, CausalCrossAttention)]
    assert shapes[0] and shapes[0] == shapes[1]


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
    assert set(facts.DELIVERABLES) - set(facts.CODE_FILES) == {stage.writes for stage in facts.HANDED_IN_STAGES}
    assert {stage.variant for stage in facts.HANDED_IN_STAGES} == {"vanilla", "perceiver"}  # the seed edition's
    assert all(os.path.isfile(SRC / "submission" / name) for name in facts.CODE_FILES)


def test_every_prediction_file_of_the_table_is_scored_by_one_test_of_grader_py():
    calls = [node for node in ast.walk(ast.parse((REPO / "grader.py").read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "score_predictions"]
    scored = [call.args[1].value for call in calls]
    assert sorted(scored) == sorted(stage.writes for stage in facts.ALL_STAGES if stage.function == "evaluate")  # every edition's
