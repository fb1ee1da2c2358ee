"""
Pretrain, finetune or evaluate the assignment's models. ./run.sh calls this
for every stage; `python src/run.py --help` lists the options.

    python src/run.py --function pretrain --variant vanilla \
        --pretrain_corpus_path data/wiki.txt \
        --writing_params_path src/submission/vanilla.pretrain.params

The vocabulary always comes from the pretraining corpus, whatever the
function; the parameters written here carry it in their state_dict's
metadata, and parameters carrying another are refused. Every input is
checked before anything is written: a bad input gets one line on stderr and
exit status 1, and the files already there stay as they were (new files are
written to a temporary name, then renamed).
Training records go to <experiments_dir>/<tb_expt_name>/ (see metrics.py).

--small shrinks the model and the training to a smoke test that runs in
seconds on a CPU; the graded stages never use it.
"""

import argparse
import os
import sys

import torch

from decoding import predict_places
from metrics import RunRecorder
from submission import helper
from submission.dataset import CharCorruptionDataset
from submission.model import GPTConfig
from submission.utils import evaluate_places, pick_device, set_seed

BLOCK_SIZE = 128
GRADED_MODEL = dict(n_layer=4, n_head=8, n_embd=256)
SMALL_MODEL = dict(n_layer=2, n_head=2, n_embd=32)
SMALL_TRAINING = dict(max_epochs=1, batch_size=32, num_workers=0)
RESERVED_CHARS = {'\u25A1': 'PAD', '\u2047': 'MASK'}  # CharCorruptionDataset's PAD_CHAR and MASK_CHAR


class InputError(Exception):
    """A bad command line or input file: reported as one line on stderr, exit status 1."""


def parse_args(argv):
    p = argparse.ArgumentParser(description="Pretrain, finetune or evaluate a character-level GPT "
                                            "on the birth-place task.")
    p.add_argument('--function', required=True, choices=['pretrain', 'finetune', 'evaluate'])
    p.add_argument('--variant', required=True, choices=['vanilla', 'perceiver'])
    p.add_argument('--pretrain_corpus_path', help="wiki.txt: the pretraining corpus, which also "
                                                  "defines the vocabulary (needed by every function)")
    p.add_argument('--reading_params_path', help="parameters to start from (finetune) or to evaluate")
    p.add_argument('--writing_params_path', help="where to save the trained parameters")
    p.add_argument('--finetune_corpus_path', help="'question<TAB>place' lines to finetune on")
    p.add_argument('--eval_corpus_path', help="questions to answer, with or without '<TAB>place'")
    p.add_argument('--outputs_path', help="where to write the predictions, one a line")
    p.add_argument('--bottleneck_dim', type=int, default=32, help="perceiver latents m (default 32)")
    p.add_argument('--pretrain_lr', type=float, default=6e-3)
    p.add_argument('--finetune_lr', type=float, default=6e-4)
    p.add_argument('--tb_expt_name', help="run name for the records (default <variant>_<function>)")
    p.add_argument('--experiments_dir', default='experiments', help="folder of the run records")
    p.add_argument('--device', default='auto', help="auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps")
    p.add_argument('--precision', default='auto', choices=['auto', 'fp32', 'bf16', 'fp16'],
                   help="training precision; auto is bf16/fp16 autocast on CUDA, fp32 elsewhere")
    p.add_argument('--compile', action='store_true', help="torch.compile the model for training")
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--eval_batch_size', type=int, default=256, help="questions decoded together")
    small = p.add_argument_group("smoke runs (never for the graded stages)")
    small.add_argument('--small', action='store_true',
                       help="n_layer %(n_layer)d, n_head %(n_head)d, n_embd %(n_embd)d" % SMALL_MODEL
                            + ", %(max_epochs)d epoch, batch %(batch_size)d, no loader workers" % SMALL_TRAINING)
    for name in ('n_layer', 'n_head', 'n_embd', 'max_epochs', 'batch_size'):
        small.add_argument('--' + name, type=int, help="override (default: graded value, or --small's)")
    return p.parse_args(argv)


def need_file(path, option, what):
    """The path of an existing file given by `option`, or an InputError saying what is wrong."""
    if not path:
        raise InputError(f"{option} is needed: {what}")
    if not os.path.isfile(path):
        raise InputError(f"{what} not found: {path} ({option})")
    return path


def need_output_folder(path, option):
    """Check that `path` may be written: given, not a folder, in a folder that exists."""
    if not path:
        raise InputError(f"{option} is needed")
    if os.path.isdir(path):
        raise InputError(f"{option} is a folder, not a file: {path}")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise InputError(f"the folder of {option} is a file, not a folder: {folder}")
    if not os.path.isdir(folder):
        raise InputError(f"the folder of {option} does not exist: {folder}")
    return path


def read_text(path, option, what):
    need_file(path, option, what)
    try:
        with open(path, encoding='utf-8') as f:
            return f.read()
    except UnicodeDecodeError as error:
        raise InputError(f"{path} is not UTF-8 text (byte {error.start})") from None


