"""
The demo's --quick table (tests/demo_rows.py): pretraining lets the vanilla
model answer for held-out people, more than finetuning alone and more than
always answering the most frequent training place.
"""

from instructors import demo

from demo_rows import quick_rows  # noqa: F401 (a fixture)


def test_pretraining_beats_finetuning_alone_on_held_out_people(quick_rows):  # noqa: F811
    pretrained, scratch, baseline = rows = quick_rows("pretrained", "scratch", "baseline")
    assert pretrained.dev[0] > scratch.dev[0], rows
    assert pretrained.dev[0] > baseline.dev[0], rows
    assert pretrained.dev[1] == scratch.dev[1] == demo.QUICK["dev_people"]
