"""
run.sh's stages other than the graded ones (which src/run.py runs), one
module a stage: the London baseline (baseline.py), the hand-in zip
(collect.py), a run's curves (plot.py) and run.sh's help (help.py). They
run on the runtime library and read the assignment's facts; they never
import the grader's or the instructors' packages.
"""