def pretraining_dataset(path):
    """The span-corruption dataset of the corpus at `path`, which fixes the vocabulary."""
    text = read_text(path, '--pretrain_corpus_path', "pretraining corpus (it also defines the vocabulary)")
    if not text.strip():
        raise InputError(f"the pretraining corpus is empty: {path}")
    for char, name in RESERVED_CHARS.items():
        if char in text:
            raise InputError(f"{path} contains {char!r}, which is reserved for {name}")
    return CharCorruptionDataset(text, BLOCK_SIZE)


def shown(chars):
    return ', '.join(repr(c) for c in sorted(chars))


def read_questions(path, option, vocabulary, finetuning):
    """
    The questions of a 'question<TAB>place' file, or of a file of questions
    only, and the places (None for a questions-only file). Blank lines are
    skipped. Every character the model will read must be in the vocabulary:
    for finetuning that is the ASCII part of each line (NameDataset keeps
    ASCII only), for evaluation the question.
    """
    text = read_text(path, option, "question file")
    lines = [(number, line if finetuning else line.rstrip('\r'))
             for number, line in enumerate(text.split('\n'), start=1) if line.strip()]
    if not lines:
        raise InputError(f"{path} has no questions")
    labelled = finetuning or '\t' in lines[0][1]
    questions, places = [], []
    for number, line in lines:
        tabs = line.count('\t')
        if labelled and tabs != 1:
            raise InputError(f"{path} line {number}: expected 'question<TAB>place', found "
                             f"{'no tab' if tabs == 0 else f'{tabs} tabs'}: {line[:70]!r}")
        if not labelled and tabs:
            raise InputError(f"{path} line {number} has a tab, but line {lines[0][0]} has none: "
                             f"either every line is 'question<TAB>place' or none is")
        question, _, place = line.partition('\t')
        read = line.replace('\t', '').encode('ascii', errors='ignore').decode() if finetuning else question
        unknown = set(read) - set(vocabulary)
        if unknown:
            raise InputError(f"{path} line {number}: characters not in the pretraining corpus's "
                             f"vocabulary: {shown(unknown)}{' (Windows line ends?)' if chr(13) in unknown else ''}")
        questions.append(question)
        places.append(place)
    return questions, places if labelled else None


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


def build_model(args, vocab_size):
    mconf = GPTConfig(vocab_size, BLOCK_SIZE, **model_size(args))
    if args.variant == 'vanilla':
        return helper.initialize_vanilla_model(mconf)
    return helper.initialize_perceiver_model(mconf, bottleneck_dim=args.bottleneck_dim)


def vocabulary_string(dataset):
    """The dataset's characters in index order: what a params file is stamped with."""
    return ''.join(dataset.itos[i] for i in range(dataset.vocab_size))


def stamp_vocabulary(path, vocabulary):
    """Re-save the state_dict at `path` with `vocabulary` in its metadata (which load_state_dict ignores)."""
    state = torch.load(path, map_location=torch.device('cpu'), weights_only=True)
    state._metadata['']['vocabulary'] = vocabulary
    torch.save(state, path)


def checked_params(path, model, variant, vocabulary, option='--reading_params_path',
                   size_options='--small, --n_layer, --n_head, --n_embd, --bottleneck_dim'):
    """The state_dict saved at `path` (given by `option`), after checking that it fits `model` key
    for key and shape for shape, and, if it is stamped with one, that its vocabulary is `vocabulary`.
    A misfit's message ends with the options that set the model's size (`size_options`), if given."""
    need_file(path, option, "parameters file")
    try:
        state = torch.load(path, map_location=torch.device('cpu'), weights_only=True)
    except Exception as error:
        reason = str(error).strip().split('\n')[0][:100]
        raise InputError(f"cannot read parameters from {path}: not a PyTorch parameters file, or cut short "
                         f"({type(error).__name__}{': ' + reason if reason else ''})") from None
    if not isinstance(state, dict) or 'tok_emb.weight' not in state:
        raise InputError(f"{path} does not hold the parameters of a GPT")
    saved_variant = 'perceiver' if any(key.startswith('down_block.') for key in state) else 'vanilla'
    if saved_variant != variant:
        raise InputError(f"{path} holds {saved_variant} parameters, but --variant is {variant}")
    expected = model.state_dict()
    saved_vocab, vocab = state['tok_emb.weight'].shape[0], expected['tok_emb.weight'].shape[0]
    if saved_vocab != vocab:
        raise InputError(f"{path} was saved with a vocabulary of {saved_vocab} entries, but the pretraining "
                         f"corpus gives {vocab}: use parameters trained with this corpus")
    saved_chars = getattr(state, '_metadata', {}).get('', {}).get('vocabulary')
    if saved_chars is not None and saved_chars != vocabulary:
        differ = set(saved_chars) ^ set(vocabulary)
        raise InputError(f"{path} was trained with another vocabulary (it differs in "
                         f"{shown(differ) if differ else 'the order of its characters'}): "
                         f"use parameters trained with this pretraining corpus")
    mismatch = sorted(set(expected) ^ set(state))
    mismatch += [key for key in expected if key in state and state[key].shape != expected[key].shape]
    if mismatch:
        key = mismatch[0]
        detail = (f"{key} is {tuple(state[key].shape)} there and {tuple(expected[key].shape)} here"
                  if key in state and key in expected else f"{key} is {'missing' if key in expected else 'extra'}")
        raise InputError(f"{path} was saved from a model of another size ({detail})"
                         + (f": check {size_options}" if size_options else ""))
    return state


