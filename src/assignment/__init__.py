"""
The assignment itself, as every other part of the project reads it: its facts
(facts.py: the graded sizes and settings, the reserved characters, the data
files, the stage table, the deliverables, the functions students write), how
a part the student has not written yet is named (not_written_yet.py), and its
question files with the one reader of them and InputError, the error of a bad
input (question_files.py). Standard library only; it imports nothing else of
the project, and grader.py, the grading package, the stages, run.py and the
instructors' tools all import it.
"""
