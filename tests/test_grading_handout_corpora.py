"""
The grader's own corpora (src/grading/handout/corpora.py): the biographies
the config probe trains on, each person named first and asked about, and
the seeded span corpus of long and short documents the span probe cuts.
"""

from pathlib import Path

from assignment import facts
from grading.handout import corpora, spans


def test_biographies_name_each_person_first_and_ask_their_birthplace(tmp_path):
    corpus_path, names_path, documents = corpora.write_biographies(str(tmp_path))
    corpus = Path(corpus_path).read_text(encoding="utf-8")
    lines = corpus.split("\n")
    assert documents == len(lines) == len(corpora.PEOPLE) + 1 and lines[-1] == ""
    for line, (name, place) in zip(lines, corpora.PEOPLE):
        assert line.startswith(f"{name}. Where was {name} born? In {place}, and {name} lived in ")
    assert lines[0].endswith(f"lived in {corpora.PEOPLE[-1][1]}.")
    assert lines[1].endswith(f"lived in {corpora.PEOPLE[0][1]}.")
    names = Path(names_path).read_text(encoding="utf-8")
    assert names == "".join(f"Where was {name} born?\t{place}\n" for name, place in corpora.PEOPLE)
    assert (corpus_path, names_path) == (str(tmp_path / "wiki.txt"), str(tmp_path / "birth_places_train.tsv"))


def test_the_span_corpus_is_seeded_with_long_and_short_documents(tmp_path):
    path, documents = corpora.write_span_corpus(str(tmp_path), count=240, seed=spans.SPAN_SEED)
    assert Path(path).read_text(encoding="utf-8") == "\n".join(documents)
    assert len(documents) == 240
    long, short = documents[::2], documents[1::2]
    assert all(corpora.LONG_DOCUMENT <= len(d) <= facts.BLOCK_SIZE - 3 for d in long)
    assert all(4 <= len(d) < corpora.LONG_DOCUMENT for d in short)
    assert len({len(d) for d in long}) > 8 and min(len(d) for d in short) < 20
    assert all(d[0].isupper() and d.split(" ")[0].rstrip(",.").lower() in corpora.WORDS for d in documents)
    assert corpora.write_span_corpus(str(tmp_path), count=6, seed=spans.SPAN_SEED)[1] == documents[:6]


def test_span_document_lengths_reach_both_ends_of_their_ranges(tmp_path):
    documents = corpora.write_span_corpus(str(tmp_path), count=2000, seed=spans.SPAN_SEED)[1]
    long, short = [len(d) for d in documents[::2]], [len(d) for d in documents[1::2]]
    assert (min(long), max(long)) == (corpora.LONG_DOCUMENT, facts.BLOCK_SIZE - 3)
    assert (min(short), max(short)) == (4, corpora.LONG_DOCUMENT - 1)
    assert corpora.write_span_corpus(str(tmp_path), count=6, seed=1)[1] != documents[:6]
