#!/usr/bin/env python3
"""
The autograder of the assignment "pretrained Transformers and knowledge access".

    python grader.py                 run every test (hidden ones need a hidden bundle)
    python grader.py 1e-0-basic      run one test; `python grader.py 1e` runs part (e)
    python grader.py --json results.json --hidden BUNDLE_DIR     as the grading server does

Basic tests check the trainer configurations, the span-corruption
properties and that the perceiver is one; hidden tests compare the vanilla
model with the reference solution and score predictions regenerated from the
submitted parameters against the instructors' labels. Each test below is
one function: it asks probes (which run inside a fresh sandboxed process with
the submission imported, or in a trusted process with the bundle's
reference) for plain data, and judges that data here. Each test's points
depend only on its own part's code and files. The machinery lives in
src/grading/.
"""

import functools
import math
import os
import random
import statistics
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))

from grading import BundleError, check, graded, main, probe  # noqa: E402

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
# What the config tests grade: the settings that change the trained model (not num_workers or
# ckpt_path), with the trainer's own defaults for those the handout leaves alone.
TRAINER_DEFAULTS = dict(betas=(0.9, 0.95), grad_norm_clip=1.0, weight_decay=0.1)
CONFIG_FIELDS = ("max_epochs", "batch_size", "learning_rate", "betas", "grad_norm_clip", "weight_decay",
                 "lr_decay", "warmup_tokens", "final_tokens")

# Default thresholds, keyed by prediction file: the course's own graders' figures (Winter 2024).
# A hidden bundle's thresholds.json overrides them; min_agreement (default below) is the share of
# the submitted file's answers that must equal those regenerated from the submitted parameters.
THRESHOLDS = {
    "vanilla.nopretrain.dev": {"min_correct": 1},
    "vanilla.nopretrain.test": {"min_correct": 1},
    "vanilla.pretrain.dev": {"min_accuracy": 0.10},
    "vanilla.pretrain.test": {"min_accuracy": 0.09},
    "perceiver.pretrain.dev": {"min_accuracy": 0.024},
    "perceiver.pretrain.test": {"min_accuracy": 0.02},
}
MIN_AGREEMENT = 0.85  # measured: see the README, "The hidden bundle"
GRADED_SIZE = dict(GRADED_MODEL, block_size=BLOCK_SIZE, bottleneck_dim=BOTTLENECK_DIM)

# The functions students write, with the handout's part of each, as tracebacks name them.
STUDENT_FUNCTIONS = {
    "initialize_vanilla_model": "c", "train": "c", "finetune": "c and f",
    "CharCorruptionDataset.__getitem__": "e", "pretrain": "f", "initialize_perceiver_model": "g",
    "DownProjectBlock.__init__": "g", "DownProjectBlock.forward": "g",
    "UpProjectBlock.__init__": "g", "UpProjectBlock.forward": "g",
}

SPAN_EXAMPLES = 1000
SPAN_SEED = 224
MAX_TRUNCATION = int(BLOCK_SIZE * 7 / 8)
OLD_MAX_TRUNCATION = int(BLOCK_SIZE * 3 / 4)  # an older handout's bound, a known mistake
CAUSALITY_POSITIONS = (10, 40, 100)  # below and above the bottleneck
LOGIT_COLUMNS = 8
FINGERPRINT_SEED = 5

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


# Probes: these run inside the sandbox, with the submission imported as `sub`
# (or in the trusted process, with the bundle's reference as `sub`).

class PartFailure(Exception):
    """Student code that is unwritten or does the wrong thing: one line naming the function and the part."""


class TrainsItself(BaseException):
    """Raised by the stand-in for train() while finetune() or pretrain() is being set up
    (a BaseException, so that an `except Exception` around the call cannot hide it)."""


def part_of(function):
    return f"part ({STUDENT_FUNCTIONS[function]})"


def unwritten(function, what):
    """The PartFailure of student code that is not written yet: `function` `what`."""
    return PartFailure(f"{part_of(function)}: {function} {what}: it is not written yet")


def written(value, function, what="returned None"):
    """`value`, or PartFailure naming `function` when it is None (its region still holds the placeholder)."""
    if value is None:
        raise unwritten(function, what)
    return value


def raised_in(error, package_dir):
    """The innermost function of the submission's files in the traceback of `error`, or None."""
    names = [getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
             for frame, _ in traceback.walk_tb(error.__traceback__)
             if os.path.abspath(frame.f_code.co_filename).startswith(package_dir)]
    return names[-1] if names else None


