"""
Each module's promises at the edges of its input (issue 37): zero, one, the
limit and one past it, empty and very long inputs, every line ending (\\n,
\\r\\n, a lone \\r, mixed, with or without a last one) in every file the stages
and the grader read, unreadable files and links. Where the input space is
large the promise is a hypothesis property, derandomized so that CI sees the
same examples on every run.
"""

import math
import os
import types
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from assignment.facts import BLOCK_SIZE, MASK_CHAR, PAD_CHAR
from grading.bundle import HiddenBundle, read_labels
from grading.context import Context, Snapshot
from grading.context import TestFailure as Failed
from grading.handout import predictions as judges
from grading.registry import GradedTest
from runtime import command_line, inputs, seeds
from runtime.decoding import predict_places, prediction_from_completion
from runtime.decoding.greedy import greedy_decode
from runtime.inputs import InputError, pretraining_dataset, read_questions
from runtime.seeds import SEED_RANGE, record_seed, recorded_seed
from runtime.training import distributed, duration
from runtime.training.batches import EpochBatches
from runtime.training.distributed import Processes
from submission import GPT, GPTConfig, helper
from submission.utils import evaluate_places, sample


EDGE = settings(max_examples=80, deadline=None, derandomize=True)
ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])
LETTERS = " ?ABLWabdehilnorswé"  # é: outside ASCII, inside the vocabulary
CORPUS = "Ada Lovelace. Where was Ada born? In London.\nBo. Where was Bo born? In Lisbon, as Wes sé.\n"
STAGE_FILE = "vanilla.pretrain.dev.predictions"  # made by vanilla_eval_dev_with_pretrain, scored on birth_dev.tsv


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Torch on one thread: the tiny models here run faster so, most of all on a busy shared CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def path_of(tmp_path, name, text):
    """`text` written to tmp_path/name as UTF-8 bytes, line ends untouched; its path."""
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return str(path)


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


# ---- question files: what the stages read (runtime/inputs.py, NameDataset, evaluate_places) ---------------

texts = st.text(LETTERS, min_size=1, max_size=10).filter(lambda t: t.encode("ascii", "ignore").decode().strip())
places = st.builds(str.__add__, texts, st.text("\x85\u2028", max_size=2))  # line breaks to str, not to files
blank_lines = st.sampled_from(["", " ", " \t ", "\t"])


@st.composite
def question_files(draw, labelled):
    """(lines of a question file with blank lines among them, the questions, the places or None)."""
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
    """Kills a \\r left in a question or place, a lone \\r read as part of a line, a blank (or tab-only)
    line taken for a question, and a missing last line end losing or adding a question."""
    lines, questions, places = data.draw(question_files(labelled))
    folder = tmp_path_factory.mktemp("questions")
    path = path_of(folder, "q.tsv", joined(lines, *data.draw(line_ends(len(lines)))))
    assert read_questions(path, "-f", corpus_dataset.stoi, finetuning=False) == (questions, places)
    if labelled:
        ascii_only = [f"{q}\t{p}".encode("ascii", "ignore").decode() for q, p in zip(questions, places)]
        assert read_questions(path, "-f", corpus_dataset.stoi, finetuning=True) == (questions, places)
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


def test_a_question_whose_ascii_part_is_empty_is_refused_for_finetuning(tmp_path, corpus_dataset):
    """Kills NameDataset handed a question that its ASCII filter empties."""
    path = path_of(tmp_path, "q.tsv", "Where was Ada born?\tLondon\né\tLisbon\n")
    assert read_questions(path, "-f", corpus_dataset.stoi, finetuning=False)[0] == ["Where was Ada born?", "é"]
    with pytest.raises(InputError, match=r"line 2: the question is empty once its non-ASCII characters are dropped$"):
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
    with pytest.raises(InputError, match=f"^cannot read {path} \\(Permission denied, --pretrain_corpus_path\\)$"):
        pretraining_dataset(path)
    with pytest.raises(InputError, match=f"^cannot read {path} \\(Permission denied, --eval_corpus_path\\)$"):
        read_questions(path, "--eval_corpus_path", {}, finetuning=False)


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


# ---- prediction and label files: what the grader reads (grading/context.py, bundle.py) -----------------

predictions_lists = st.lists(st.text(" \tLondoné\x0c\x85\u2028", max_size=6), max_size=6)


