"""
The demo: does pretraining let a small GPT answer questions about people it
was never finetuned on? The whole experiment of the assignment, on a world
small enough for a laptop CPU, in a few minutes:

    ./run.sh demo            # python3 -m instructors.demo, with src/ on the path
    ./run.sh demo --quick    # the reduced form the tests run, about 4 minutes on two threads

1. generate a small world (instructors/worldgen) into --out_dir: short biographies
   that state the birth place early, several paraphrases a person;
2. baseline: always answer the most frequent birth place of the training set;
3. without pretraining: a fresh GPT finetuned on the training questions;
4. with pretraining: span-corruption pretraining on wiki.txt, which holds
   the dev people too, then the same finetuning;
5. the RoPE variant (the current edition's part h) and the perceiver (the
   Perceiver edition's part g), each pretrained and finetuned the same way;
6. answer the dev questions with every model and print one table of dev
   accuracies and minutes per phase.

Everything is seeded (--seed): the same options, on the same kind of CPU
with the same torch, give the same table bit for bit, up to the minutes.
The thread count is an option like the others (--threads, default 2): it
changes the order of floating-point sums, and so the table a little.
"""

import argparse
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass

import torch

from submission import CharCorruptionDataset, GPT, GPTConfig, NameDataset, Trainer, TrainerConfig, set_seed

from assignment.question_files import read_question_file
from runtime.decoding import predict_places
from runtime.training.fast_training import plug_into

from .worldgen import write_world

DEFAULTS = dict(train_people=200, dev_people=100, paraphrases=10, name_link=0.2,
                n_layer=2, n_head=4, n_embd=128, block_size=96, dropout=0.0,
                pretrain_epochs=45, pretrain_lr=1e-3, pretrain_batch_size=32,
                finetune_epochs=6, scratch_epochs=30, finetune_lr=6e-4, finetune_batch_size=32,
                perceiver_layers=3, bottleneck=24, perceiver_pretrain_epochs=45, perceiver_finetune_epochs=30)
QUICK = dict(train_people=50, dev_people=25, pretrain_epochs=48, pretrain_lr=2e-3, finetune_epochs=20,
             perceiver_pretrain_epochs=20, perceiver_finetune_epochs=120)
THREADS = 2  # the table of docs/demo.md was measured so; another count rounds differently
WARMUP_TOKENS = 512 * 20  # as in the assignment's trainer configurations


@dataclass
class Row:
    """One line of the results table: (correct, total) on dev and on train, minutes per phase."""
    run: str
    dev: tuple
    train: tuple
    minutes: dict


def add_knob(group, name, kind, help):
    """An option whose default is DEFAULTS[name] (QUICK[name] under --quick), said in its help."""
    quick = f"; --quick {QUICK[name]}" if name in QUICK else ""
    group.add_argument('--' + name, type=kind, help=f"{help} (default {DEFAULTS[name]}{quick})")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Pretraining vs no pretraining on a small generated world, "
                                            "on a CPU in minutes.")
    p.add_argument('--quick', action='store_true', help="the reduced form the tests run")
    world = p.add_argument_group("the world")
    add_knob(world, 'train_people', int, "people asked about in finetuning")
    add_knob(world, 'dev_people', int, "held-out people asked about in evaluation")
    add_knob(world, 'paraphrases', int, "biographies a person in wiki.txt")
    add_knob(world, 'name_link', float, "share of people named in their birth country's culture "
                                        "(such names let a model guess the country without any knowledge)")
    model = p.add_argument_group("the model")
    add_knob(model, 'n_layer', int, "Transformer blocks")
    add_knob(model, 'n_head', int, "attention heads")
    add_knob(model, 'n_embd', int, "embedding width")
    add_knob(model, 'block_size', int, "longest sequence, in characters")
    add_knob(model, 'dropout', float, "embedding, attention and residual dropout")
    add_knob(model, 'perceiver_layers', int, "the perceiver's blocks: down-projection, latent blocks, up-projection")
    add_knob(model, 'bottleneck', int, "the perceiver's latents m (the course's ratio: block_size / 4)")
    training = p.add_argument_group("training")
    add_knob(training, 'pretrain_epochs', int, "span-corruption epochs over wiki.txt")
    add_knob(training, 'pretrain_lr', float, "pretraining learning rate")
    add_knob(training, 'pretrain_batch_size', int, "pretraining batch size")
    add_knob(training, 'finetune_epochs', int, "finetuning epochs of the pretrained model")
    add_knob(training, 'scratch_epochs', int, "finetuning epochs of the model without pretraining")
    add_knob(training, 'perceiver_pretrain_epochs', int, "span-corruption epochs of the perceiver")
    add_knob(training, 'perceiver_finetune_epochs', int, "finetuning epochs of the pretrained perceiver")
    add_knob(training, 'finetune_lr', float, "finetuning learning rate (both models)")
    add_knob(training, 'finetune_batch_size', int, "finetuning batch size (both models)")
    p.add_argument('--seed', type=int, default=0, help="seeds the world, the initial weights and the training")
    p.add_argument('--threads', type=int, default=THREADS,
                   help="CPU threads for PyTorch (default %(default)s; another count rounds differently, "
                        "so the table changes a little)")
    p.add_argument('--device', default='cpu', help="cpu (what the demo is tuned for), cuda or mps")
    p.add_argument('--out_dir', help="where to write the world (default: a temporary folder, removed after)")
    args = p.parse_args(argv)
    settings = dict(DEFAULTS, **QUICK) if args.quick else DEFAULTS
    for name, value in settings.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def read(world_dir, name):
    with open(os.path.join(world_dir, name), encoding='utf-8') as f:
        return f.read()


