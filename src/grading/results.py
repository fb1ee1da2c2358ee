"""
The Gradescope results file: results.json as the grading platform reads it.

    {"score": float, "execution_time": float,
     "tests": [{"name": str, "number": str, "score": float, "max_score": float,
                "output": str, "visibility": str}, ...]}

Basic tests are visible at once; hidden tests after the due date.
"""

import json
import os

VISIBILITY = {"basic": "visible", "hidden": "after_due_date"}
OUTPUT_TAIL_CHARS = 2000


def test_output(result):
    """What the student reads for one test: the status, the reason, and the tail of what they printed."""
    text = result.status + (f": {result.message}" if result.message else "")
    if result.status != "pass" and result.output.strip():
        tail = result.output[-OUTPUT_TAIL_CHARS:]
        text += "\n\nYour code printed (last part):\n" + tail
    return text


def gradescope_results(results, seconds):
    """The results.json document for `results` of a run that took `seconds`."""
    return {
        "score": float(sum(r.score for r in results)),
        "execution_time": round(float(seconds), 2),
        "tests": [{
            "name": r.test.description,
            "number": r.test.test_id,
            "score": float(r.score),
            "max_score": float(r.test.points),
            "output": test_output(r),
            "visibility": VISIBILITY[r.test.visibility],
        } for r in results],
    }


def folders_to_make(path):
    """The folders above the file at `path` that do not exist yet, deepest first."""
    missing, folder = [], os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    return missing


def write_results(path, results, seconds):
    """Write results.json at `path` atomically (a reader never sees half a file, and a failed write leaves
    none, nor the folders it made for it)."""
    document = gradescope_results(results, seconds)
    made = folders_to_make(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    partial = path + ".partial"
    try:
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(document, f, indent=2)
            f.write("\n")
        os.replace(partial, path)
    except BaseException:
        if os.path.exists(partial):
            os.remove(partial)
        for folder in made:  # deepest first; they hold nothing now
            os.rmdir(folder)
        raise
    return document
