"""
Helpers of the tests of run.sh and src/run.py: the course's four data
files written for a made-up class, a stage's environment and run.sh run
with it, a small model of either variant, and the `inputs` fixture (a
small corpus, parameters of both variants and of other sizes and
vocabularies, and malformed question files) with the command lines of
run.py's finetuning and evaluation on them.
"""

import os
import random
import subprocess
from pathlib import Path

import pytest
import torch

from assignment import facts
from runtime import command_line
from runtime.inputs import pretraining_dataset
from runtime.params import stamp, vocabulary_string
from submission import GPTConfig, helper


REPO = Path(__file__).resolve().parents[1]
RUN_SH = REPO / "run.sh"
DATA_FILES = ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv", "birth_test_inputs.tsv")
TINY = dict(n_layer=2, n_head=2, n_embd=32)  # the explicit model size of the in-process tests

FIRST = ["Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kenji", "Lara"]
LAST = ["Abbott", "Barros", "Cole", "Dunn", "Eklund", "Ferro", "Gale", "Hale", "Ivers", "Jory", "Kahn", "Lund"]
PLACES = ["London", "London", "London", "Paris", "Lagos", "Quito", "Bergen", "Osaka", "Perth", "Tbilisi"]


def write_corpus(folder, seed=7, people=90):
    """The course's four student files for `people` invented people: 60 to train, 20 dev, the rest test."""
    rng = random.Random(seed)
    names = rng.sample([f"{first} {last}" for first in FIRST for last in LAST], people)
    births = [(name, rng.choice(PLACES)) for name in names]
    wiki = [f"{name}. {name} is a writer born in {place} who later lived in {rng.choice(PLACES)} ."
            for name, place in births]
    wiki.append("Where was the river born? Nobody knows .")
    questions = [f"Where was {name} born?" for name, _ in births]
    labelled = [f"{q}\t{place}\n" for q, (_, place) in zip(questions, births)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "wiki.txt").write_text("\n".join(wiki) + "\n", encoding="utf-8")
    (folder / "birth_places_train.tsv").write_text("".join(labelled[:60]), encoding="utf-8")
    (folder / "birth_dev.tsv").write_text("".join(labelled[60:80]), encoding="utf-8")
    (folder / "birth_test_inputs.tsv").write_text("".join(q + "\n" for q in questions[80:]), encoding="utf-8")
    return folder


def stage_env(data_dir, out_dir, experiments_dir, small=True):
    env = dict(os.environ, DATA_DIR=str(data_dir), OUT_DIR=str(out_dir), EXPERIMENTS_DIR=str(experiments_dir),
               DEVICE="cpu", OMP_NUM_THREADS="1")
    env.pop("SMALL", None)
    if small:
        env["SMALL"] = "1"
    return env


def run_sh(*args, env=None):
    return subprocess.run(["bash", str(RUN_SH), *args], env=env or dict(os.environ), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=900)


def nonblank_lines(path):
    return [line for line in Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]


def vocabulary_size(wiki_path):
    return len(set(Path(wiki_path).read_text(encoding="utf-8"))) + 2


def folder_state(folder):
    """Every file of a folder with its bytes."""
    return {p.name: p.read_bytes() for p in Path(folder).iterdir()}


def small_model(variant, vocab_size, **size):
    mconf = GPTConfig(vocab_size, facts.BLOCK_SIZE, **{**command_line.SMALL_MODEL, **size})
    if variant == "vanilla":
        return helper.initialize_vanilla_model(mconf)
    return helper.initialize_perceiver_model(mconf, bottleneck_dim=32)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A small corpus, params of both variants and of another vocabulary, and malformed question files."""
    folder = write_corpus(tmp_path_factory.mktemp("inputs"))
    vocab = vocabulary_size(folder / "wiki.txt")
    torch.save(small_model("vanilla", vocab, **TINY).state_dict(), folder / "vanilla.params")
    torch.save(small_model("perceiver", vocab, **TINY).state_dict(), folder / "perceiver.params")
    torch.save(small_model("vanilla", vocab + 3, **TINY).state_dict(), folder / "other_vocab.params")
    torch.save(small_model("vanilla", vocab, n_layer=3, n_head=2, n_embd=32).state_dict(), folder / "deeper.params")
    (folder / "not_params.params").write_text("these are not parameters\n")
    whole = (folder / "vanilla.params").read_bytes()
    (folder / "cut_short.params").write_bytes(whole[:len(whole) // 2])
    characters = vocabulary_string(pretraining_dataset(str(folder / "wiki.txt")))
    same_size = small_model("vanilla", vocab, **TINY)
    stamp(same_size, characters.replace("a", "~"), "")
    torch.save(same_size.state_dict(), folder / "same_size_vocab.params")
    good = (folder / "birth_dev.tsv").read_text(encoding="utf-8").split("\n")
    (folder / "no_tab.tsv").write_text("\n".join([good[0], good[1].replace("\t", " "), *good[2:]]))
    (folder / "unknown_chars.tsv").write_text("\n".join([good[0], "Where was Zoë #9 born?\tLondon", *good[1:]]))
    (folder / "mixed.tsv").write_text("\n".join([good[0].split("\t")[0], good[1]]))
    return folder


def finetune_args(inputs, out, **changes):
    args = dict(function="finetune", variant="vanilla", pretrain_corpus_path=inputs / "wiki.txt",
                finetune_corpus_path=inputs / "birth_places_train.tsv", writing_params_path=out / "kept.params",
                reading_params_path=None, experiments_dir=out.parent / "experiments")
    args.update(changes)
    return args


def evaluate_args(inputs, out, **changes):
    args = dict(function="evaluate", variant="vanilla", pretrain_corpus_path=inputs / "wiki.txt",
                eval_corpus_path=inputs / "birth_dev.tsv", reading_params_path=inputs / "vanilla.params",
                outputs_path=out / "kept.predictions", experiments_dir=out.parent / "experiments")
    args.update(changes)
    return args


def run_argv(args):
    argv = [f"--{name}={value}" for name, value in args.items() if value is not None]
    size = [f"--{name}={value}" for name, value in TINY.items()]
    return argv + size + ["--max_epochs=1", "--device=cpu", "--seed=0"]
