"""
The instructors' tools, never shipped to students: the release that cuts
the student starter and the autograder bundle (release/), the generator of
biography worlds that made data/ (worldgen/), the class copy report
(copies/), the demo (demo.py) and the benchmark (bench.py). They may import every other package of src/; nothing
outside this package imports them.
"""