def labelled(path):
    """[(question, place)] of a labelled question file, read by read_question_file's rules."""
    return [(line.question, line.place) for line in read_question_file(path, labelled=True)]


class Phase:
    """A context manager that adds the minutes it was open to minutes[name]."""

    def __init__(self, minutes, name):
        self.minutes, self.name = minutes, name

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        self.minutes[self.name] = self.minutes.get(self.name, 0.0) + (time.perf_counter() - self.start) / 60


def new_model(args, vocab_size, variant):
    """A fresh GPT of the options' width; `variant` 'vanilla' (n_layer blocks), 'rope' (the same blocks,
    positions by rotation) or 'perceiver'."""
    depth = {'vanilla': dict(n_layer=args.n_layer),
             'rope': dict(n_layer=args.n_layer, rope=True),
             'perceiver': dict(n_layer=args.perceiver_layers, perceiver=True, bottleneck_dim=args.bottleneck)}[variant]
    config = GPTConfig(vocab_size, args.block_size, n_head=args.n_head, n_embd=args.n_embd,
                       embd_pdrop=args.dropout, attn_pdrop=args.dropout, resid_pdrop=args.dropout, **depth)
    return GPT(config)


def runs(args):
    """(row name, variant, pretrained, finetuning epochs) of each trained model, in the table's order."""
    return (('finetuned without pretraining', 'vanilla', False, args.scratch_epochs),
            ('pretrained, then finetuned', 'vanilla', True, args.finetune_epochs),
            ('RoPE, pretrained, then finetuned', 'rope', True, args.finetune_epochs),
            (f'perceiver (m={args.bottleneck}, {args.perceiver_layers} layers), pretrained, then finetuned',
             'perceiver', True, args.perceiver_finetune_epochs))


def train_on(args, model, dataset, epochs, batch_size, learning_rate):
    """Train with the assignment's schedule (warmup, then cosine decay that ends with the last epoch) and the
    stages' fast steps."""
    config = TrainerConfig(max_epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, lr_decay=True,
                           warmup_tokens=WARMUP_TOKENS, final_tokens=epochs * len(dataset) * args.block_size,
                           num_workers=0)
    trainer = Trainer(model, dataset, None, config)
    plug_into(trainer, torch.device(args.device), seeded_batches=False)
    trainer.train()


def pretrain(args, model, corpus, epochs):
    print(f"pretraining: {epochs} epochs of span corruption on {len(corpus)} biographies")
    train_on(args, model, corpus, epochs, args.pretrain_batch_size, args.pretrain_lr)


def finetune(args, model, questions, epochs):
    print(f"finetuning: {epochs} epochs on {len(questions)} questions")
    train_on(args, model, questions, epochs, args.finetune_batch_size, args.finetune_lr)


def score(model, pairs, corpus, device):
    """(correct, total) of the model's greedy answers to the (question, place) pairs."""
    predictions = predict_places(model, [q for q, _ in pairs], corpus, device)
    return sum(p == place for p, (_, place) in zip(predictions, pairs)), len(pairs)


def constant_score(place, pairs):
    return sum(answer == place for _, answer in pairs), len(pairs)


