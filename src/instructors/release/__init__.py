"""
Cut the student starter and the grading server's bundle out of this repository.

    ./run.sh release --out OUT [--force] [--data DIR]
                   [--test-labels FILE] [--thresholds FILE]

writes OUT/student (see student.py), OUT/autograder and OUT/autograder.zip
(see autograder.py). The student-written regions are cut by regions.py, and
checks.py refuses a starter that leaks test labels, ships trained outputs,
does not import, or whose student files lose a part's label or region, or
speak of the grading or the stages' machinery. A checked release moves
into OUT all or none (instructors/staging.py).
"""
