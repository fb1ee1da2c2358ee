"""
agreement.png: the share of identical answers of every two hand-ins (over
the prediction files both answer, each hand-in's first rows), the class
first and the known hand-ins last, known against known left blank; pairs
flagged copy are marked with a cross, suspect ones with a circle.
"""

import numpy as np
from matplotlib.figure import Figure

MARKS = {'copy': dict(marker='x', color='red'), 'suspect': dict(marker='o', facecolors='none', edgecolors='orange')}
MOST_NAMES = 60  # hand-ins named along the axes; more are only numbered


def agreement_matrix(pairs, count):
    """The share of identical answers of every two hand-ins (NaN where they answer nothing in common)."""
    matrix = np.full((count, count), np.nan)
    for pair in pairs:
        if pair.compared:
            matrix[pair.first, pair.second] = matrix[pair.second, pair.first] = pair.identical / pair.compared
    return matrix


def draw_agreement(path, pairs, names):
    """Write the heat map of `pairs` (verdicts.Pair) between the hand-ins called `names` to `path`."""
    count = len(names)
    side = min(4 + 0.18 * count, 24)
    figure = Figure(figsize=(side + 1.5, side))
    axes = figure.subplots()
    image = axes.imshow(agreement_matrix(pairs, count), vmin=0, vmax=1, cmap='viridis', interpolation='nearest')
    figure.colorbar(image, ax=axes, label='share of identical answers')
    for verdict, style in MARKS.items():
        flagged = [(pair.first, pair.second) for pair in pairs if pair.verdict == verdict]
        if flagged:
            rows, columns = np.array(flagged).T
            axes.scatter(np.r_[columns, rows], np.r_[rows, columns], s=40, label=verdict, **style)
    if count <= MOST_NAMES:
        axes.set_xticks(range(count), names, rotation=90, fontsize=7)
        axes.set_yticks(range(count), names, fontsize=7)
    else:
        axes.set_xlabel('hand-in number (report.md lists them)')
    if any(pair.verdict in MARKS for pair in pairs):
        axes.legend(loc='upper left', bbox_to_anchor=(1.25, 1.0), fontsize=8)
    axes.set_title('identical answers (regenerated where they were)')
    figure.tight_layout()
    figure.savefig(path, dpi=100)