def chosen_device(name):
    if name == 'auto':
        return pick_device()
    try:
        device = torch.device(name)
    except RuntimeError:
        raise InputError(f"unknown device {name!r}: use auto, cpu, cuda, cuda:N or mps") from None
    if device.type == 'cuda' and not torch.cuda.is_available():
        raise InputError("--device cuda, but PyTorch sees no CUDA GPU on this machine")
    if device.type == 'mps' and not torch.backends.mps.is_available():
        raise InputError("--device mps, but PyTorch sees no MPS device on this machine")
    return device


def temporary_path_beside(path):
    """A name in the folder of `path` for writing it in full before renaming it to `path`."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.{os.getpid()}.tmp")


def replace_when_done(path, write):
    """Call write(temporary_path), then rename the temporary file to `path`; on failure remove it."""
    temporary = temporary_path_beside(path)
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def write_predictions(path, predictions):
    """One prediction a line; a line break inside a prediction becomes a space, so lines stay aligned."""
    def write(temporary):
        with open(temporary, 'w', encoding='utf-8') as f:
            for place in predictions:
                f.write(place.replace('\r', ' ').replace('\n', ' ') + '\n')
    replace_when_done(path, write)


def train(args, model, trainer, tconf, device, vocabulary):
    """Run the trainer with this command line's device and overrides, and save the parameters,
    stamped with the vocabulary."""
    tconf.device = device
    tconf.precision = args.precision
    tconf.compile = args.compile
    if args.small:
        for name, value in SMALL_TRAINING.items():
            setattr(tconf, name, value)
    for name in ('max_epochs', 'batch_size'):
        if getattr(args, name) is not None:
            setattr(tconf, name, getattr(args, name))
    def write(temporary):
        helper.train(model, temporary, trainer)
        stamp_vocabulary(temporary, vocabulary)
    replace_when_done(args.writing_params_path, write)
    print(f"saved parameters to {args.writing_params_path}")


def run(args):
    device = chosen_device(args.device)
    if not args.pretrain_corpus_path:
        raise InputError("--pretrain_corpus_path is needed: the vocabulary always comes from the pretraining corpus")
    size = model_size(args)
    if args.function == 'evaluate':
        need_output_folder(args.outputs_path, '--outputs_path')
    else:
        need_output_folder(args.writing_params_path, '--writing_params_path')
    pretrain_dataset = pretraining_dataset(args.pretrain_corpus_path)
    vocabulary = pretrain_dataset.stoi
    characters = vocabulary_string(pretrain_dataset)
    set_seed(args.seed)
    model = build_model(args, pretrain_dataset.vocab_size)
    run_dir = os.path.join(args.experiments_dir, args.tb_expt_name or f"{args.variant}_{args.function}")

    if args.function == 'evaluate':
        questions, places = read_questions(args.eval_corpus_path, '--eval_corpus_path', vocabulary, finetuning=False)
        model.load_state_dict(checked_params(args.reading_params_path, model, args.variant, characters))
        model.to(device)
        predictions = predict_places(model, questions, pretrain_dataset, device, batch_size=args.eval_batch_size)
        write_predictions(args.outputs_path, predictions)
        if places is None:
            print(f"wrote {len(predictions)} predictions to {args.outputs_path}; "
                  f"{args.eval_corpus_path} has no labels, so there is no accuracy to report")
            return 0
        total, correct = evaluate_places(args.eval_corpus_path, predictions)
        print(f"wrote {len(predictions)} predictions to {args.outputs_path}")
        print('Correct: {} out of {}: {}%'.format(correct, total, correct / total * 100))
        return 0

    if args.function == 'finetune':
        read_questions(args.finetune_corpus_path, '--finetune_corpus_path', vocabulary, finetuning=True)
        if args.reading_params_path:
            checked_params(args.reading_params_path, model, args.variant, characters)
    print(f"{args.function} {args.variant}: n_layer {size['n_layer']}, n_head {size['n_head']}, "
          f"n_embd {size['n_embd']}, on {device}; records in {run_dir}")
    with RunRecorder(run_dir) as recorder:
        if args.function == 'pretrain':
            tconf, trainer = helper.pretrain(pretrain_dataset, BLOCK_SIZE, model, args.pretrain_lr, writer=recorder)
        else:
            tconf, trainer = helper.finetune(args.reading_params_path, args.finetune_corpus_path, pretrain_dataset,
                                             BLOCK_SIZE, model, args.finetune_lr, writer=recorder)
        train(args, model, trainer, tconf, device, characters)
    return 0


def main(argv=None):
    """Run the command line `argv` (default sys.argv[1:]); return the exit status (argparse exits 2 itself)."""
    args = parse_args(argv)
    try:
        return run(args)
    except InputError as error:
        print(f"run.py: error: {error}", file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
