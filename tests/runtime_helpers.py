"""
Helpers of the runtime's and the stages' tests (and of the others that read
or write the same files): torch on one thread, a tiny GPT over the tests'
vocabulary, a file written from text or bytes, a generated course's data
folder, line endings drawn for hypothesis properties, and the failures
injected into commands that write files, with what a folder holds afterwards.
"""

import contextlib
import errno
import os
from pathlib import Path

import torch
from hypothesis import settings
from hypothesis import strategies as st

from assignment.facts import BLOCK_SIZE, MASK_CHAR, PAD_CHAR
from submission import GPT, GPTConfig


@contextlib.contextmanager
def one_thread():
    """torch on one thread inside, and its former count after: tiny models run far faster so on a busy CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


VOCABULARY = PAD_CHAR + MASK_CHAR + ' ?ABLWabdehilnorsw'
STOI = {char: i for i, char in enumerate(VOCABULARY)}


def tiny_model(vocab_size=len(VOCABULARY), perceiver=False, n_layer=1):
    """A one-layer GPT of 8 dimensions."""
    extra = dict(perceiver=True, bottleneck_dim=4) if perceiver else {}
    config = GPTConfig(vocab_size, 16, n_layer=n_layer, n_head=2, n_embd=8, **extra)
    torch.manual_seed(0)
    return GPT(config)


def tiny_gpt(vocab_size, block_size=BLOCK_SIZE, **extra):
    """A one-layer GPT of 8 dimensions."""
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size, block_size, n_layer=1, n_head=2, n_embd=8, **extra))


def written(tmp_path, text, name="questions.tsv"):
    """`text` written to tmp_path/name as bytes (str is encoded as UTF-8); its path."""
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode('utf-8'))
    return str(path)


def write_data(folder, corpus, train, dev):
    """A course-shaped data folder from a generated corpus; returns its test labels path."""
    folder.mkdir()
    lines = corpus.questions.splitlines(keepends=True)
    (folder / "wiki.txt").write_text(corpus.wiki, encoding="utf-8")
    (folder / "birth_places_train.tsv").write_text("".join(lines[:train]), encoding="utf-8")
    (folder / "birth_dev.tsv").write_text("".join(lines[train:train + dev]), encoding="utf-8")
    test = lines[train + dev:]
    (folder / "birth_test_inputs.tsv").write_text("".join(line.split("\t")[0] + "\n" for line in test),
                                                  encoding="utf-8")
    (folder / "birth_test.tsv").write_text("".join(test), encoding="utf-8")
    return folder / "birth_test.tsv"


# ---- inputs at their edges: every line ending, as hypothesis properties ------------------------------------

EDGE = settings(max_examples=80, deadline=None, derandomize=True)  # CI sees the same examples on every run
ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])


def path_of(tmp_path, name, text):
    """`text` written to tmp_path/name as UTF-8 bytes, line ends untouched; its path."""
    return written(tmp_path, text, name)


def joined(lines, endings, last):
    """The lines, each with its own ending, the last one's kept only if `last`. An empty line's \\n after
    a lone \\r would make one \\r\\n of the two ends, so it is written \\r\\n."""
    ends = [("\r\n" if end == "\n" and line == "" and before == "\r" else end)
            for line, end, before in zip(lines, endings, [None] + endings)]
    text = "".join(line + end for line, end in zip(lines, ends))
    return text if last or not lines else text[:-len(ends[len(lines) - 1])]


@st.composite
def line_ends(draw, count):
    """`count` line endings and whether the last line has one."""
    return draw(st.lists(ENDINGS, min_size=count, max_size=count)), draw(st.booleans())


# ---- failures injected into what writes files ----------------------------------------------------------------

DISK_FULL = OSError(errno.ENOSPC, "No space left on device")


def tree(folder):
    """Everything under `folder`, hidden names too: {relative path: its bytes, '/' for a folder,
    '-> target' for a symbolic link}."""
    found = {}
    for parent, folders, files in os.walk(folder):
        for name in folders + files:
            path = os.path.join(parent, name)
            found[os.path.relpath(path, folder)] = ("-> " + os.readlink(path) if os.path.islink(path) else
                                                    "/" if os.path.isdir(path) else Path(path).read_bytes())
    return found


def files_under(folder):
    """The relative paths of the files (and links to files) under `folder`, sorted."""
    return sorted(os.path.relpath(os.path.join(parent, name), folder)
                  for parent, _, names in os.walk(folder) for name in names)


def leftovers(folder):
    """The hidden or temporary files and folders under `folder`: staging folders, temporaries."""
    return [str(p) for p in Path(folder).rglob("*") if p.name.startswith(".") or p.suffix in (".tmp", ".partial")]


def raising(error):
    """A stand-in that raises `error` whatever it is called with."""
    def fail(*args, **kwargs):
        raise error
    return fail


def then_raising(function, error):
    """`function`, which does its work (half a file, say), then raises `error`."""
    def fail(*args, **kwargs):
        function(*args, **kwargs)
        raise error
    return fail

