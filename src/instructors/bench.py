"""
The plain path against the fast path, side by side in one run on this machine:

    ./run.sh bench [--questions 500] [--steps 4] [--threads N] [--perceiver] [--parts train eval compile ...]

(what `./run.sh bench` runs). Rows of the table:

- training step on the graded model (block 128, 4 layers, 8 heads, 256 dims)
  for one pretraining batch (128 span-corruption examples) and one
  finetuning batch (256 questions): plain = written-out attention, the whole
  batch, PyTorch's default AdamW; fast = fused attention, the batch cut into
  length groups, fused AdamW. The two alternate, and before every timed step
  each is put back to the same weights and optimizer state, so every step
  computes the same loss; the median (and min-max) seconds, both losses.
  Dropout is off by default so that the losses can be compared (--dropout);
- dev evaluation of a graded model finetuned for --finetune_epochs (or --params):
  predict_places_plain (one question at a time) against predict_places
  (batched, key/value cache; median of 3 runs), stopping each row at its
  closing MASK and running all 32 steps, and whether the predictions are
  equal;
- span-corruption items per second; pretraining batches out of the loader a
  plain Trainer makes (in file order, unseeded) against the stages' seeded
  batches (each example under its own seeds), with no loader worker and with
  the graded number, and whether the seeded batches are the same both ways;
  the grader's basic suite (if grader.py is there); the full pretraining
  (650 epochs) at the fast step's pace.

Timings on a shared machine are noisy: compare the ratios of one run. On a
CPU that other jobs share, --threads 1 avoids the threads waiting for each
other. Data: --data_dir, else $DATA_DIR, else the course's data next to the
repository (../shared/data) when it holds wiki.txt, birth_places_train.tsv and
birth_dev.tsv, else ./data; a folder given that lacks one of them is an error.
"""

import argparse
import copy
import datetime
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from torch.utils.data.dataloader import default_collate
from tqdm import tqdm

from assignment.facts import (BLOCK_SIZE, BOTTLENECK_DIM, CORPUS, DEV_QUESTIONS, GRADED_MODEL, GRADED_STAGES,
                              GRADED_TRAINING, TEST_QUESTIONS, TRAIN_QUESTIONS)
from runtime.decoding import predict_places, predict_places_plain
from runtime.inputs import InputError, pretraining_dataset, read_questions, read_text
from runtime.params import checked_params, vocabulary_string
from runtime.training.batches import EpochBatches
from runtime.training.checkpoint import CHECKPOINT_EVERY, CHECKPOINT_NAME, rng_states, save_atomically
from runtime.training.fast_training import FastSteps, fused_adamw
from submission import GPT, GPTConfig, NameDataset, Trainer, TrainerConfig, set_seed
from submission.trainer import optimizer_groups
from submission.utils import pick_device

from .bench_compile import compile_rows
from .release.autograder import write_hidden_bundle

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COURSE_DATA = os.path.join(os.path.dirname(ROOT), 'shared', 'data')
PRETRAIN = {name: GRADED_TRAINING['pretrain'][name] for name in ('batch_size', 'learning_rate')}
FINETUNE = {name: GRADED_TRAINING['finetune_without_pretraining'][name] for name in ('batch_size', 'learning_rate')}
PRETRAIN_EPOCHS = GRADED_TRAINING['pretrain']['max_epochs']
PARTS = ['train', 'eval', 'data', 'checkpoint', 'grader', 'compile']
DEFAULT_PARTS = PARTS[:-1]  # compiling takes minutes on a CPU
DATA_FILES = (CORPUS, TRAIN_QUESTIONS, DEV_QUESTIONS)
HIDDEN_BUDGET_MINUTES = 5  # the hidden suite's stated budget on 2 CPU cores (docs/grading.md, "Time")


def positive(text):
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def probability(text):
    """An argparse type: a dropout probability, 0 <= p < 1."""
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a probability below 1")
    return value