def reported(body):
    """
    A probe body whose failures in student code come back as data: {"value": ...}
    or {"failure": one line naming the function and the part, "traceback": ...}.
    """
    @functools.wraps(body)
    def run(sub, **kwargs):
        try:
            return {"value": body(sub, **kwargs)}
        except PartFailure as failure:
            return {"failure": str(failure), "traceback": ""}
        except NotImplementedError as error:
            function = raised_in(error, os.path.dirname(os.path.abspath(sub.__file__)))
            line = (f"{part_of(function)}: {function} raises NotImplementedError: it is not written yet"
                    if function in STUDENT_FUNCTIONS else "some of your code raises NotImplementedError")
            return {"failure": line, "traceback": traceback.format_exc(limit=-2)}
    return run


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
@reported
def corruption_examples(sub, corpus_path, block_size, count, seed):
    """`count` seeded examples of CharCorruptionDataset over the corpus, as ids, with the vocabulary."""
    import torch
    with open(corpus_path, encoding="utf-8") as f:
        dataset = sub.CharCorruptionDataset(f.read(), block_size)
    random.seed(seed)
    torch.manual_seed(seed)
    examples = []
    for i in range(count):
        item = written(dataset[i % len(dataset)], "CharCorruptionDataset.__getitem__")
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise TypeError(f"CharCorruptionDataset.__getitem__ should return (x, y), not {item!r:.60}")
        x, y = item
        examples.append({"index": i % len(dataset), "x": ids(x), "y": ids(y),
                         "types": [str(getattr(t, "dtype", type(t).__name__)) for t in (x, y)]})
    return {"itos": [[int(i), c] for i, c in dataset.itos.items()], "examples": examples}


def build_model(sub, variant, vocab_size, size, helper=False):
    """
    The submission's model of `variant` and `size` (GRADED_SIZE's fields): a perceiver from
    initialize_perceiver_model (part g); a vanilla GPT from the given GPT class, or with
    `helper` from initialize_vanilla_model (part c), so other parts never depend on part (c)'s helper.
    """
    mconf = sub.GPTConfig(vocab_size, size["block_size"], n_layer=size["n_layer"], n_head=size["n_head"],
                          n_embd=size["n_embd"])
    if variant == "perceiver":
        model = sub.initialize_perceiver_model(mconf, bottleneck_dim=size["bottleneck_dim"])
        return written(model, "initialize_perceiver_model")
    if helper:
        return written(sub.initialize_vanilla_model(mconf), "initialize_vanilla_model")
    return sub.GPT(mconf)


def refuse_training(sub):
    """
    Make train() and Trainer.train raise TrainsItself, so a helper that trains by
    itself is seen at once, whatever the machine's speed; returns the submission's train().
    """
    def refuse(*args, **kwargs):
        raise TrainsItself()
    own_train = sub.train
    sub.Trainer.train = refuse
    for module in {sys.modules[sub.finetune.__module__], sub}:
        if hasattr(module, "train"):
            module.train = refuse
    return own_train


def check_train(sub, train, model, trainer):
    """train(model, path, trainer) must call trainer.train() (stubbed here) and save the model's state_dict."""
    import torch
    calls = []
    type(trainer).train = lambda self, *args, **kwargs: calls.append(1)
    train(model, "written.params", trainer)
    if not calls:
        raise unwritten("train", "never calls trainer.train()")
    if not os.path.exists("written.params"):
        raise unwritten("train", "saved nothing to writing_params_path")
    saved = torch.load("written.params", map_location="cpu", weights_only=True)
    if not (isinstance(saved, dict) and set(saved) == set(model.state_dict())):
        raise PartFailure("part (c): train saved something other than the model's state_dict")


