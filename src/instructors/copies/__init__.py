"""
The class copy report (`./run.sh copies`, __main__.py): every two hand-ins
of a class, and every hand-in against known ones from elsewhere, compared
by their parameters (identical files, and distances relative to the
class's independent runs) and by their answers (regenerated from the
parameters with the hidden bundle where possible; how unlikely the answers
they share are if they answered independently), with a verdict and its
evidence for each pair. The report never changes a grade. One idea a
module: handins.py reads the hand-ins, parameters.py compares parameters,
grader_regeneration.py (the grader's trusted regeneration) and
class_regeneration.py (a whole class, in parallel) make answers, answers.py
tabulates them, statistic.py judges them, verdicts.py decides, report.py
and heatmap.py write. The instructors' guide is docs/copies.md.
"""