def parse_args():
    p = argparse.ArgumentParser(description="Plain vs fast paths of training and evaluation, side by side.")
    p.add_argument('--data_dir', help="the course's data files (default: $DATA_DIR, ../shared/data, ./data)")
    p.add_argument('--device', default='auto', help="auto (cuda, then mps, then cpu), cpu, cuda, ...")
    p.add_argument('--threads', type=positive, help="torch CPU threads (default: torch's choice)")
    p.add_argument('--steps', type=positive, default=8, help="timed training steps per path and batch (after a warm-up)")
    p.add_argument('--dropout', type=probability, default=0.0,
                   help="dropout of the timed steps (graded: 0.1; with 0 both paths compute the same loss)")
    p.add_argument('--precision', default='tf32', choices=['tf32', 'fp32', 'bf16', 'fp16'],
                   help="the fast path's precision (tf32, the stages' default, is fp32 off CUDA)")
    p.add_argument('--compile', action='store_true', help="torch.compile the fast path's model")
    p.add_argument('--length_groups', type=positive, help="the fast path's length groups (default: the trainer's)")
    p.add_argument('--questions', type=positive, default=500, help="dev questions to answer (the first N)")
    p.add_argument('--eval_batch_size', type=positive, default=128, help="questions decoded together by predict_places")
    p.add_argument('--perceiver', action='store_true', help="also evaluate the perceiver variant")
    p.add_argument('--params', help="trained vanilla parameters to evaluate (default: finetune from random weights)")
    p.add_argument('--finetune_epochs', type=positive, default=1, help="epochs of that finetuning (graded: 75)")
    p.add_argument('--parts', nargs='+', default=DEFAULT_PARTS, choices=PARTS,
                   help="what to measure (default: all but compile, eager against torch.compile over --steps "
                        "real batches; bench_compile.py)")
    p.add_argument('--backend', default='inductor', help="torch.compile's backend (default %(default)s)")
    p.add_argument('--seed', type=int, default=0)
    return p.parse_args()


def data_dir(args):
    """--data_dir, else $DATA_DIR (either must hold DATA_FILES), else the first of
    ../shared/data and ./data that holds them."""
    chosen = args.data_dir or os.environ.get('DATA_DIR')
    for folder in [chosen] if chosen else [COURSE_DATA, os.path.join(ROOT, 'data')]:
        missing = [name for name in DATA_FILES if not os.path.isfile(os.path.join(folder, name))]
        if not missing:
            return folder
        if chosen:
            sys.exit(f"bench.py: {folder} has no {', '.join(missing)}; give --data_dir the folder of the data files")
    sys.exit("bench.py: no data files in ../shared/data or ./data; give --data_dir the folder holding them")


def read_data(folder):
    """The pretraining and finetuning datasets and the dev questions of `folder`, checked as
    run.py checks them; exits with one line on a bad file."""
    path = {name: os.path.join(folder, name) for name in DATA_FILES}
    try:
        pretraining = pretraining_dataset(path[CORPUS])
        read_questions(path[TRAIN_QUESTIONS], '--data_dir', pretraining.stoi, finetuning=True)
        finetuning = NameDataset(read_text(path[TRAIN_QUESTIONS], '--data_dir', "question file"), pretraining)
        dev, _ = read_questions(path[DEV_QUESTIONS], '--data_dir', pretraining.stoi, finetuning=False)
    except InputError as error:
        sys.exit(f"bench.py: {error}")
    return pretraining, finetuning, dev


def graded_model(vocab_size, dropout, perceiver=False, **extra):
    """The graded GPT (block 128, 4 layers, 8 heads, 256 dims; perceiver: 32 latents)."""
    config = GPTConfig(vocab_size, BLOCK_SIZE, embd_pdrop=dropout, resid_pdrop=dropout, attn_pdrop=dropout,
                       perceiver=perceiver, bottleneck_dim=BOTTLENECK_DIM if perceiver else None,
                       **GRADED_MODEL, **extra)
    return GPT(config)