@dataclass
class World:
    """A written world as the runs read it: the span-corruption corpus, the finetuning questions, and the
    (question, place) pairs of the training and dev people."""
    corpus: CharCorruptionDataset
    questions: NameDataset
    train: list
    dev: list


def written_world(args, world_dir):
    """Writes the options' world into world_dir and reads it back."""
    write_world(world_dir, seed=args.seed, n_train=args.train_people, n_dev=args.dev_people, n_test=0,
                paraphrases=args.paraphrases, style='short', name_from_birth_country=args.name_link)
    corpus = CharCorruptionDataset(read(world_dir, 'wiki.txt'), args.block_size)
    return World(corpus, NameDataset(read(world_dir, 'birth_places_train.tsv'), corpus),
                 labelled(os.path.join(world_dir, 'birth_places_train.tsv')),
                 labelled(os.path.join(world_dir, 'birth_dev.tsv')))


def baseline_row(world):
    """The row of always answering the most frequent training place."""
    top_place, _ = Counter(place for _, place in world.train).most_common(1)[0]
    return Row(f'always "{top_place}" (most frequent training place)',
               constant_score(top_place, world.dev), constant_score(top_place, world.train), {})


def trained_row(args, world, run):
    """The row of one of runs(args): a fresh model, seeded alike whichever rows ran before, trained and
    scored."""
    name, variant, pretrained, finetune_epochs = run
    set_seed(args.seed)
    model, phases = new_model(args, world.corpus.vocab_size, variant), {}
    if pretrained:
        with Phase(phases, 'pretrain'):
            pretrain(args, model, world.corpus,
                     args.perceiver_pretrain_epochs if variant == 'perceiver' else args.pretrain_epochs)
    with Phase(phases, 'finetune'):
        finetune(args, model, world.questions, finetune_epochs)
    with Phase(phases, 'evaluate'):
        dev_score = score(model, world.dev, world.corpus, args.device)
        train_score = score(model, world.train, world.corpus, args.device)
    return Row(name, dev_score, train_score, phases)


def run_demo(args, world_dir):
    """Runs the whole experiment on a world written into world_dir; returns the table's rows and the
    minutes the world took."""
    torch.set_num_threads(args.threads)
    minutes = {}
    with Phase(minutes, 'world'):
        world = written_world(args, world_dir)
    return [baseline_row(world)] + [trained_row(args, world, run) for run in runs(args)], minutes['world']


PHASES = ('pretrain', 'finetune', 'evaluate')


def percent(correct_total):
    correct, total = correct_total
    return f'{100 * correct / total:.1f}% ({correct}/{total})'


def format_table(rows, world_minutes):
    """The results as a Markdown table, with the total minutes under it."""
    header = ['run', 'dev accuracy (held-out people)', 'train accuracy'] + [f'{phase} min' for phase in PHASES]
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '|'.join(['---'] * len(header)) + '|']
    for row in rows:
        cells = [row.run, percent(row.dev), percent(row.train)]
        cells += [f'{row.minutes[phase]:.2f}' if phase in row.minutes else '-' for phase in PHASES]
        lines.append('| ' + ' | '.join(cells) + ' |')
    total = world_minutes + sum(sum(row.minutes.values()) for row in rows)
    lines.append(f'total: {total:.1f} minutes (world generation {world_minutes:.2f})')
    return '\n'.join(lines)


def describe(args):
    return (f"world: {args.train_people} training + {args.dev_people} dev people, {args.paraphrases} "
            f"biographies each, seed {args.seed}; model: {args.n_layer} layers, {args.n_head} heads, "
            f"{args.n_embd} wide, block {args.block_size}; pretraining {args.pretrain_epochs} epochs, "
            f"finetuning {args.finetune_epochs} (without pretraining {args.scratch_epochs}); perceiver: "
            f"{args.perceiver_layers} layers, {args.bottleneck} latents, pretraining {args.perceiver_pretrain_epochs} "
            f"epochs, finetuning {args.perceiver_finetune_epochs}; "
            f"{args.threads} threads on {args.device}")


def main(argv=None):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))  # so the temporary world is removed
    print(describe(args))
    if args.out_dir:
        rows, world_minutes = run_demo(args, args.out_dir)
    else:
        with tempfile.TemporaryDirectory(prefix='demo-world-') as world_dir:
            rows, world_minutes = run_demo(args, world_dir)
    print()
    print(describe(args))
    print(format_table(rows, world_minutes))
    return 0


if __name__ == '__main__':
    sys.exit(main())
