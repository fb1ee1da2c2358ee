"""
Shared fixtures: the course data (when this checkout has it), a generated
corpus of biography-like lines with matching birth-place questions, a seeded
global `random` for the datasets that draw from it, and small model configs.
"""

import contextlib
import locale
import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import privileged
from cpu_costs import pytest_runtest_setup, pytest_runtest_teardown  # noqa: F401 (hooks)
from forked_runs import stop_server
from runtime_helpers import one_thread
from zygote_parents import run_with_a_parent
from assignment.editions import SEED_EDITION
from grading import registry
from submission import GPTConfig

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
SHARED_FILES = ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv", "birth_test_inputs.tsv")
NO_SHARED_DATA = "course data not found at ../shared/data (only the instructors' checkout has it)"

FIRST_NAMES = ["Ada", "Bertil", "Camille", "Dario", "Elif", "Femi", "Greta", "Hiroshi", "Ines", "Jonas",
               "Kalani", "Lior", "Maren", "Nuno", "Oksana", "Pavel", "Quilla", "Rosa", "Soren", "Tamsin"]
SURNAMES = ["Abernethy", "Baptiste", "Castellano", "Dalgaard", "Eriksen", "Fairweather", "Gonzaga",
            "Halloran", "Iwasaki", "Jablonski", "Kowalczyk", "Lindqvist", "Moreau", "Nakamura", "Okafor",
            "Pellegrini", "Quintero", "Rasmussen", "Szabo", "Thorne"]
PLACES = ["Lisbon", "Tampere", "Valparaiso", "Krakow", "Dundee", "Osaka", "Lagos", "Bergen", "Quito",
          "Brno", "Ghent", "Halifax", "Mombasa", "Perth", "Tbilisi", "Leeds"]
OCCUPATIONS = ["painter", "chemist", "footballer", "poet", "cartographer", "violinist", "architect",
               "judge", "botanist", "photographer"]
EXTRA_SENTENCES = [
    "{surname} studied at the university of {other} .",
    "In {year} {surname} moved to {other}, where {pronoun} worked for a decade .",
    "{pronoun_cap} received the {other} prize in {year} .",
    "{surname} married in {year} and had {count} children .",
    "Later {pronoun} taught in {other} ( {year} - {year2} ) .",
]


@dataclass
class GeneratedCorpus:
    people: list       # (name, birth place) pairs, one per document, in order
    wiki: str          # one biography a line, "Name. text..."
    questions: str     # "Where was NAME born?<TAB>PLACE" lines

    @property
    def documents(self):
        return self.wiki.split("\n")


def _biography(rng, name, place, min_length):
    surname = name.split()[-1]
    pronoun = rng.choice(["he", "she", "they"])
    sentences = [f"{name}.", f"{name} was a {rng.choice(OCCUPATIONS)} born in {place} ."]
    while len(" ".join(sentences)) < min_length or rng.random() < 0.5:
        year = rng.randint(1800, 1990)
        sentences.append(rng.choice(EXTRA_SENTENCES).format(
            surname=surname, other=rng.choice(PLACES), year=year, year2=year + rng.randint(1, 30),
            pronoun=pronoun, pronoun_cap=pronoun.capitalize(), count=rng.randint(1, 6)))
    sentences.append(f"Where was {surname} born? In {place} .")
    return " ".join(sentences)


def generate_corpus(seed, count, min_length=0):
    """`count` people with distinct names, their biographies (each at least
    `min_length` characters) and a question about each one's birth place."""
    rng = random.Random(seed)
    names = [f"{first} {last}" for first in FIRST_NAMES for last in SURNAMES]
    people = [(name, rng.choice(PLACES)) for name in rng.sample(names, count)]
    wiki = "\n".join(_biography(rng, name, place, min_length) for name, place in people)
    questions = "".join(f"Where was {name} born?\t{place}\n" for name, place in people)
    return GeneratedCorpus(people, wiki, questions)


@contextlib.contextmanager
def global_random_seeded(seed):
    """Seed the global `random` module (which the datasets draw from) and restore its state afterwards."""
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


# The files whose tests train models, build releases or start grading processes, heaviest first (the CPU time
# of each alone, python3 -m pytest -p no:xdist tests/FILE under /usr/bin/time): marked slow, started first.
SLOW_FILES = (
    "test_demo_perceiver.py", "test_demo_rope.py", "test_demo_pretraining.py", "test_grader.py",
    "test_grade_fairness.py", "test_release_autograder_attacks.py", "test_resume.py", "test_release_edition.py",
    "test_recipe.py", "test_grade_rope_editions.py", "test_grade_regenerate.py", "test_release_main_end_to_end.py",
    "test_copies.py", "test_decoding_batched.py", "test_run_stages.py", "test_full_run.py", "test_demo.py",
    "test_plausible.py", "test_bench.py", "test_bench_compile.py", "test_release_main_inputs.py", "test_run_sh.py",
    "test_run_bad_inputs.py", "test_runtime_decoding.py", "test_notebooks.py", "test_agreement.py", "test_fast.py",
    "test_run_rope.py", "test_stages_collect_submission.py", "test_run_student_code.py", "test_dataset.py",
    "test_zygote_parent.py", "test_staging.py")


