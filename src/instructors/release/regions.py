"""
The student-written regions of a source file, and how to cut them out and put them back.

A region is the run of lines strictly between a line containing START_MARKER
and the next line containing END_MARKER; the marker lines themselves are not
part of it. Cutting keeps the marker lines (so students see where to write)
and puts one placeholder line in place of each region, indented like its
START line:

    pass                        when more code of the same block follows the
                                END line (e.g. `return attention_model`, which
                                then returns the skeleton's None);
    raise NotImplementedError   when the region ends its block, so calling the
                                unwritten code says so instead of returning a
                                None that fails later.

Everything outside the regions (signatures, docstrings, hints) is kept byte for
byte, so `restore(cut(text), regions(text)) == text` for every file.
"""

START_MARKER = "### START_CODE_HERE ###"
END_MARKER = "### END_CODE_HERE ###"

CONTINUES = "pass"
ENDS_BLOCK = "raise NotImplementedError"


class RegionError(ValueError):
    """Markers that do not pair up into START ... END regions."""


def indentation(line):
    """The leading whitespace of a line."""
    return line[:len(line) - len(line.lstrip(" \t"))]


def is_code(line):
    """True for a line holding a statement: neither blank nor only a comment."""
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def locate(text, name="<text>"):
    """
    The regions of `text` as (start, end) line indices of their marker lines,
    in order. Raises RegionError, naming the file and line, when an END comes
    without a START, a START comes inside another region, or a START is never
    closed.
    """
    spans, start = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        if START_MARKER in line:
            if start is not None:
                raise RegionError(f"{name}:{number}: START_CODE_HERE inside the region opened on line {start + 1}")
            start = number - 1
        elif END_MARKER in line:
            if start is None:
                raise RegionError(f"{name}:{number}: END_CODE_HERE without a START_CODE_HERE before it")
            spans.append((start, number - 1))
            start = None
    if start is not None:
        raise RegionError(f"{name}:{start + 1}: START_CODE_HERE is never closed by an END_CODE_HERE")
    return spans


def regions(text, name="<text>"):
    """The bodies of the regions of `text`, each a string of whole lines with their line endings."""
    lines = text.splitlines(keepends=True)
    return ["".join(lines[start + 1:end]) for start, end in locate(text, name)]


def placeholder(lines, start, end):
    """The placeholder line for the region whose markers are lines[start] and lines[end]."""
    indent = indentation(lines[start])
    following = next((line for line in lines[end + 1:] if is_code(line)), None)
    continues = following is not None and len(indentation(following)) >= len(indent)
    newline = lines[start][len(lines[start].rstrip("\r\n")):]
    return indent + (CONTINUES if continues else ENDS_BLOCK) + newline


def cut(text, name="<text>"):
    """`text` with the body of every region replaced by its placeholder line."""
    lines = text.splitlines(keepends=True)
    pieces, position = [], 0
    for start, end in locate(text, name):
        pieces += lines[position:start + 1]
        pieces.append(placeholder(lines, start, end))
        position = end
    pieces += lines[position:]
    return "".join(pieces)


def restore(starter, bodies, name="<text>"):
    """
    `starter` with the body of its i-th region replaced by bodies[i]: the
    inverse of cut() given the solution's regions(). Raises RegionError when
    the starter has a different number of regions than there are bodies.
    """
    spans = locate(starter, name)
    if len(spans) != len(bodies):
        raise RegionError(f"{name}: the starter has {len(spans)} regions but {len(bodies)} bodies were given")
    lines = starter.splitlines(keepends=True)
    pieces, position = [], 0
    for (start, end), body in zip(spans, bodies):
        pieces += lines[position:start + 1]
        pieces.append(body)
        position = end
    pieces += lines[position:]
    return "".join(pieces)
