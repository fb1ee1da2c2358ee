"""
The runtime behind ./run.sh's stages, shipped to students beside their
package but never handed in: input checks (inputs.py, params.py),
whole-or-nothing writes (files.py), the fast training steps plugged into the
student's trainer (training.py), records and plots (records.py, plot.py),
greedy decoding with key/value caches (decoding.py, greedy.py, kv_cache.py,
cached_gpt.py, cached_perceiver.py), the London baseline (baseline.py), the
hand-in zip (collect.py) and run.sh's help (usage.py). The assignment's
facts and stage table are assignment.facts. It imports the student package
(submission) and the assignment package, never the grader's (grading) or the
instructors'.
"""
