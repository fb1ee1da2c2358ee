"""
The demo's --quick table (tests/demo_rows.py): the perceiver learns its
training questions but answers for fewer held-out people than the
pretrained vanilla model (docs/demo.md, "The perceiver's row").
"""

from demo_rows import quick_rows  # noqa: F401 (a fixture)


def test_the_perceiver_learns_its_training_questions_but_answers_fewer_held_out_ones(quick_rows):  # noqa: F811
    perceiver, pretrained = rows = quick_rows("perceiver", "pretrained")
    assert perceiver.train[0] >= 0.9 * perceiver.train[1], rows
    assert perceiver.dev[0] < pretrained.dev[0], rows
    assert "pretrain" in perceiver.minutes, rows
