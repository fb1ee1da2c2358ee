"""
The runtime's input files (src/runtime/inputs.py): the pretraining corpus
and the question files, read or refused in one line, at the edges of the
input too (issue 37): zero, one, the limit and one past it, empty and very
long inputs, every line ending (\\n, \\r\\n, a lone \\r, mixed, with or
without a last one), unreadable files and links. Where the input space is
large the promise is a hypothesis property, derandomized so that CI sees
the same examples on every run. Each test's docstring says what it kills;
all run in-process on tiny inputs and tiny random models.
"""

import os

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from assignment.facts import BLOCK_SIZE, MASK_CHAR, PAD_CHAR
from assignment.question_files import read_question_file
from runtime import inputs
from runtime.inputs import (InputError, chosen_device, need_file, need_output_folder, pretraining_dataset,
                           read_questions, read_text)
from submission import helper
from submission.utils import evaluate_places

from question_file_cases import ACCEPTED, REFUSED, reader_refusal, refusal
from runtime_helpers import EDGE, STOI, joined, line_ends, path_of, raising, tiny_gpt, written

pytestmark = pytest.mark.usefixtures("single_thread")  # tiny models: far faster on one thread of a busy CPU

LETTERS = " ?ABLWabdehilnorswé"  # é: outside ASCII, inside the vocabulary
CORPUS = "Ada Lovelace. Where was Ada born? In London.\nBo. Where was Bo born? In Lisbon, as Wes sé.\n"


# ---- inputs: files and question files ---------------------------------------------------------

def test_an_unknown_character_only_in_the_answer_column_is_one_error_when_finetuning(tmp_path):
    """Kills checking only the question column of finetuning data (NameDataset would fail later)."""
    path = written(tmp_path, "Where was Ada born?\tLisbon\nWhere was Bo born?\tBerlin#\n")
    with pytest.raises(InputError, match=r"line 2: characters not in the pretraining corpus's vocabulary: '#'$"):
        read_questions(path, '--finetune_corpus_path', STOI, finetuning=True)


def test_the_answer_column_is_not_read_when_evaluating(tmp_path):
    """Kills refusing answers the model never reads, or losing the places."""
    path = written(tmp_path, "\nWhere was Ada born?\tLisbon#ë\n\n")
    assert read_questions(path, '--eval_corpus_path', STOI, finetuning=False) == (
        ["Where was Ada born?"], ["Lisbon#ë"])


def test_non_ascii_is_skipped_when_finetuning(tmp_path):
    """Kills checking characters that NameDataset drops."""
    path = written(tmp_path, "Where was Adaë born?\tLisbon\n")
    assert read_questions(path, '-f', STOI, finetuning=True) == (["Where was Adaë born?"], ["Lisbon"])


def test_a_question_file_without_places_gives_no_places(tmp_path):
    """Kills a questions-only file read as labelled, and Windows line ends kept."""
    path = written(tmp_path, b"Where was Ada born?\r\nWhere was Bo born?\r\n")
    assert read_questions(path, '-f', STOI, finetuning=False) == (
        ["Where was Ada born?", "Where was Bo born?"], None)


@pytest.mark.parametrize("text, finetuning, message", [
    ("Where was Ada born?\tLisbon\nWhere was Bo born?\n", False,
     r"line 2: expected 'question<TAB>place', found no tab: 'Where was Bo born\?'$"),
    ("Where was Ada born?\tLisbon\na\tb\tc\n", True, r"line 2: expected 'question<TAB>place', found 2 tabs"),
    ("Where was Ada born?\tLisbon\n", False, None),
    ("Where was Ada born?\n\nWhere was Bo born?\tBerlin\n", False,
     r"line 3 has a tab, but line 1 has none: either every line"),
    ("Where was Ada born?\n", True, r"line 1: expected 'question<TAB>place', found no tab"),
    ("Where was Zoe born?\n", False, r"line 1: characters not in the pretraining corpus's vocabulary: 'Z'$"),
    ("Where was Zoë born?\n", False, r"line 1: characters not in the pretraining corpus's vocabulary: 'Z', 'ë'$"),
    (" \n\n", False, r"has no questions$"),
])
def test_malformed_question_files_give_one_line(tmp_path, text, finetuning, message):
    """Kills a malformed line passed on, or a message naming the wrong line or fault."""
    path = written(tmp_path, text)
    if message is None:
        assert read_questions(path, '-f', STOI, finetuning) == (["Where was Ada born?"], ["Lisbon"])
        return
    with pytest.raises(InputError, match=message):
        read_questions(path, '-f', STOI, finetuning)


