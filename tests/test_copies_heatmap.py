"""
The copy report's heat map (src/instructors/copies/heatmap.py): the share of identical answers of every
two hand-ins, filled on both sides of the diagonal and blank where two answered nothing in common;
copies marked with a cross and suspect pairs with a circle; the hand-ins named along the axes up to
MOST_NAMES of them, and numbered beyond; a figure that grows with the class, up to a bound.
"""

import numpy as np
import pytest
from matplotlib.figure import Figure

from instructors.copies import heatmap
from instructors.copies.verdicts import Pair


def test_the_matrix_is_symmetric_and_blank_where_nothing_was_compared():
    pairs = [Pair(0, 1, identical=3, compared=4), Pair(0, 2, identical=0, compared=5), Pair(1, 2)]
    matrix = heatmap.agreement_matrix(pairs, 3)
    assert matrix[0, 1] == matrix[1, 0] == 0.75 and matrix[0, 2] == matrix[2, 0] == 0
    assert np.isnan(matrix[1, 2]) and np.isnan(matrix[2, 1]) and np.isnan(np.diag(matrix)).all()


@pytest.fixture
def drawn(monkeypatch):
    """draw(pairs, names): the Figure draw_agreement drew, laid out but not rendered into a file (the
    whole report's PNG: tests/test_copies.py)."""
    figures = []

    class Kept(Figure):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            figures.append(self)

        def savefig(self, path, **kwargs):
            self.saved = path
    monkeypatch.setattr(heatmap, "Figure", Kept)

    def draw(pairs, names):
        heatmap.draw_agreement("agreement.png", pairs, names)
        assert figures[-1].saved == "agreement.png"
        return figures[-1]
    return draw


@pytest.mark.parametrize("count", [heatmap.MOST_NAMES, heatmap.MOST_NAMES + 1])
def test_hand_ins_are_named_along_the_axes_up_to_most_names(drawn, count):
    """Kills the last hand-in that may be named left unnamed, or one more named."""
    names = [f"student {i}" for i in range(count)]
    axes = drawn([Pair(0, 1, identical=1, compared=2)], names).axes[0]
    labels = [label.get_text() for label in axes.get_yticklabels()]
    if count <= heatmap.MOST_NAMES:
        assert labels == names and axes.get_xlabel() == ""
    else:
        assert "student 0" not in labels and axes.get_xlabel() == "hand-in number (report.md lists them)"


@pytest.mark.parametrize("count, size", [(3, (4 + 0.54 + 1.5, 4 + 0.54)), (200, (25.5, 24))])
def test_the_figure_grows_with_the_class_up_to_a_bound(drawn, count, size):
    figure = drawn([Pair(0, 1, identical=1, compared=2)], [f"h{i}" for i in range(count)])
    assert tuple(figure.get_size_inches()) == pytest.approx(size)


def test_flagged_pairs_are_marked_on_both_sides_and_named_in_the_legend(drawn):
    copy = Pair(0, 2, [("copy", "same files")], identical=5, compared=5)
    suspect = Pair(1, 2, [("suspect", "close")], identical=2, compared=5)
    axes = drawn([copy, suspect, Pair(0, 1, identical=1, compared=5)], ["a", "b", "c"]).axes[0]
    marks = {collection.get_label(): sorted(map(tuple, collection.get_offsets().tolist()))
             for collection in axes.collections}
    assert marks == {"copy": [(0.0, 2.0), (2.0, 0.0)], "suspect": [(1.0, 2.0), (2.0, 1.0)]}
    assert axes.images[0].get_clim() == (0, 1)  # shares on one scale, whatever the class's range
    assert [text.get_text() for text in axes.get_legend().get_texts()] == ["copy", "suspect"]
    assert drawn([Pair(0, 1, identical=1, compared=5)], ["a", "b"]).axes[0].get_legend() is None
