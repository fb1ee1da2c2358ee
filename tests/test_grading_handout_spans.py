"""
Span corruption examples (src/grading/handout/spans.py), read and judged
in-process: an example's pieces, ids outside the vocabulary, the reference's
examples drawn from the seeded corpus, once for the span tests of a grading
run, and an example that is not a corruption of its own document; with the
plain values a probe answers.
"""

import torch

from assignment import facts
from grading.context import Context
from grading.handout import configs, corpora, spans

from handout_helpers import InProcess, failure


def example(text, document, index=0, types=("torch.int64", "torch.int64")):
    """A SpanExample whose x and y hold `text` (y one character on)."""
    itos = dict(enumerate(sorted(set(text + "?"))))
    stoi = {c: i for i, c in itos.items()}
    ids = [stoi[c] for c in text]
    raw = {"index": index, "x": ids[:-1], "y": ids[1:], "types": list(types)}
    return spans.SpanExample(raw, itos, [document])


def test_a_span_example_reads_its_pieces():
    M, P = facts.MASK_CHAR, facts.PAD_CHAR
    e = example(f"Ada {M}born{M}was {M}{P}{P}", "Ada was born in London")
    assert e.text == f"Ada {M}born{M}was {M}{P}{P}" and e.document == "Ada was born in London"
    assert e.pieces() == ("Ada ", "born", "was ") and e.is_corruption() and e.kept() == 12
    assert example(f"Ada {M}born{M}was {P}", "Ada was born").pieces() == ("Ada ", "born", "was ")
    assert e.shown() == repr(f"Ada {M}born{M}was {M}{P}...")
    assert example(f"Ada {M}born{M}was {M}", "Ada was born").shown() == repr(f"Ada {M}born{M}was {M}")
    assert example(f"Ada {M}born{M}was {M}x{P}", "Ada was born").pieces() is None
    assert example(f"Ada {M}born", "Ada born").pieces() is None
    assert not example(f"Ada {M}born{M}is {M}", "Ada was born").is_corruption()
    assert not example(f"Ada {M}born", "Ada born").is_corruption()
    assert example(f"Ada {M}born{M}was {M}", "Ada was born").x == example(f"Ada {M}born{M}was {M}", "x").x


def test_an_id_outside_the_vocabulary_reads_as_one_question_mark():
    raw = {"index": 0, "x": [0, 99, 1], "y": [99, 1, 7], "types": ["torch.int64"] * 2}
    assert spans.SpanExample(raw, {0: "A", 1: "b"}, ["Ab"]).text == "A?b?"


def test_the_reference_span_examples_are_corruptions(tmp_path):
    ctx = InProcess(tmp_path)
    examples = spans.span_examples(ctx, 128)
    assert len(examples) == spans.SPAN_EXAMPLES and all(e.is_corruption() for e in examples)
    assert ctx.calls[0][1] == dict(corpus_path=str(tmp_path / "corpus.txt"), block_size=128, count=3000, seed=224)


def test_the_span_examples_are_drawn_from_the_seeded_corpus_of_240_documents(tmp_path):
    """Kills an unseeded corpus (a grade that changes from run to run) or one of another size."""
    (tmp_path / "run").mkdir()
    canned = {"corruption_examples": {"value": {"itos": [], "examples": []}}}
    assert spans.span_examples(InProcess(tmp_path / "run", canned=canned), 128) == []
    documents = corpora.write_span_corpus(str(tmp_path), count=240, seed=spans.SPAN_SEED)[1]
    assert (tmp_path / "run" / "corpus.txt").read_text(encoding="utf-8") == "\n".join(documents)


def test_a_span_example_that_is_not_a_corruption_fails(tmp_path):
    M = facts.MASK_CHAR
    itos = [[0, "A"], [1, "d"], [2, "a"], [3, M], [4, "x"]]
    document = corpora.write_span_corpus(str(tmp_path), count=240, seed=spans.SPAN_SEED)[1][0]
    raw = {"index": 0, "x": [0, 3, 1, 3, 2], "y": [3, 1, 3, 2, 3], "types": ["torch.int64"] * 2}
    ctx = InProcess(tmp_path, canned={"corruption_examples": {"value": {"itos": itos, "examples": [raw]}}})
    assert document[:3] != "Ada"
    assert failure(spans.span_examples, ctx, 128).startswith("an example is not a span corruption of its own document")


def test_ids_and_plain_values():
    assert spans.ids(torch.tensor([3, 1])) == [3, 1] and spans.ids((2.0, 5)) == [2, 5]
    assert all(type(v) is int for v in spans.ids(torch.tensor([3, 1])))
    assert configs.plain((0.9, [1, None], True, "x")) == [0.9, [1, None], True, "x"]
    assert configs.plain({"a": 1}) == "{'a': 1}"


class OneRun(InProcess):
    """A test's ctx in a grading run whose tests share what ctx.once() computed, as grading.suite's do."""

    def __init__(self, scratch, computed):
        super().__init__(scratch)
        self.computed = computed

    once = Context.once


def test_the_span_tests_of_one_grading_run_draw_the_examples_once(tmp_path):
    """Kills the 3000 examples drawn again for each of the four span tests of a run, or drawn once for
    two runs."""
    computed, runs = {}, []
    for test in range(4):
        ctx = OneRun(tmp_path / f"scratch{test}", computed)
        (tmp_path / f"scratch{test}").mkdir()
        runs.append((ctx, spans.span_examples(ctx, facts.BLOCK_SIZE)))
    assert [len(ctx.calls) for ctx, _ in runs] == [1, 0, 0, 0]
    assert all(examples is runs[0][1] for _, examples in runs)
    other = OneRun(tmp_path / "scratch0", {})
    spans.span_examples(other, facts.BLOCK_SIZE)
    assert len(other.calls) == 1