@pytest.mark.parametrize("case", REFUSED)
def test_question_files_are_read_by_the_one_reader(tmp_path, case):
    """Kills question files read by rules of their own (a BOM kept in the first question, a place's spaces
    kept, an empty question taken at evaluation): the file read_question_file accepts is read as it reads
    it, for evaluation and for finetuning, and each file it refuses is refused with its message."""
    accepted = written(tmp_path, ACCEPTED, "accepted.tsv")
    lines = read_question_file(accepted, labelled=True)
    for finetuning in (False, True):
        assert read_questions(accepted, "-f", STOI, finetuning) == ([line.question for line in lines],
                                                                     [line.place for line in lines])
        path = written(tmp_path, REFUSED[case])
        assert refusal(read_questions, path, "-f", STOI, finetuning) == reader_refusal(path, True if finetuning
                                                                                       else None)


def test_need_file_says_what_is_missing(tmp_path):
    """Kills a missing or empty path accepted."""
    with pytest.raises(InputError, match=r"^--data is needed: the corpus$"):
        need_file('', '--data', "the corpus")
    with pytest.raises(InputError, match=r"^the corpus not found: .*none \(--data\)$"):
        need_file(str(tmp_path / "none"), '--data', "the corpus")
    with pytest.raises(InputError, match="not found"):
        need_file(str(tmp_path), '--data', "the corpus")
    assert need_file(written(tmp_path, "x"), '--data', "the corpus").endswith("questions.tsv")


def test_need_output_folder_refuses_what_cannot_be_written(tmp_path):
    """Kills an output path that is a folder, in a file, or in no folder, accepted."""
    with pytest.raises(InputError, match=r"^--out is needed$"):
        need_output_folder(None, '--out')
    with pytest.raises(InputError, match=r"^--out is a folder, not a file: "):
        need_output_folder(str(tmp_path), '--out')
    a_file = written(tmp_path, "x", "file")
    with pytest.raises(InputError, match=r"^the folder of --out is a file, not a folder: .*file$"):
        need_output_folder(os.path.join(a_file, "out"), '--out')
    with pytest.raises(InputError, match=r"^the folder of --out does not exist: .*none$"):
        need_output_folder(str(tmp_path / "none" / "out"), '--out')
    assert need_output_folder(str(tmp_path / "out"), '--out') == str(tmp_path / "out")


def test_read_text_reads_utf8_and_refuses_other_bytes(tmp_path, ascii_locale):
    """Kills the locale's encoding, and a UnicodeDecodeError traceback."""
    with pytest.raises(InputError, match=r"is not UTF-8 text \(byte 3\)$"):
        read_text(written(tmp_path, b"abc\xeb"), '-f', "text")
    assert read_text(written(tmp_path, "abé"), '-f', "text") == "abé"


@pytest.mark.parametrize("text, message", [
    (" \n", "the pretraining corpus is empty"),
    (f"Ada{MASK_CHAR}.\n", "reserved for MASK"),
    (f"Ada{PAD_CHAR}.\n", "reserved for PAD"),
])
def test_a_pretraining_corpus_that_cannot_define_the_vocabulary_is_refused(tmp_path, text, message):
    """Kills an empty corpus or one holding a reserved character accepted."""
    with pytest.raises(InputError, match=message):
        pretraining_dataset(written(tmp_path, text, "wiki.txt"))


def test_missing_inputs_name_their_option_and_what_they_are(tmp_path):
    """Kills a wrong option or description in the message of a missing corpus or question file."""
    missing = str(tmp_path / "none")
    with pytest.raises(InputError, match=r"^pretraining corpus \(it also defines the vocabulary\) not found: "
                                         r".*none \(--pretrain_corpus_path\)$"):
        pretraining_dataset(missing)
    with pytest.raises(InputError, match=r"^question file not found: .*none \(--eval_corpus_path\)$"):
        read_questions(missing, '--eval_corpus_path', STOI, finetuning=False)