@EDGE
@given(predicted=predictions_lists, data=st.data())
def test_a_prediction_file_reads_as_its_predictions_whatever_its_line_ends(tmp_path_factory, predicted, data):
    """Kills a lone \\r not ending a prediction, a \\r left on one, a blank line (an empty prediction)
    dropped, a missing last line end losing the last prediction, and a split at a Unicode line separator
    (\\x0c, \\x85, \\u2028: characters a prediction may hold)."""
    ends, last = data.draw(line_ends(len(predicted)))
    last = last or not predicted or predicted[-1] == ""  # without its end an empty last line is no line
    folder = tmp_path_factory.mktemp("hand_in")
    path_of(folder, STAGE_FILE, joined(predicted, ends, last))
    snapshot = Snapshot(str(folder), str(tmp_path_factory.mktemp("private")))
    assert scoring_context(snapshot, []).predictions(STAGE_FILE, "stage") == predicted


def scoring_context(snapshot, labels, mode="files", thresholds=None):
    """A grading context of `snapshot`, whose hidden birth_dev.tsv holds `labels`, with the test's thresholds."""
    test = GradedTest("1f-1-hidden", 5.0, "hidden", 50.0, "d", None, thresholds or {})
    bundle = HiddenBundle("/bundle", {"birth_dev.tsv": labels}, {}, reference="/ref", predictions=mode)
    return Context(test, None, "/package", snapshot, bundle, "/scratch", 0.0)


def snapshot_of(files):
    """A snapshot of the hand-in's prediction files `files` (name -> text), as read."""
    return types.SimpleNamespace(folder="/hand_in", files=files, params={})


@EDGE
@given(count=st.integers(1, 8), data=st.data())
def test_labels_and_predictions_with_any_line_ends_score_as_written(tmp_path_factory, count, data):
    """Kills a label or prediction misread at a \\r\\n or lone \\r (a right answer scored wrong, or the
    count off by one)."""
    places = [f"P{i}" for i in range(count)]
    correct = data.draw(st.integers(0, count))
    predicted = places[:correct] + ["x"] * (count - correct)
    folder = tmp_path_factory.mktemp("score")
    labels = read_labels(path_of(folder, "birth_dev.tsv", joined([f"Where was {p} born?\t{p}" for p in places],
                                                                    *data.draw(line_ends(count)))))
    files = {STAGE_FILE: joined(predicted, *data.draw(line_ends(count)))}
    summary = judges.score_predictions(scoring_context(snapshot_of(files), labels), STAGE_FILE)
    assert summary == f"{correct} of {count} correct ({100 * correct / count:.1f}%)"


@EDGE
@given(count=st.integers(1, 8), off=st.sampled_from([-1, 1, "empty"]), ends=st.data())
def test_a_file_with_a_line_more_or_fewer_or_none_is_refused_naming_the_stage(count, off, ends):
    """Kills predictions paired with the wrong questions when the file is a line short or long, and an
    empty file scored as all wrong rather than refused."""
    lines = 0 if off == "empty" else count + off
    text = joined(["London"] * lines, *ends.draw(line_ends(lines)))
    ctx = scoring_context(snapshot_of({STAGE_FILE: text}), [(f"Q{i}", "London") for i in range(count)])
    with pytest.raises(Failed, match=f"^{STAGE_FILE} has {lines} predictions for {count} questions in "
                                     "birth_dev.tsv: rerun ./run.sh vanilla_eval_dev_with_pretrain$"):
        judges.score_predictions(ctx, STAGE_FILE)


DENOMINATORS = [1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000]  # k/n is a 3-digit decimal


