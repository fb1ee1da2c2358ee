"""
worldgen: a deterministic generator of biography worlds in the course's file
formats (wiki.txt, birth_places_train.tsv, birth_dev.tsv,
birth_test_inputs.tsv and the labelled birth_test.tsv).

    from instructors.worldgen import write_world
    write_world("data", seed=224)                      # the course's scale
    write_world("demo", seed=0, n_train=300, n_dev=60, n_test=60,
                paraphrases=4, style="short")          # a small demo world

From the command line: PYTHONPATH=src python3 -m instructors.worldgen --out DIR --seed N
"""

from .world import FILE_NAMES, make_world, write_world

__all__ = ["FILE_NAMES", "make_world", "write_world"]