@probe
@reported
def trainer_configs(sub, corpus_path, names_path, block_size, variant, stages, trains=False):
    """
    The TrainerConfig fields and the training set that pretrain / finetune set up for a tiny model;
    with `trains`, train() is also run on the first stage's trainer, its training stubbed out.
    """
    import torch
    with open(corpus_path, encoding="utf-8") as f:
        dataset = sub.CharCorruptionDataset(f.read(), block_size)
    size = dict(block_size=block_size, n_layer=4, n_head=2, n_embd=16, bottleneck_dim=8)
    own_train = refuse_training(sub)
    observed = {}
    for stage in stages:
        torch.manual_seed(0)
        model, loaded, function = build_model(sub, variant, dataset.vocab_size, size, trains), None, stage.split("_")[0]
        try:
            if stage == "pretrain":
                tconf, trainer = written(sub.pretrain(dataset, block_size, model), "pretrain")
            elif stage == "finetune_without_pretraining":
                tconf, trainer = written(sub.finetune(None, names_path, dataset, block_size, model), "finetune")
            else:
                torch.manual_seed(1)
                pretrained = build_model(sub, variant, dataset.vocab_size, size).state_dict()
                torch.save(pretrained, "pretrained.params")
                tconf, trainer = written(sub.finetune("pretrained.params", names_path, dataset, block_size, model),
                                         "finetune")
                now = model.state_dict()
                loaded = all(name in now and torch.equal(now[name], value) for name, value in pretrained.items())
        except TrainsItself:
            raise PartFailure(f"{part_of(function)}: {function}() trains the model itself (it calls train()): "
                              f"return (tconf, trainer) and let the stage call train(), or every run trains twice")
        written(tconf, function, "returned no TrainerConfig")
        fields = {name: plain(getattr(tconf, name, None)) for name in CONFIG_FIELDS}
        observed[stage] = {"config": fields, "loaded": loaded,
                           "train_dataset": type(getattr(trainer, "train_dataset", None)).__name__}
        if trains and stage == stages[0]:
            check_train(sub, own_train, model, trainer)
    return observed


def set_weights(model):
    """Give every parameter a fixed value made from its name (LayerNorm weights near 1): equal names, equal weights."""
    import torch
    import zlib
    layer_norms = {name for name, m in model.named_modules() if isinstance(m, torch.nn.LayerNorm)}
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=torch.Generator().manual_seed(zlib.crc32(name.encode())))
            owner, _, kind = name.rpartition(".")
            parameter.copy_(1 + 0.1 * noise if owner in layer_norms and kind == "weight" else 0.05 * noise)


def fingerprint(model, vocab_size, seed):
    """
    Parameter names and shapes, the names that share another's tensor, and the
    logits (first columns) under fixed weights on a random block and on copies
    changed from each causality position on.
    """
    import torch
    model.eval()
    block = model.get_block_size()
    rng = random.Random(seed)
    base = [rng.randrange(2, vocab_size) for _ in range(block)]
    inputs = [base] + [base[:j] + [rng.randrange(2, vocab_size) for _ in range(block - j)]
                       for j in CAUSALITY_POSITIONS if j < block]
    set_weights(model)
    first = {}
    shared = [[name, first.setdefault(id(p), name)] for name, p in model.named_parameters(remove_duplicate=False)
              if first.setdefault(id(p), name) != name]
    with torch.no_grad():
        logits = [model(torch.tensor([tokens]))[0][0, :, :LOGIT_COLUMNS].tolist() for tokens in inputs]
    return {"parameters": [[name, list(p.shape)] for name, p in model.named_parameters()],
            "shared": shared, "logits": logits}


@probe
@reported
def model_fingerprint(sub, variant, size, vocab_size, seed, helper=False):
    """The fingerprint of the submission's model of `variant` and `size`."""
    return fingerprint(build_model(sub, variant, vocab_size, size, helper), vocab_size, seed)


def module_shapes(model, idx, d):
    """Run model(idx) and return, for every module called, the sequence lengths of its (B, T, d) inputs and output."""
    import torch
    seen, hooks = [], []

    def lengths(values):
        return [v.shape[-2] for v in values if isinstance(v, torch.Tensor) and v.dim() == 3 and v.shape[-1] == d]

    def record(module, args, kwargs, output):
        outputs = lengths(output if isinstance(output, (tuple, list)) else [output])
        seen.append({"inputs": lengths(list(args) + list(kwargs.values())), "outputs": outputs})

    for module in model.modules():
        hooks.append(module.register_forward_hook(record, with_kwargs=True))
    try:
        logits, _ = model(idx)
    finally:
        for hook in hooks:
            hook.remove()
    return logits, seen


def forward_failure(error, sub, what):
    """PartFailure naming where the perceiver's forward or backward failed."""
    where = raised_in(error, os.path.dirname(os.path.abspath(sub.__file__)))
    return PartFailure(f"part (g): the perceiver's {what} at block size raises {type(error).__name__}: "
                       f"{str(error).splitlines()[0] if str(error) else ''}" + (f" (in {where})" if where else ""))


