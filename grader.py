#!/usr/bin/env python3
"""
The autograder of the assignment "pretrained Transformers and knowledge access".

    python grader.py                 run every test (hidden ones need a hidden bundle)
    python grader.py 1e-0-basic      run one test; `python grader.py 1e` runs part (e)
    python grader.py --json results.json --hidden BUNDLE_DIR     as the grading server does

Basic tests check the trainer configurations and the span-corruption
properties; hidden tests compare the model with the reference solution and
score the prediction files against the instructors' labels. Each test below
is one function: it asks probes (which run inside a fresh sandboxed process
with the submission imported) for plain data, and judges that data here.
The machinery lives in src/grading/.
"""

import math
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))

from grading import check, graded, main, probe  # noqa: E402

PAD_CHAR = "\u25A1"
MASK_CHAR = "\u2047"

# The graded model (SPEC): block 128, 4 layers, 8 heads, 256 dims, perceiver bottleneck 32.
BLOCK_SIZE = 128
GRADED_MODEL = dict(n_layer=4, n_head=8, n_embd=256)
BOTTLENECK_DIM = 32

# The graded trainer configurations; final_tokens = 200 * len(pretrain_dataset) * block_size.
COMMON_CONFIG = dict(lr_decay=True, warmup_tokens=512 * 20, num_workers=4, ckpt_path=None)
GRADED_CONFIGS = {
    "finetune_without_pretraining": dict(max_epochs=75, batch_size=256, learning_rate=6e-4, **COMMON_CONFIG),
    "finetune_with_pretraining": dict(max_epochs=10, batch_size=256, learning_rate=6e-4, **COMMON_CONFIG),
    "pretrain": dict(max_epochs=650, batch_size=128, learning_rate=6e-3, **COMMON_CONFIG),
}
CONFIG_FIELDS = sorted(set(GRADED_CONFIGS["pretrain"]) | {"final_tokens"})

# Default thresholds, keyed by prediction file; a hidden bundle's thresholds.json overrides them.
THRESHOLDS = {
    "vanilla.nopretrain.dev": {"min_correct": 1},
    "vanilla.nopretrain.test": {"min_correct": 1},
    "vanilla.pretrain.dev": {"min_accuracy": 0.10},
    "vanilla.pretrain.test": {"min_accuracy": 0.09},
    "perceiver.pretrain.dev": {"min_accuracy": 0.06},
    "perceiver.pretrain.test": {"min_accuracy": 0.05},
}

SPAN_EXAMPLES = 1000
SPAN_SEED = 224
MAX_TRUNCATION = int(BLOCK_SIZE * 7 / 8)
CAUSALITY_POSITIONS = (10, 40, 100)  # below and above the bottleneck
LOGIT_COLUMNS = 8

PEOPLE = [("Ada Lovelace", "London"), ("Kofi Annan", "Kumasi"), ("Frida Kahlo", "Coyoacan"),
          ("Rabindranath Tagore", "Calcutta"), ("Marie Curie", "Warsaw"), ("Haruki Murakami", "Kyoto"),
          ("Chinua Achebe", "Ogidi"), ("Jorge Luis Borges", "Buenos Aires"), ("Ibn Battuta", "Tangier"),
          ("Astrid Lindgren", "Vimmerby"), ("Nelson Mandela", "Mvezo"), ("Oscar Wilde", "Dublin")]
WORDS = ("the of and in was born lived worked wrote poet painter singer river city north old new "
         "house school war year king queen family moved studied died famous great small island").split()


# Corpora the grader writes, so grading never depends on the data a student has.

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


