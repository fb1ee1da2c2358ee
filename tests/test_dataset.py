"""CharCorruptionDataset (span corruption) and NameDataset, and the dataset.py debugging entry (run as a
script once, and once in this process)."""

import random
import runpy
import statistics
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings, strategies as st

from submission import CharCorruptionDataset, NameDataset

REPO = Path(__file__).resolve().parents[1]
PAD = "\u25A1"
MASK = "\u2047"
SAMPLES = 3000


def decode(dataset, ids):
    return "".join(dataset.itos[i] for i in ids.tolist())


@dataclass
class Corruption:
    document: str
    x: torch.Tensor
    y: torch.Tensor
    text: str  # the whole example string: x followed by the last character of y

    @property
    def body(self):
        """The text before the trailing PADs, without a closing MASK if there is one."""
        body = self.text.rstrip(PAD)
        return body[:-1] if body.count(MASK) == 3 and body.endswith(MASK) else body

    @property
    def parts(self):
        """(prefix, masked, suffix), read off "prefix MASK suffix MASK masked [MASK]"."""
        prefix, suffix, masked = self.body.split(MASK)
        return prefix, masked, suffix

    @property
    def truncated(self):
        prefix, masked, suffix = self.parts
        return prefix + masked + suffix


def corruptions(documents, block_size, seeded_random, count=SAMPLES):
    """(dataset, examples): `count` span-corruption examples of randomly picked documents, all seeded."""
    dataset = CharCorruptionDataset("\n".join(documents), block_size)
    picker = random.Random(block_size)
    examples = []
    with seeded_random(block_size + len(documents)):
        for _ in range(count):
            idx = picker.randrange(len(documents))
            x, y = dataset[idx]
            examples.append(Corruption(documents[idx], x, y, decode(dataset, x) + dataset.itos[int(y[-1])]))
    return dataset, examples


@pytest.fixture(scope="module", params=["wiki.txt", "generated"])
def documents(request, corpus):
    if request.param == "wiki.txt":
        return request.getfixturevalue("wiki_text").split("\n")
    return corpus.documents


@pytest.fixture(scope="module", params=[128, 100])
def sampled(request, documents, seeded_random):
    """(dataset, examples) for each corpus and block size."""
    return corruptions(documents, request.param, seeded_random)


@pytest.fixture(scope="module")
def long_documents(make_corpus):
    return make_corpus(seed=7, count=150, min_length=200).documents


def upper(block_size):
    """The reference's truncation bound, the Fall 2023 starter's int(block_size * 7/8) (the 2024 starters' 3/4
    is graded as right too, but the reference's figures were made with 7/8: docs/departures.md)."""
    return int(block_size * 7 / 8)


# ---------------------------------------------------------------- span corruption

def test_x_and_y_are_block_minus_one_ids_and_y_is_x_shifted(sampled):
    """x and y are LongTensors of block_size - 1 ids, the reference's (the course's padding recipe; the
    docstring's block_size is graded as right too), and y is x shifted by one."""
    dataset, examples = sampled
    for example in examples:
        assert example.x.dtype == example.y.dtype == torch.long
        assert example.x.shape == example.y.shape == (dataset.block_size - 1,)
        assert torch.equal(example.y[:-1], example.x[1:])


def test_pads_only_at_the_end(sampled):
    dataset, examples = sampled
    for example in examples:
        assert PAD not in example.text.rstrip(PAD)


def test_layout_is_prefix_mask_suffix_mask_masked_mask(sampled):
    """Three MASKs (the last may be missing) split the text into prefix, suffix and masked content."""
    _, examples = sampled
    for example in examples:
        assert example.body.count(MASK) == 2
        assert example.text.rstrip(PAD).count(MASK) in (2, 3)


def test_rearrangement_rebuilds_a_prefix_of_the_document(sampled):
    _, examples = sampled
    for example in examples:
        assert example.document.startswith(example.truncated)