@probe
@reported
def perceiver_anatomy(sub, vocab_size, seed):
    """What the handout fixes of the graded perceiver, observed: latents, block shapes, causality, gradients."""
    import torch
    torch.manual_seed(seed)
    model = build_model(sub, "perceiver", vocab_size, GRADED_SIZE)
    model.eval()
    m, d = BOTTLENECK_DIM, GRADED_MODEL["n_embd"]
    latents = [(name, p) for name, p in model.named_parameters() if tuple(p.shape) in ((1, m, d), (m, d))]
    rng = random.Random(seed)
    base = [rng.randrange(2, vocab_size) for _ in range(BLOCK_SIZE)]
    try:
        logits, seen = module_shapes(model, torch.tensor([base]), d)
        changed = [model(torch.tensor([base[:j] + [rng.randrange(2, vocab_size) for _ in range(BLOCK_SIZE - j)]]))[0]
                   for j in CAUSALITY_POSITIONS]
    except Exception as error:
        raise forward_failure(error, sub, "forward pass")
    drift = [float((logits[0, :j] - other[0, :j]).abs().max()) for j, other in zip(CAUSALITY_POSITIONS, changed)]
    try:
        model.train()
        _, loss = model(torch.tensor([base]), torch.tensor([base[1:] + [0]]))
        loss.backward()
    except Exception as error:
        raise forward_failure(error, sub, "backward pass")
    observed = [{"name": name, "shape": list(p.shape), "max": float(p.detach().abs().max()),
                 "std": float(p.detach().std()), "grad": p.grad is not None and bool(p.grad.abs().sum() > 0)}
                for name, p in latents]
    model.eval()
    with torch.no_grad():
        for _, p in latents:
            p.add_(torch.randn_like(p))
        moved = float((model(torch.tensor([base]))[0] - logits).abs().max()) if latents else 0.0
    return {
        "latents": observed,
        "down": any(BLOCK_SIZE in s["inputs"] and s["outputs"] == [m] for s in seen),
        "up": any(m in s["inputs"] and BLOCK_SIZE in s["inputs"] and s["outputs"] == [BLOCK_SIZE] for s in seen),
        "logits_length": int(logits.shape[1]),
        "drift": drift,
        "latents_move_logits": moved,
    }


class Vocabulary:
    """What decoding needs of a dataset: the vocabulary's stoi, itos and MASK character."""

    def __init__(self, characters):
        self.MASK_CHAR, self.PAD_CHAR = MASK_CHAR, PAD_CHAR
        self.itos = dict(enumerate(characters))
        self.stoi = {c: i for i, c in self.itos.items()}


@probe
@reported
def regenerated_predictions(sub, variant, size, params_path, vocabulary, questions, seed):
    """
    The fingerprint of `sub`'s model of `variant` and `size`, the shapes in the
    parameters file, whether they fit the model, and if so the model's
    greedy answers to `questions` with those parameters (the stages' batched,
    cached decoding), and whether the model is a perceiver.
    """
    import torch
    from stages.decoding import predict_places
    torch.manual_seed(seed)
    model = build_model(sub, variant, len(vocabulary), size)
    result = {"fingerprint": fingerprint(model, len(vocabulary), seed), "predictions": None}
    try:
        state = torch.load(params_path, map_location="cpu", weights_only=True)
        shapes = {name: list(tensor.shape) for name, tensor in state.items()}
    except Exception as error:
        return dict(result, unloadable=f"{type(error).__name__}: {str(error).strip().splitlines()[0][:200]}")
    result["shapes"] = shapes
    expected = {name: list(t.shape) for name, t in model.state_dict().items()}
    wrong = sorted(n for n in set(expected) | set(shapes) if expected.get(n) != shapes.get(n))
    result["misfit"] = [f"{n} is {shapes.get(n, 'missing')} there, {expected.get(n, 'absent')} in the model"
                        for n in wrong[:3]]
    if wrong:
        return result
    model.load_state_dict(state)
    vocabulary = Vocabulary(vocabulary)
    unknown = sorted({c for q in questions for c in q} - set(vocabulary.stoi))
    if unknown:
        raise ValueError(f"the hidden questions hold characters outside the vocabulary: {''.join(unknown)!r}")
    with torch.no_grad():
        _, seen = module_shapes(model, torch.zeros(1, size["block_size"], dtype=torch.long), size["n_embd"])
    result["perceiver"] = any(size["bottleneck_dim"] in s["outputs"] for s in seen)
    result["predictions"] = predict_places(model, questions, vocabulary, "cpu")
    return result


# Judging helpers: these run in the grading process, on the probes' plain data.

def answered(result):
    """The value of a @reported probe, or a failure whose first line names the unwritten function and part."""
    check("failure" in result or "value" in result, "the probe's answer is malformed")
    if "failure" in result:
        check(False, result["failure"] + ("\n" + result["traceback"] if result["traceback"] else ""))
    return result["value"]