def test_a_line_without_a_tab_is_shown_up_to_70_characters(tmp_path):
    """Kills a line shown cut elsewhere."""
    long_line = "Where was " + "A" * 80
    path = written(tmp_path, f"Where was Ada born?\tLisbon\n{long_line}\n")
    with pytest.raises(InputError, match=f"found no tab: {long_line[:70]!r}$"):
        read_questions(path, '-f', STOI, finetuning=True)


def test_the_pretraining_dataset_is_of_the_corpus_and_the_block_size(tmp_path):
    """Kills a dataset made of something else."""
    dataset = pretraining_dataset(written(tmp_path, "Ada was born in Lisbon.\n", "wiki.txt"))
    assert dataset.block_size == 128
    assert set(dataset.stoi) == set("Ada was born in Lisbon.\n") | {PAD_CHAR, MASK_CHAR}


def test_devices_are_chosen_or_refused_in_one_line(monkeypatch):
    """Kills auto not asking pick_device, a bad name passed on, or a missing GPU accepted."""
    monkeypatch.setattr(inputs, 'pick_device', lambda: torch.device('meta'))
    assert chosen_device('auto') == torch.device('meta')
    assert chosen_device('cpu') == torch.device('cpu')
    with pytest.raises(InputError, match=r"^unknown device 'gpu': use auto, cpu, cuda, cuda:N or mps$"):
        chosen_device('gpu')
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    monkeypatch.setattr(torch.backends.mps, 'is_available', lambda: False)
    with pytest.raises(InputError, match=r"^--device cuda, but PyTorch sees no CUDA GPU on this machine$"):
        chosen_device('cuda:1')
    with pytest.raises(InputError, match=r"^--device mps, but PyTorch sees no MPS device on this machine$"):
        chosen_device('mps')
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.backends.mps, 'is_available', lambda: True)
    assert chosen_device('cuda:1') == torch.device('cuda:1')
    assert chosen_device('mps') == torch.device('mps')


# ---- question files at their edges: what the stages read (NameDataset, evaluate_places) ---------------

texts = st.text(LETTERS, min_size=1, max_size=10).filter(lambda t: t.encode("ascii", "ignore").decode().strip())
places = st.builds(lambda start, breaks, end: start + breaks + end, texts, st.text("\x85\u2028", max_size=2),
                   st.text(LETTERS, max_size=3))  # line breaks to str, not to files
blank_lines = st.sampled_from(["", " ", " \t ", "\t"])


@st.composite
def question_files(draw, labelled):
    """(lines of a question file with blank lines among them, the questions, the places as the lines give
    them or None)."""
    pairs = draw(st.lists(st.tuples(texts, places), min_size=1, max_size=6))
    lines = []
    for question, place in pairs:
        lines += draw(st.lists(blank_lines, max_size=2)) + [f"{question}\t{place}" if labelled else question]
    lines += draw(st.lists(blank_lines, max_size=2))
    return lines, [q for q, _ in pairs], [p for _, p in pairs] if labelled else None


@pytest.fixture(scope="module")
def corpus_dataset(tmp_path_factory):
    """The pretraining dataset of CORPUS, whose vocabulary holds LETTERS."""
    return pretraining_dataset(path_of(tmp_path_factory.mktemp("corpus"), "wiki.txt", CORPUS))


@EDGE
@given(data=st.data(), labelled=st.booleans())
def test_a_question_file_reads_the_same_whatever_its_line_ends(tmp_path_factory, corpus_dataset, data, labelled):
    """Kills a \\r left in a question or place, a lone \\r read as part of a line, \\x85 or \\u2028 read as
    line ends, a blank (or tab-only) line taken for a question, and a missing last line end losing or adding
    a question."""
    lines, questions, places = data.draw(question_files(labelled))
    folder = tmp_path_factory.mktemp("questions")
    path = path_of(folder, "q.tsv", joined(lines, *data.draw(line_ends(len(lines)))))
    read = (questions, [p.strip() for p in places] if labelled else None)
    assert read_questions(path, "-f", corpus_dataset.stoi, finetuning=False) == read
    if labelled:
        ascii_only = [f"{q}\t{p}".encode("ascii", "ignore").decode() for q, p in zip(questions, places)]
        assert read_questions(path, "-f", corpus_dataset.stoi, finetuning=True) == read
        assert evaluate_places(path, [p.rstrip() for p in places]) == (len(places), len(places))  # line stripped
        _, trainer = helper.finetune(None, path, corpus_dataset, BLOCK_SIZE, tiny_gpt(len(corpus_dataset.stoi)))
        assert trainer.train_dataset.data == ascii_only