def spread(seconds):
    """min-max of a list of seconds, for the table."""
    return f"{min(seconds):.3g}-{max(seconds):.3g}"


def plain_step(trainer, batch):
    """One step of the student's plain loop, as Trainer.train writes it: forward, backward, clip, update."""
    x, y = (t.to(trainer.device) for t in batch)  # (B, T) each
    logits, loss = trainer.model(x, y)
    trainer.model.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(trainer.model.parameters(), trainer.config.grad_norm_clip)
    trainer.optimizer.step()
    return loss.detach(), y.numel()


def training_steps(args, device, examples, shape, vocab_size, final_tokens):
    """
    Time the plain and the fast trainer's step on one batch, alternating:
    before every timed step both are put back to the same starting weights
    and optimizer state, so every step computes the same thing (after one
    warm-up step). Returns the seconds, losses and kernel share of the CPU
    time (page faults, mostly) of each path, and the fast path's group shapes.
    """
    set_seed(args.seed)
    fast_model = graded_model(vocab_size, args.dropout)
    plain_model = graded_model(vocab_size, args.dropout, fused_attention=False)
    plain_model.load_state_dict(fast_model.state_dict())
    config = TrainerConfig(lr_decay=True, warmup_tokens=512 * 20, final_tokens=final_tokens, **shape)
    fast_steps = FastSteps(device, shape['batch_size'], args.precision, args.compile,
                           length_groups=args.length_groups)
    trainers = {'plain': Trainer(plain_model, None, None, config), 'fast': Trainer(fast_model, None, None, config)}
    steps = {'plain': plain_step, 'fast': fast_steps}
    seconds = {name: [] for name in trainers}
    kernel = {name: [0.0, 0.0] for name in trainers}  # system and total CPU seconds
    losses = {name: [] for name in trainers}
    batches = {'plain': default_collate(examples), 'fast': fast_steps.collate(examples)}
    starts = {}
    for name, trainer in trainers.items():
        trainer.device = device
        trainer.model.to(device).train()
        groups = optimizer_groups(trainer.model, config.weight_decay)
        trainer.optimizer = (fused_adamw(groups, config, device) if name == 'fast' else
                             torch.optim.AdamW(groups, lr=config.learning_rate, betas=config.betas))
        starts[name] = (copy.deepcopy(trainer.model.state_dict()), copy.deepcopy(trainer.optimizer.state_dict()))
        steps[name](trainer, batches[name])  # warm-up
    for _ in tqdm(range(args.steps), desc=f"training steps, batch {len(examples)}"):
        for name, trainer in trainers.items():
            weights, optimizer_state = starts[name]
            trainer.model.load_state_dict(weights)
            trainer.optimizer.load_state_dict(optimizer_state)
            started, cpu = time.perf_counter(), os.times()
            loss = steps[name](trainer, batches[name])[0].item()  # .item() waits for the device
            seconds[name].append(time.perf_counter() - started)
            done = os.times()
            kernel[name][0] += done.system - cpu.system
            kernel[name][1] += done.user - cpu.user + done.system - cpu.system
            losses[name].append(loss)
    groups, _ = batches['fast']
    shares = {name: system / max(total, 1e-9) for name, (system, total) in kernel.items()}
    return seconds, losses, shares, ' '.join(f"{x.size(0)}x{x.size(1)}" for x, _, _ in groups)


def trained_params(args, pretraining):
    """The state_dict of --params, checked against the graded vanilla model and the vocabulary
    of `pretraining`; exits with one line if unfit."""
    try:
        return checked_params(args.params, graded_model(pretraining.vocab_size, 0.1), 'vanilla',
                              vocabulary_string(pretraining), '--params', size_options=None)
    except InputError as error:
        sys.exit(f"bench.py: {error}")