def test_truncated_length_is_between_4_and_seven_eighths_of_block(sampled):
    """A document is cut to 4..int(block_size*7/8) characters; a shorter one stays whole."""
    dataset, examples = sampled
    for example in examples:
        length = len(example.truncated)
        assert length <= upper(dataset.block_size)
        assert length >= 4 or length == len(example.document)


def test_every_truncated_length_is_reachable_on_long_documents(sampled):
    dataset, examples = sampled
    lengths = {len(e.truncated) for e in examples if len(e.document) >= upper(dataset.block_size)}
    assert lengths == set(range(4, upper(dataset.block_size) + 1))


@pytest.mark.parametrize("block_size", [128, 100, 64])
def test_every_truncated_length_is_reachable_on_generated_long_documents(long_documents, seeded_random,
                                                                        block_size):
    """Every length from 4 to the bound, floored (int(100 * 7/8) is 87, not 88)."""
    _, examples = corruptions(long_documents, block_size, seeded_random)
    assert all(len(d) >= upper(block_size) for d in long_documents)
    assert {len(e.truncated) for e in examples} == set(range(4, upper(block_size) + 1))


def test_masked_length_averages_a_quarter_of_the_truncated_length(sampled):
    _, examples = sampled
    masked = [len(e.parts[1]) for e in examples]
    truncated = [len(e.truncated) for e in examples]
    assert abs(statistics.mean(masked) - statistics.mean(truncated) / 4) <= 1.5


def test_masked_length_varies_for_a_fixed_truncated_length(sampled):
    """Nonzero spread that is not explained by the truncation alone: among
    examples sharing a truncated length (>= 8, seen >= 10 times), the masked
    length takes more than one value."""
    _, examples = sampled
    by_length = defaultdict(list)
    for example in examples:
        by_length[len(example.truncated)].append(len(example.parts[1]))
    groups = [masked for length, masked in by_length.items() if length >= 8 and len(masked) >= 10]
    assert len(groups) >= 10
    assert all(len(set(masked)) > 1 for masked in groups)


def test_span_start_is_spread_over_the_truncated_text(sampled):
    """The masked span may start anywhere: with an empty prefix, with an empty suffix, and on
    average halfway through the room it leaves (start / (truncated - masked), uniform over it)."""
    _, examples = sampled
    placed = [e.parts for e in examples if len(e.truncated) >= 8]
    assert any(prefix == "" for prefix, _, _ in placed) and any(suffix == "" for _, _, suffix in placed)
    assert any(prefix and suffix for prefix, _, suffix in placed)
    room = [(len(prefix), len(prefix) + len(suffix)) for prefix, _, suffix in placed if prefix + suffix]
    assert abs(statistics.mean(start / width for start, width in room) - 0.5) <= 0.05


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.text(alphabet="ab .\u00e9\t", max_size=200), st.integers(24, 160), st.integers(0, 2 ** 16))
def test_any_document_gives_a_well_formed_example(seeded_random, document, block_size, seed):
    """For any one-line document and block size from 24 (where the longest example still fits the
    block): x and y of block_size - 1 ids, y x shifted, PADs only at the end, and
    prefix MASK suffix MASK masked [MASK] rebuilding the document's first 4 to int(block_size * 7/8)
    characters, or all of it when it is shorter than 4."""
    dataset = CharCorruptionDataset(document + "\nxyz", block_size)
    with seeded_random(seed):
        x, y = dataset[0]
    example = Corruption(document, x, y, decode(dataset, x) + dataset.itos[int(y[-1])])
    assert x.shape == y.shape == (block_size - 1,)
    assert torch.equal(y[:-1], x[1:])
    assert PAD not in example.text.rstrip(PAD) and example.body.count(MASK) == 2
    assert document.startswith(example.truncated)
    assert min(4, len(document)) <= len(example.truncated) <= upper(block_size)


