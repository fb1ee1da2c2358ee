"""
The editions' blocks of the reference (src/instructors/release/edition_blocks.py):
a starter keeps its own edition's blocks without their markers and leaves the
others out, every student file compiles either way, and malformed blocks are
refused naming the file and line.
"""

import tempfile
from pathlib import Path

import pytest

from assignment.editions import SEED_EDITION
from instructors.release import checks, regions
from instructors.release.edition_blocks import SECOND_MODELS, for_edition, relabel

REFERENCE = Path(__file__).resolve().parents[1] / "src" / "submission"
EXAMPLE = """a = 1
### EDITION rope ###
b = 2
### END_EDITION ###
    ### EDITION perceiver ###
c = 3
    ### END_EDITION ###
d = 4
"""
ROPE_FUNCTIONS = ("def precompute_rotary_emb", "def apply_rotary_emb", "def initialize_rope_model",
                  "import apply_rotary_emb", "import initialize_rope_model")
PERCEIVER_NAMES = ("class DownProjectBlock", "class UpProjectBlock", "def initialize_perceiver_model",
                   "import initialize_perceiver_model", "perceiver = False", "self.down_block", "self.up_block",
                   "if self.perceiver")


def reference_files():
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(REFERENCE.glob("*.py"))}


def test_a_starter_keeps_its_editions_blocks_without_markers_and_drops_the_others():
    assert for_edition(EXAMPLE, "rope") == "a = 1\nb = 2\nd = 4\n"
    assert for_edition(EXAMPLE, "perceiver") == "a = 1\nc = 3\nd = 4\n"
    assert for_edition("x = 1\r\ny = 2", "rope") == "x = 1\r\ny = 2"  # no block: the text as it is


@pytest.mark.parametrize("second_model", SECOND_MODELS)
def test_every_student_file_of_either_edition_compiles_before_and_after_its_regions_are_cut(second_model):
    for name, text in reference_files().items():
        kept = for_edition(text, second_model, name)
        compile(kept, name, "exec")
        compile(regions.cut(kept, name), name, "exec")
        assert "EDITION" not in kept, name


def test_each_editions_starter_has_its_own_second_model_and_not_the_others():
    """Kills perceiver code left in a RoPE starter (its blocks, its initializer, its branches in GPT, its
    part-g label) or RoPE code in a perceiver one; each has the common regions and its own five."""
    files = reference_files()
    perceiver = "".join(for_edition(text, "perceiver", name) for name, text in files.items())
    rope = "".join(for_edition(text, "rope", name) for name, text in files.items())
    assert not [f for f in ROPE_FUNCTIONS if f in perceiver] and "[part h]" not in perceiver
    assert all(f in rope for f in ROPE_FUNCTIONS)
    assert not [name for name in PERCEIVER_NAMES if name in rope] and "[part g]" not in rope
    assert all(name in perceiver for name in PERCEIVER_NAMES)
    every = len(regions.locate("".join(files.values())))  # the reference runs both editions' blocks
    assert len(regions.locate(perceiver)) == len(regions.locate(rope)) == every - 5


@pytest.mark.parametrize("text, message", [
    ("### EDITION rope ###\n### EDITION rope ###\n### END_EDITION ###\n", "f.py:2: EDITION inside the block opened on line 1"),
    ("a = 1\n### END_EDITION ###\n", "f.py:2: END_EDITION without an EDITION"),
    ("a = 1\n### EDITION rope ###\nb = 2\n", "f.py:2: the EDITION block is never closed"),
    ("### EDITION synthesizer ###\n### END_EDITION ###\n", "f.py:1: no edition has the model 'synthesizer'"),
])
def test_malformed_blocks_are_refused_naming_the_file_and_line(text, message):
    with pytest.raises(regions.RegionError, match=message):
        for_edition(text, "rope", "f.py")


def test_labels_take_the_editions_part_letters():
    """Kills a RoPE starter labelled with the Perceiver edition's letters (its vanilla model is part d, its span
    corruption part c), letters swapped one after the other (c -> d, then e -> c -> d), or a Perceiver cohort's
    relabelled."""
    text = "[part c] [part f] x\n### [part e]: here\n[part h] [part g]\n"
    assert relabel(text, "spring2026") == "[part d] [part f] x\n### [part c]: here\n[part h] [part g]\n"
    assert relabel(text, "winter2024") == text == relabel(text, SEED_EDITION)


def test_the_rope_starters_files_carry_their_editions_labels_and_the_unrelabelled_do_not():
    """The release's check of the student files holds a RoPE starter to the RoPE edition's part letters."""
    files = {name: for_edition(text, "rope", name) for name, text in reference_files().items()}

    def problems(relabelled):
        with tempfile.TemporaryDirectory() as tree:
            folder = Path(tree) / "src" / "submission"
            folder.mkdir(parents=True)
            (Path(tree) / "LICENSE").write_text("MIT\n")
            for name, text in files.items():
                (folder / name).write_text(regions.cut(relabel(text, "spring2026") if relabelled else text, name))
            return checks.student_file_problems(tree, "spring2026")
    assert problems(relabelled=True) == []
    assert "src/submission/helper.py: initialize_vanilla_model lacks its label [part d]" in problems(relabelled=False)