def same_setting(got, want):
    """Whether a config value `got` is the expected `want` (numbers compared with a relative tolerance)."""
    if isinstance(want, bool):
        return isinstance(got, (bool, int)) and bool(got) == want
    if isinstance(want, (tuple, list)):
        return isinstance(got, list) and len(got) == len(want) and all(map(same_setting, got, want))
    return isinstance(got, (int, float)) and not isinstance(got, bool) and math.isclose(got, want, rel_tol=1e-9)


def judge_configs(ctx, variant, stages, trains=False):
    """Check each stage's TrainerConfig (and, when pretrained, the loaded parameters) against the table."""
    corpus_path, names_path, documents = write_biographies(ctx.scratch)
    block_size = 64
    observed = answered(ctx.run(trainer_configs, corpus_path=corpus_path, names_path=names_path,
                                block_size=block_size, variant=variant, stages=stages, trains=trains))
    problems = []
    for stage in stages:
        expected = dict(GRADED_CONFIGS[stage], **TRAINER_DEFAULTS, final_tokens=200 * documents * block_size)
        seen = observed[stage]
        problems += [f"{stage}: {field} is {seen['config'][field]!r}, expected {expected[field]!r}"
                     for field in CONFIG_FIELDS if not same_setting(seen["config"][field], expected[field])]
        wanted_dataset = "CharCorruptionDataset" if stage == "pretrain" else "NameDataset"
        if seen["train_dataset"] != wanted_dataset:
            problems.append(f"{stage}: the trainer trains on a {seen['train_dataset']}, expected a {wanted_dataset}")
        if seen["loaded"] is False:
            problems.append(f"{stage}: the model does not hold the parameters read from reading_params_path")
    check(not problems, f"{variant} model: " + "; ".join(problems))


def causal_drift(logits):
    """For each causality position j: the largest change of the logits before j when the tokens from j change."""
    base = logits[0]
    return [(j, max(abs(a - b) for row, other in zip(base[:j], changed[:j]) for a, b in zip(row, other)))
            for j, changed in zip(CAUSALITY_POSITIONS, logits[1:])]


def fingerprint_differences(seen, want):
    """Why the model fingerprinted as `seen` does not compute the reference's function (`want`); [] when it does."""
    if seen["shared"]:
        return ["modules are shared between blocks (" + "; ".join(f"{a} is {b}" for a, b in seen["shared"][:3])
                + "): the reference has a module of its own in each block"]
    got, expected = dict(map(tuple, seen["parameters"])), dict(map(tuple, want["parameters"]))
    wrong = sorted(f"{n}: {got.get(n, 'missing')} instead of {expected.get(n, 'nothing')}"
                   for n in set(got) | set(expected) if got.get(n) != expected.get(n))
    if wrong:
        return [f"parameters differ from the reference's: {'; '.join(wrong[:6])}"]
    drift = max(abs(a - b) for rows, other in zip(seen["logits"], want["logits"])
                for row, row_ref in zip(rows, other) for a, b in zip(row, row_ref))
    if drift > 1e-4:
        return [f"with the same weights the logits differ from the reference's by {drift:.3g}"]
    return []


def xavier_bounds(shape):
    """torch's xavier_uniform_ bound for a tensor of `shape`, and for the (m, d) matrix the handout names."""
    receptive = math.prod(shape[2:])
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    return math.sqrt(6 / (fan_in + fan_out)), math.sqrt(6 / (shape[-2] + shape[-1]))


def judge_perceiver(anatomy):
    """Check the observed perceiver against what the handout fixes (layer-norm and residual placement are free)."""
    m, d, n = BOTTLENECK_DIM, GRADED_MODEL["n_embd"], BLOCK_SIZE
    check(anatomy["latents"] or anatomy["down"], "part (g): initialize_perceiver_model builds a GPT without down "
          "and up blocks: set mconf.perceiver = True")
    check(anatomy["latents"], f"part (g): the perceiver has no learnable C of shape (m, d) = ({m}, {d}) "
          f"(or (1, {m}, {d})): the down block's queries come from it")
    check(anatomy["down"], f"part (g): no block gives m = {m} positions from the {n} inputs: the down block's "
          f"queries come from C, its keys and values from the input")
    check(anatomy["up"], f"part (g): no block gives the {n} positions back from the {m} latents and the input: "
          f"the up block's queries come from the input X, its keys and values from the previous layer's output")
    check(anatomy["logits_length"] == n, f"part (g): the perceiver gives {anatomy['logits_length']} positions of "
          f"logits for {n} inputs")
    for latent in anatomy["latents"]:
        bound = max(xavier_bounds(latent["shape"])) * 1.001
        uniform = 0.5 <= latent["std"] / max(latent["max"], 1e-12) <= 0.65
        check(latent["max"] <= bound and uniform, f"part (g): {latent['name']} should start Xavier-uniform "
              f"(within +-{bound:.4f}, evenly spread), but its largest entry is {latent['max']:.4f} and its "
              f"spread {latent['std']:.4f}")
        check(latent["grad"], f"part (g): no gradient reaches {latent['name']}: C must feed the down block's queries")
    for j, drift in zip(CAUSALITY_POSITIONS, anatomy["drift"]):
        check(drift <= 1e-4, f"part (g): the perceiver is not causal: changing the tokens from position {j} on "
                             f"changes the logits before it (by up to {drift:.3g})")
    check(anatomy["latents_move_logits"] > 1e-6, "part (g): the output does not depend on the latents: the up "
          "block's keys and values come from the previous layer's output")


