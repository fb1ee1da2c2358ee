"""
Pretrain, finetune or evaluate the assignment's models. ./run.sh calls this
for every graded stage (`--stage NAME`, which fills in the function, the
variant and the files from the stage table in assignment/facts.py);
`python src/run.py --help` lists the options.

    python src/run.py --function pretrain --variant vanilla \
        --pretrain_corpus_path data/wiki.txt \
        --writing_params_path src/submission/vanilla.pretrain.params

The vocabulary always comes from the pretraining corpus, whatever the
function; the parameters written here carry it in their state_dict's
metadata, and parameters carrying another are refused. Every input is
checked, in one step, before anything is written: a bad input gets one line
on stderr and exit status 1, and the files already there stay as they were
(new files are written to a temporary name, then renamed).
Training records go to <experiments_dir>/<tb_expt_name>/ (see runtime/training/records.py).

--small shrinks the model and the training to a smoke test that runs in
seconds on a CPU; the graded stages never use it.
"""

import contextlib
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Optional

if os.environ.get('RANK', '0') != '0':  # under torchrun only rank 0 draws progress bars; tqdm reads this at import
    os.environ['TQDM_DISABLE'] = '1'

import torch

from assignment.facts import BLOCK_SIZE
from assignment.not_written_yet import (SECOND_MODELS, PartFailure, not_the_model, unimplemented_line, unwritten,
                                        written)
from submission import helper
from submission.model import GPTConfig
from submission.utils import evaluate_places, set_seed

from runtime.training import distributed
from runtime.training.checkpoint import CHECKPOINT_NAME, Checkpointer, Interrupted, read_checkpoint
from runtime.decoding import predict_places
from runtime.atomic_files import replace_when_done, write_predictions
from runtime.inputs import InputError, chosen_device, need_output_folder, pretraining_dataset, read_questions
from runtime.command_line import SMALL_TRAINING, model_size, parse_args, stage_inputs_exist
from runtime.params import checked_params, stamp, vocabulary_string
from runtime.training.records import RunRecorder
from runtime.seeds import record_seed, run_seed
from runtime.training.duration import DurationEstimate
from runtime.training.fast_training import plug_into

EAGER_NOT_COMPILED = ("run.py: compile: the stages train eager: on an H200 no compiled pretraining step was faster "
                      "(0.8-0.9x, after 10-22 s of compiling)")


def build_model(args, vocab_size, size):
    """The student's model of the variant, or PartFailure naming what is missing."""
    dropout = {} if args.dropout is None else dict(embd_pdrop=args.dropout, resid_pdrop=args.dropout,
                                                   attn_pdrop=args.dropout)
    mconf = GPTConfig(vocab_size, BLOCK_SIZE, **size, **dropout)
    if args.variant == 'vanilla':
        return written(helper.initialize_vanilla_model(mconf), 'initialize_vanilla_model')
    initializer = SECOND_MODELS[args.variant][0]  # the perceiver's takes its latents too
    latents = dict(bottleneck_dim=args.bottleneck_dim) if args.variant == 'perceiver' else {}
    model = written(getattr(helper, initializer)(mconf, **latents), initializer)
    if not getattr(model, args.variant, False):
        raise PartFailure(not_the_model(args.variant))
    return model


@dataclass
class Inputs:
    """What a run needs, read and checked."""
    device: object
    size: dict  # n_layer, n_head, n_embd
    pretraining: object  # the CharCorruptionDataset of the corpus, which fixes the vocabulary
    vocabulary: str  # its characters in index order
    model: object
    params: Optional[dict] = None  # the checked state_dict to evaluate or start from
    questions: Optional[list] = None  # evaluate: the questions to answer
    places: Optional[list] = None  # evaluate: their labels, None for a questions-only file


