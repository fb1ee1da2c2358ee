"""
How many greedy answers change when the same parameters are decoded at
another precision: the measurement behind the grader's min_agreement
(docs/grading.md, "Why 85% agreement"). The questions are answered with the stages' own
decoding (runtime.decoding.predict_places) once in fp32 and once under bf16
autocast on the same device, or, with --against, the fp32 answers are
compared with a prediction file made elsewhere (on a GPU, say).

    PYTHONPATH=src python3 -m instructors.agreement --params vanilla.model.params --variant vanilla \
        --corpus data/wiki.txt --questions data/birth_dev.tsv [--against FILE] [--write FILE] \
        [--device cpu] [--threads N]

prints one line (the accuracies only when the question file has labels):

    vanilla, 500 questions: 7 answers differ (1.4%); fp32 right 12, bf16 right 11

Two answers differ when they differ after stripping spaces, as the grader
compares them. The model is built as src/run.py builds it, of the size the
parameters file was trained with: its stamp (runtime/params.py), or for an
unstamped file the tensors' shapes, with the graded number of heads (which
no shape shows). Bad input gets one line on stderr and exit status 1.

Under bf16 autocast the batched decoding seldom serves: its check against
the model's own forward (within 1e-4) fails for the vanilla GPT, and the
perceiver's cache cannot hold bf16 keys, so those answers come from the
one-question loop (predict_places_plain), which predict_places must equal;
stderr says so. That takes about a minute for 500 questions of a 2-layer,
128-wide model on one CPU thread; the fp32 pass takes seconds. --write
keeps the fp32 answers, to compare with --against on another machine.
"""

import argparse
import contextlib
import io
import os
import sys

import torch

from assignment.facts import BOTTLENECK_DIM, GRADED_MODEL
from assignment.not_written_yet import PartFailure
from runtime.atomic_files import write_predictions
from runtime.command_line import model_size, parse_args as run_arguments
from runtime.decoding import predict_places, predict_places_plain
from runtime.inputs import InputError, chosen_device, need_file, need_output_folder, pretraining_dataset, \
    read_questions, read_text
from runtime.params import checked_params, read_stamp, vocabulary_string
from run import build_model

SIZE_NAMES = ('n_layer', 'n_head', 'n_embd', 'bottleneck_dim')
EVAL_BATCH_SIZE = run_arguments(['--function', 'evaluate', '--variant', 'vanilla']).eval_batch_size


def parse_args(argv):
    p = argparse.ArgumentParser(description="Count the greedy answers that differ between fp32 decoding and "
                                            "bf16 autocast (or a prediction file made elsewhere).")
    p.add_argument('--params', required=True, help="a parameters file as the stages write it")
    p.add_argument('--variant', required=True, choices=['vanilla', 'perceiver'])
    p.add_argument('--corpus', '--pretrain_corpus_path', dest='corpus', required=True,
                   help="wiki.txt: the pretraining corpus, which defines the vocabulary")
    p.add_argument('--questions', required=True, help="questions to answer, with or without '<TAB>place'")
    p.add_argument('--against', help="compare the fp32 answers with this prediction file (one a line) "
                                     "instead of with bf16 autocast")
    p.add_argument('--write', help="also write the fp32 answers to this file, one a line, as the stages do")
    p.add_argument('--device', default='cpu', help="cpu (default), cuda, cuda:N, mps or auto")
    p.add_argument('--threads', type=int, help="torch's CPU threads (default: torch's own choice)")
    p.add_argument('--batch_size', type=int, default=EVAL_BATCH_SIZE,
                   help=f"questions decoded together (default {EVAL_BATCH_SIZE}, as run.py's --eval_batch_size)")
    return p.parse_args(argv)


def trained_size(path):
    """n_layer, n_head, n_embd and bottleneck_dim of the parameters at `path`: the graded ones, changed
    by the stamp's configuration, or for an unstamped file by the tensors' shapes. A file that cannot
    be read gives the graded size (checked_params then says what is wrong with it)."""
    size = dict(GRADED_MODEL, bottleneck_dim=BOTTLENECK_DIM)
    try:
        state = torch.load(path, map_location='cpu', weights_only=True)
        stamp = read_stamp(state)
        if 'configuration' in stamp:
            settings = dict(item.partition('=')[::2] for item in stamp['configuration'].split())
            size.update((name, int(settings[name])) for name in SIZE_NAMES if name in settings)
        else:
            perceiver = 'down_block.C' in state
            blocks = {key.split('.')[1] for key in state if key.startswith('blocks.')}
            size.update(n_layer=len(blocks) + 2 * perceiver, n_embd=state['tok_emb.weight'].shape[1])
            if perceiver:
                size['bottleneck_dim'] = state['down_block.C'].shape[1]
    except Exception:
        pass
    return size


