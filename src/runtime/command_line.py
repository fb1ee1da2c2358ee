"""
run.py's command line: the options, the stage table's filling of a --stage
(function, variant, files, out folder), the check that a stage's input
files exist, the model size, and what differs from the graded configuration.
"""

import argparse
import os

from assignment.facts import (BLOCK_SIZE, BOTTLENECK_DIM, CORPUS, GRADED_MODEL, GRADED_STAGES, GRADED_TRAINING,
                              MAKER, reads)

from .inputs import InputError
from .seeds import SEED_RANGE
from .training.checkpoint import CHECKPOINT_EVERY

REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRADED_OUT = os.path.join(REPO_DIR, 'src', 'submission')  # where the hand-in is collected from
SMOKE_OUT = os.path.join(REPO_DIR, 'smoke')  # where runs of another configuration go by default

SMALL_MODEL = dict(n_layer=2, n_head=2, n_embd=32)
SMALL_TRAINING = dict(max_epochs=1, batch_size=32, num_workers=0)
GRADED_RATES = dict(pretrain_lr=GRADED_TRAINING['pretrain']['learning_rate'],
                    finetune_lr=GRADED_TRAINING['finetune_with_pretraining']['learning_rate'])


def number_from(low, high=None, kind=int):
    """An argparse type: a `kind` number from `low` to `high` (no upper bound if None), or one line saying so."""
    def parse(text):
        value = kind(text)
        if not low <= value or high is not None and not value <= high:  # NaN is neither
            raise argparse.ArgumentTypeError(f"{text} is not a number from {low} to {high}" if high is not None
                                             else f"{text} is less than {low}")
        return value
    parse.__name__ = kind.__name__  # argparse names the type in "invalid int value: 'x'"
    return parse


POSITIVE = number_from(1)
COMPILE_BACKENDS = ('inductor', 'aot_eager', 'cudagraphs', 'eager')  # the course's three, and eager to debug


def parse_args(argv):
    p = argparse.ArgumentParser(description="Pretrain, finetune or evaluate a character-level GPT "
                                            "on the birth-place task.")
    p.add_argument('--function', choices=['pretrain', 'finetune', 'evaluate'])
    p.add_argument('--variant', choices=['vanilla', 'perceiver', 'rope'])
    p.add_argument('--pretrain_corpus_path', help="wiki.txt: the pretraining corpus, which also "
                                                  "defines the vocabulary (needed by every function)")
    p.add_argument('--reading_params_path', help="parameters to start from (finetune) or to evaluate")
    p.add_argument('--writing_params_path', help="where to save the trained parameters")
    p.add_argument('--finetune_corpus_path', help="'question<TAB>place' lines to finetune on")
    p.add_argument('--eval_corpus_path', help="questions to answer, with or without '<TAB>place'")
    p.add_argument('--outputs_path', help="where to write the predictions, one a line")
    p.add_argument('--bottleneck_dim', type=number_from(1, BLOCK_SIZE), default=BOTTLENECK_DIM,
                   help=f"perceiver latents m (default {BOTTLENECK_DIM})")
    p.add_argument('--pretrain_lr', type=float, default=GRADED_RATES['pretrain_lr'])
    p.add_argument('--finetune_lr', type=float, default=GRADED_RATES['finetune_lr'])
    p.add_argument('--tb_expt_name', help="run name for the records (default <variant>_<function>)")
    p.add_argument('--experiments_dir', default='experiments', help="folder of the run records")
    p.add_argument('--device', default='auto', help="auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps")
    p.add_argument('--precision', default='tf32', choices=['tf32', 'fp32', 'bf16', 'fp16'],
                   help="training precision (default tf32: fp32 with TF32 matrix products on CUDA, the same as "
                        "fp32 elsewhere; fp32: full fp32 products, as the course's code; bf16 made the graded "
                        "pretraining diverge on a GPU)")
    p.add_argument('--compile', action=argparse.BooleanOptionalAction, default=False,
                   help="the course's run.sh words 'compile' and 'no-compile': the stages train eager either "
                        "way, measured faster than compiled on an H200")
    p.add_argument('--backend', default='inductor', choices=COMPILE_BACKENDS,
                   help="torch.compile's backend (default %(default)s; the course's run.sh word after "
                        "'compile', which the stages take and leave unused)")
    p.add_argument('--seed', type=number_from(0, SEED_RANGE - 1),
                   help="the run's seed (default: drawn at random, or the recorded one with --resume; recorded in "
                        "the run's seed.txt and the params)")
    p.add_argument('--eval_batch_size', type=POSITIVE, default=256, help="questions decoded together")
    p.add_argument('--resume', action='store_true', help="continue from the run's last checkpoint "
                                                         "(<experiments_dir>/<run>/checkpoint.pt)")
    p.add_argument('--plain', action='store_true',
                   help="train with src/submission/trainer.py's Trainer exactly as written (its DataLoader, AdamW "
                        "and step), where the stages otherwise plug in their own batches, fused AdamW and step: "
                        "slower, one process, no checkpoints")
    p.add_argument('--checkpoint_every', type=POSITIVE, default=CHECKPOINT_EVERY,
                   help=f"steps between checkpoints (default {CHECKPOINT_EVERY}; also one at each epoch's end)")
    stage = p.add_argument_group("a graded stage of run.sh, in place of --function, --variant and the paths")
    stage.add_argument('--stage', choices=sorted(GRADED_STAGES))
    stage.add_argument('--data_dir', default='data', help="the folder of wiki.txt and the .tsv files")
    stage.add_argument('--out_dir', help="params and predictions (default: src/submission for the graded "
                                         "configuration, smoke/ for any other)")
    stage.add_argument('--test_file', help="the questions of the *_eval_test_* stages "
                                           "(default: <data_dir>/birth_test_inputs.tsv)")
    small = p.add_argument_group("smoke runs (never for the graded stages)")
    small.add_argument('--small', action='store_true',
                       help="n_layer %(n_layer)d, n_head %(n_head)d, n_embd %(n_embd)d" % SMALL_MODEL
                            + ", %(max_epochs)d epoch, batch %(batch_size)d, no loader workers" % SMALL_TRAINING)
    for name in ('n_layer', 'n_head', 'n_embd', 'max_epochs', 'batch_size'):
        small.add_argument('--' + name, type=POSITIVE, help="override (default: graded value, or --small's)")
    small.add_argument('--dropout', type=number_from(0, 1, float),
                       help="every dropout probability (default: the model's, 0.1)")
    args = p.parse_args(argv)
    if args.plain and args.resume:
        p.error("--plain takes no checkpoints, so there is none to --resume")
    args.configuration = configuration(args)
    if args.stage:
        fill_stage(args)
    elif not (args.function and args.variant):
        p.error("--function and --variant are needed (or --stage)")
    return args