@st.composite
def files_with_a_bad_line(draw):
    """(lines, 1-based number of the one bad line, finetuning, what the message says) of a question file."""
    finetuning = draw(st.booleans())
    labelled = finetuning or draw(st.booleans())
    lines, _, _ = draw(question_files(labelled))
    bad, told = draw(st.sampled_from(
        [("a\tb\tc", "expected 'question<TAB>place', found 2 tabs"), ("Wes", "expected 'question<TAB>place'"),
         ("Zoe\tBo", "not in the pretraining corpus's vocabulary: 'Z'"), ("\tLisbon", "the question is empty"),
         ("Bo\t ", "the place is empty")] if labelled else
        [("Bo\tLisbon", "has a tab, but line"), ("Zoe", "not in the pretraining corpus's vocabulary: 'Z'")]))
    first = next(i for i, line in enumerate(lines) if line.strip())
    at = draw(st.integers(first + 1, len(lines)))  # after the first question, which says whether there are places
    return lines[:at] + [bad] + lines[at:], at + 1, finetuning, told


@EDGE
@given(data=st.data())
def test_a_bad_line_is_refused_in_one_line_naming_it_whatever_the_line_ends(tmp_path_factory, corpus_dataset, data):
    """Kills a bad line counted by another line number (a \\r\\n counted twice, blank lines not counted),
    passed on, or told on more than one line."""
    lines, number, finetuning, told = data.draw(files_with_a_bad_line())
    path = path_of(tmp_path_factory.mktemp("bad"), "q.tsv", joined(lines, *data.draw(line_ends(len(lines)))))
    with pytest.raises(InputError) as refused:
        read_questions(path, "-f", corpus_dataset.stoi, finetuning)
    assert str(refused.value).startswith(f"{path} line {number}") and told in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("finetuning", [False, True])
@pytest.mark.parametrize("line, name", [("\tLisbon", "question"), (" \tLisbon", "question"),
                                        ("Where was Bo born?\t", "place"), ("Where was Bo born?\t  ", "place")])
def test_a_labelled_line_without_its_question_or_place_is_refused(tmp_path, corpus_dataset, line, name, finetuning):
    """Kills a dev file with an empty place or question let through to evaluate_places, which reads such a
    line as unlabelled and divides by zero or indexes past it, or to NameDataset, which shifts y by -1."""
    path = path_of(tmp_path, "q.tsv", f"Where was Ada born?\tLondon\r\n{line}\r\n")
    with pytest.raises(InputError, match=f"^{path} line 2: the {name} is empty$"):
        read_questions(path, "-f", corpus_dataset.stoi, finetuning)


def test_a_question_or_place_whose_ascii_part_is_empty_is_refused_for_finetuning(tmp_path, corpus_dataset):
    """Kills NameDataset handed a question or a place that its ASCII filter empties."""
    path = path_of(tmp_path, "q.tsv", "Where was Ada born?\tLondon\né\tLisbon\n")
    assert read_questions(path, "-f", corpus_dataset.stoi, finetuning=False)[0] == ["Where was Ada born?", "é"]
    with pytest.raises(InputError, match=r"line 2: the question is empty once its non-ASCII characters are dropped$"):
        read_questions(path, "-f", corpus_dataset.stoi, finetuning=True)
    path = path_of(tmp_path, "q.tsv", "Where was Ada born?\tLondon\nWhere was Bo born?\t é\n")
    with pytest.raises(InputError, match=r"line 2: the place is empty once its non-ASCII characters are dropped$"):
        read_questions(path, "-f", corpus_dataset.stoi, finetuning=True)


