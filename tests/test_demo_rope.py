"""
The demo's --quick table (tests/demo_rows.py): the RoPE model, pretrained
the same way, answers for more held-out people than finetuning alone and
than always answering the most frequent training place.
"""

from demo_rows import quick_rows  # noqa: F401 (a fixture)


def test_the_rope_model_pretrained_beats_finetuning_alone_on_held_out_people(quick_rows):  # noqa: F811
    rope, scratch, baseline = rows = quick_rows("rope", "scratch", "baseline")
    assert rope.dev[0] > scratch.dev[0] and rope.dev[0] > baseline.dev[0], rows
    assert "pretrain" in rope.minutes, rows
