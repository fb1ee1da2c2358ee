"""
Parts (c) and (g), the models: probes that build the submission's model and
observe what it computes, and the judges that hold the observations against
the reference and the handout.

A model is compared with the reference by behaviour, not by names: its
parameter names and shapes, the modules it shares, and its logits when every
parameter is set from its name (set_weights), on one random block and on
copies changed from each of CAUSALITY_POSITIONS on (a causal model's logits
before position j do not move when the tokens from j change).

The perceiver is judged by what the handout fixes: a learnable C of shape
(m, d) or (1, m, d) that gradients reach, a block that gives m positions
from the input, one that gives the input's positions back, causality, and
(part g's configuration test only) C's Xavier-uniform start.
"""

import math
import os
import random

from assignment.facts import BLOCK_SIZE, BOTTLENECK_DIM, GRADED_MODEL, GRADED_SIZE
from assignment.not_written_yet import (PartFailure, error_line, not_the_model, part_of, reported,
                                        unimplemented_function, written)

from grading.context import check
from grading.registry import probe

CAUSALITY_POSITIONS = (10, 40, 100)  # below and above the bottleneck
LOGIT_COLUMNS = 8
FINGERPRINT_SEED = 5
PART_G = part_of('initialize_perceiver_model')


def build_model(sub, variant, vocab_size, size, helper=False):
    """
    (model, how): the submission's model of `variant` and `size` (GRADED_SIZE's
    fields). A perceiver comes from initialize_perceiver_model (part g), a RoPE
    model from initialize_rope_model with the model's configuration alone (every
    RoPE edition's starter accepts that call); a vanilla
    GPT from the GPT class, or with `helper` from initialize_vanilla_model (part c),
    so other parts never depend on part (c). Where GPT(config) fails (its
    constructor was changed outside the regions), the submission's own
    initialize_vanilla_model builds it, and `how` says so; else `how` is None.
    """
    def config():
        return sub.GPTConfig(vocab_size, size["block_size"], n_layer=size["n_layer"], n_head=size["n_head"],
                             n_embd=size["n_embd"])
    if variant == "perceiver":
        return written(sub.initialize_perceiver_model(config(), bottleneck_dim=size["bottleneck_dim"]),
                       "initialize_perceiver_model"), None
    if variant == "rope":
        return written(sub.initialize_rope_model(config()), "initialize_rope_model"), None
    if helper:
        return written(sub.initialize_vanilla_model(config()), "initialize_vanilla_model"), None
    try:
        return sub.GPT(config()), None
    except Exception as error:
        failed = error
    model = sub.initialize_vanilla_model(config())
    if model is None:
        raise failed
    return model, f"the model was built with initialize_vanilla_model, because GPT(config) raised {error_line(failed)}"


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
    """The fingerprint of the submission's model of `variant` and `size`, and how it was built."""
    model, how = build_model(sub, variant, vocab_size, size, helper)
    return dict(fingerprint(model, vocab_size, seed), built=how)


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
    where = unimplemented_function(error, os.path.dirname(os.path.abspath(sub.__file__)))
    return PartFailure(f"{PART_G}: the perceiver's {what} at block size raises {error_line(error)}"
                       + (f" (in {where})" if where else ""))


@probe
@reported
def perceiver_anatomy(sub, vocab_size, seed):
    """What the handout fixes of the graded perceiver, observed: latents, block shapes, causality, gradients."""
    import torch
    torch.manual_seed(seed)
    model, _ = build_model(sub, "perceiver", vocab_size, GRADED_SIZE)
    model.eval()
    m, d = BOTTLENECK_DIM, GRADED_MODEL["n_embd"]
    latents = [(name, p) for name, p in model.named_parameters() if tuple(p.shape) in ((1, m, d), (m, d))]
    rng = random.Random(seed)
    base = [rng.randrange(2, vocab_size) for _ in range(BLOCK_SIZE)]
    try:
        with torch.no_grad():
            logits, seen = module_shapes(model, torch.tensor([base]), d)
            changed = [model(torch.tensor([base[:j] + [rng.randrange(2, vocab_size)
                                                       for _ in range(BLOCK_SIZE - j)]]))[0]
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


# Judges: these run in the grading process, on the probes' plain data.

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


def judge_perceiver(anatomy):
    """Check that the observed model is a perceiver: C of shape (m, d), a down block, an up block, every position."""
    m, d, n = BOTTLENECK_DIM, GRADED_MODEL["n_embd"], BLOCK_SIZE
    check(anatomy["latents"] or anatomy["down"], not_the_model("perceiver"))
    check(anatomy["latents"], f"{PART_G}: the perceiver has no learnable C of shape (m, d) = ({m}, {d}) "
          f"(or (1, {m}, {d})): the down block's queries come from it")
    check(anatomy["down"], f"{PART_G}: no block gives m = {m} positions from the {n} inputs: the down block's "
          f"queries come from C, its keys and values from the input")
    check(anatomy["up"], f"{PART_G}: no block gives the {n} positions back from the {m} latents and the input: "
          f"the up block's queries come from the input X, its keys and values from the previous layer's output")
    check(anatomy["logits_length"] == n, f"{PART_G}: the perceiver gives {anatomy['logits_length']} positions of "
          f"logits for {n} inputs")


def xavier_bounds(shape):
    """torch's xavier_uniform_ bound for a tensor of `shape`, and for the (m, d) matrix the handout names."""
    receptive = math.prod(shape[2:])
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    return math.sqrt(6 / (fan_in + fan_out)), math.sqrt(6 / (shape[-2] + shape[-1]))


def judge_perceiver_as_specified(anatomy):
    """
    Check the rest of what the handout fixes of the perceiver (layer-norm and
    residual placement are free): C starts Xavier-uniform and gradients reach
    it, the output depends on it, and the whole model is causal.
    """
    for latent in anatomy["latents"]:
        bound = max(xavier_bounds(latent["shape"])) * 1.001
        spread = latent["std"] / max(latent["max"], 1e-12)  # sqrt(1/3) = 0.58 for a uniform start, ~0.27 for a normal
        if not 0.5 <= spread <= 0.65:
            kind = "a normal distribution (xavier_normal_ or randn?)" if spread < 0.5 else "not evenly spread"
            check(False, f"{PART_G}: {latent['name']} starts as {kind}: its largest entry is {latent['max']:.4f} "
                         f"and its standard deviation {latent['std']:.4f}; the handout asks for Xavier-uniform "
                         f"(nn.init.xavier_uniform_: evenly spread within +-{bound:.4f})")
        check(latent["max"] <= bound, f"{PART_G}: {latent['name']} should start Xavier-uniform (within "
                                      f"+-{bound:.4f}), but its largest entry is {latent['max']:.4f}")
        check(latent["grad"], f"{PART_G}: no gradient reaches {latent['name']}: C must feed the down block's queries")
    for j, drift in zip(CAUSALITY_POSITIONS, anatomy["drift"]):
        check(drift <= 1e-4, f"{PART_G}: the perceiver is not causal: changing the tokens from position {j} on "
                             f"changes the logits before it (by up to {drift:.3g})")
    check(anatomy["latents_move_logits"] > 1e-6, f"{PART_G}: the output does not depend on the latents: the up "
          "block's keys and values come from the previous layer's output")