# The prediction files: each made from one parameters file by one stage.
PREDICTIONS = {
    "vanilla.nopretrain.dev": ("vanilla.model.params", "vanilla", "birth_dev.tsv"),
    "vanilla.nopretrain.test": ("vanilla.model.params", "vanilla", "birth_test.tsv"),
    "vanilla.pretrain.dev": ("vanilla.finetune.params", "vanilla", "birth_dev.tsv"),
    "vanilla.pretrain.test": ("vanilla.finetune.params", "vanilla", "birth_test.tsv"),
    "perceiver.pretrain.dev": ("perceiver.finetune.params", "perceiver", "birth_dev.tsv"),
    "perceiver.pretrain.test": ("perceiver.finetune.params", "perceiver", "birth_test.tsv"),
}
PARAMS_STAGES = {"vanilla.model.params": "vanilla_finetune_without_pretrain",
                 "vanilla.finetune.params": "vanilla_finetune_with_pretrain",
                 "perceiver.finetune.params": "perceiver_finetune_with_pretrain"}


def accuracy_summary(predicted, answers, threshold, what):
    """Check `predicted` against the answers and the threshold; returns the summary."""
    correct = sum(p.strip() == a for p, a in zip(predicted, answers))
    accuracy = correct / len(answers)
    summary = f"{correct} of {len(answers)} correct ({100 * accuracy:.1f}%)"
    needed = []
    if accuracy < threshold.get("min_accuracy", 0):
        needed.append(f"at least {100 * threshold['min_accuracy']:g}%")
    if correct < threshold.get("min_correct", 0):
        needed.append(f"at least {threshold['min_correct']:g} correct")
    check(not needed, f"{what}: {summary}; needed {' and '.join(needed)}")
    return summary


def regenerate(ctx, key, vocabulary):
    """The predictions regenerated from the submitted parameters of prediction file `key`, and how they were made."""
    params_file, variant, labels_file = PREDICTIONS[key]
    bundle = ctx.require_bundle()
    if bundle.reference is None or not vocabulary:
        raise BundleError("regenerating predictions needs reference/ and vocabulary.json "
                          "(or grading.json {\"predictions\": \"files\"})")
    params = ctx.params(params_file, PARAMS_STAGES[params_file])
    size, questions = bundle.model or GRADED_SIZE, ctx.questions(labels_file)
    request = dict(variant=variant, size=size, vocabulary=vocabulary, questions=questions, seed=FINGERPRINT_SEED)
    reference = answered(ctx.run_reference(regenerated_predictions, params_path=params, **request))
    check("unloadable" not in reference, f"{params_file} cannot be read: {reference.get('unloadable')}")
    m, d = size["bottleneck_dim"], size["n_embd"]
    check(variant != "perceiver" or any(s in ([1, m, d], [m, d]) for s in reference["shapes"].values()),
          f"{params_file} holds no bottleneck of shape ({m}, {d}): these are not a perceiver's parameters "
          f"(initialize_perceiver_model must set mconf.perceiver = True)")
    submitted = ctx.run(model_fingerprint, variant=variant, size=size, vocab_size=len(vocabulary),
                        seed=FINGERPRINT_SEED)
    differences = (["the parameters do not fit the reference's model: " + "; ".join(reference["misfit"])]
                   if reference["misfit"] else [])
    differences += (fingerprint_differences(submitted["value"], reference["fingerprint"]) if "value" in submitted
                    else [submitted["failure"]])
    if not differences:
        return reference["predictions"], f"regenerated from {params_file} with the reference's model"
    own = answered(ctx.run(regenerated_predictions, params_path=ctx.shared(params), **request))
    check("unloadable" not in own, f"{params_file} cannot be read: {own.get('unloadable')}")
    check(not own["misfit"], f"{params_file} does not fit the submitted model: " + "; ".join(own["misfit"]))
    check(variant != "perceiver" or own["perceiver"], "part (g): initialize_perceiver_model builds a GPT without "
          "down and up blocks: set mconf.perceiver = True")
    return own["predictions"], (f"regenerated from {params_file} with the submitted model's code, in the sandbox, "
                                f"because {differences[0]}")