def test_a_finetuning_line_that_fills_the_block_is_read_and_one_past_it_is_refused(tmp_path, corpus_dataset):
    """Kills training that asserts on a line too long for a block (the model's 'block size is exhausted'),
    and a limit one character short."""
    place = "London"
    filling = "W" * (BLOCK_SIZE - 2 - len(place) - 1) + "?"  # question + MASK + place + MASK = a whole block
    path = path_of(tmp_path, "q.tsv", f"{filling}\t{place}\n")
    read_questions(path, "-f", corpus_dataset.stoi, finetuning=True)
    _, trainer = helper.finetune(None, path, corpus_dataset, BLOCK_SIZE, tiny_gpt(len(corpus_dataset.stoi)))
    x, y = trainer.train_dataset[0]
    assert x.shape == y.shape == (BLOCK_SIZE - 1,) and int(y[-1]) == corpus_dataset.stoi[MASK_CHAR]
    path = path_of(tmp_path, "q.tsv", f"W{filling}\t{place}\n")
    with pytest.raises(InputError, match=f"line 1: question and place are {BLOCK_SIZE - 1} characters, but with "
                                         f"their two MASKs at most {BLOCK_SIZE - 2} fit a block of {BLOCK_SIZE}$"):
        read_questions(path, "-f", corpus_dataset.stoi, finetuning=True)
    assert read_questions(path, "-f", corpus_dataset.stoi, finetuning=False)[0] == [f"W{filling}"]  # evaluation crops


def test_a_finetuning_line_is_measured_without_the_characters_namedataset_drops(tmp_path, corpus_dataset):
    """Kills a line that fits a block once its non-ASCII characters are dropped refused for its length in
    characters (or in bytes)."""
    place = "London"
    filling = "W" * (BLOCK_SIZE - 2 - len(place) - 1) + "?"
    path = path_of(tmp_path, "q.tsv", f"{filling}\t{place}é\nWhere was é born?\t{place}\n")
    assert read_questions(path, "-f", corpus_dataset.stoi, finetuning=True) == (
        [filling, "Where was é born?"], [f"{place}é", place])


@pytest.mark.parametrize("text", ["", "\n", "\r\n \r\n", "\r\r\r", "\t\r\n"])
def test_a_question_file_of_blank_lines_has_no_questions(tmp_path, corpus_dataset, text):
    """Kills a file of line ends alone read as questions."""
    path = path_of(tmp_path, "q.tsv", text)
    with pytest.raises(InputError, match=f"^{path} has no questions$"):
        read_questions(path, "-f", corpus_dataset.stoi, finetuning=False)


def test_an_unreadable_input_file_is_refused_in_one_line(tmp_path, monkeypatch):
    """Kills a traceback for a file that exists but cannot be read (permissions, an I/O error)."""
    path = path_of(tmp_path, "wiki.txt", CORPUS)

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(inputs, "open", refused, raising=False)
    monkeypatch.setattr("assignment.question_files.open", refused, raising=False)
    with pytest.raises(InputError, match=f"^cannot read {path} \\(Permission denied, --pretrain_corpus_path\\)$"):
        pretraining_dataset(path)
    with pytest.raises(InputError, match=f"^cannot read {path} \\(Permission denied\\)$"):
        read_questions(path, "--eval_corpus_path", {}, finetuning=False)


def test_an_open_error_without_a_reason_is_named_by_its_type(tmp_path, monkeypatch):
    """Kills an OSError that carries no strerror (raised bare by a file system or a stand-in) told as
    'None' rather than by its type."""
    path = path_of(tmp_path, "wiki.txt", CORPUS)
    monkeypatch.setattr(inputs, "open", raising(OSError()), raising=False)
    with pytest.raises(InputError, match=f"^cannot read {path} \\(OSError, --pretrain_corpus_path\\)$"):
        pretraining_dataset(path)


def test_a_mixed_file_names_the_line_of_its_first_question(tmp_path, corpus_dataset):
    """Kills the unlabelled line named as line 1 when blank lines come before the first question."""
    path = path_of(tmp_path, "q.tsv", "\n \r\nWhere was Ada born?\nWhere was Bo born?\tLondon\n")
    with pytest.raises(InputError, match=f"^{path} line 4 has a tab, but line 3 has none: either every line"):
        read_questions(path, "-f", corpus_dataset.stoi, finetuning=False)