SHORT_DOCUMENTS = ["", "a", "ab", "abc", "abcd", "abcde", "The quick brown fox jumps over the lazy dog ."]


def test_a_document_shorter_than_4_characters_stays_whole(seeded_random):
    """Documents of 0 to 3 characters are kept whole (the empty one gives MASK MASK [MASK] and PADs);
    a document of 4 is always kept whole, and one of 5 is cut to 4 or kept whole."""
    _, examples = corruptions(SHORT_DOCUMENTS, 32, seeded_random, count=700)
    for example in examples:
        length = len(example.document)
        assert example.truncated == example.document if length <= 4 else len(example.truncated) >= 4
        assert example.text.rstrip(PAD).count(MASK) in (2, 3)
    assert {len(e.truncated) for e in examples if len(e.document) == 5} == {4, 5}


def test_a_corpus_ending_in_a_newline_has_an_empty_last_document(seeded_random):
    """The documents are the corpus split on "\\n", the empty last line included (2937 in the course's
    wiki.txt); its example is made like any other."""
    dataset = CharCorruptionDataset("Ada Moreau. Ada was a poet .\nBo Szabo. Bo was a judge .\n", 32)
    assert len(dataset) == 3 and dataset.data[2] == ""
    with seeded_random(3):
        x, y = dataset[2]
    text = decode(dataset, x) + dataset.itos[int(y[-1])]
    assert text.rstrip(PAD) in (MASK * 2, MASK * 3)
    assert torch.equal(y[:-1], x[1:])


def test_vocabulary_is_pad_mask_then_sorted_characters(documents):
    text = "\n".join(documents)
    dataset = CharCorruptionDataset(text, 128)
    assert (dataset.PAD_CHAR, dataset.MASK_CHAR) == (PAD, MASK)
    assert (dataset.stoi[PAD], dataset.stoi[MASK]) == (0, 1)
    assert [dataset.itos[i] for i in range(dataset.vocab_size)] == [PAD, MASK] + sorted(set(text))
    assert all(dataset.stoi[dataset.itos[i]] == i for i in range(dataset.vocab_size))
    assert dataset.block_size == 128
    assert len(dataset) == len(documents)


def test_real_corpus_has_256_symbols_and_2937_documents(wiki_text):
    dataset = CharCorruptionDataset(wiki_text, 128)
    assert dataset.vocab_size == 256
    assert len(dataset) == 2937


# ---------------------------------------------------------------- NameDataset

@pytest.fixture(scope="module")
def pretraining(corpus):
    return CharCorruptionDataset(corpus.wiki, 64)


def test_name_example_is_question_mask_answer_mask_and_pads(corpus, pretraining):
    names = NameDataset(corpus.questions, pretraining)
    assert len(names) == len(corpus.people)
    for (name, place), (x, y) in zip(corpus.people, names):
        question = f"Where was {name} born?"
        full = question + MASK + place + MASK
        assert x.dtype == y.dtype == torch.long
        assert decode(names, x) == full + PAD * (63 - len(full))
        assert decode(names, y) == PAD * (len(question) - 1) + full[len(question):] + PAD * (64 - len(full))


def test_name_targets_are_pad_over_the_question_then_x_shifted(corpus, pretraining):
    """y is PAD (ignored by the loss) over the question; from there on it is x
    shifted by one, so exactly the MASK, the answer and its closing MASK are trained on."""
    names = NameDataset(corpus.questions, pretraining)
    for (name, place), (x, y) in zip(corpus.people, names):
        start = len(f"Where was {name} born?") - 1
        assert torch.all(y[:start] == 0)
        assert torch.equal(y[start:-1], x[start + 1:])
        assert int((y != 0).sum()) == len(place) + 2


def test_name_dataset_uses_the_pretraining_vocabulary(corpus, pretraining):
    names = NameDataset(corpus.questions, pretraining)
    assert names.stoi == pretraining.stoi and names.itos == pretraining.itos
    assert (names.PAD_CHAR, names.MASK_CHAR, names.block_size) == (PAD, MASK, 64)


