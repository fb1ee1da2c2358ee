"""
The two datasets of the assignment, both character-level.

CharCorruptionDataset turns one-line biographies into span-corruption
examples for pretraining; NameDataset turns "question<TAB>answer" lines into
finetuning examples. Both share one vocabulary: id 0 is PAD_CHAR, id 1 is
MASK_CHAR, and ids 2.. are the sorted distinct characters of the
pretraining corpus.
Part of a fork of Andrej Karpathy's minGPT (MIT licence; see LICENSE).
"""

import argparse
import os
import random

import torch
from torch.utils.data import Dataset


class NameDataset(Dataset):
    """
    Each line "question<TAB>answer" becomes one example

        x = question MASK answer MASK PAD ... PAD   (block_size - 1 characters)
        y = PAD ... PAD  answer MASK PAD ... PAD     (x shifted left by one,
                                                      question positions PAD)

    so the loss (which ignores PAD) is taken only on the answer and its
    closing MASK. The vocabulary is the pretraining dataset's; only ASCII is
    kept. Empty lines are skipped.
    """

    def __init__(self, data, pretraining_dataset):
        self.MASK_CHAR = pretraining_dataset.MASK_CHAR  # the doublequestionmark character, for mask
        self.PAD_CHAR = pretraining_dataset.PAD_CHAR  # the empty square character, for pad
        self.itos = pretraining_dataset.itos
        self.stoi = pretraining_dataset.stoi
        self.block_size = pretraining_dataset.block_size
        lines = data.encode('utf-8').decode('ascii', errors='ignore').split('\n')
        numbered = [(number, line) for number, line in enumerate(lines, start=1) if line.strip()]
        self.data = [line for _, line in numbered]
        for number, line in numbered:
            if line.count('\t') != 1:
                raise ValueError(f"line {number} is not 'question<TAB>answer': {line!r}")
            unknown = sorted(set(line.replace('\t', '')) - set(self.stoi))
            if unknown:
                raise ValueError(f"line {number} has characters not in the pretraining vocabulary: {''.join(unknown)!r}")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        inp, oup = self.data[idx].split('\t')
        x = inp + self.MASK_CHAR + oup + self.MASK_CHAR
        x = x + self.PAD_CHAR * (self.block_size - len(x))
        y = self.PAD_CHAR * (len(inp) - 1) + x[len(inp):]

        x = x[:-1]
        x = torch.tensor([self.stoi[c] for c in x], dtype=torch.long)
        y = torch.tensor([self.stoi[c] for c in y], dtype=torch.long)
        return x, y


class CharCorruptionDataset(Dataset):
    """
    Span corruption on documents, one document a line of the corpus.

    [part e] Write __getitem__: example idx is made from document idx in
    four steps.
      1. Truncate the document to a random length between 4 and the bound
         of your edition of the handout, every length in that range
         possible; a shorter document stays whole. The bound is
         int(block_size * 7/8) in the Fall 2023 edition and
         int(block_size * 3/4) in the 2024 editions (Winter, Spring, Fall);
         either is accepted.
      2. Split the truncated text into prefix + masked_content + suffix,
         where the length of masked_content is random and about a quarter
         of the truncated length on average.
      3. Rearrange it as
             prefix MASK suffix MASK masked_content MASK
         and pad it with PAD up to block_size characters.
      4. x is that string without its last character and y without its
         first (so y is x shifted by one), both encoded with stoi as
         LongTensors of block_size - 1 ids. The handout's wording also
         speaks of x and y of block_size ids (one more PAD before the
         shift); either length is accepted.

    For example, the document "Khatchig Mouradian. Khatchig Mouradian is a
    journalist" might give
        x: Khatchig Mouradian. Khatchig Mouradia⁇ is a journalist⁇n⁇□□□...
        y: hatchig Mouradian. Khatchig Mouradia⁇ is a journalist⁇n⁇□□□□...
    The model learns to write the masked content after the second MASK.
    """

    def __init__(self, data, block_size):
        self.MASK_CHAR = u"\u2047"  # the doublequestionmark character, for mask
        self.PAD_CHAR = u"\u25A1"  # the empty square character, for pad

        chars = list(sorted(list(set(data))))
        assert self.MASK_CHAR not in chars
        assert self.PAD_CHAR not in chars
        chars.insert(0, self.MASK_CHAR)
        chars.insert(0, self.PAD_CHAR)

        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = {i: ch for i, ch in enumerate(chars)}

        data_size, vocab_size = len(data), len(chars)
        print('data has %d characters, %d unique.' % (data_size, vocab_size))

        self.block_size = block_size
        self.vocab_size = vocab_size
        self.data = data.split('\n')

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        ### [part e]: the four steps of the class docstring
        ### START_CODE_HERE ###
        document = self.data[idx]
        truncated = document[:random.randint(4, int(self.block_size * 7 / 8))]

        masked_len = min(len(truncated), random.randint(1, max(1, len(truncated) // 2)))
        start = random.randint(0, len(truncated) - masked_len)
        prefix = truncated[:start]
        masked_content = truncated[start:start + masked_len]
        suffix = truncated[start + masked_len:]

        text = prefix + self.MASK_CHAR + suffix + self.MASK_CHAR + masked_content + self.MASK_CHAR
        text = text + self.PAD_CHAR * (self.block_size - len(text))

        x = torch.tensor([self.stoi[c] for c in text[:-1]], dtype=torch.long)
        y = torch.tensor([self.stoi[c] for c in text[1:]], dtype=torch.long)
        return x, y
        ### END_CODE_HERE ###


def show_examples(dataset, count=4):
    """Print the first `count` examples of a dataset as x and y strings."""
    for x, y in (dataset[i] for i in range(min(count, len(dataset)))):
        print('x:', ''.join(dataset.itos[int(c)] for c in x))
        print('y:', ''.join(dataset.itos[int(c)] for c in y))


if __name__ == '__main__':
    argp = argparse.ArgumentParser(description="Print a few examples of a dataset, to check it by eye.")
    argp.add_argument('dataset_type', choices=["namedata", "charcorruption"])
    argp.add_argument('--data_dir', default=os.environ.get(
        'DATA_DIR', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'data')))
    args = argp.parse_args()

    with open(os.path.join(args.data_dir, 'wiki.txt'), encoding='utf-8') as f:
        corruption_dataset = CharCorruptionDataset(f.read(), 128)
    if args.dataset_type == 'namedata':
        with open(os.path.join(args.data_dir, 'birth_places_train.tsv'), encoding='utf-8') as f:
            show_examples(NameDataset(f.read(), corruption_dataset))
    else:
        show_examples(corruption_dataset)