def read_inputs(args, device_name):
    """Check every input of the run, in order, and return them parsed (raises InputError)."""
    device = chosen_device(device_name)
    stage_inputs_exist(args)
    if not args.pretrain_corpus_path:
        raise InputError("--pretrain_corpus_path is needed: the vocabulary always comes from the pretraining corpus")
    size = model_size(args)
    if args.function == 'evaluate':
        need_output_folder(args.outputs_path, '--outputs_path')
    else:
        need_output_folder(args.writing_params_path, '--writing_params_path')
    pretraining = pretraining_dataset(args.pretrain_corpus_path)
    vocabulary = vocabulary_string(pretraining)
    set_seed(args.seed)
    inputs = Inputs(device, size, pretraining, vocabulary, build_model(args, pretraining.vocab_size, size))
    if args.function == 'evaluate':
        inputs.questions, inputs.places = read_questions(args.eval_corpus_path, '--eval_corpus_path',
                                                         pretraining.stoi, finetuning=False)
    elif args.function == 'finetune':
        read_questions(args.finetune_corpus_path, '--finetune_corpus_path', pretraining.stoi, finetuning=True)
    if args.function == 'evaluate' or args.reading_params_path:
        inputs.params = checked_params(args.reading_params_path, inputs.model, args.variant, vocabulary)
    return inputs


def evaluate(args, inputs, processes):
    """Answer the questions (each process its share), write the predictions, and print the
    accuracy where there are labels."""
    inputs.model.load_state_dict(inputs.params)
    inputs.model.to(inputs.device)
    mine = predict_places(inputs.model, distributed.share(inputs.questions, processes), inputs.pretraining,
                          inputs.device, batch_size=args.eval_batch_size)
    predictions = distributed.gathered(mine, processes)
    if not processes.main:
        return
    write_predictions(args.outputs_path, predictions)
    if inputs.places is None:
        print(f"wrote {len(predictions)} predictions to {args.outputs_path}; "
              f"{args.eval_corpus_path} has no labels, so there is no accuracy to report")
        return
    total, correct = evaluate_places(args.eval_corpus_path, predictions)
    print(f"wrote {len(predictions)} predictions to {args.outputs_path}")
    print('Correct: {} out of {}: {}%'.format(correct, total, correct / total * 100))


def training_overrides(args):
    """The trainer settings the command line changes: a smoke run's, then --max_epochs and --batch_size."""
    overrides = dict(SMALL_TRAINING) if args.small else {}
    overrides.update({name: getattr(args, name) for name in ('max_epochs', 'batch_size')
                      if getattr(args, name) is not None})
    return overrides


def run_name(args):
    """The run's name, which names its folder of records."""
    return args.tb_expt_name or f"{args.variant}_{args.function}"


def run_identity(args, inputs, config, processes):
    """What a checkpoint of this run must match to be resumed."""
    training = {name: getattr(config, name) for name in ('max_epochs', 'batch_size', 'learning_rate', 'betas',
                                                         'grad_norm_clip', 'weight_decay', 'lr_decay',
                                                         'warmup_tokens', 'final_tokens')}
    return dict(run=run_name(args), function=args.function,
                variant=args.variant, vocabulary=inputs.vocabulary, configuration=args.configuration,
                processes=processes.world, training=training, seed=args.seed)


def train(args, inputs, processes):
    """Build the student's trainer (helper.pretrain or helper.finetune), plug the stages' training
    into it with this run's settings and callbacks (checkpoints; a duration estimate on a CPU), and
    let the student's helper.train run it and save the parameters, stamped; only the main process
    writes files."""
    size, model = inputs.size, inputs.model
    run_dir = os.path.join(args.experiments_dir, run_name(args))
    checkpoint = os.path.join(run_dir, CHECKPOINT_NAME)
    if processes.main:
        print(f"{args.function} {args.variant}: n_layer {size['n_layer']}, n_head {size['n_head']}, "
              f"n_embd {size['n_embd']}, seed {args.seed}, on {inputs.device} x {processes.world}; "
              f"records in {run_dir}")
    with RunRecorder(run_dir) if processes.main else contextlib.nullcontext() as recorder:
        if args.function == 'pretrain':
            tconf, trainer = helper.pretrain(inputs.pretraining, BLOCK_SIZE, model, args.pretrain_lr, writer=recorder)
        else:
            tconf, trainer = helper.finetune(args.reading_params_path, args.finetune_corpus_path, inputs.pretraining,
                                             BLOCK_SIZE, model, args.finetune_lr, writer=recorder)
        written(tconf, args.function, 'returned no TrainerConfig')
        written(trainer, args.function, 'returned no Trainer')
        if args.compile and processes.main:
            print(EAGER_NOT_COMPILED, file=sys.stderr)
        if args.plain:
            training = plain_training(trainer, inputs.device, args, processes)
        else:
            training = fast_training(trainer, inputs.device, args, processes)
        identity = run_identity(args, inputs, trainer.config, processes)
        resume = read_checkpoint(checkpoint, identity) if args.resume else None
        if resume and recorder:
            recorder.resume_from(resume['step'])
        if recorder:
            record_seed(run_dir, args.seed)
        with (contextlib.nullcontext() if training is None else
              Checkpointer(checkpoint, identity, args.checkpoint_every, processes, resume,
                           training.scaler)) as checkpointer:
            if training is not None:
                training.callbacks.append(checkpointer)  # Ctrl-C is the checkpointer's until training ends
                if inputs.device.type == 'cpu' and not args.configuration and processes.main:
                    training.callbacks.append(DurationEstimate())
            stamp(model, inputs.vocabulary, args.configuration, args.seed)
            started, first_step = time.monotonic(), resume['step'] if resume else 0
            if processes.main:
                replace_when_done(args.writing_params_path, lambda temporary: saved_by(temporary, model, trainer))
            else:
                with tempfile.TemporaryDirectory() as folder:
                    saved_by(os.path.join(folder, 'parameters'), model, trainer)
            seconds = time.monotonic() - started
    if processes.main:
        print(f"saved parameters to {args.writing_params_path}")
        print(training_summary(trainer.step - first_step, seconds, inputs.device))