def prediction_score(ctx, predictions_file, stage, labels_file, threshold_key):
    """
    Score a prediction file: in "regenerate" mode (the default) the score is that of the
    predictions regenerated from the submitted parameters, and the file must agree with them;
    in "files" mode the file is scored as it is (a perceiver's only if the submission builds one).
    """
    predicted = ctx.predictions(predictions_file, stage)
    bundle = ctx.require_bundle()
    answers = ctx.answers(labels_file)
    check(answers, f"the hidden {labels_file} has no questions")
    check(len(predicted) == len(answers),
          f"{predictions_file} has {len(predicted)} predictions for {len(answers)} questions in {labels_file}")
    threshold = ctx.threshold(threshold_key)
    if bundle.predictions == "files":
        if threshold_key.startswith("perceiver"):
            judge_perceiver(answered(ctx.run(perceiver_anatomy, vocab_size=256, seed=FINGERPRINT_SEED)))
        return accuracy_summary(predicted, answers, threshold, predictions_file)
    regenerated, how = regenerate(ctx, threshold_key, bundle.vocabulary)
    summary = accuracy_summary(regenerated, answers, threshold, f"{predictions_file} ({how})")
    differ = sum(p.strip() != r.strip() for p, r in zip(predicted, regenerated))
    needed = threshold.get("min_agreement", MIN_AGREEMENT)
    check(differ <= (1 - needed) * len(answers) + 1e-9,
          f"{predictions_file}: {differ} of {len(answers)} answers differ from those {how}; at most "
          f"{math.floor((1 - needed) * len(answers) + 1e-9)} may ({100 * needed:g}% agreement)")
    return f"{summary}; {how}; the file agrees on {len(answers) - differ} of {len(answers)}"


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

    def pieces(self):
        """(prefix, suffix, masked) of `prefix MASK suffix MASK masked [MASK] PAD...`, or None."""
        pieces = self.text.rstrip(PAD_CHAR).split(MASK_CHAR)
        if len(pieces) == 4 and pieces[3] == "":
            pieces.pop()
        return tuple(pieces) if len(pieces) == 3 else None

    def is_corruption(self):
        """Whether prefix + masked + suffix rebuilds the start of the example's own document."""
        pieces = self.pieces()
        return pieces is not None and self.document.startswith(pieces[0] + pieces[2] + pieces[1])

    def shown(self):
        return repr(self.text.rstrip(PAD_CHAR) + (PAD_CHAR + "..." if self.text.endswith(PAD_CHAR) else ""))


def span_examples(ctx):
    """The submission's seeded span-corruption examples over the grader's corpus, each a corruption of its document."""
    path, documents = write_span_corpus(ctx.scratch)
    data = answered(ctx.run(corruption_examples, corpus_path=path, block_size=BLOCK_SIZE, count=SPAN_EXAMPLES,
                            seed=SPAN_SEED))
    itos = {int(i): c for i, c in data["itos"]}
    examples = [SpanExample(raw, itos, documents) for raw in data["examples"]]
    for e in examples:
        check(e.is_corruption(), f"an example is not a span corruption of its own document (prefix MASK suffix "
                                 f"MASK masked_content [MASK] PAD..., where prefix + masked_content + suffix "
                                 f"rebuilds the start of the document): {e.shown()}")
    return examples


# The tests, in the handout's order.

@graded("1c-0-hidden", points=2, visibility="hidden", timeout=180)
def model_structure(ctx):
    """vanilla model: causal, and computes the reference's function"""
    bundle = ctx.require_bundle()
    request = dict(variant="vanilla", size=GRADED_SIZE, vocab_size=256, seed=FINGERPRINT_SEED, helper=True)
    seen = answered(ctx.run(model_fingerprint, **request))
    for j, drift in causal_drift(seen["logits"]):
        check(drift <= 1e-4, f"changing the tokens from position {j} on changes the logits before it "
                             f"(by up to {drift:.3g}): attention sees the future")
    if bundle.reference is None:
        return "causal; the bundle has no reference/ to compare the structure with"
    differences = fingerprint_differences(seen, answered(ctx.run_reference(model_fingerprint, **request)))
    check(not differences, f"the vanilla model is not the reference's: {'; '.join(differences)}")
    return "same parameters and outputs as the reference under the same weights; causal"


