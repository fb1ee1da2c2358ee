"""
The readable report: one line a test, then the details of every test that
did not pass, then the totals for basic and hidden tests.

    1e-0-basic   span corruption: truncation length         5/5  pass
    1f-1-hidden  vanilla pretrained: dev predictions          -/5  hidden
"""

import textwrap

from .context import GRADED_ON_SUBMISSION

DESCRIPTION_WIDTH = 52


def points(value):
    """2.0 -> '2', 2.5 -> '2.5'."""
    return f"{value:g}"


def test_line(result):
    """The report line of one test."""
    test = result.test
    description = test.description
    if len(description) > DESCRIPTION_WIDTH:
        description = description[:DESCRIPTION_WIDTH - 3] + "..."
    earned = "-" if result.status == "hidden" else points(result.score)
    score = f"{earned}/{points(test.points)}"
    timing = f" ({result.seconds:.1f} s)" if result.status != "hidden" else ""
    return f"{test.test_id:<12} {description:<{DESCRIPTION_WIDTH}} {score:>6}  {result.status}{timing}"


def detail(result, verbose):
    """The indented reason (and, when verbose, the submission's output) of a test that did not pass."""
    lines = [f"{result.test.test_id} ({result.status}):", textwrap.indent(result.message, "    ")]
    if verbose and result.output.strip():
        lines += ["    the submission printed:", textwrap.indent(result.output.rstrip(), "      | ")]
    return "\n".join(lines)


def totals(results):
    """The lines for basic, hidden and overall points."""
    lines = []
    for visibility in ("basic", "hidden"):
        group = [r for r in results if r.test.visibility == visibility]
        if not group:
            continue
        possible = sum(r.test.points for r in group)
        ungraded = sum(r.test.points for r in group if r.status == "hidden")
        earned = sum(r.score for r in group)
        if ungraded == possible:
            line = f"{visibility}: {points(ungraded)} points graded on submission"
        else:
            line = f"{visibility}: {points(earned)}/{points(possible - ungraded)} points"
            if ungraded:
                line += f" ({points(ungraded)} more graded on submission)"
        lines.append(line)
    lines.append(f"total: {points(sum(r.score for r in results))}/{points(sum(r.test.points for r in results))} points")
    return lines


def render(results, seconds, verbose=False):
    """The whole report as text."""
    lines = [test_line(r) for r in results]
    troubled = [r for r in results if r.status != "pass" and r.message not in ("", GRADED_ON_SUBMISSION)]
    if troubled:
        lines += ["", "Details:"] + [detail(r, verbose) for r in troubled]
    lines += [""] + totals(results) + [f"({seconds:.1f} s)"]
    return "\n".join(lines)