def fast_training(trainer, device, args, processes):
    """The stages' FastTraining plugged into the student's `trainer`, with this run's settings."""
    try:
        return plug_into(trainer, device, args.precision, False, processes, args.seed, **training_overrides(args))
    except ValueError as error:
        raise InputError(str(error)) from None


def plain_training(trainer, device, args, processes):
    """--plain: the student's Trainer is left to train exactly as written, on `device`, with the
    command line's trainer settings; None, where the stages' training would be."""
    if processes.world > 1:
        raise InputError("--plain trains in one process: run it without NPROC")
    trainer.device = device
    for name, value in training_overrides(args).items():
        setattr(trainer.config, name, value)
    return None


def training_summary(steps, seconds, device):
    """One line: the steps this process trained, how fast, and on CUDA the peak memory they took."""
    line = f"trained {steps} steps in {seconds:.1f} s ({steps / max(seconds, 1e-9):.2f} steps/s)"
    if device.type == 'cuda':
        line += f", peak GPU memory {torch.cuda.max_memory_allocated(device) / 2 ** 20:.0f} MiB"
    return line


class Diverged(Exception):
    """Training ended with parameters that are not all finite."""


def saved_by(path, model, trainer):
    """The student's helper.train: train, then save the parameters to `path` (or PartFailure, or
    Diverged, which leaves the file at writing_params_path as it was)."""
    helper.train(model, path, trainer)
    if not os.path.isfile(path):
        raise unwritten('train', "saved no parameters (it should save the model's state_dict to writing_params_path)")
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise Diverged(f"training diverged: the parameters hold NaN or infinite values after step {trainer.step}, "
                       f"so they were not saved (the records of the run show where the loss went)")


def main(argv=None):
    """Run the command line `argv` (default sys.argv[1:]); return the exit status (argparse exits 2 itself)."""
    args = parse_args(argv)
    processes, device_name = distributed.start(args.device)
    try:
        args.seed = run_seed(args.seed, args.resume and args.function != 'evaluate',
                             os.path.join(args.experiments_dir, run_name(args)), processes)
        inputs = read_inputs(args, device_name)
        if processes.rank:
            set_seed(args.seed + processes.rank)  # the model is built: each process its own dropout
        if args.configuration and processes.main:
            print(f"run.py: not the graded configuration ({args.configuration}): a smoke run, not for grading",
                  file=sys.stderr)
        if args.function == 'evaluate':
            evaluate(args, inputs, processes)
        else:
            train(args, inputs, processes)
    except (InputError, PartFailure, Diverged) as error:
        print(f"run.py: error: {error}", file=sys.stderr)
        return 1
    except NotImplementedError as error:
        print(f"run.py: error: {unimplemented_line(error)}", file=sys.stderr)
        traceback.print_exception(error)
        return 1
    except Interrupted:
        if processes.main:
            print(f"run.py: interrupted; the run is saved in a checkpoint: resume it with the same command and "
                  f"--resume (./run.sh {args.stage or '<stage>'} --resume, or RESUME=1)", file=sys.stderr)
        return 130
    finally:
        distributed.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