def write_span_corpus(directory, count=240, seed=SPAN_SEED):
    """
    Documents of seeded words: half of them 112-125 characters long (so every
    truncation length is reachable and a whole one still fits a block with
    its three MASKs), half 4-111. Returns (path, documents).
    """
    rng = random.Random(seed)
    documents = []
    for i in range(count):
        length = rng.randint(MAX_TRUNCATION, BLOCK_SIZE - 3) if i % 2 == 0 else rng.randint(4, MAX_TRUNCATION - 1)
        text = rng.choice(WORDS).capitalize()
        while len(text) < length:
            text += rng.choice((" ", ", ", ". ")) + rng.choice(WORDS)
        documents.append(text[:length])
    path = os.path.join(directory, "corpus.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(documents))
    return path, documents


# Probes: these run inside the sandbox, with the submission imported as `sub`.

def ids(sequence):
    """A tensor or sequence of token ids as a list of ints."""
    return [int(v) for v in (sequence.tolist() if hasattr(sequence, "tolist") else sequence)]


def plain(value):
    """A JSON-ready form of a config value."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return repr(value)


@probe
def corruption_examples(sub, corpus_path, block_size, count, seed):
    """`count` seeded examples of CharCorruptionDataset over the corpus, as ids, with the vocabulary."""
    import torch
    with open(corpus_path, encoding="utf-8") as f:
        dataset = sub.CharCorruptionDataset(f.read(), block_size)
    random.seed(seed)
    torch.manual_seed(seed)
    examples = []
    for i in range(count):
        item = dataset[i % len(dataset)]
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise TypeError(f"CharCorruptionDataset.__getitem__ should return (x, y), not {item!r:.60}")
        x, y = item
        examples.append({"index": i % len(dataset), "x": ids(x), "y": ids(y),
                         "types": [str(getattr(t, "dtype", type(t).__name__)) for t in (x, y)]})
    return {"itos": [[int(i), c] for i, c in dataset.itos.items()], "examples": examples}


@probe
def trainer_configs(sub, corpus_path, names_path, block_size, variant, stages):
    """The TrainerConfig fields and the training set that pretrain / finetune set up for a tiny model."""
    import torch
    with open(corpus_path, encoding="utf-8") as f:
        dataset = sub.CharCorruptionDataset(f.read(), block_size)

    def tiny_model(seed):
        torch.manual_seed(seed)
        mconf = sub.GPTConfig(dataset.vocab_size, block_size, n_layer=4, n_head=2, n_embd=16)
        if variant == "perceiver":
            return sub.initialize_perceiver_model(mconf, bottleneck_dim=8)
        return sub.initialize_vanilla_model(mconf)

    observed = {}
    for stage in stages:
        model, loaded = tiny_model(0), None
        if stage == "pretrain":
            tconf, trainer = sub.pretrain(dataset, block_size, model)
        elif stage == "finetune_without_pretraining":
            tconf, trainer = sub.finetune(None, names_path, dataset, block_size, model)
        else:
            pretrained = tiny_model(1).state_dict()
            torch.save(pretrained, "pretrained.params")
            tconf, trainer = sub.finetune("pretrained.params", names_path, dataset, block_size, model)
            now = model.state_dict()
            loaded = all(name in now and torch.equal(now[name], value) for name, value in pretrained.items())
        fields = None if tconf is None else {
            name: plain(getattr(tconf, name, None)) for name in CONFIG_FIELDS}
        observed[stage] = {"config": fields, "loaded": loaded,
                           "train_dataset": type(getattr(trainer, "train_dataset", None)).__name__}
    return observed


@probe
def model_fingerprint(sub, vocab_size, seed):
    """Named parameter shapes, module types, and logits under fixed weights, of both graded models."""
    import torch
    import zlib
    rng = random.Random(seed)
    base = [rng.randrange(2, vocab_size) for _ in range(BLOCK_SIZE)]
    inputs = [base] + [base[:j] + [rng.randrange(2, vocab_size) for _ in range(BLOCK_SIZE - j)]
                       for j in CAUSALITY_POSITIONS]
    fingerprint = {}
    for variant in ("vanilla", "perceiver"):
        mconf = sub.GPTConfig(vocab_size, BLOCK_SIZE, **GRADED_MODEL)
        if variant == "perceiver":
            model = sub.initialize_perceiver_model(mconf, bottleneck_dim=BOTTLENECK_DIM)
        else:
            model = sub.initialize_vanilla_model(mconf)
        model.eval()
        layer_norms = {name for name, m in model.named_modules() if isinstance(m, torch.nn.LayerNorm)}
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                noise = torch.randn(parameter.shape, generator=torch.Generator().manual_seed(zlib.crc32(name.encode())))
                owner, _, kind = name.rpartition(".")
                parameter.copy_(1 + 0.1 * noise if owner in layer_norms and kind == "weight" else 0.05 * noise)
            logits = [model(torch.tensor([tokens]))[0][0, :, :LOGIT_COLUMNS].tolist() for tokens in inputs]
        fingerprint[variant] = {
            "parameters": [[name, list(p.shape)] for name, p in model.named_parameters()],
            "modules": [[name, type(m).__name__] for name, m in model.named_modules()],
            "logits": logits,
        }
    return fingerprint


# Judging helpers: these run in the grading process, on the probes' plain data.

def config_mismatches(observed, expected):
    """'field is X, expected Y' for each field of `observed` that differs from `expected`."""
    if observed is None:
        return ["no TrainerConfig was returned"]
    wrong = []
    for field, want in expected.items():
        got = observed.get(field)
        if want is None:
            same = got is None
        elif isinstance(want, bool):
            same = isinstance(got, (bool, int)) and bool(got) == want
        else:
            same = isinstance(got, (int, float)) and not isinstance(got, bool) and math.isclose(got, want, rel_tol=1e-9)
        if not same:
            wrong.append(f"{field} is {got!r}, expected {want!r}")
    return wrong


def judge_configs(ctx, variant, stages):
    """Check each stage's TrainerConfig (and, when pretrained, the loaded parameters) against the table."""
    corpus_path, names_path, documents = write_biographies(ctx.scratch)
    block_size = 64
    observed = ctx.run(trainer_configs, corpus_path=corpus_path, names_path=names_path,
                       block_size=block_size, variant=variant, stages=stages)
    problems = []
    for stage in stages:
        expected = dict(GRADED_CONFIGS[stage], final_tokens=200 * documents * block_size)
        seen = observed[stage]
        problems += [f"{stage}: {w}" for w in config_mismatches(seen["config"], expected)]
        wanted_dataset = "CharCorruptionDataset" if stage == "pretrain" else "NameDataset"
        if seen["train_dataset"] != wanted_dataset:
            problems.append(f"{stage}: the trainer trains on a {seen['train_dataset']}, expected a {wanted_dataset}")
        if seen["loaded"] is False:
            problems.append(f"{stage}: the model does not hold the parameters read from reading_params_path")
    check(not problems, f"{variant} model: " + "; ".join(problems))


class SpanExample:
    """One decoded example: its document, the full block string (x plus y's last character), x and y ids."""

    def __init__(self, raw, itos, documents):
        self.document = documents[raw["index"]]
        self.x, self.y, self.types = raw["x"], raw["y"], raw["types"]
        decode = lambda ids: "".join(itos.get(i, "?") for i in ids)  # noqa: E731
        self.text = decode(self.x) + decode(self.y[-1:])

    def kept(self):
        """How many characters of the document the example holds (everything but PAD and MASK)."""
        return sum(c not in (PAD_CHAR, MASK_CHAR) for c in self.text)

    def shown(self):
        return repr(self.text.rstrip(PAD_CHAR) + (PAD_CHAR + "..." if self.text.endswith(PAD_CHAR) else ""))


def span_examples(ctx):
    """The submission's seeded span-corruption examples over the grader's corpus."""
    path, documents = write_span_corpus(ctx.scratch)
    data = ctx.run(corruption_examples, corpus_path=path, block_size=BLOCK_SIZE, count=SPAN_EXAMPLES, seed=SPAN_SEED)
    itos = {int(i): c for i, c in data["itos"]}
    return [SpanExample(raw, itos, documents) for raw in data["examples"]]


def masked_part(text):
    """The masked content of `prefix MASK suffix MASK masked [MASK] PAD...`: what follows the last inner MASK."""
    pieces = text.rstrip(PAD_CHAR).split(MASK_CHAR)
    if pieces[-1] == "":
        pieces.pop()
    return pieces[-1] if len(pieces) >= 2 else None


def prediction_score(ctx, predictions_file, stage, labels_file, threshold_key):
    """Score a prediction file against the bundle's labels and its threshold; returns the summary."""
    predicted = ctx.predictions(predictions_file, stage)
    answers = ctx.answers(labels_file)
    check(answers, f"the hidden {labels_file} has no questions")
    check(len(predicted) == len(answers),
          f"{predictions_file} has {len(predicted)} predictions for {len(answers)} questions in {labels_file}")
    correct = sum(p.strip() == a for p, a in zip(predicted, answers))
    accuracy = correct / len(answers)
    threshold = ctx.threshold(threshold_key)
    summary = f"{correct} of {len(answers)} correct ({100 * accuracy:.1f}%)"
    needed = []
    if accuracy < threshold.get("min_accuracy", 0):
        needed.append(f"at least {100 * threshold['min_accuracy']:g}%")
    if correct < threshold.get("min_correct", 0):
        needed.append(f"at least {threshold['min_correct']:g} correct")
    check(not needed, f"{predictions_file}: {summary}; needed {' and '.join(needed)}")
    return summary


# The tests, in the handout's order.

@graded("1c-0-hidden", points=2, visibility="hidden", timeout=180)
def model_structure(ctx):
    """models equal the reference (parameters, modules, outputs) and are causal"""
    bundle = ctx.require_bundle()
    reference = ctx.run_reference(model_fingerprint, vocab_size=256, seed=5) if bundle.reference else None
    submitted = ctx.run(model_fingerprint, vocab_size=256, seed=5)
    for variant, seen in submitted.items():
        base = seen["logits"][0]
        for j, changed in zip(CAUSALITY_POSITIONS, seen["logits"][1:]):
            drift = max(abs(a - b) for row, other in zip(base[:j], changed[:j]) for a, b in zip(row, other))
            check(drift <= 1e-4, f"{variant}: changing the tokens from position {j} on changes the logits "
                                 f"before it (by up to {drift:.3g}): attention sees the future")
    if reference is None:
        return "causal; the bundle has no reference/ to compare the structure with"
    for variant, want in reference.items():
        seen = submitted[variant]
        for part in ("parameters", "modules"):
            got, expected = dict(seen[part]), dict(want[part])
            differences = sorted(f"{n}: {got.get(n, 'missing')} instead of {expected.get(n, 'nothing')}"
                                 for n in set(got) | set(expected) if got.get(n) != expected.get(n))
            check(not differences, f"{variant} {part} differ from the reference: " + "; ".join(differences[:6]))
        drift = max(abs(a - b) for rows, other in zip(seen["logits"], want["logits"])
                    for row, row_ref in zip(rows, other) for a, b in zip(row, row_ref))
        check(drift <= 1e-4, f"{variant}: with the same weights the logits differ from the reference's by {drift:.3g}")
    return "same parameters, modules and outputs as the reference; causal"


@graded("1c-1-basic", points=2, visibility="basic", timeout=60)
def finetune_config_without_pretraining(ctx):
    """finetune config without pretraining (vanilla)"""
    judge_configs(ctx, "vanilla", ["finetune_without_pretraining"])


@graded("1d-0-hidden", points=2, visibility="hidden", timeout=10)
def dev_predictions_without_pretraining(ctx):
    """no pretraining: dev predictions, at least one correct"""
    return prediction_score(ctx, "vanilla.nopretrain.dev.predictions", "vanilla_eval_dev_without_pretrain",
                            "birth_dev.tsv", "vanilla.nopretrain.dev")


@graded("1d-1-hidden", points=4, visibility="hidden", timeout=10)
def test_predictions_without_pretraining(ctx):
    """no pretraining: test predictions, at least one correct"""
    return prediction_score(ctx, "vanilla.nopretrain.test.predictions", "vanilla_eval_test_without_pretrain",
                            "birth_test.tsv", "vanilla.nopretrain.test")


@graded("1e-0-basic", points=5, visibility="basic", timeout=60)
def span_truncation_length(ctx):
    """span corruption: truncation length"""
    examples = span_examples(ctx)
    for e in examples:
        check(4 <= e.kept() <= min(MAX_TRUNCATION, len(e.document)),
              f"an example keeps {e.kept()} characters of a {len(e.document)}-character document; "
              f"truncation should keep between 4 and int(block_size * 7/8) = {MAX_TRUNCATION}: {e.shown()}")
    lengths = [e.kept() for e in examples if len(e.document) >= MAX_TRUNCATION]
    check(len(set(lengths)) >= 30 and max(lengths) - min(lengths) >= BLOCK_SIZE // 2,
          f"on long documents the truncated length should be random over [4, {MAX_TRUNCATION}], "
          f"but only {len(set(lengths))} lengths between {min(lengths)} and {max(lengths)} came up")


@graded("1e-1-basic", points=5, visibility="basic", timeout=60)
def span_rearrangement(ctx):
    """span corruption: prefix MASK suffix MASK masked, then PADs"""
    for e in span_examples(ctx):
        body = e.text.rstrip(PAD_CHAR)
        check(PAD_CHAR not in body, f"PAD characters should come only at the end: {e.shown()}")
        pieces = body.split(MASK_CHAR)
        if len(pieces) == 4 and pieces[3] == "":
            pieces.pop()
        check(len(pieces) == 3, f"expected prefix MASK suffix MASK masked_content [MASK]: {e.shown()}")
        prefix, suffix, masked = pieces
        rebuilt = prefix + masked + suffix
        check(e.document.startswith(rebuilt),
              f"prefix + masked_content + suffix should rebuild the start of the document: {e.shown()}")


@graded("1e-2-basic", points=5, visibility="basic", timeout=60)
def span_shift(ctx):
    """span corruption: y is x shifted by one, both LongTensors"""
    for e in span_examples(ctx):
        check(e.types == ["torch.int64", "torch.int64"], f"x and y should be LongTensors, not {e.types}")
        check(len(e.x) == len(e.y) == BLOCK_SIZE - 1,
              f"x and y should each hold block_size - 1 = {BLOCK_SIZE - 1} ids, not {len(e.x)} and {len(e.y)}")
        check(e.x[1:] == e.y[:-1], f"y should be x shifted left by one: {e.shown()}")


@graded("1e-3-basic", points=5, visibility="basic", timeout=60)
def span_masked_length(ctx):
    """span corruption: masked length about 1/4, random"""
    kept, masked = [], []
    for e in span_examples(ctx):
        part = masked_part(e.text)
        check(part is not None, f"no masked content after a MASK: {e.shown()}")
        kept.append(e.kept())
        masked.append(len(part))
    ratio = statistics.mean(masked) / statistics.mean(kept)
    check(0.2 <= ratio <= 0.3, f"the masked content averages {100 * ratio:.1f}% of the truncated length; "
                               f"it should be about a quarter")
    spread = statistics.pstdev(m - k / 4 for m, k in zip(masked, kept))
    check(spread >= 1.0, f"the masked length hardly varies (spread {spread:.2f} characters): it should be random")
    return f"masked content averages {100 * ratio:.1f}% of the truncated length"


@graded("1f-0-basic", points=7, visibility="basic", timeout=60)
def pretrain_and_finetune_configs(ctx):
    """pretrain config, and finetune config with pretraining (vanilla)"""
    judge_configs(ctx, "vanilla", ["pretrain", "finetune_with_pretraining"])


@graded("1f-1-hidden", points=5, visibility="hidden", timeout=10)
def vanilla_dev_predictions(ctx):
    """vanilla pretrained: dev accuracy"""
    return prediction_score(ctx, "vanilla.pretrain.dev.predictions", "vanilla_eval_dev_with_pretrain",
                            "birth_dev.tsv", "vanilla.pretrain.dev")


@graded("1f-2-hidden", points=8, visibility="hidden", timeout=10)
def vanilla_test_predictions(ctx):
    """vanilla pretrained: test accuracy"""
    return prediction_score(ctx, "vanilla.pretrain.test.predictions", "vanilla_eval_test_with_pretrain",
                            "birth_test.tsv", "vanilla.pretrain.test")


@graded("1g-0-basic", points=4, visibility="basic", timeout=60)
def perceiver_finetune_config(ctx):
    """perceiver finetune config with pretraining"""
    judge_configs(ctx, "perceiver", ["finetune_with_pretraining"])


@graded("1g-1-hidden", points=5, visibility="hidden", timeout=10)
def perceiver_dev_predictions(ctx):
    """perceiver pretrained: dev accuracy"""
    return prediction_score(ctx, "perceiver.pretrain.dev.predictions", "perceiver_eval_dev_with_pretrain",
                            "birth_dev.tsv", "perceiver.pretrain.dev")


@graded("1g-2-hidden", points=5, visibility="hidden", timeout=10)
def perceiver_test_predictions(ctx):
    """perceiver pretrained: test accuracy"""
    return prediction_score(ctx, "perceiver.pretrain.test.predictions", "perceiver_eval_test_with_pretrain",
                            "birth_test.tsv", "perceiver.pretrain.test")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], tests_file=__file__, default_thresholds=THRESHOLDS,
                  preload=("torch", "numpy", "tqdm")))
