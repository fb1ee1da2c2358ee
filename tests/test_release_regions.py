"""
The release's student regions (src/instructors/release/regions.py): cutting
them out of the solution and putting them back byte for byte, markers that
do not pair named with their file and line, and the regions and docstrings
the handout names (the span corruption spec of both editions, the helpers'
trainer settings). No release is built here.
"""

import inspect
import re

import pytest

from assignment.facts import BLOCK_SIZE, GRADED_TRAINING, TRUNCATION_BOUNDS
from instructors.release import regions
from instructors.release.edition_blocks import for_edition
from submission import CharCorruptionDataset, TrainerConfig, helper

from release_helpers import solution_sources


EXAMPLE = (
    "def make(n):\n"
    '    """Make n things."""\n'
    "    things = None\n"
    "    ### START_CODE_HERE ###\n"
    "    things = list(range(n))\n"
    "    ### END_CODE_HERE ###\n"
    "    return things\n"
    "\n"
    "\n"
    "class Thing:\n"
    "    def forward(self, x):\n"
    "        ### START_CODE_HERE ###\n"
    "        y = x + 1\n"
    "        return y\n"
    "        ### END_CODE_HERE ###\n"
    "    # a comment does not continue the block\n"
    "\n"
    "\n"
    "def last():\n"
    "    ### START_CODE_HERE ###\n"
    "    return 3\n"
    "    ### END_CODE_HERE ###"
)


def test_cut_keeps_the_markers_and_leaves_one_placeholder_per_region():
    lines = regions.cut(EXAMPLE).splitlines()
    assert lines[3:6] == ["    ### START_CODE_HERE ###", "    pass", "    ### END_CODE_HERE ###"]
    assert lines[11:14] == ["        ### START_CODE_HERE ###", "        raise NotImplementedError",
                            "        ### END_CODE_HERE ###"]
    assert lines[-3:] == ["    ### START_CODE_HERE ###", "    raise NotImplementedError",
                          "    ### END_CODE_HERE ###"]
    assert "list(range(n))" not in regions.cut(EXAMPLE) and "x + 1" not in regions.cut(EXAMPLE)


def test_cut_example_runs_as_the_skeleton_it_promises():
    namespace = {}
    exec(compile(regions.cut(EXAMPLE), "example", "exec"), namespace)
    assert namespace["make"](3) is None
    with pytest.raises(NotImplementedError):
        namespace["Thing"]().forward(1)
    with pytest.raises(NotImplementedError):
        namespace["last"]()


@pytest.mark.parametrize("text", [EXAMPLE, EXAMPLE.replace("\n", "\r\n"), EXAMPLE + "\n"])
def test_restore_inverts_cut(text):
    rebuilt = regions.restore(regions.cut(text), regions.regions(text))
    assert rebuilt == text


@pytest.mark.parametrize("name", sorted(solution_sources()))
def test_restoring_each_solution_file_from_its_cut_is_byte_for_byte(name):
    text = solution_sources()[name]
    assert regions.restore(regions.cut(text, name), regions.regions(text, name), name) == text


def test_restore_rejects_a_different_number_of_regions():
    with pytest.raises(regions.RegionError, match="3 regions but 2 bodies"):
        regions.restore(regions.cut(EXAMPLE), regions.regions(EXAMPLE)[:2])


@pytest.mark.parametrize("text, message", [
    ("a = 1\n### END_CODE_HERE ###\n", "f.py:2: END_CODE_HERE without"),
    ("### START_CODE_HERE ###\n### START_CODE_HERE ###\n### END_CODE_HERE ###\n", "f.py:2: START_CODE_HERE inside"),
    ("x = 0\n### START_CODE_HERE ###\nx = 1\n", "f.py:2: START_CODE_HERE is never closed"),
])
def test_unpaired_markers_name_the_file_and_line(text, message):
    with pytest.raises(regions.RegionError, match=message):
        regions.cut(text, "f.py")


def test_the_solution_has_the_regions_the_handout_names():
    """The seed edition's: helper.py 5, dataset.py 1 (__getitem__), model.py 4 (Down/UpProjectBlock __init__
    and forward), attention.py none; the RoPE edition's has neither the perceiver's blocks nor its initializer,
    and part h's initialize_rope_model in helper.py and four in attention.py (the two functions, the cache and
    the rotation)."""
    for second_model, expected in (("perceiver", (5, 1, 4, 0)), ("rope", (5, 1, 0, 4))):
        counts = {name: len(regions.locate(for_edition(text, second_model))) for name, text in solution_sources().items()}
        assert (counts["helper.py"], counts["dataset.py"], counts["model.py"], counts["attention.py"]) == expected


def settings_rows(docstring):
    """{TrainerConfig field: the words of its row} of the settings table in a docstring."""
    rows = {}
    for line in docstring.splitlines():
        words = line.split()
        if words and words[0] in vars(TrainerConfig):
            rows[words[0]] = words[1:]
    return rows


def test_the_span_corruption_spec_states_both_editions_bounds_and_lengths():
    """Kills a spec of one edition only: the docstring's bounds are the facts' two, each with its
    edition, either accepted; the solution's bound is one of them; x and y of either length."""
    spec = " ".join(CharCorruptionDataset.__doc__.split())
    stated = {int(BLOCK_SIZE * int(a) / int(b)) for a, b in re.findall(r"int\(block_size \* (\d)/(\d)\)", spec)}
    assert stated == set(TRUNCATION_BOUNDS)
    assert ("The bound is int(block_size * 7/8) in the Fall 2023 edition and int(block_size * 3/4) in the 2024 "
            "editions (Winter, Spring, Fall); either is accepted.") in spec
    (used,) = re.findall(r"int\(self\.block_size \* (\d) / (\d)\)", regions.regions(solution_sources()["dataset.py"])[0])
    assert int(BLOCK_SIZE * int(used[0]) / int(used[1])) in TRUNCATION_BOUNDS
    assert "LongTensors of block_size - 1 ids" in spec and "x and y of block_size ids" in spec
    assert "either length is accepted" in spec


@pytest.mark.parametrize("function, stages", [
    ("finetune", ("finetune_without_pretraining", "finetune_with_pretraining")), ("pretrain", ("pretrain",))])
def test_the_helpers_state_the_handouts_trainer_settings_and_both_editions_workers(function, stages):
    """Kills a setting of the docstrings' tables other than the handout's (facts.GRADED_TRAINING),
    a default learning rate other than the handout's, or num_workers stated for one edition only."""
    docstring = getattr(helper, function).__doc__
    rows = settings_rows(docstring)
    for field in ("max_epochs", "batch_size", "lr_decay"):
        assert rows[field] == [str(GRADED_TRAINING[stage][field]) for stage in stages], field
    assert [eval(value) for value in rows["warmup_tokens"]] == [GRADED_TRAINING[stage]["warmup_tokens"]
                                                                 for stage in stages]
    rate = {"finetune": "finetune_lr", "pretrain": "pretrain_lr"}[function]
    assert rows["learning_rate"] == [rate] * len(stages)
    assert inspect.signature(getattr(helper, function)).parameters[rate].default == \
        GRADED_TRAINING[stages[0]]["learning_rate"]
    assert rows["final_tokens"][0].rstrip(",") == "200*len(pretrain_dataset)*block_size"
    workers = " ".join(docstring.split()).split("num_workers ")[1]
    assert workers.startswith(str(GRADED_TRAINING[stages[0]]["num_workers"]))
    assert "(the Fall 2023 handout; the 2024 editions say 0; either is accepted)" in workers
