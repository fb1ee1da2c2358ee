"""
Sharing the questions among processes (src/runtime/training/distributed.py):
for any number of questions and of processes, each question is answered
once and the answers are gathered in the questions' order. A hypothesis
property, derandomized so that CI sees the same examples on every run.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.training import distributed
from runtime.training.distributed import Processes

from runtime_helpers import EDGE


@EDGE
@given(count=st.integers(0, 40), world=st.integers(1, 12))
def test_every_question_is_answered_once_in_order_for_any_count_and_processes(count, world):
    """Kills a share that drops or repeats the questions past an even split (fewer questions than processes,
    a count the processes do not divide) or gathers them out of rank order."""
    questions = [f"Q{i}" for i in range(count)]
    shares = [distributed.share(questions, Processes(rank, world)) for rank in range(world)]
    assert [q for share in shares for q in share] == questions
    answers = [[f"A{q}" for q in share] for share in shares]

    def all_gather_object(every, mine):
        every[:] = answers
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(distributed.dist, "all_gather_object", all_gather_object)
        for rank in range(world):
            assert distributed.gathered(answers[rank], Processes(rank, world)) == [f"A{q}" for q in questions]