def evaluation_model(args, device, pretraining, finetuning, perceiver, params):
    """The graded model of a variant: --params (vanilla) if given, else finetuned from random weights
    for --finetune_epochs (one is enough for it to close its answers with a MASK, though shorter
    answers than a fully trained model's: the table shows their length)."""
    set_seed(args.seed)
    model = graded_model(pretraining.vocab_size, 0.1, perceiver=perceiver)
    if params and not perceiver:
        model.load_state_dict(params)
        return model.to(device), 'trained (--params)'
    config = TrainerConfig(max_epochs=args.finetune_epochs, lr_decay=True, warmup_tokens=512 * 20,
                           final_tokens=200 * len(pretraining) * BLOCK_SIZE, device=device, **FINETUNE)
    Trainer(model, finetuning, None, config).train()
    return model, f"finetuned {args.finetune_epochs} epoch{'s' if args.finetune_epochs > 1 else ''}"


def evaluation(args, device, model, dataset, questions, repeats=3):
    """Seconds of predict_places_plain, and the median of `repeats` runs of predict_places stopping
    at the closing MASK and running all 32 steps, on the same questions; how many of the fast
    paths' predictions differ from the plain one's; the answers' mean length."""
    started = time.perf_counter()
    plain = predict_places_plain(model, questions, dataset, device)
    seconds = [time.perf_counter() - started]
    different = []
    for stop_at_mask in (True, False):
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            fast = predict_places(model, questions, dataset, device, args.eval_batch_size, stop_at_mask)
            times.append(time.perf_counter() - started)
        seconds.append(statistics.median(times))
        different.append(sum(a != b for a, b in zip(plain, fast)))
    return seconds, different, statistics.mean(len(p) for p in plain)


def corruption_items_per_second(dataset, seconds=1.0):
    """Items of CharCorruptionDataset made per second, over whole passes of at least `seconds`."""
    made, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for i in range(len(dataset)):
            dataset[i]
        made += len(dataset)
    return made / (time.perf_counter() - started)


def batch_seconds(loader, epochs=3):
    """Seconds a batch takes to come out of `loader` over `epochs` whole passes after one that starts
    its workers, and the batches of those passes."""
    list(loader)
    started = time.perf_counter()
    batches = [batch for _ in range(epochs) for batch in loader]
    return (time.perf_counter() - started) / len(batches), batches


def loader_rows(dataset):
    """Rows of batch_seconds for the loader a plain Trainer makes and for the stages' seeded batches,
    with no worker and with the graded number; the seeded batches with workers are checked against
    those made with no worker."""
    batch_size = PRETRAIN['batch_size']
    rows, alone = [], None
    for workers in (0, GRADED_TRAINING['pretrain']['num_workers']):
        plain, _ = batch_seconds(torch.utils.data.DataLoader(
            dataset, batch_size, num_workers=workers, persistent_workers=workers > 0,
            collate_fn=default_collate))
        seeded, batches = batch_seconds(EpochBatches(dataset, batch_size, default_collate, workers, seed=0))
        check = "plain: unseeded; fast: the stages' seeded batches"
        if alone is None:
            alone = batches
        else:
            same = len(batches) == len(alone) and all(torch.equal(a, b) for one, other in zip(batches, alone)
                                                      for a, b in zip(one, other))
            check += ", the same as with no worker" if same else ", NOT the same as with no worker"
        rows.append((f"loader ms a batch, pretraining batch {batch_size}, {workers} workers",
                     f"{plain * 1e3:.1f}", f"{seeded * 1e3:.1f}", plain / seeded, check))
    return rows


def checkpoint_seconds(vocab_size, folder, repeats=3):
    """(median seconds, megabytes) of saving a checkpoint of the graded model with AdamW's moments."""
    model = graded_model(vocab_size, 0.0)
    optimizer = fused_adamw(optimizer_groups(model, 0.1), TrainerConfig(device='cpu'))
    model(torch.zeros(1, 8, dtype=torch.long), torch.ones(1, 8, dtype=torch.long))[1].backward()
    optimizer.step()  # now AdamW holds its two moments
    state = {'model': model.state_dict(), 'optimizer': optimizer.state_dict(), 'rng': [rng_states()]}
    path = os.path.join(folder, CHECKPOINT_NAME)
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        save_atomically(state, path)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), os.path.getsize(path) / 1e6


