"""
The code of the reference that belongs to one edition of the assignment, and
how a starter keeps only its own edition's.

An edition block is the run of lines strictly between a line holding

    ### EDITION <model> ###          (model: 'perceiver' or 'rope', the second model of the editions it is for)

and the next line holding `### END_EDITION ###`. The reference runs every
block (the marker lines are comments); the starter of an edition keeps the
blocks of its own second model, without their marker lines, and leaves the
other blocks out, marker lines and all. Blocks are whole statements or
definitions, so either cut compiles.

The reference labels each function students write with its part in the seed
edition ('[part c]'); relabel() gives the labels of another edition, whose
parts are lettered otherwise (the RoPE editions' vanilla model is part d).
"""

import re

from assignment.editions import EDITIONS, SEED_EDITION

from .regions import RegionError

BLOCK_START = re.compile(r"^\s*### EDITION (\S+) ###\s*$")
BLOCK_END = "### END_EDITION ###"
SECOND_MODELS = ("perceiver", "rope")


LABEL = re.compile(r"\[part ([a-z])\]")


def part_letters(edition):
    """{seed edition's letter: `edition`'s} over the functions both editions' students write."""
    seed, this = EDITIONS[SEED_EDITION].parts, EDITIONS[edition].parts
    letters = {}
    for function in seed.keys() & this.keys():
        letters.update(zip(seed[function].split(" and "), this[function].split(" and ")))
    return letters


def relabel(text, edition):
    """`text` with each '[part x]' of the seed edition's lettering in `edition`'s."""
    letters = part_letters(edition)
    return LABEL.sub(lambda label: f"[part {letters.get(label.group(1), label.group(1))}]", text)


def for_edition(text, second_model, name="<text>"):
    """
    `text` as the starter of the editions of `second_model` has it. Raises
    RegionError, naming the file and line, for a block of an unknown model,
    a block inside another, an END without a block, or a block never closed.
    """
    assert second_model in SECOND_MODELS, second_model
    kept, block = [], None  # block: (its model, the line it opened on)
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        start = BLOCK_START.match(line)
        if start:
            if block is not None:
                raise RegionError(f"{name}:{number}: EDITION inside the block opened on line {block[1]}")
            if start.group(1) not in SECOND_MODELS:
                raise RegionError(f"{name}:{number}: no edition has the model {start.group(1)!r}; "
                                  f"the models are {', '.join(SECOND_MODELS)}")
            block = (start.group(1), number)
        elif line.strip() == BLOCK_END:
            if block is None:
                raise RegionError(f"{name}:{number}: END_EDITION without an EDITION before it")
            block = None
        elif block is None or block[0] == second_model:
            kept.append(line)
    if block is not None:
        raise RegionError(f"{name}:{block[1]}: the EDITION block is never closed by an END_EDITION")
    return "".join(kept)