@st.composite
def at_a_threshold(draw):
    """(n, k, a threshold as a JSON file gives it, the same as a fraction, a count): the threshold is k/n,
    or 0.001 below it, strictly between two counts where n < 1000; the count is k - 1, k or k + 1."""
    n = draw(st.sampled_from(DENOMINATORS))
    k = draw(st.integers(0, n))
    thousandths = k * (1000 // n) - draw(st.integers(0, min(1, k)))
    count = draw(st.sampled_from([c for c in (k - 1, k, k + 1) if 0 <= c <= n]))
    return n, k, float(f"{thousandths}e-3"), Fraction(thousandths, 1000), count


def passes(judge, *args):
    """Whether judge(*args) passes rather than fails the test."""
    try:
        judge(*args)
    except Failed:
        return False
    return True


@EDGE
@given(edge=at_a_threshold())
def test_an_accuracy_at_its_threshold_meets_it_and_one_answer_fewer_does_not(edge):
    """Kills a threshold compared with > (a file exactly at it failed) or with rounding that lets one
    answer too few pass, for min_accuracy and for min_correct."""
    n, k, threshold, exact, correct = edge
    answers = [f"P{i}" for i in range(n)]
    predicted = answers[:correct] + ["x"] * (n - correct)
    assert passes(judges.accuracy_summary, predicted, answers, {"min_accuracy": threshold}, "f") == \
        (Fraction(correct, n) >= exact)
    assert passes(judges.accuracy_summary, predicted, answers, {"min_correct": k}, "f") == (correct >= k)


@EDGE
@given(edge=at_a_threshold())
def test_a_file_agreeing_exactly_at_min_agreement_passes_and_one_answer_less_fails(edge):
    """Kills an agreement check that refuses a file exactly at min_agreement or lets one more differing
    answer through (floating-point rounding of (1 - agreement) * n)."""
    n, _, agreement, exact, agreeing = edge
    answers = [f"P{i}" for i in range(n)]
    file = "".join(f"{a}\n" for a in answers[:agreeing]) + "x\n" * (n - agreeing)
    ctx = scoring_context(snapshot_of({STAGE_FILE: file}), [(f"Q{i}", a) for i, a in enumerate(answers)],
                          mode="regenerate", thresholds={"min_agreement": agreement})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(judges, "regenerate", lambda ctx, stage, vocabulary: (answers, "regenerated"))
        passed = passes(judges.score_predictions, ctx, STAGE_FILE)
    assert passed == (Fraction(agreeing, n) >= exact)


# ---- sharing questions among processes (runtime/training/distributed.py) ---------------------------------

@EDGE
@given(count=st.integers(0, 40), world=st.integers(1, 12))
def test_every_question_is_answered_once_in_order_for_any_count_and_processes(count, world):
    """Kills a share that drops or repeats the questions past an even split (fewer questions than processes,
    a count the processes do not divide) or gathers them out of rank order."""
    questions = [f"Q{i}" for i in range(count)]
    shares = [distributed.share(questions, Processes(rank, world)) for rank in range(world)]
    assert [q for share in shares for q in share] == questions
    answers = [[f"A{q}" for q in share] for share in shares]

    def all_gather_object(every, mine):
        every[:] = answers
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(distributed.dist, "all_gather_object", all_gather_object)
        for rank in range(world):
            assert distributed.gathered(answers[rank], Processes(rank, world)) == [f"A{q}" for q in questions]


# ---- training batches (runtime/training/batches.py) --------------------------------------------------------

def global_batches(size, batch_size, world, skip):
    """The global batches of one epoch from batch `skip` on, joined from every process's loader batches."""
    per_rank = []
    for rank in range(world):
        batches = EpochBatches(list(range(size)), batch_size, collate_fn=list, num_workers=0, rank=rank, world=world)
        batches.start_at(0, skip)
        length = len(batches)
        per_rank.append(list(batches))
        assert len(per_rank[-1]) == length == math.ceil(size / batch_size) - skip
    return [sorted(i for part in parts for i in part) for parts in zip(*per_rank)], per_rank


@EDGE
@given(size=st.integers(0, 40), batch_size=st.integers(1, 12), world=st.integers(1, 6), data=st.data())
def test_every_example_is_visited_once_in_file_order_in_the_same_global_batches(size, batch_size, world, data):
    """Kills a sampler that drops the last partial batch, repeats or skips an example, takes another
    process's share, or makes global batches that depend on the number of processes or the resume point;
    and a combination the processes cannot share accepted, or refused in more than one line."""
    accepted = batch_size % world == 0 and not 0 < size % batch_size < world
    if not accepted:
        with pytest.raises(ValueError) as refused:
            EpochBatches(list(range(size)), batch_size, collate_fn=list, num_workers=0, world=world)
        assert "\n" not in str(refused.value)
        return
    skip = data.draw(st.integers(0, math.ceil(size / batch_size)))
    joined_batches, per_rank = global_batches(size, batch_size, world, skip)
    starts = range(skip * batch_size, size, batch_size)
    assert joined_batches == [list(range(start, min(start + batch_size, size))) for start in starts]
    for rank, batches in enumerate(per_rank):
        assert batches == [list(range(start, min(start + batch_size, size)))[rank::world] for start in starts]


@pytest.mark.parametrize("batch_size", [0, -4])
def test_a_batch_size_below_one_is_refused_in_one_line(batch_size):
    """Kills a zero batch size reaching a division (ZeroDivisionError) or the DataLoader's own traceback."""
    with pytest.raises(ValueError, match=f"^the batch size {batch_size} is not a positive number$"):
        EpochBatches(list(range(4)), batch_size, collate_fn=list, num_workers=0)


# ---- decoding (runtime/decoding/) ----------------------------------------------------------------------

DECODE_BLOCK, LATENTS = 40, 4
DECODE_LETTERS = "abcdefgh"
DECODE_VOCABULARY = types.SimpleNamespace(MASK_CHAR=MASK_CHAR, PAD_CHAR=PAD_CHAR,
                                          itos=dict(enumerate(PAD_CHAR + MASK_CHAR + DECODE_LETTERS)))
DECODE_VOCABULARY.stoi = {c: i for i, c in DECODE_VOCABULARY.itos.items()}
# prompt lengths (question + MASK): one, around the latents, the longest that decodes uncropped (block - 31),
# one past it, and around the block
PROMPT_LENGTHS = [1, 2, LATENTS - 1, LATENTS, LATENTS + 1, DECODE_BLOCK - 32, DECODE_BLOCK - 31, DECODE_BLOCK - 30,
                  DECODE_BLOCK - 1, DECODE_BLOCK, DECODE_BLOCK + 1, 2 * DECODE_BLOCK + 3]
MODELS = {}


def tiny_gpt(vocab_size, block_size=BLOCK_SIZE, **extra):
    """A one-layer GPT of 8 dimensions."""
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size, block_size, n_layer=1, n_head=2, n_embd=8, **extra))