def stage_path(args, folder, name):
    """Where a --stage finds the file `name` of `folder` ('data', 'out' or 'test', as in facts.reads)."""
    if folder == 'test':
        return args.test_file or os.path.join(args.data_dir, name)
    return os.path.join(args.data_dir if folder == 'data' else args.out_dir, name)


def fill_stage(args):
    """Set the function, variant, run name and paths of the graded stage args.stage from the stage table."""
    stage = GRADED_STAGES[args.stage]
    args.out_dir = args.out_dir or (SMOKE_OUT if args.configuration else GRADED_OUT)
    if args.out_dir == SMOKE_OUT:
        os.makedirs(SMOKE_OUT, exist_ok=True)  # the smoke runs' own folder (ignored by git), made at the first
    args.function, args.variant = stage.function, stage.variant
    args.tb_expt_name = args.tb_expt_name or stage.name
    for folder, name in reads(stage):
        path = stage_path(args, folder, name)
        if name == CORPUS:
            args.pretrain_corpus_path = path
        elif folder == 'out':
            args.reading_params_path = path
        else:
            args.finetune_corpus_path = args.eval_corpus_path = path
    written = os.path.join(args.out_dir, stage.writes)
    if stage.function == 'evaluate':
        args.outputs_path = written
    else:
        args.writing_params_path = written


def stage_inputs_exist(args):
    """For a --stage: every file it reads is there, or one line naming what makes it or what to set."""
    if not args.stage:
        return
    stage = GRADED_STAGES[args.stage]
    for folder, name in reads(stage):
        path = stage_path(args, folder, name)
        if os.path.isfile(path):
            continue
        if folder == 'out':
            raise InputError(f"{stage.name} needs {path}, which ./run.sh {MAKER[name]} makes: run that stage first")
        if folder == 'test':
            raise InputError(f"{stage.name} needs {path}, which is not there; set TEST_FILE to the test questions")
        raise InputError(f"{stage.name} needs {path}, which is not there; set DATA_DIR to the folder holding "
                         f"the data files (now {args.data_dir})")


def configuration(args):
    """What differs from the graded configuration ('' for none), as 'name=value ...', each setting
    once: --small's sizes and training, each replaced by its own option when given, then the
    options set away from their graded values."""
    graded = dict(GRADED_MODEL, bottleneck_dim=BOTTLENECK_DIM, **GRADED_RATES)
    differ = {}
    if args.small:
        differ.update(SMALL_MODEL)
        differ.update((name, value) for name, value in SMALL_TRAINING.items() if name != 'num_workers')
    differ.update((name, getattr(args, name)) for name in ('n_layer', 'n_head', 'n_embd', 'max_epochs', 'batch_size',
                                                            'dropout') if getattr(args, name) is not None)
    differ.update((name, getattr(args, name)) for name in ('bottleneck_dim', 'pretrain_lr', 'finetune_lr')
                  if getattr(args, name) != graded[name])
    return ' '.join(f"{name}={value}" for name, value in differ.items())


def model_size(args):
    size = dict(SMALL_MODEL if args.small else GRADED_MODEL)
    for name in size:
        if getattr(args, name) is not None:
            size[name] = getattr(args, name)
    if size['n_embd'] % size['n_head']:
        raise InputError(f"n_embd {size['n_embd']} is not a multiple of n_head {size['n_head']}")
    if args.variant == 'perceiver' and size['n_layer'] < 2:
        raise InputError("the perceiver needs n_layer >= 2 (a down and an up block)")
    return size
