"""
This assignment's grading, beside the tests of grader.py: the texts the
grader writes for its probes (corpora.py), and for each subject the probes
that observe a submission in the sandbox and the judges that hold what they
saw against the handout: span corruption (spans.py), trainer configurations
(configs.py), models and the perceiver (models.py), prediction files
(predictions.py); answers.py reads a probe's answer. The machinery that runs
them is the rest of the grading package; the facts they check against are
assignment.facts. A hidden test in a bundle (bundle.py) imports these as
grader.py does.
"""