def decoding_model(variant):
    """A tiny GPT of `variant` with weights spread so that its answers differ and some end at a MASK (built once)."""
    if variant not in MODELS:
        extra = dict(perceiver=True, bottleneck_dim=LATENTS) if variant == "perceiver" else {}
        model = tiny_gpt(len(DECODE_VOCABULARY.stoi), DECODE_BLOCK, **extra).eval()
        noise = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(0.5 * torch.randn(parameter.shape, generator=noise))
        MODELS[variant] = model
    return MODELS[variant]


QUESTIONS_AT_THE_EDGES = [(letters * 11)[:length - 1] for length in PROMPT_LENGTHS for letters in ("abcdefgh", "hhgag")]
ANSWERS = {}


def one_at_a_time(variant, question):
    """The answer of submission.utils.sample's loop, which crops the context to its last block_size ids."""
    if (variant, question) not in ANSWERS:
        prompt = torch.tensor([[DECODE_VOCABULARY.stoi[c] for c in question + MASK_CHAR]])
        completion = "".join(DECODE_VOCABULARY.itos[int(i)] for i in sample(decoding_model(variant), prompt, 32)[0])
        ANSWERS[variant, question] = prediction_from_completion(completion, MASK_CHAR)
    return ANSWERS[variant, question]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(questions=st.lists(st.sampled_from(QUESTIONS_AT_THE_EDGES), max_size=6),
       variant=st.sampled_from(["vanilla", "perceiver"]), batch_size=st.integers(1, 4), stop_at_mask=st.booleans())
def test_batched_answers_equal_the_one_at_a_time_loop_at_every_prompt_length(questions, variant, batch_size,
                                                                           stop_at_mask):
    """Kills a batched decoder that differs from sample at a prompt of one character, at the latents'
    edge, at the longest prompt decoded uncropped or one past it, or past the block (where sample keeps
    the LAST block_size characters), and for no question at all."""
    assert predict_places(decoding_model(variant), questions, DECODE_VOCABULARY, "cpu", batch_size,
                          stop_at_mask) == [one_at_a_time(variant, q) for q in questions]


def test_greedy_decoding_runs_up_to_the_block_and_refuses_one_past_it():
    """Kills a limit of greedy_decode one short (a prompt that fits refused) or one long (positions past
    the block)."""
    model = decoding_model("vanilla")
    steps = 5
    prompt = [2 + i % len(DECODE_LETTERS) for i in range(DECODE_BLOCK - steps + 1)]
    expected = sample(model, torch.tensor([prompt]), steps)[0].tolist()
    assert greedy_decode(model, [prompt, prompt[:1]], steps)[0] == expected
    with pytest.raises(AssertionError, match="needs cropping"):
        greedy_decode(model, [prompt + [2]], steps)