def loaded_model(path, variant, dataset, vocabulary):
    """The model of `variant` as run.py builds it, of the size the parameters at `path` were trained
    with, holding them (checked by runtime.params.checked_params)."""
    need_file(path, '--params', "parameters file")
    size = trained_size(path)
    run_args = run_arguments(['--function', 'evaluate', '--variant', variant]
                             + [f'--{name}={size[name]}' for name in SIZE_NAMES])
    model = build_model(run_args, dataset.vocab_size, model_size(run_args))
    model.load_state_dict(checked_params(path, model, variant, vocabulary, option='--params', size_options=None))
    return model


def read_predictions(path, count):
    """The lines of the prediction file at `path` (as the grader reads one), which must be `count`."""
    lines = read_text(path, '--against', "prediction file").split('\n')
    if lines[-1] == '':
        lines.pop()
    if len(lines) != count:
        raise InputError(f"{path} has {len(lines)} predictions for {count} questions")
    return [line.rstrip('\r') for line in lines]


def answers(model, questions, dataset, device, batch_size, bf16=False):
    """The stages' greedy answers (predict_places), in fp32 or under bf16 autocast on `device`. Under
    autocast a cache that cannot take bf16 keys (the perceiver's) fails; those answers then come from
    predict_places_plain, the one-question loop predict_places must equal, and stderr says so."""
    if not bf16:
        return predict_places(model, questions, dataset, device, batch_size=batch_size)
    with torch.autocast(device.type, dtype=torch.bfloat16):
        try:
            return predict_places(model, questions, dataset, device, batch_size=batch_size)
        except RuntimeError as error:
            print(f"agreement: batched decoding fails under bf16 autocast ({str(error).splitlines()[0]}); "
                  f"answering one question at a time (predict_places_plain)", file=sys.stderr)
            return predict_places_plain(model, questions, dataset, device)


def differing(first, second):
    """How many answers differ, as the grader compares them (spaces around an answer do not count)."""
    return sum(a.strip() != b.strip() for a, b in zip(first, second))


def right(predictions, places):
    return sum(p.strip() == place.strip() for p, place in zip(predictions, places))


def summary(variant, fp32, other, other_name, places):
    """The line the tool prints."""
    differ = differing(fp32, other)
    line = f"{variant}, {len(fp32)} questions: {differ} answers differ ({100 * differ / len(fp32):.1f}%)"
    if places is not None:
        line += f"; fp32 right {right(fp32, places)}, {other_name} right {right(other, places)}"
    return line


def measured(args):
    """The summary line of the command line `args` (raises InputError or PartFailure)."""
    if args.threads is not None:
        if args.threads < 1:
            raise InputError(f"--threads {args.threads}: give a number of threads, 1 or more")
        torch.set_num_threads(args.threads)
    if args.batch_size < 1:
        raise InputError(f"--batch_size {args.batch_size}: give 1 or more")
    device = chosen_device(args.device)
    if args.write:
        need_output_folder(args.write, '--write')
    with contextlib.redirect_stdout(io.StringIO()):  # what the dataset and the model print of their sizes
        dataset = pretraining_dataset(args.corpus)
        vocabulary = vocabulary_string(dataset)
        model = loaded_model(args.params, args.variant, dataset, vocabulary).to(device)
    questions, places = read_questions(args.questions, '--questions', dataset.stoi, finetuning=False)
    other = read_predictions(args.against, len(questions)) if args.against else None
    fp32 = answers(model, questions, dataset, device, args.batch_size)
    if args.write:
        write_predictions(args.write, fp32)
    if other is None:
        other = answers(model, questions, dataset, device, args.batch_size, bf16=True)
    return summary(args.variant, fp32, other, os.path.basename(args.against) if args.against else 'bf16', places)


def main(argv=None):
    """Run the command line `argv` (default sys.argv[1:]); return the exit status (argparse exits 2 itself)."""
    args = parse_args(argv)
    try:
        line = measured(args)
    except (InputError, PartFailure) as error:
        print(f"agreement: error: {error}", file=sys.stderr)
        return 1
    print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main())