def test_name_dataset_keeps_ascii_only_and_skips_blank_lines(pretraining):
    """Empty lines and lines of spaces or tabs alone are no questions; non-ASCII characters are dropped."""
    names = NameDataset("\nWhere was Ad\u00e9 Moreau born?\tBr\u00fcno\n\n  \n\t\n", pretraining)
    assert len(names) == 1
    x, _ = names[0]
    assert decode(names, x).rstrip(PAD) == "Where was Ad Moreau born?" + MASK + "Brno" + MASK


@pytest.mark.parametrize("bad", ["Where was Ada Moreau born? Lisbon", "Where was\tAda Moreau born?\tLisbon",
                                 "Where was Ada Moreau born?\tZ\u007f"])
def test_bad_name_line_raises_with_its_line_number(pretraining, bad):
    data = "Where was Ada Moreau born?\tLisbon\n\n" + bad + "\n"
    with pytest.raises(ValueError, match=r"\bline 3\b"):
        NameDataset(data, pretraining)


def test_real_name_data_builds(wiki_text, shared_data):
    pretraining = CharCorruptionDataset(wiki_text, 128)
    names = NameDataset((shared_data / "birth_places_train.tsv").read_text(encoding="utf-8"), pretraining)
    assert len(names) == 2000
    x, y = names[0]
    assert x.shape == y.shape == (127,)


# ---------------------------------------------------------------- python dataset.py

@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, corpus):
    directory = tmp_path_factory.mktemp("data")
    (directory / "wiki.txt").write_text(corpus.wiki, encoding="utf-8")
    (directory / "birth_places_train.tsv").write_text(corpus.questions, encoding="utf-8")
    return directory


def examples(printed):
    """The x and y strings that the entry printed."""
    lines = printed.splitlines()
    xs = [line[len("x: "):] for line in lines if line.startswith("x: ")]
    ys = [line[len("y: "):] for line in lines if line.startswith("y: ")]
    return xs, ys


def run_entry(kind, data_dir):
    """`python src/submission/dataset.py kind --data_dir data_dir`, as a student runs it."""
    result = subprocess.run([sys.executable, str(REPO / "src" / "submission" / "dataset.py"), kind,
                             "--data_dir", str(data_dir)], cwd=REPO, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")
    return examples(result.stdout.decode("utf-8"))


def run_entry_here(kind, data_dir, capsys, monkeypatch, seeded_random):
    """The same entry run in this process (runpy, as __main__), its random draws seeded and put back."""
    monkeypatch.setattr(sys, "argv", ["dataset.py", kind, "--data_dir", str(data_dir)])
    with seeded_random(0):
        runpy.run_path(str(REPO / "src" / "submission" / "dataset.py"), run_name="__main__")
    return examples(capsys.readouterr().out)


def test_entry_prints_name_examples(data_dir, corpus):
    xs, ys = run_entry("namedata", data_dir)
    names = NameDataset(corpus.questions, CharCorruptionDataset(corpus.wiki, 128))
    assert len(xs) == len(ys) >= 1
    assert xs == [decode(names, names[i][0]) for i in range(len(xs))]
    assert ys == [decode(names, names[i][1]) for i in range(len(ys))]


def test_entry_prints_span_corruption_examples(data_dir, corpus, capsys, monkeypatch, seeded_random):
    xs, ys = run_entry_here("charcorruption", data_dir, capsys, monkeypatch, seeded_random)
    assert len(xs) == len(ys) >= 1
    for document, x, y in zip(corpus.documents, xs, ys):
        assert len(x) == len(y) == 127 and x[1:] == y[:-1]
        prefix, suffix, masked = (x + y[-1]).rstrip(PAD).rstrip(MASK).split(MASK)
        assert document.startswith(prefix + masked + suffix)