# ---- the command line (runtime/command_line.py) and seeds (runtime/seeds.py) --------------------------------

def parsed(*argv):
    return command_line.parse_args(["--function", "evaluate", "--variant", "perceiver", *argv])


@pytest.mark.parametrize("option, refused, accepted", [
    *[(f"--{name}", "0", "1") for name in ("n_layer", "n_head", "n_embd", "max_epochs", "batch_size",
                                           "eval_batch_size", "checkpoint_every")],
    ("--bottleneck_dim", "0", "1"), ("--bottleneck_dim", str(BLOCK_SIZE + 1), str(BLOCK_SIZE)),
    ("--seed", "-1", "0"), ("--seed", str(SEED_RANGE), str(SEED_RANGE - 1)),
    ("--dropout", "-0.01", "0"), ("--dropout", "1.01", "1"), ("--dropout", "nan", "0.5"),
])
def test_each_number_is_accepted_at_its_limit_and_refused_one_past_it(capsys, option, refused, accepted):
    """Kills a number that reaches the run past its limit (n_head 0 divides by zero, batch_size 0 and
    eval_batch_size 0 end in tracebacks, a bottleneck past the block, a seed numpy refuses, a dropout
    torch refuses), and a limit that refuses its own edge."""
    assert getattr(parsed(option, accepted), option[2:]) == float(accepted)
    with pytest.raises(SystemExit) as exit:
        parsed(option, refused)
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert exit.value.code == 2 and len(errors) == 1 and f"error: argument {option}: {refused} is " in errors[0]


@pytest.mark.parametrize("text, seed", [("0\n", 0), (f"{SEED_RANGE - 1}\r\n", SEED_RANGE - 1), (" 7 ", 7),
                                        ("-1\n", None), (f"{SEED_RANGE}\n", None), ("", None), ("x\n", None)])
def test_a_recorded_seed_is_read_within_its_range_and_refused_outside(tmp_path, text, seed):
    """Kills a resumed run taking a recorded seed numpy cannot take (negative, too large) or crashing on an
    empty or garbled seed.txt."""
    path_of(tmp_path, seeds.SEED_FILE, text)
    if seed is not None:
        assert recorded_seed(str(tmp_path)) == seed
        return
    with pytest.raises(InputError, match=f"^{tmp_path}/seed.txt does not hold a seed: resume with the run's --seed$"):
        recorded_seed(str(tmp_path))


def test_a_seed_txt_that_cannot_be_read_is_refused_in_one_line(tmp_path):
    """Kills a traceback for a seed.txt that is a folder (or otherwise unreadable)."""
    (tmp_path / seeds.SEED_FILE).mkdir()
    with pytest.raises(InputError, match=f"^cannot read {tmp_path}/seed.txt \\(Is a directory\\): resume with"):
        recorded_seed(str(tmp_path))


@pytest.mark.parametrize("seed", [0, SEED_RANGE - 1])
def test_the_seeds_at_both_ends_of_the_range_round_trip(tmp_path, seed):
    """Kills a recorded seed cut, offset or refused at the ends of its range."""
    record_seed(str(tmp_path), seed)
    assert recorded_seed(str(tmp_path)) == seed


# ---- the duration estimate (runtime/training/duration.py) ----------------------------------------------------

@pytest.mark.parametrize("size, hours, advice", [(64, 1.0, False), (65, 1.0, False), (64, 1.001, True)])
def test_the_estimate_is_said_once_and_advises_only_past_an_hour(monkeypatch, capsys, size, hours, advice):
    """Kills an estimate that counts the last partial batch wrong, is said more than once, or advises a
    GPU for a run of exactly an hour."""
    steps = 2 * math.ceil(size / 32)  # two epochs of batches of 32
    clock = iter([0.0, 3 * hours * 3600 / steps])  # the first step starts the clock, the fourth reads it
    monkeypatch.setattr(duration.time, "perf_counter", lambda: next(clock))
    trainer = types.SimpleNamespace(config=types.SimpleNamespace(max_epochs=2, batch_size=32),
                                    train_dataset=range(size), device="cpu")
    estimate = duration.DurationEstimate(after_steps=3)
    for _ in range(10):
        estimate(trainer, "step")
        estimate(trainer, "epoch")
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and f"the {steps} steps of this run take about {hours:.1f} hours" in said[0]
    assert said[0].endswith("train for grading on a GPU") == advice
