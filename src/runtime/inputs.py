"""
The stages' input checks. Each reads one input, checks it, and returns the
parsed object the stage uses; a bad input raises InputError (of
assignment/question_files.py, whose reader the question files go through),
whose message is the one line the user sees (with exit status 1), before
anything is written.
"""

import os

import torch

from submission.dataset import CharCorruptionDataset
from submission.utils import pick_device

from assignment.facts import BLOCK_SIZE, RESERVED_CHARS
from assignment.question_files import InputError, read_question_file


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
    """The text of the file at `path`, its line ends read as \n (\r\n and a lone \r too, as Python's
    text mode reads them), or InputError naming `option` and `what` it is."""
    need_file(path, option, what)
    try:
        with open(path, encoding='utf-8') as f:
            return f.read()
    except UnicodeDecodeError as error:
        raise InputError(f"{path} is not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise InputError(f"cannot read {path} ({error.strerror or type(error).__name__}, {option})") from None


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
    The questions of a question file, read by the rules of read_question_file
    ('question<TAB>place' lines, or questions alone), and the places (None for
    a file of questions alone); finetuning needs the places. Every character
    the model will read must be in the vocabulary: for finetuning that is the
    ASCII part of each line (NameDataset keeps ASCII only), for evaluation the
    question. A finetuning line must keep a question and a place once its
    non-ASCII characters are dropped, and fit a block with its two MASKs.
    """
    need_file(path, option, "question file")
    lines = read_question_file(path, labelled=True if finetuning else None)
    for line in lines:
        read = ascii_part(line.text.replace('\t', '')) if finetuning else line.question
        for name, text in (('question', line.question), ('place', line.place)) if finetuning else ():
            if not ascii_part(text).strip():
                raise InputError(f"{path} line {line.number}: the {name} is empty once its non-ASCII characters "
                                 f"are dropped")
        if finetuning and len(read) + 2 > BLOCK_SIZE:
            raise InputError(f"{path} line {line.number}: question and place are {len(read)} characters, but with "
                             f"their two MASKs at most {BLOCK_SIZE - 2} fit a block of {BLOCK_SIZE}")
        unknown = set(read) - set(vocabulary)
        if unknown:
            raise InputError(f"{path} line {line.number}: characters not in the pretraining corpus's "
                             f"vocabulary: {shown(unknown)}")
    places = [line.place for line in lines]
    return [line.question for line in lines], None if places[0] is None else places


def ascii_part(text):
    """`text` without its non-ASCII characters, as NameDataset reads it."""
    return text.encode('ascii', errors='ignore').decode()


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
