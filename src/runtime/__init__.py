"""
The library the stages run on, shipped to students beside their package but
never handed in: reading and checking the inputs (inputs.py, params.py),
whole-or-nothing writes (atomic_files.py), run.py's command line
(command_line.py), the run's seed (seeds.py), the faster training plugged
into the student's trainer (training/) and greedy decoding with key/value
caches (decoding/). It imports the assignment's facts and the student
package, never the grader's (grading), the stages or the instructors'.
"""
