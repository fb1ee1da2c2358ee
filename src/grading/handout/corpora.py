"""
The texts the grader writes for its probes, so grading never depends on the
data a student has: a corpus of short biographies with a matching names file
(the configuration tests), and a seeded corpus of word salad whose documents
reach every truncation length (the span-corruption tests).
"""

import os
import random

from assignment.facts import BLOCK_SIZE, TRUNCATION_BOUNDS

PEOPLE = [("Ada Lovelace", "London"), ("Kofi Annan", "Kumasi"), ("Frida Kahlo", "Coyoacan"),
          ("Rabindranath Tagore", "Calcutta"), ("Marie Curie", "Warsaw"), ("Haruki Murakami", "Kyoto"),
          ("Chinua Achebe", "Ogidi"), ("Jorge Luis Borges", "Buenos Aires"), ("Ibn Battuta", "Tangier"),
          ("Astrid Lindgren", "Vimmerby"), ("Nelson Mandela", "Mvezo"), ("Oscar Wilde", "Dublin")]
WORDS = ("the of and in was born lived worked wrote poet painter singer river city north old new "
         "house school war year king queen family moved studied died famous great small island").split()
LONG_DOCUMENT = max(TRUNCATION_BOUNDS)  # the longest truncation either edition of the handout allows


def write_biographies(directory):
    """A short corpus and a names file over the same characters; returns (corpus, names path, documents)."""
    documents = [f"{name}. Where was {name} born? In {place}, and {name} lived in {PEOPLE[i - 1][1]}."
                 for i, (name, place) in enumerate(PEOPLE)]
    corpus = "\n".join(documents) + "\n"  # like wiki.txt: the empty last line is a document too
    corpus_path = os.path.join(directory, "wiki.txt")
    names_path = os.path.join(directory, "birth_places_train.tsv")
    with open(corpus_path, "w", encoding="utf-8") as f:
        f.write(corpus)
    with open(names_path, "w", encoding="utf-8") as f:
        f.write("".join(f"Where was {name} born?\t{place}\n" for name, place in PEOPLE))
    return corpus_path, names_path, len(corpus.split("\n"))


def write_span_corpus(directory, count, seed):
    """
    `count` documents of seeded words: every other one LONG_DOCUMENT to
    block_size - 3 characters long (so every truncation length is reachable
    and a whole one still fits a block with its three MASKs), the rest 4 to
    LONG_DOCUMENT - 1. Returns (path, documents).
    """
    rng = random.Random(seed)
    documents = []
    for i in range(count):
        length = rng.randint(LONG_DOCUMENT, BLOCK_SIZE - 3) if i % 2 == 0 else rng.randint(4, LONG_DOCUMENT - 1)
        text = rng.choice(WORDS).capitalize()
        while len(text) < length:
            text += rng.choice((" ", ", ", ". ")) + rng.choice(WORDS)
        documents.append(text[:length])
    path = os.path.join(directory, "corpus.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(documents))
    return path, documents