def grader_seconds(*args):
    """Wall time and exit status of `python grader.py args...`, or None without grader.py."""
    grader = os.path.join(ROOT, 'grader.py')
    if not os.path.isfile(grader):
        return None
    started = time.perf_counter()
    done = subprocess.run([sys.executable, grader, *args], cwd=ROOT, capture_output=True, text=True)
    return time.perf_counter() - started, done.returncode


def hidden_suite_seconds(folder, vocab_size):
    """grader_seconds of the hidden suite on a hand-in of the solution's code with untrained
    graded-size parameters (no answer stops early: the slowest regeneration), against a bundle
    made from ./data as the release makes it."""
    submission = os.path.join(folder, 'submission')
    shutil.copytree(os.path.join(ROOT, 'src', 'submission'), submission,
                    ignore=lambda path, names: [n for n in names if not n.endswith('.py')])
    for name, perceiver in (('vanilla.model.params', False), ('vanilla.finetune.params', False),
                            ('perceiver.finetune.params', True)):
        torch.save(graded_model(vocab_size, 0.1, perceiver=perceiver).state_dict(), os.path.join(submission, name))
    data = os.path.join(ROOT, 'data')
    for stage in GRADED_STAGES.values():
        if stage.function == 'evaluate':
            questions = read_text(os.path.join(data, DEV_QUESTIONS if stage.questions == DEV_QUESTIONS
                                               else TEST_QUESTIONS), '--data_dir', "question file")
            with open(os.path.join(submission, stage.writes), 'w', encoding='utf-8') as f:
                f.write('London\n' * len([line for line in questions.splitlines() if line.strip()]))
    hidden = os.path.join(folder, 'hidden')
    write_hidden_bundle(ROOT, data, os.path.join(data, 'birth_test.tsv'), {}, hidden)
    return grader_seconds('hidden', '--hidden', hidden, '--submission', submission)


def train_rows(args, device, pretraining, finetuning):
    """Table rows of the training steps, and the fast pretraining step's seconds."""
    rows, rng = [], random.Random(args.seed)
    for name, dataset, shape in (('pretrain', pretraining, PRETRAIN), ('finetune', finetuning, FINETUNE)):
        random.seed(args.seed)  # the span corruption draws from `random`
        examples = [dataset[i] for i in rng.sample(range(len(dataset)), min(shape['batch_size'], len(dataset)))]
        seconds, losses, kernel, groups = training_steps(args, device, examples, shape, pretraining.vocab_size,
                                                         200 * len(pretraining) * BLOCK_SIZE)
        plain, fast = statistics.median(seconds['plain']), statistics.median(seconds['fast'])
        gap = max(abs(a - b) for a, b in zip(losses['plain'], losses['fast']))
        rows.append((f"train step s, {name} batch {len(examples)}x{BLOCK_SIZE - 1} (fast: groups {groups})",
                     f"{plain:.3f} ({spread(seconds['plain'])})", f"{fast:.3f} ({spread(seconds['fast'])})",
                     plain / fast, f"loss {losses['plain'][0]:.6f} vs {losses['fast'][0]:.6f}, "
                                   f"max diff {gap:.1e} over {args.steps} steps from the same weights; "
                                   f"kernel {kernel['plain']:.0%} of plain's CPU time, {kernel['fast']:.0%} of fast's"))
        if name == 'pretrain':
            pretrain_step = fast
    steps = math.ceil(len(pretraining) / PRETRAIN['batch_size']) * PRETRAIN_EPOCHS
    rows.append((f"full pretraining ({steps} steps) at the fast step, minutes", "",
                 f"{pretrain_step * steps / 60:.0f}", None, f"on {device}"))
    return rows


