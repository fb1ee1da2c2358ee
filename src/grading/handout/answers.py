"""
Reading a probe's answer in the grading process. The probes of this
assignment are wrapped in assignment.not_written_yet.reported, so a student
function that is not written yet comes back as data, and the test fails with
the one line that names the function and its part, before any traceback.
"""

from grading.context import check


def answered(result):
    """The value of a @reported probe, or a failure whose first line names the unwritten function and part."""
    check("failure" in result or "value" in result, "the probe's answer is malformed")
    if "failure" in result:
        check(False, result["failure"] + ("\n" + result["traceback"] if result["traceback"] else ""))
    return result["value"]
