"""
A reader for the block-style subset of YAML that Gradescope's "export
submissions" writes in submission_metadata.yml (a Ruby hash dumped by
Psych): nested mappings (`key: value`, `key:` followed by a deeper block),
sequences (`- item`, also at the indentation of their key), plain, single-
and double-quoted scalars (folded onto deeper lines when long), block
scalars (`|`, `>` and their variants), `[]`, `{}`, comments and `---`.
Scalars stay strings (numbers and dates included), and a double-quoted one
with an escape JSON does not know is kept as written: the copy report needs
only the names of each submission's submitters.
"""

import json


class YamlError(Exception):
    """The text is not in the subset this reader knows; the message names the line."""


BLOCK_SCALARS = ('|', '|-', '|+', '>', '>-', '>+')


def content_lines(text):
    """[line number, indentation, text] of each line that holds something, in order."""
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith('#') and stripped != '---':
            lines.append([number, len(line) - len(line.lstrip(' ')), stripped])
    return lines


def split_key(text):
    """(key, rest) of a `key: rest` or `key:` line, or None when the line is not a mapping entry."""
    if text.endswith(':') and ': ' not in text:
        return text[:-1], ''
    at = text.find(': ')
    if at <= 0 or text[0] in '"\'[{':
        return None
    return text[:at], text[at + 2:].strip()


def scalar(text, number):
    """The value of a one-line scalar (quotes removed, escapes read)."""
    if text in ('', '~', 'null'):
        return None
    if text in ('[]', '{}'):
        return [] if text == '[]' else {}
    if text[0] == "'":
        if len(text) < 2 or text[-1] != "'":
            raise YamlError(f"line {number}: a single-quoted scalar that does not end")
        return text[1:-1].replace("''", "'")
    if text[0] == '"':
        if len(text) < 2 or text[-1] != '"':
            raise YamlError(f"line {number}: a double-quoted scalar that does not end")
        try:
            return json.loads(text)
        except ValueError:  # an escape JSON lacks (\e, \x41, a folded line): kept as written
            return text[1:-1]
    return text.split(' #')[0].rstrip()


class Reader:
    """Reads the lines from content_lines into nested dicts, lists and strings."""

    def __init__(self, text):
        self.lines = content_lines(text)
        self.at = 0

    def peek(self):
        return self.lines[self.at] if self.at < len(self.lines) else None

    def deeper(self, indent):
        """The texts of the lines after the current one that are indented more than `indent`."""
        texts = []
        while self.peek() and self.peek()[1] > indent:
            texts.append(self.peek()[2])
            self.at += 1
        return texts

    def block(self, indent):
        line = self.peek()
        if line[2] == '-' or line[2].startswith('- '):
            return self.sequence(indent)
        return self.mapping(indent)

    def mapping(self, indent):
        result = {}
        while self.peek() and self.peek()[1] == indent and not self.peek()[2].startswith('- '):
            number, _, text = self.peek()
            entry = split_key(text)
            if entry is None:
                raise YamlError(f"line {number}: expected 'key: value'")
            key, rest = entry
            self.at += 1
            result[scalar(key, number)] = self.value(rest, indent, number)
        return result

    def value(self, rest, indent, number):
        """The value of an entry or item whose text after the key (or dash) is `rest`."""
        if rest in BLOCK_SCALARS:
            return '\n'.join(self.deeper(indent))
        if rest:
            return scalar(' '.join([rest] + self.deeper(indent)), number)
        following = self.peek()
        if following and (following[1] > indent or (following[1] == indent and following[2].startswith('- '))):
            return self.block(following[1])
        return None

    def sequence(self, indent):
        items = []
        while self.peek() and self.peek()[1] == indent and (self.peek()[2] == '-' or self.peek()[2].startswith('- ')):
            number, _, text = self.peek()
            content = text[1:].lstrip(' ')
            if not content or split_key(content) is None:
                self.at += 1
                items.append(self.value(content, indent, number))
                continue
            self.lines[self.at] = [number, indent + len(text) - len(content), content]  # the item's own block
            items.append(self.mapping(self.lines[self.at][1]))
        return items


def parse(text):
    """The document `text` as nested dicts, lists and strings (None when empty); YamlError naming the line."""
    reader = Reader(text)
    if reader.peek() is None:
        return None
    document = reader.block(reader.peek()[1])
    if reader.peek() is not None:
        raise YamlError(f"line {reader.peek()[0]}: indented unlike the lines before it")
    return document
