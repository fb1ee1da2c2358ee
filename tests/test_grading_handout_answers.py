"""
Reading a probe's answer (src/grading/handout/answers.py): the value, or a
test failure with the probe's one line and its traceback.
"""

from grading.handout import answers

from handout_helpers import failure


def test_answered_gives_the_value_or_fails_with_the_line_and_traceback():
    assert answers.answered({"value": 0}) == 0
    assert failure(answers.answered, {"oops": 1}) == "the probe's answer is malformed"
    assert failure(answers.answered, {"failure": "part (c): x", "traceback": ""}) == "part (c): x"
    assert failure(answers.answered, {"failure": "part (c): x", "traceback": "Trace"}) == "part (c): x\nTrace"
