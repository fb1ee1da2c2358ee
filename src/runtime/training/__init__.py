"""
Training the student's model faster, with the same numbers: the fast steps
and the run's configuration (fast_training.py), the seeded batches of every
process (batches.py), checkpoints to resume from (checkpoint.py), several
processes (distributed.py), the run's records (records.py) and the estimate
of a CPU run's duration (duration.py).
"""