def test_an_output_that_is_already_there_is_accepted_to_be_replaced(tmp_path):
    """Kills an earlier output file (or a link to one) refused as if it were a folder: every stage run a
    second time writes over its earlier output."""
    earlier = written(tmp_path, "earlier predictions\n", "dev.predictions")
    os.symlink(earlier, tmp_path / "link.predictions")
    assert need_output_folder(earlier, "--outputs_path") == earlier
    assert need_output_folder(str(tmp_path / "link.predictions"), "-o") == str(tmp_path / "link.predictions")


def test_an_output_named_without_a_folder_is_in_the_current_folder(tmp_path, monkeypatch):
    """Kills a bare file name (--outputs_path dev.predictions) refused as in a folder that does not exist,
    and a link to a folder taken for a file."""
    monkeypatch.chdir(tmp_path)
    assert need_output_folder("dev.predictions", "--outputs_path") == "dev.predictions"
    (tmp_path / "folder").mkdir()
    os.symlink(tmp_path / "folder", tmp_path / "link")
    with pytest.raises(InputError, match=r"^--outputs_path is a folder, not a file: link$"):
        need_output_folder("link", "--outputs_path")


def test_a_link_is_read_through_and_a_dangling_one_or_a_folder_is_not_found(tmp_path, corpus_dataset):
    """Kills a link to a question file refused or read as something else, and a dangling link or a folder
    that reaches open()."""
    target = path_of(tmp_path, "q.tsv", "Where was Ada born?\tLondon\n")
    os.symlink(target, tmp_path / "link.tsv")
    os.symlink(tmp_path / "gone.tsv", tmp_path / "dangling.tsv")
    assert read_questions(str(tmp_path / "link.tsv"), "-f", corpus_dataset.stoi, False) == \
        (["Where was Ada born?"], ["London"])
    for missing in (tmp_path / "dangling.tsv", tmp_path):
        with pytest.raises(InputError, match=f"^question file not found: {missing} \\(-f\\)$"):
            read_questions(str(missing), "-f", corpus_dataset.stoi, False)


# ---- wiki.txt ---------------------------------------------------------------------------------------------

@EDGE
@given(documents=st.lists(st.text(LETTERS + "\x85\u2028", max_size=8), min_size=1, max_size=6).filter(
    lambda d: "".join(d).strip()),
       data=st.data())
def test_the_corpus_gives_the_same_documents_and_vocabulary_whatever_its_line_ends(tmp_path_factory, documents,
                                                                                    data):
    """Kills a \\r kept in a document or in the vocabulary (a Windows wiki.txt would grow the vocabulary
    by one and fit no parameters), and a lone \\r not ending a document."""
    ends, last = data.draw(line_ends(len(documents)))
    folder = tmp_path_factory.mktemp("wiki")
    read = pretraining_dataset(path_of(folder, "crlf.txt", joined(documents, ends, last)))
    canonical = pretraining_dataset(path_of(folder, "lf.txt", joined(documents, ["\n"] * len(documents), last)))
    assert (read.data, read.stoi) == (canonical.data, canonical.stoi) and "\r" not in read.stoi


@pytest.mark.parametrize("text", ["\r\n", "\r", " \r\n\t\r"])
def test_a_corpus_of_line_ends_alone_is_empty(tmp_path, text):
    """Kills a corpus of blank lines accepted as a vocabulary of white space."""
    path = path_of(tmp_path, "wiki.txt", text)
    with pytest.raises(InputError, match=f"^the pretraining corpus is empty: {path}$"):
        pretraining_dataset(path)


def test_a_corpus_of_one_character_is_a_vocabulary_of_three(tmp_path):
    """Kills a vocabulary that loses PAD, MASK or the corpus's one character."""
    dataset = pretraining_dataset(path_of(tmp_path, "wiki.txt", "a"))
    assert dataset.itos == {0: PAD_CHAR, 1: MASK_CHAR, 2: "a"} and dataset.data == ["a"]