def eval_rows(args, device, dev, pretraining, finetuning, params):
    """Table rows of the dev-set evaluation, for each variant asked for."""
    rows = []
    questions = dev[:args.questions]
    for perceiver in ((False, True) if args.perceiver else (False,)):
        model, weights = evaluation_model(args, device, pretraining, finetuning, perceiver, params)
        seconds, different, answer = evaluation(args, device, model, pretraining, questions)
        what = f"dev eval s, {len(questions)} questions, {'perceiver' if perceiver else 'vanilla'} {weights}"
        for fast, differ, how in zip(seconds[1:], different, ("stop at MASK", "all 32 steps")):
            rows.append((f"{what}, {how}", f"{seconds[0]:.2f}", f"{fast:.2f}", seconds[0] / fast,
                         ("predictions equal" if differ == 0 else f"{differ} predictions differ")
                         + f"; answers {answer:.1f} characters on average"))
    return rows


def main():
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device() if args.device == 'auto' else torch.device(args.device)
    folder = data_dir(args)
    load = os.getloadavg()[0]
    print(f"bench on {device}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"load average {load:.2f}, data {folder}")
    pretraining, finetuning, dev = read_data(folder)
    params = trained_params(args, pretraining) if args.params and 'eval' in args.parts else None

    rows = []  # (measure, plain, fast, plain/fast or None, check)
    if 'train' in args.parts:
        rows += train_rows(args, device, pretraining, finetuning)
    if 'compile' in args.parts:
        rows += compile_rows(lambda: graded_model(pretraining.vocab_size, args.dropout),
                             (('pretraining', pretraining, PRETRAIN), ('finetuning', finetuning, FINETUNE)),
                             device, args.steps, args.precision, args.backend, args.seed)
    if 'eval' in args.parts:
        rows += eval_rows(args, device, dev, pretraining, finetuning, params)
    if 'data' in args.parts:
        rows.append(("span-corruption items/s", "", f"{corruption_items_per_second(pretraining):.0f}", None,
                     f"a pretraining step uses {PRETRAIN['batch_size']}"))
        rows += loader_rows(pretraining)
    if 'checkpoint' in args.parts:
        with tempfile.TemporaryDirectory() as folder:
            seconds, megabytes = checkpoint_seconds(pretraining.vocab_size, folder)
        rows.append(("checkpoint save s (model, AdamW, RNG; fsynced)", "", f"{seconds:.2f}", None,
                     f"{megabytes:.0f} MB; one every {CHECKPOINT_EVERY} steps and each epoch's end"))
    if 'grader' in args.parts:
        graded = grader_seconds('basic')
        rows.append(("grader.py basic, wall s", "", "skipped: no grader.py" if graded is None else f"{graded[0]:.1f}",
                     None, "" if graded is None else f"exit status {graded[1]}"))
        with tempfile.TemporaryDirectory() as folder:
            graded = hidden_suite_seconds(folder, pretraining_dataset(os.path.join(ROOT, 'data', CORPUS)).vocab_size)
        rows.append(("grader.py hidden, graded-size untrained params, wall s", "",
                     "skipped: no grader.py" if graded is None else f"{graded[0]:.1f}", None,
                     "" if graded is None else f"exit status {graded[1]}; budget {HIDDEN_BUDGET_MINUTES} minutes "
                                               f"on 2 cores; ./data's 500 dev and 437 test questions"))

    print(f"\n{datetime.date.today()}, {device}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"load average {load:.2f} at start and {os.getloadavg()[0]:.2f} at the end; data {folder}; "
          f"timed steps with dropout {args.dropout}, fast precision {args.precision}"
          f"{', compiled' if args.compile else ''}")
    print("| measure | plain | fast | plain/fast | check |")
    print("| --- | --- | --- | --- | --- |")
    for what, plain, fast, ratio, check in rows:
        print(f"| {what} | {plain} | {fast} | {'' if ratio is None else f'{ratio:.1f}x'} | {check} |")


if __name__ == '__main__':
    main()