@graded("1c-1-basic", points=2, visibility="basic", timeout=60)
def finetune_config_without_pretraining(ctx):
    """finetune config without pretraining, and train() (vanilla)"""
    judge_configs(ctx, "vanilla", ["finetune_without_pretraining"], trains=True)


@graded("1d-0-hidden", points=2, visibility="hidden", timeout=300)
def dev_predictions_without_pretraining(ctx):
    """no pretraining: dev predictions, at least one correct"""
    return prediction_score(ctx, "vanilla.nopretrain.dev.predictions", "vanilla_eval_dev_without_pretrain",
                            "birth_dev.tsv", "vanilla.nopretrain.dev")


@graded("1d-1-hidden", points=4, visibility="hidden", timeout=300)
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
    check(max(lengths) > OLD_MAX_TRUNCATION,
          f"on long documents no example keeps more than {max(lengths)} characters: truncation should reach "
          f"int(block_size * 7/8) = {MAX_TRUNCATION} (3/4 of the block is an older handout's bound)")


@graded("1e-1-basic", points=5, visibility="basic", timeout=60)
def span_rearrangement(ctx):
    """span corruption: prefix MASK suffix MASK masked, then PADs"""
    for e in span_examples(ctx):
        check(PAD_CHAR not in e.text.rstrip(PAD_CHAR), f"PAD characters should come only at the end: {e.shown()}")


@graded("1e-2-basic", points=5, visibility="basic", timeout=60)
def span_shift(ctx):
    """span corruption: y is x shifted by one, both LongTensors"""
    for e in span_examples(ctx):
        check(e.types == ["torch.int64", "torch.int64"], f"x and y should be LongTensors, not {e.types}")
        check(len(e.x) == len(e.y) and len(e.x) in (BLOCK_SIZE - 1, BLOCK_SIZE),
              f"x and y should each hold block_size - 1 = {BLOCK_SIZE - 1} ids (block_size is accepted too), "
              f"not {len(e.x)} and {len(e.y)}")
        check(e.x[1:] == e.y[:-1], f"y should be x shifted left by one: {e.shown()}")


@graded("1e-3-basic", points=5, visibility="basic", timeout=60)
def span_masked_length(ctx):
    """span corruption: masked length about 1/4, random"""
    examples = span_examples(ctx)
    kept = [e.kept() for e in examples]
    masked = [len(e.pieces()[2]) for e in examples]
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


@graded("1f-1-hidden", points=5, visibility="hidden", timeout=300)
def vanilla_dev_predictions(ctx):
    """vanilla pretrained: dev accuracy"""
    return prediction_score(ctx, "vanilla.pretrain.dev.predictions", "vanilla_eval_dev_with_pretrain",
                            "birth_dev.tsv", "vanilla.pretrain.dev")


@graded("1f-2-hidden", points=8, visibility="hidden", timeout=300)
def vanilla_test_predictions(ctx):
    """vanilla pretrained: test accuracy"""
    return prediction_score(ctx, "vanilla.pretrain.test.predictions", "vanilla_eval_test_with_pretrain",
                            "birth_test.tsv", "vanilla.pretrain.test")


@graded("1g-0-basic", points=4, visibility="basic", timeout=90)
def perceiver_structure_and_config(ctx):
    """perceiver: a causal perceiver, and its finetune config"""
    judge_perceiver(answered(ctx.run(perceiver_anatomy, vocab_size=256, seed=FINGERPRINT_SEED)))
    judge_configs(ctx, "perceiver", ["finetune_with_pretraining"])


@graded("1g-1-hidden", points=5, visibility="hidden", timeout=300)
def perceiver_dev_predictions(ctx):
    """perceiver pretrained: dev accuracy"""
    return prediction_score(ctx, "perceiver.pretrain.dev.predictions", "perceiver_eval_dev_with_pretrain",
                            "birth_dev.tsv", "perceiver.pretrain.dev")


@graded("1g-2-hidden", points=5, visibility="hidden", timeout=300)
def perceiver_test_predictions(ctx):
    """perceiver pretrained: test accuracy"""
    return prediction_score(ctx, "perceiver.pretrain.test.predictions", "perceiver_eval_test_with_pretrain",
                            "birth_test.tsv", "perceiver.pretrain.test")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], tests_file=__file__, default_thresholds=THRESHOLDS,
                  preload=("torch", "numpy", "tqdm")))