def pytest_configure(config):
    """In a parallel worker (./run.sh test) torch and the processes it starts compute on one thread:
    the workers already fill the cores, and threads waiting on each other there only burn them. The
    files are handed to the workers in the order collected (SLOW_FILES first), not re-sorted by
    pytest-xdist by their number of tests, which started the files of one long test last."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["OMP_NUM_THREADS"] = "1"
        torch.set_num_threads(1)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items):
    """The slow files' tests marked slow and run first, heaviest first; and one xdist group a file:
    with `--dist loadgroup` (./run.sh test) a file's tests run in one worker, so that its module
    fixtures (trained models, built releases) are made once."""
    rank = {name: number for number, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its order
    for item in items:
        item.add_marker(pytest.mark.xdist_group(item.path.name))
        if item.path.name in rank:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def zygote_parent(request):
    """The grading runs of the whole test run fork their zygotes from one parent a worker, which has
    imported torch once (tests/zygote_parents.py); not in a run without slow tests (the quick tier),
    which starts too few grading runs to pay for the parent's own import."""
    if not any(item.get_closest_marker("slow") for item in request.session.items):
        yield
        return
    stop = run_with_a_parent()
    yield
    stop()


@pytest.fixture(scope="session", autouse=True)
def fork_server():
    """The server of tests/forked_runs.py, where a test started one, stopped and waited for at the end of
    the run, so that its CPU seconds and its processes' count among the run's."""
    yield
    stop_server()


@pytest.fixture(scope="session")
def seeded_random():
    """The `global_random_seeded(seed)` context manager."""
    return global_random_seeded


@pytest.fixture
def single_thread():
    """Run torch on one thread: the tiny models here run faster so, most of all on a busy shared CPU."""
    with one_thread():
        yield


@pytest.fixture(scope="session")
def shared_data():
    """The directory of the course's real data; skips the test when this checkout lacks any of its files."""
    if not all((SHARED_DATA / name).is_file() for name in SHARED_FILES):
        pytest.skip(NO_SHARED_DATA)
    return SHARED_DATA


@pytest.fixture(scope="session")
def wiki_text(shared_data):
    return (shared_data / "wiki.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def corpus():
    """A generated corpus of 200 people with biographies of mixed lengths."""
    return generate_corpus(seed=2024, count=200)


@pytest.fixture(scope="session")
def make_corpus():
    """`generate_corpus(seed, count, min_length=0)`."""
    return generate_corpus


@pytest.fixture(scope="session")
def tiny_config():
    """Build a small GPTConfig; dropout is off unless asked for."""
    def make(vocab_size, block_size, *, n_layer=3, n_head=2, n_embd=32, dropout=0.0, **extra):
        return GPTConfig(vocab_size, block_size, n_layer=n_layer, n_head=n_head, n_embd=n_embd,
                         embd_pdrop=dropout, resid_pdrop=dropout, attn_pdrop=dropout, **extra)
    return make


@pytest.fixture(scope="session")
def readable_python():
    """
    A Python every user can read, with torch (a virtual environment built once
    a machine when this one will not do, see tests/privileged.py); skips the
    test when not root or when none can be had.
    """
    missing = privileged.missing_privilege("nobody")
    if missing:
        pytest.skip(missing)
    try:
        return privileged.readable_python("nobody")
    except RuntimeError as reason:
        pytest.skip(f"no Python that every user can read: {reason}")


@pytest.fixture
def on_readable_python(readable_python, monkeypatch):
    """Run this test's subprocesses of sys.executable (grader.py) on the Python every user can read."""
    monkeypatch.setattr(sys, "executable", readable_python)
    return readable_python


@pytest.fixture
def ascii_locale():
    """The C locale for the test, so a file opened without an encoding is read and written as ASCII."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, 'C')
    yield
    locale.setlocale(locale.LC_CTYPE, before)


@pytest.fixture
def registered(monkeypatch):
    """An empty registry of graded tests for the test, grading the seed edition."""
    monkeypatch.setattr(registry, "TESTS", {})
    monkeypatch.setattr(registry, "DECLARED", [])
    monkeypatch.setattr(registry, "BUNDLE_FILES", [])
    monkeypatch.setattr(registry, "GRADING", {"edition": SEED_EDITION})
    return registry.TESTS
