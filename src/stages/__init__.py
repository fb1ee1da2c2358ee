"""
run.sh's stages other than the graded ones (which src/run.py runs), one
module a stage, named after it: london_baseline.py, collect_submission.py
(the hand-in zip), plot.py (a run's curves) and help.py. They
run on the runtime library and read the assignment's facts; they never
import the grader's or the instructors' packages.
"""
