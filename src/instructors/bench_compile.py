"""
Eager against torch.compile: the stages' training step over the first N
seeded batches of the real data, side by side in one run
(`./run.sh bench --parts compile --steps N`). Each path trains the graded
model from the same weights on the same batches; a row gives the median
seconds of a step after the first (the first is where compiling happens),
the first step's seconds, the graphs compiled, and the largest difference
of a step's loss from eager's.

The trimmed batches of the eager path change width from step to step, and
each new width recompiles until torch.compile makes the width symbolic
("compiled, trimmed widths"); a compilation symbolic from the start
("..., dynamic") and whole batches at the block's width, one static shape
("compiled, whole batches"), are timed beside it. The stages train eager:
docs/gpu.md has what this measured. The losses of the first step (the same
weights, the same batch) tell whether the ways compute the same; later ones
drift apart with the rounding.
"""

import statistics
import time

import torch
from tqdm import tqdm

from runtime.training.batches import EpochBatches
from runtime.training.fast_training import FastSteps, fused_adamw
from submission import Trainer, TrainerConfig, set_seed
from submission.trainer import optimizer_groups

WAYS = {  # name: FastSteps options
    'eager': dict(compile=False),
    'compiled, whole batches': dict(compile=True, trim_padding=False),
    'compiled, trimmed widths': dict(compile=True),
    'compiled, trimmed widths, dynamic': dict(compile=True, dynamic=True),
}


def graphs_compiled():
    """The graphs torch.compile has made in this process since the last reset."""
    import torch._dynamo  # torch's compiler: about two seconds to import, so only where the compile part runs
    return torch._dynamo.utils.counters['stats']['unique_graphs']


def timed_steps(make_model, dataset, shape, device, steps, precision, backend, seed, options):
    """(seconds of each step, loss of each step, graphs compiled) of `steps` stages' steps with
    FastSteps(**options) of a model from make_model() on the first seeded batches of `dataset`."""
    import torch._dynamo  # as in graphs_compiled
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    set_seed(seed)
    model = make_model().to(device).train()
    config = TrainerConfig(**shape)
    trainer = Trainer(model, None, None, config)
    trainer.device = device
    trainer.optimizer = fused_adamw(optimizer_groups(model, config.weight_decay), config, device)
    fast_steps = FastSteps(device, shape['batch_size'], precision, backend=backend, **options)
    batches = EpochBatches(dataset, shape['batch_size'], fast_steps.collate, 0, seed)
    seconds, losses = [], []
    while len(seconds) < steps:
        for batch in batches:
            started = time.perf_counter()
            losses.append(fast_steps(trainer, batch)[0].item())  # .item() waits for the device
            seconds.append(time.perf_counter() - started)
            if len(seconds) == steps:
                break
    return seconds, losses, graphs_compiled()


def compile_rows(make_model, datasets, device, steps, precision, backend, seed):
    """Table rows (measure, eager, compiled, eager/compiled, check) for each (name, dataset, shape)
    of `datasets`, `steps` steps each way."""
    rows = []
    for name, dataset, shape in datasets:
        runs = {}
        for way, options in tqdm(WAYS.items(), desc=f"eager and compiled, {name}"):
            runs[way] = timed_steps(make_model, dataset, shape, device, steps, precision, backend, seed, options)
        median = {way: statistics.median(seconds[1:] or seconds) for way, (seconds, _, _) in runs.items()}
        eager_losses = runs['eager'][1]

        def told(way):
            seconds, losses, graphs = runs[way]
            first, last = (abs(eager_losses[i] - losses[i]) / abs(eager_losses[i]) for i in (0, -1))
            return (f"{way}: first step {seconds[0]:.1f} s, {graphs} graphs; loss {first:.1e} from eager's "
                    f"(relative) at the first step, {last:.1e} at the last")
        for way in list(WAYS)[1:]:
            rows.append((f"{name} step s after the first, {steps} seeded batches, eager vs {way} ({backend})",
                         f"{median['eager']:.4f}", f"{median[way]:.4f}", median['eager'] / median[way], told(way)))
    return rows
