"""
Tests written to kill the mutants that `./run.sh mutate` found alive in the
shipped stages (src/stages/): whole-or-nothing writes, the parameters' and the
questions' checks, the hand-in zip, the baseline, the decoders and caches, the
seeded batches and the checkpoints. Each test's docstring says what it kills;
all run in-process on tiny inputs and tiny random models.
"""

import collections
import copy
import datetime
import os
import random
import re
import signal
import sys
import types
import zipfile

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

from stages import baseline, checkpoint, collect, decoding, files, greedy, inputs, kv_cache, params
from stages.batches import EpochBatches, SeededExamples, ShardOrder, example_seed
from stages.decoding import predict_places, predict_places_plain, prediction_from_completion
from assignment.facts import DELIVERABLES, MASK_CHAR, PAD_CHAR
from stages.greedy import CacheUnusable, greedy_decode
from stages.inputs import (InputError, chosen_device, need_file, need_output_folder, pretraining_dataset,
                           read_questions, read_text)
from submission import GPT, GPTConfig
from submission.attention import CausalCrossAttention, CausalSelfAttention
from submission.utils import sample

VOCABULARY = PAD_CHAR + MASK_CHAR + ' ?ABLWabdehilnorsw'
STOI = {char: i for i, char in enumerate(VOCABULARY)}




# ---- files: whole or nothing ------------------------------------------------------------------

def failing_predictions(count):
    """Predictions that raise after `count` of them have been written."""
    for i in range(count):
        yield f"place {i}"
    raise RuntimeError("failed mid-write")


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path):
    """Kills writing in place (a partial file) and a temporary left behind."""
    path = tmp_path / "dev.predictions"
    path.write_text("old\n")
    with pytest.raises(RuntimeError, match="mid-write"):
        files.write_predictions(str(path), failing_predictions(3))
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["dev.predictions"]


def test_predictions_are_utf8_one_a_line_with_line_breaks_made_spaces(tmp_path, ascii_locale):
    """Kills another encoding (the locale's), a changed separator or a line break kept inside a prediction."""
    path = tmp_path / "dev.predictions"
    path.write_text("older and longer\n" * 5)
    files.write_predictions(str(path), ["Zürich", "New\nYork", "Ca\rir\r\no"])
    assert path.read_bytes() == "Zürich\nNew York\nCa ir  o\n".encode('utf-8')
    assert os.listdir(tmp_path) == ["dev.predictions"]


def test_the_temporary_file_is_hidden_beside_the_output_and_named_by_process(tmp_path):
    """Kills a temporary in another folder, or one another process could share."""
    temporary = files.temporary_path_beside(str(tmp_path / "a.params"))
    assert temporary == str(tmp_path / f".a.params.{os.getpid()}.tmp")


# ---- params: the vocabulary stamp ---------------------------------------------------------------

def tiny_model(vocab_size=len(VOCABULARY), perceiver=False, n_layer=1):
    """A one-layer GPT of 8 dimensions."""
    extra = dict(perceiver=True, bottleneck_dim=4) if perceiver else {}
    config = GPTConfig(vocab_size, 16, n_layer=n_layer, n_head=2, n_embd=8, **extra)
    torch.manual_seed(0)
    return GPT(config)


def saved(tmp_path, model, vocabulary=None, configuration=''):
    """`model`'s parameters saved under tmp_path, stamped with `vocabulary` if given; the path."""
    if vocabulary is not None:
        params.stamp(model, vocabulary, configuration)
    path = tmp_path / "model.params"
    torch.save(model.state_dict(), path)
    return str(path)


def test_a_stamp_with_the_same_characters_in_another_order_is_refused(tmp_path):
    """Kills comparing the stamp as a set of characters."""
    path = saved(tmp_path, tiny_model(), VOCABULARY[::-1])
    with pytest.raises(InputError, match=r"another vocabulary \(it differs in the order of its characters\)"):
        params.checked_params(path, tiny_model(), 'vanilla', VOCABULARY)


def test_a_stamp_with_other_characters_names_them(tmp_path):
    """Kills a wrong list of the characters that differ."""
    path = saved(tmp_path, tiny_model(), VOCABULARY.replace('w', 'z'))
    with pytest.raises(InputError, match=r"it differs in 'w', 'z'\): use parameters"):
        params.checked_params(path, tiny_model(), 'vanilla', VOCABULARY)


def test_params_of_the_same_vocabulary_are_returned_with_their_stamp(tmp_path):
    """Kills refusing good params, or losing the stamp on the way."""
    model = tiny_model()
    state = params.checked_params(saved(tmp_path, model, VOCABULARY, 'n_layer=1'), tiny_model(), 'vanilla',
                                  VOCABULARY)
    stamped = params.read_stamp(state)
    assert (stamped['vocabulary'], stamped['configuration']) == (VOCABULARY, 'n_layer=1')
    assert state.keys() == model.state_dict().keys()


def test_unstamped_params_are_accepted_and_read_as_unstamped(tmp_path):
    """Kills requiring a stamp, and a stamp read from the wrong level of the metadata."""
    state = params.checked_params(saved(tmp_path, tiny_model()), tiny_model(), 'vanilla', VOCABULARY)
    assert 'vocabulary' not in params.read_stamp(state)
    assert params.read_stamp({}) == {}


def test_the_vocabulary_string_is_in_index_order():
    """Kills a vocabulary string in another order."""
    dataset = collections.namedtuple('Dataset', 'itos vocab_size')({0: 'x', 1: 'a', 2: 'm'}, 3)
    assert params.vocabulary_string(dataset) == 'xam'


@pytest.mark.parametrize("variant, saved_as, message", [
    ('vanilla', 'perceiver', "holds perceiver parameters, but --variant is vanilla"),
    ('perceiver', 'vanilla', "holds vanilla parameters, but --variant is perceiver"),
])
def test_params_of_the_other_variant_are_refused(tmp_path, variant, saved_as, message):
    """Kills a wrong variant test."""
    path = saved(tmp_path, tiny_model(perceiver=saved_as == 'perceiver'))
    with pytest.raises(InputError, match=message):
        params.checked_params(path, tiny_model(perceiver=variant == 'perceiver'), variant, VOCABULARY)


def test_params_of_another_size_name_the_first_misfit_and_the_options(tmp_path):
    """Kills a misfit missed or its message garbled."""
    path = saved(tmp_path, tiny_model(n_layer=2))
    with pytest.raises(InputError, match=r"another size \(blocks.1.attn.key.bias is extra\): check --small"):
        params.checked_params(path, tiny_model(), 'vanilla', VOCABULARY)
    with pytest.raises(InputError, match=r"another size \(blocks.1.attn.key.bias is missing\)$"):
        params.checked_params(saved(tmp_path, tiny_model()), tiny_model(n_layer=2), 'vanilla', VOCABULARY,
                              size_options='')


def test_params_with_a_tensor_of_another_shape_say_both_shapes(tmp_path):
    """Kills a shape misfit missed."""
    model = tiny_model()
    state = model.state_dict()
    state['head.weight'] = torch.zeros(len(VOCABULARY), 4)
    path = tmp_path / "odd.params"
    torch.save(state, path)
    with pytest.raises(InputError, match=r"\(head.weight is \(20, 4\) there and \(20, 8\) here\)"):
        params.checked_params(str(path), tiny_model(), 'vanilla', VOCABULARY)


def test_params_of_another_vocabulary_size_are_refused(tmp_path):
    """Kills the vocabulary-size check."""
    path = saved(tmp_path, tiny_model(vocab_size=len(VOCABULARY) + 1))
    with pytest.raises(InputError, match="vocabulary of 21 entries, but the pretraining corpus gives 20"):
        params.checked_params(path, tiny_model(), 'vanilla', VOCABULARY)


@pytest.mark.parametrize("content, message", [
    (b"not parameters", r"^cannot read parameters from .*: not a PyTorch parameters file, or cut short \(\w+: .+\)$"),
    (None, r"does not hold the parameters of a GPT$"),
])
def test_a_file_that_is_not_params_is_refused(tmp_path, content, message):
    """Kills a file that is no state_dict (or not a GPT's) read as params."""
    path = tmp_path / "x.params"
    if content is None:
        torch.save({'weight': torch.zeros(1)}, path)
    else:
        path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        params.checked_params(str(path), tiny_model(), 'vanilla', VOCABULARY)


def test_missing_params_name_the_option(tmp_path):
    """Kills a missing params file reaching torch.load, or another default option named."""
    with pytest.raises(InputError, match=r"parameters file not found: .*none.params \(--params\)"):
        params.checked_params(str(tmp_path / "none.params"), tiny_model(), 'vanilla', VOCABULARY, '--params')
    with pytest.raises(InputError, match=r"\(--reading_params_path\)$"):
        params.checked_params(str(tmp_path / "none.params"), tiny_model(), 'vanilla', VOCABULARY)


def test_a_misfit_names_the_size_options_by_default(tmp_path):
    """Kills another default list of size options."""
    with pytest.raises(InputError, match=r": check --small, --n_layer, --n_head, --n_embd, --bottleneck_dim$"):
        params.checked_params(saved(tmp_path, tiny_model(n_layer=2)), tiny_model(), 'vanilla', VOCABULARY)


def test_params_holding_more_than_tensors_are_not_unpickled(tmp_path):
    """Kills loading with weights_only=False (arbitrary objects, and code, from a params file)."""
    path = tmp_path / "odd.params"
    torch.save({'tok_emb.weight': torch.zeros(1), 'when': datetime.date(2020, 1, 1)}, path)
    with pytest.raises(InputError, match=r"or cut short \(UnpicklingError: Weights only load failed"):
        params.checked_params(str(path), tiny_model(), 'vanilla', VOCABULARY)


@pytest.mark.parametrize("message, shown", [
    ("  " + "x" * 120 + "\nsecond line ", "ValueError: " + "x" * 100),
    ("first line\nsecond line", "ValueError: first line"),
    ("", "ValueError"),
])
def test_an_unreadable_params_file_gives_the_first_line_of_the_reason(tmp_path, monkeypatch, message, shown):
    """Kills a garbled, uncut or missing reason."""
    def failing_load(*args, **kwargs):
        """torch.load failing with `message`."""
        raise ValueError(message)
    monkeypatch.setattr(torch, 'load', failing_load)
    path = saved(tmp_path, tiny_model())
    with pytest.raises(InputError) as error:
        params.checked_params(path, tiny_model(), 'vanilla', VOCABULARY)
    assert str(error.value) == (f"cannot read parameters from {path}: not a PyTorch parameters file, "
                                f"or cut short ({shown})")


# ---- inputs: files and question files ---------------------------------------------------------

def written(tmp_path, text, name="questions.tsv"):
    """`text` written to tmp_path/name as bytes (str is encoded as UTF-8); its path."""
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode('utf-8'))
    return str(path)


def test_an_unknown_character_only_in_the_answer_column_is_one_error_when_finetuning(tmp_path):
    """Kills checking only the question column of finetuning data (NameDataset would fail later)."""
    path = written(tmp_path, "Where was Ada born?\tLisbon\nWhere was Bo born?\tBerlin#\n")
    with pytest.raises(InputError, match=r"line 2: characters not in the pretraining corpus's vocabulary: '#'$"):
        read_questions(path, '--finetune_corpus_path', STOI, finetuning=True)


def test_the_answer_column_is_not_read_when_evaluating(tmp_path):
    """Kills refusing answers the model never reads, or losing the places."""
    path = written(tmp_path, "\nWhere was Ada born?\tLisbon#ë\n\n")
    assert read_questions(path, '--eval_corpus_path', STOI, finetuning=False) == (
        ["Where was Ada born?"], ["Lisbon#ë"])


def test_non_ascii_is_skipped_when_finetuning(tmp_path):
    """Kills checking characters that NameDataset drops."""
    path = written(tmp_path, "Where was Adaë born?\tLisbon\n")
    assert read_questions(path, '-f', STOI, finetuning=True) == (["Where was Adaë born?"], ["Lisbon"])


def test_a_question_file_without_places_gives_no_places(tmp_path):
    """Kills a questions-only file read as labelled, and Windows line ends kept."""
    path = written(tmp_path, b"Where was Ada born?\r\nWhere was Bo born?\r\n")
    assert read_questions(path, '-f', STOI, finetuning=False) == (
        ["Where was Ada born?", "Where was Bo born?"], None)


@pytest.mark.parametrize("text, finetuning, message", [
    ("Where was Ada born?\tLisbon\nWhere was Bo born?\n", False,
     r"line 2: expected 'question<TAB>place', found no tab: 'Where was Bo born\?'$"),
    ("Where was Ada born?\tLisbon\na\tb\tc\n", True, r"line 2: expected 'question<TAB>place', found 2 tabs"),
    ("Where was Ada born?\tLisbon\n", False, None),
    ("Where was Ada born?\n\nWhere was Bo born?\tBerlin\n", False,
     r"line 3 has a tab, but line 1 has none: either every line"),
    ("Where was Ada born?\n", True, r"line 1: expected 'question<TAB>place', found no tab"),
    ("Where was Zoe born?\n", False, r"line 1: characters not in the pretraining corpus's vocabulary: 'Z'$"),
    (" \n\n", False, r"has no questions$"),
])
def test_malformed_question_files_give_one_line(tmp_path, text, finetuning, message):
    """Kills a malformed line passed on, or a message naming the wrong line or fault."""
    path = written(tmp_path, text)
    if message is None:
        assert read_questions(path, '-f', STOI, finetuning) == (["Where was Ada born?"], ["Lisbon"])
        return
    with pytest.raises(InputError, match=message):
        read_questions(path, '-f', STOI, finetuning)


def test_need_file_says_what_is_missing(tmp_path):
    """Kills a missing or empty path accepted."""
    with pytest.raises(InputError, match=r"^--data is needed: the corpus$"):
        need_file('', '--data', "the corpus")
    with pytest.raises(InputError, match=r"^the corpus not found: .*none \(--data\)$"):
        need_file(str(tmp_path / "none"), '--data', "the corpus")
    with pytest.raises(InputError, match="not found"):
        need_file(str(tmp_path), '--data', "the corpus")
    assert need_file(written(tmp_path, "x"), '--data', "the corpus").endswith("questions.tsv")


def test_need_output_folder_refuses_what_cannot_be_written(tmp_path):
    """Kills an output path that is a folder, in a file, or in no folder, accepted."""
    with pytest.raises(InputError, match=r"^--out is needed$"):
        need_output_folder(None, '--out')
    with pytest.raises(InputError, match=r"^--out is a folder, not a file: "):
        need_output_folder(str(tmp_path), '--out')
    a_file = written(tmp_path, "x", "file")
    with pytest.raises(InputError, match=r"^the folder of --out is a file, not a folder: .*file$"):
        need_output_folder(os.path.join(a_file, "out"), '--out')
    with pytest.raises(InputError, match=r"^the folder of --out does not exist: .*none$"):
        need_output_folder(str(tmp_path / "none" / "out"), '--out')
    assert need_output_folder(str(tmp_path / "out"), '--out') == str(tmp_path / "out")


def test_read_text_reads_utf8_and_refuses_other_bytes(tmp_path, ascii_locale):
    """Kills the locale's encoding, and a UnicodeDecodeError traceback."""
    with pytest.raises(InputError, match=r"is not UTF-8 text \(byte 3\)$"):
        read_text(written(tmp_path, b"abc\xeb"), '-f', "text")
    assert read_text(written(tmp_path, "abé"), '-f', "text") == "abé"


@pytest.mark.parametrize("text, message", [
    (" \n", "the pretraining corpus is empty"),
    (f"Ada{MASK_CHAR}.\n", "reserved for MASK"),
    (f"Ada{PAD_CHAR}.\n", "reserved for PAD"),
])
def test_a_pretraining_corpus_that_cannot_define_the_vocabulary_is_refused(tmp_path, text, message):
    """Kills an empty corpus or one holding a reserved character accepted."""
    with pytest.raises(InputError, match=message):
        pretraining_dataset(written(tmp_path, text, "wiki.txt"))


def test_missing_inputs_name_their_option_and_what_they_are(tmp_path):
    """Kills a wrong option or description in the message of a missing corpus or question file."""
    missing = str(tmp_path / "none")
    with pytest.raises(InputError, match=r"^pretraining corpus \(it also defines the vocabulary\) not found: "
                                         r".*none \(--pretrain_corpus_path\)$"):
        pretraining_dataset(missing)
    with pytest.raises(InputError, match=r"^question file not found: .*none \(--eval_corpus_path\)$"):
        read_questions(missing, '--eval_corpus_path', STOI, finetuning=False)


def test_a_line_without_a_tab_is_shown_up_to_70_characters(tmp_path):
    """Kills a line shown cut elsewhere."""
    long_line = "Where was " + "A" * 80
    path = written(tmp_path, f"Where was Ada born?\tLisbon\n{long_line}\n")
    with pytest.raises(InputError, match=f"found no tab: {long_line[:70]!r}$"):
        read_questions(path, '-f', STOI, finetuning=True)


def test_the_pretraining_dataset_is_of_the_corpus_and_the_block_size(tmp_path):
    """Kills a dataset made of something else."""
    dataset = pretraining_dataset(written(tmp_path, "Ada was born in Lisbon.\n", "wiki.txt"))
    assert dataset.block_size == 128
    assert set(dataset.stoi) == set("Ada was born in Lisbon.\n") | {PAD_CHAR, MASK_CHAR}


def test_devices_are_chosen_or_refused_in_one_line(monkeypatch):
    """Kills auto not asking pick_device, a bad name passed on, or a missing GPU accepted."""
    monkeypatch.setattr(inputs, 'pick_device', lambda: torch.device('meta'))
    assert chosen_device('auto') == torch.device('meta')
    assert chosen_device('cpu') == torch.device('cpu')
    with pytest.raises(InputError, match=r"^unknown device 'gpu': use auto, cpu, cuda, cuda:N or mps$"):
        chosen_device('gpu')
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    monkeypatch.setattr(torch.backends.mps, 'is_available', lambda: False)
    with pytest.raises(InputError, match=r"^--device cuda, but PyTorch sees no CUDA GPU on this machine$"):
        chosen_device('cuda:1')
    with pytest.raises(InputError, match=r"^--device mps, but PyTorch sees no MPS device on this machine$"):
        chosen_device('mps')
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.backends.mps, 'is_available', lambda: True)
    assert chosen_device('cuda:1') == torch.device('cuda:1')
    assert chosen_device('mps') == torch.device('mps')


# ---- baseline: labelled places ----------------------------------------------------------------

def test_baseline_answers_in_another_encoding_are_one_line(tmp_path, capsys):
    """Kills the traceback of a non-UTF-8 answer (the bug fixed in labelled_places)."""
    train = written(tmp_path, "Where was Ada born?\tLisbon\n", "train.tsv")
    dev = written(tmp_path, b"Where was Ada born?\tLisbon\nWhere was Bo born?\tZ\xebrich\n", "dev.tsv")
    assert baseline.main(['--train_path', train, '--dev_path', dev]) == 1
    err = capsys.readouterr().err
    assert err == f"baseline.py: error: {dev} is not UTF-8 text (byte 47)\n"


# ---- collect: the hand-in zip -------------------------------------------------------------------

def graded_params(path):
    """A params file stamped as the graded configuration."""
    state = collections.OrderedDict({'tok_emb.weight': torch.zeros(2, 2)})
    state._metadata = {'': {'configuration': '', 'vocabulary': 'ab'}}
    torch.save(state, path)


@pytest.fixture
def submission(tmp_path):
    """A folder with every deliverable, params stamped graded."""
    folder = tmp_path / "submission"
    folder.mkdir()
    for name in DELIVERABLES:
        if name.endswith('.params'):
            graded_params(folder / name)
        else:
            (folder / name).write_text(f"{name}\n")
    return folder


def collected(submission, out, capsys):
    """collect.main's exit status and stderr."""
    status = collect.main(['--submission-dir', str(submission), '--out', str(out)])
    return status, capsys.readouterr().err


def test_collect_zips_every_deliverable_under_its_bare_name(submission, tmp_path, capsys):
    """Kills a deliverable left out, renamed or stored with its folder."""
    out = tmp_path / "hand_in.zip"
    assert collected(submission, out, capsys) == (0, "")
    with zipfile.ZipFile(out) as archive:
        assert archive.namelist() == list(DELIVERABLES)
        assert archive.read('model.py') == b"model.py\n"
    assert sorted(os.listdir(tmp_path)) == ["hand_in.zip", "submission"]


def test_a_deliverable_that_is_a_folder_is_missing(submission, tmp_path, capsys):
    """Kills a folder zipped as if it were the deliverable."""
    (submission / "model.py").unlink()
    (submission / "model.py").mkdir()
    status, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert status == 1 and "1 of 18 deliverables missing" in err and "model.py (your code)" in err
    assert not (tmp_path / "hand_in.zip").exists()


def test_a_missing_deliverable_names_the_stage_that_makes_it(submission, tmp_path, capsys):
    """Kills a wrong maker named, or a zip written all the same."""
    (submission / "vanilla.pretrain.params").unlink()
    status, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert status == 1 and "vanilla.pretrain.params (./run.sh vanilla_pretrain)" in err


def test_smoke_params_and_their_predictions_are_refused(submission, tmp_path, capsys):
    """Kills params of another configuration, and predictions made from them, zipped."""
    params.stamp(model := tiny_model(), 'ab', 'n_layer=1')
    torch.save(model.state_dict(), submission / "vanilla.model.params")
    status, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert status == 1 and "3 files are not for grading" in err
    assert "vanilla.model.params is from a run of another configuration (n_layer=1): rerun ./run.sh " \
           "vanilla_finetune_without_pretrain" in err
    assert "vanilla.nopretrain.test.predictions was made from vanilla.model.params" in err


def test_unstamped_params_are_judged_by_their_size(submission, tmp_path, capsys):
    """Kills the size check of unstamped params."""
    torch.save(tiny_model(perceiver=True, n_layer=3).state_dict(), submission / "perceiver.pretrain.params")
    (submission / "vanilla.pretrain.params").write_text("no params")
    status, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert "perceiver.pretrain.params is from a model of another size (n_layer 3, n_embd 8)" in err
    assert "vanilla.pretrain.params is not a parameters file that can be read (" in err and status == 1


def test_unstamped_params_of_the_graded_size_are_zipped(submission, tmp_path, capsys):
    """Kills refusing unstamped params of the graded size."""
    state = {f'blocks.{i}.ln1.weight': torch.zeros(1) for i in range(4)}
    torch.save(dict(state, **{'tok_emb.weight': torch.zeros(2, 256)}), submission / "vanilla.model.params")
    assert collected(submission, tmp_path / "hand_in.zip", capsys) == (0, "")


@pytest.mark.parametrize("where, message", [
    ("none/hand_in.zip", "the folder of --out does not exist"),
    (".", "--out is a directory, not a zip file"),
])
def test_a_zip_that_cannot_be_written_there_is_refused(submission, tmp_path, capsys, where, message):
    """Kills writing into a missing folder or over a folder."""
    status, err = collected(submission, tmp_path / where, capsys)
    assert status == 1 and message in err


def test_collect_without_a_submission_folder_fails(tmp_path, capsys):
    """Kills a missing submission folder reported as missing files."""
    status, err = collected(tmp_path / "none", tmp_path / "hand_in.zip", capsys)
    assert status == 1 and "no such directory" in err


def test_collect_by_default_zips_src_submission_to_the_top_of_the_repository(submission, tmp_path, monkeypatch,
                                                                             capsys):
    """Kills other default folders, and a silent success."""
    monkeypatch.setattr(collect, 'SRC_DIR', str(tmp_path))
    monkeypatch.setattr(collect, 'REPO_DIR', str(submission))
    assert collect.main([]) == 0
    assert capsys.readouterr().out == f"wrote {submission / 'submission.zip'} with the 18 deliverables\n"


def test_collects_help_says_what_it_does_and_its_defaults(capsys):
    """Kills a lost or garbled help text."""
    with pytest.raises(SystemExit):
        collect.main(['--help'])
    help_text = ' '.join(capsys.readouterr().out.split())
    for said in ("Zip the 18 deliverables of src/submission for upload.",
                 "where the deliverables are (default: src/submission)",
                 "the zip to write (default: submission.zip at the top of the repository)"):
        assert re.search(rf"(^|\s){re.escape(said)}(\s|$)", help_text), said


def test_every_missing_deliverable_and_refused_file_is_listed(submission, tmp_path, capsys):
    """Kills the lists joined otherwise."""
    (submission / "model.py").unlink()
    (submission / "utils.py").unlink()
    _, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert "missing from " in err and err.endswith(": model.py (your code), utils.py (your code)\n")
    (submission / "model.py").write_text("")
    (submission / "utils.py").write_text("")
    (submission / "vanilla.model.params").write_text("no params")
    _, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert "rerun ./run.sh vanilla_finetune_without_pretrain; vanilla.nopretrain.dev.predictions was made" in err


def test_params_that_hold_objects_are_not_unpickled(submission, tmp_path, capsys):
    """Kills loading params with weights_only=False, and the error's name lost."""
    torch.save({'tok_emb.weight': torch.zeros(1), 'when': datetime.date(2020, 1, 1)},
               submission / "vanilla.model.params")
    _, err = collected(submission, tmp_path / "hand_in.zip", capsys)
    assert "vanilla.model.params is not a parameters file that can be read (UnpicklingError)" in err


def test_the_zip_is_deflated_written_beside_its_place_and_as_readable_as_the_umask_says(submission, tmp_path,
                                                                                       monkeypatch):
    """Kills a stored zip, a temporary elsewhere (a rename across file systems), and a wrong mode."""
    renamed = []
    replace = os.replace
    monkeypatch.setattr(os, 'replace', lambda source, target: renamed.append(source) or replace(source, target))
    umask = os.umask(0o022)
    try:
        collect.write_zip(str(submission), str(tmp_path / "hand_in.zip"))
    finally:
        os.umask(umask)
    assert [os.path.dirname(path) for path in renamed] == [str(tmp_path)]
    assert os.stat(tmp_path / "hand_in.zip").st_mode & 0o777 == 0o644
    with zipfile.ZipFile(tmp_path / "hand_in.zip") as archive:
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_DEFLATED}


def test_a_zip_that_fails_midway_leaves_the_old_zip_and_no_temporary(submission, tmp_path):
    """Kills a temporary zip left behind, or the old zip replaced by a partial one."""
    (tmp_path / "hand_in.zip").write_text("old zip")
    (submission / "utils.py").unlink()
    with pytest.raises(FileNotFoundError):
        collect.write_zip(str(submission), str(tmp_path / "hand_in.zip"))
    assert sorted(os.listdir(tmp_path)) == ["hand_in.zip", "submission"]
    assert (tmp_path / "hand_in.zip").read_text() == "old zip"


# ---- decoding, greedy, kv_cache: batched cached decoding against the one-at-a-time loop -------------

ALPHABET = PAD_CHAR + 'a' + MASK_CHAR + 'bcdefghij'  # MASK is id 2: a token these random models write
QUESTIONS = ['ab', 'jihgfedc', 'b', 'cab', 'dddd', 'hig', 'eeffgg', 'a', 'jj', 'ghij', 'cbad', 'fff', 'abcdefgh',
             'ih', 'dcba', 'gg', 'abcdefghij']  # the last one is too long to decode without cropping


def spread_model(variant):
    """A tiny GPT of `variant` (block 40, 8 latents) with weights spread so that its answers differ."""
    extra = dict(perceiver=True, bottleneck_dim=8) if variant == 'perceiver' else {}
    torch.manual_seed(1)
    model = GPT(GPTConfig(len(ALPHABET), 40, n_layer=3, n_head=2, n_embd=16, **extra)).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.5)
    return model


@pytest.fixture(scope="module", params=['vanilla', 'perceiver'])
def spread(request):
    """A spread model of each variant."""
    return spread_model(request.param)


@pytest.fixture(scope="module")
def alphabet():
    """The dataset interface predict_places reads, over ALPHABET."""
    stoi = {char: i for i, char in enumerate(ALPHABET)}
    return types.SimpleNamespace(stoi=stoi, itos=dict(enumerate(ALPHABET)), MASK_CHAR=MASK_CHAR)


@pytest.fixture(scope="module")
def plain(spread, alphabet):
    """The one-at-a-time loop's predictions of the spread model for QUESTIONS."""
    return predict_places_plain(spread, QUESTIONS, alphabet, 'cpu')


def prompts_of(questions):
    """The token ids of each question followed by MASK."""
    return [[ALPHABET.index(char) for char in question + MASK_CHAR] for question in questions]


def sampled(model, prompt, steps):
    """What sample writes for `prompt` greedily: the prompt and `steps` ids."""
    return sample(model, torch.tensor([prompt]), steps)[0].tolist()


def cut_at(completion, prompt, stop):
    """`completion` ended after the first `stop` written after `prompt`."""
    written = completion[len(prompt):]
    return prompt + (written[:written.index(stop) + 1] if stop in written else written)


def test_greedy_decode_writes_what_sample_writes(spread):
    """Kills a wrong cache write, mask, position or token choice in the batched decoder."""
    prompts = prompts_of(QUESTIONS[:-1])
    assert greedy_decode(spread, prompts, 9) == [sampled(spread, p, 9) for p in prompts]


def test_prompts_with_a_common_start_decode_as_sample(spread):
    """Kills a wrong shared start (computed once a batch) or a wrong write of it into the cache."""
    prompts = prompts_of(['abcd' + question for question in ('', 'e', 'jj', 'bbb', 'e')])
    assert greedy_decode(spread, prompts, 5) == [sampled(spread, p, 5) for p in prompts]


def test_a_double_precision_model_decodes_as_sample(spread, monkeypatch):
    """Kills a cache of another dtype than the model's, or attention over it that is not the model's kind."""
    model = copy.deepcopy(spread).double()
    kinds = []
    attend = kv_cache.attend
    monkeypatch.setattr(kv_cache, 'attend', lambda *args: kinds.append(args[0].fused) or attend(*args))
    prompts = prompts_of(['abcd', 'ab', 'hhh'])
    assert greedy_decode(model, prompts, 5) == [sampled(model, p, 5) for p in prompts]
    assert set(kinds) == {True}  # the model's fused attention


def test_rows_stop_at_their_first_stop_token_and_the_others_go_on(spread):
    """Kills a row cut too early or late, or rows mixed up when the finished ones are dropped."""
    prompts = prompts_of(QUESTIONS[:-1])
    full = [sampled(spread, p, 9) for p in prompts]
    expected = [cut_at(c, p, 2) for c, p in zip(full, prompts)]
    assert len({len(e) - len(p) for e, p in zip(expected, prompts)}) >= 4  # rows end at several steps
    assert sum(2 not in c[len(p):] for c, p in zip(full, prompts)) >= 4  # and some never do
    assert greedy_decode(spread, prompts, 9, stop=2) == expected


def test_every_row_stopping_ends_the_decoding(spread):
    """Kills decoding on after every row ended."""
    prompts = prompts_of(['b', 'hig'])
    full = [sampled(spread, p, 9) for p in prompts]
    stop = full[0][len(prompts[0])]
    assert greedy_decode(spread, prompts, 9, stop=stop)[0] == prompts[0] + [stop]


def test_recompute_writes_what_sample_writes(spread, monkeypatch):
    """Kills a wrong row, position or step in the cache-less decoder (the starter's perceiver)."""
    monkeypatch.setattr(greedy, 'cache_class', lambda model: greedy.Recompute)
    prompts = prompts_of(QUESTIONS[:-1])
    full = [sampled(spread, p, 9) for p in prompts]
    assert greedy_decode(spread, prompts, 9) == full
    assert greedy_decode(spread, prompts, 9, stop=2) == [cut_at(c, p, 2) for c, p in zip(full, prompts)]


def one_hot_model(idx):
    """A causal stand-in for a GPT that makes no tensor of its own: each position's logits count the tokens so far."""
    return F.one_hot(idx, len(ALPHABET)).float().cumsum(1), None


def test_recompute_and_the_caches_make_their_tensors_on_the_devices_of_their_inputs(spread):
    """Kills a tensor made on the default device instead of the model's (what a GPU run would trip on): the
    default device is 'meta' here, so such a tensor has no data."""
    lengths = torch.tensor([4, 2, 5])
    idx = torch.tensor([[3, 4, 5, 2, 0], [3, 2, 0, 0, 0], [3, 4, 5, 6, 2]])
    positions = torch.tensor([[1, 2], [3, 4]])

    def decoded():
        """Recompute's first logits and buffer, and the caches' pieces (a step's indexing needs real data)."""
        cache = greedy.Recompute(one_hot_model, lengths, 4)
        kv = kv_cache.KVCache(spread.blocks[0].attn, 2, 5, torch.device('cpu'))
        return [cache.prefill(idx), cache.idx, kv_cache.causal_mask(positions, 6), kv.k, kv.v,
                kv_cache.shared_prefix(idx, lengths)]
    expected = decoded()
    with torch.device('meta'):
        found = decoded()
    assert found[-1] == expected[-1] == 1
    for got, wanted in zip(found[:-1], expected[:-1]):
        assert got.device == wanted.device and torch.equal(got, wanted)


def test_a_perceiver_without_its_cache_is_recomputed(monkeypatch):
    """Kills the wrong cache chosen for a variant."""
    assert greedy.cache_class(spread_model('vanilla')) is greedy.VanillaCache
    assert greedy.cache_class(spread_model('perceiver')).__name__ == 'PerceiverCache'
    monkeypatch.setitem(sys.modules, 'stages.cached_perceiver', None)
    assert greedy.cache_class(spread_model('perceiver')) is greedy.Recompute


@pytest.mark.parametrize("batch_size, stop_at_mask", [(3, True), (128, True), (5, False)])
def test_predictions_equal_the_one_at_a_time_loop(spread, alphabet, plain, batch_size, stop_at_mask, capsys):
    """Kills a prediction put in another question's place, cut wrongly, or a long question not cropped."""
    assert len(set(plain)) >= 8 and sum(len(p) < 32 for p in plain) >= 4
    assert predict_places(spread, QUESTIONS, alphabet, 'cpu', batch_size, stop_at_mask) == plain
    assert "one question at a time" not in capsys.readouterr().err


def test_questions_are_decoded_by_length_in_batches_and_only_long_ones_one_at_a_time(spread, alphabet,
                                                                                    monkeypatch, capsys):
    """Kills another batch size, stop, order or length limit, a question sent to the slow loop that the
    batches could answer, or a progress bar that miscounts."""
    calls, slow = [], []

    def batched(model, prompts, steps, stop=None):
        """greedy_decode writing MASK at once, recording each call."""
        calls.append((len(prompts), steps, stop, [len(p) for p in prompts]))
        return [p + [2] for p in prompts]
    monkeypatch.setattr(decoding, 'greedy_decode', batched)
    monkeypatch.setattr(decoding, 'predict_places_plain',
                        lambda model, questions, dataset, device: slow.append((questions, device)) or
                        ['slow'] * len(questions))
    questions = [ALPHABET[3 + i % 9] * (9 - i % 9) for i in range(150)]  # 17 of 9 characters: too long
    expected = ['slow' if len(q) == 9 else '' for q in questions]
    assert predict_places(spread, questions, alphabet, 'cpu') == expected
    assert slow == [([q for q in questions if len(q) == 9], 'cpu')]
    assert [call[:3] for call in calls] == [(128, 32, 2), (5, 32, 2)]
    lengths = [length for call in calls for length in call[3]]
    assert lengths == sorted(lengths) and max(lengths) == 9  # a 9-token prompt is the longest that fits
    err = capsys.readouterr().err
    assert "predicting: 100%" in err and "150/150" in err
    calls.clear()
    predict_places(spread, questions, alphabet, 'cpu', batch_size=50, stop_at_mask=False)
    assert [call[:3] for call in calls] == [(50, 32, None), (50, 32, None), (33, 32, None)]


def test_the_one_at_a_time_loop_shows_its_progress(spread, alphabet, capsys):
    """Kills the plain loop's progress bar unnamed."""
    predict_places_plain(spread, ['ab', 'c'], alphabet, 'cpu')
    assert "predicting: 100%" in capsys.readouterr().err


def test_a_prediction_is_the_text_between_the_first_two_masks():
    """Kills another piece of the completion taken."""
    assert prediction_from_completion(f"ab{MASK_CHAR}cd{MASK_CHAR}e{MASK_CHAR}", MASK_CHAR) == "cd"
    assert prediction_from_completion(f"ab{MASK_CHAR}cde", MASK_CHAR) == "cde"


def not_causal(model):
    """`model` with every attention mask opened: each position sees the later ones."""
    other = copy.deepcopy(model)
    for module in other.modules():
        if isinstance(module, (CausalSelfAttention, CausalCrossAttention)):
            module.mask.fill_(1.0)
    return other


def test_a_model_that_is_not_causal_is_answered_one_question_at_a_time(spread, alphabet, capsys):
    """Kills the check of the batched logits (on the most padded row) and the fallback after it."""
    other = not_causal(spread)
    with pytest.raises(CacheUnusable, match="^batched logits differ from the model's forward on one prompt$"):
        greedy_decode(other, prompts_of(['abcdefgh', 'a']), 9)
    questions = QUESTIONS[:6]
    assert predict_places(other, questions, alphabet, 'cpu', 2) == predict_places_plain(other, questions,
                                                                                        alphabet, 'cpu')
    assert ("predict_places: batched logits differ from the model's forward on one prompt; answering one question "
            "at a time (the same predictions, slower)\n") in capsys.readouterr().err.split("\r")


def test_the_longest_prompts_are_checked(spread):
    """Kills a check that misses a model differing only on long prompts."""
    prompts = prompts_of(['ab', 'cd', 'ef', 'gh', 'abcdefgh'])
    forward = spread.forward

    def differs_when_long(idx, *args, **kwargs):
        """The model's forward, but other logits for the longest prompt alone."""
        logits, loss = forward(idx, *args, **kwargs)
        return (logits + 1 if idx.size(1) == 9 and idx.size(0) == 1 else logits), loss
    other = copy.deepcopy(spread)
    other.forward = differs_when_long
    with pytest.raises(CacheUnusable):
        greedy_decode(other, prompts, 5)


# ---- batches: seeded examples and their order ---------------------------------------------------

class Draws:
    """A dataset whose item is what python's, numpy's and torch's generators draw for it."""

    def __len__(self):
        return 10

    def __getitem__(self, index):
        return index, random.random(), float(np.random.rand()), float(torch.rand(1))


def test_example_seeds_are_63_bit_and_pinned():
    """Kills another seed formula (a resumed run would see other span corruptions)."""
    assert example_seed(0, 0, 0) == 0 and example_seed(0, 0, 1) == 1
    assert example_seed(1, 2, 3) == ((1 * 1_000_003 + 2) * 1_000_000_007 + 3) % 2 ** 63
    assert example_seed(10 ** 12, 1, 1) == ((10 ** 12 * 1_000_003 + 1) * 1_000_000_007 + 1) % 2 ** 63


def test_a_seeded_example_is_the_same_whenever_it_is_made_and_leaves_the_generators_alone():
    """Kills an example that depends on what was drawn before it, or that moves the global generators."""
    examples = SeededExamples(Draws(), seed=5)
    assert len(examples) == 10
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    first = examples[(2, 7)]
    after = random.random(), float(np.random.rand()), float(torch.rand(1))
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == after
    random.seed(9), np.random.seed(9), torch.manual_seed(9)
    assert examples[(2, 7)] == first
    seed = example_seed(5, 2, 7)
    random.seed(seed), np.random.seed(seed % 2 ** 32), torch.manual_seed(seed)
    assert first == (7, random.random(), float(np.random.rand()), float(torch.rand(1)))
    assert len({examples[(epoch, 7)] for epoch in range(3)} | {examples[(2, 8)]}) == 4


def test_each_process_takes_every_worlds_example_of_each_global_batch():
    """Kills another permutation, shard or skip."""
    order = torch.randperm(10, generator=torch.Generator().manual_seed(7 + 2)).tolist()
    shards = [ShardOrder(10, 4, seed=7, rank=rank, world=2) for rank in (0, 1)]
    for shard in shards:
        shard.epoch, shard.skip = 2, 1
    assert list(shards[0]) == [(2, index) for index in order[4:8:2] + order[8::2]]
    assert list(shards[1]) == [(2, index) for index in order[5:8:2] + order[9::2]]
    assert len(shards[0]) == 3


@pytest.mark.parametrize("size, batch_size, world, message", [
    (8, 3, 2, "the batch size 3 is not a multiple of the 2 processes"),
    (9, 4, 2, "the last batch of an epoch holds 1 examples, fewer than the 2 processes"),
])
def test_batches_that_processes_cannot_share_are_refused(size, batch_size, world, message):
    """Kills a batch the processes would split unevenly."""
    with pytest.raises(ValueError, match=message):
        EpochBatches(list(range(size)), batch_size, None, 0, world=world)


def test_epoch_batches_count_their_position_and_resume_mid_epoch():
    """Kills a wrong position, epoch or length after a pass or a resume."""
    batches = EpochBatches(Draws(), 4, lambda items: [item[0] for item in items], 0, seed=3, world=2, rank=1)
    assert len(batches) == 3 and batches.batches_an_epoch == 3
    positions = [batches.position for _ in batches]
    assert positions == [1, 2, 3] and (batches.order.epoch, batches.position) == (1, 0)
    batches.start_at(4, 2)
    assert len(batches) == 1
    order = torch.randperm(10, generator=torch.Generator().manual_seed(3 + 4)).tolist()
    assert [batch for batch in batches] == [order[9::2]]
    assert (batches.order.epoch, batches.order.skip, len(batches)) == (5, 0, 3)
    EpochBatches(list(range(9)), 4, None, 0, world=1)  # a last batch of 1 for one process is fine
    EpochBatches(list(range(8)), 4, None, 0, world=2)  # and so is no short batch


def test_epoch_batches_default_to_one_process_and_keep_torchs_generator(monkeypatch):
    """Kills other defaults, loader settings lost, or a loader that draws from torch's own generator."""
    batches = EpochBatches(Draws(), 4, lambda items: [item[0] for item in items], 0)
    assert batches.position == 0
    loader = batches.loader
    assert (loader.num_workers, loader.persistent_workers, loader.pin_memory) == (0, False, False)
    torch.manual_seed(0)
    state = torch.get_rng_state()
    order = torch.randperm(10, generator=torch.Generator().manual_seed(0)).tolist()
    assert list(batches) == [order[:4], order[4:8], order[8:]]
    assert torch.equal(torch.get_rng_state(), state)
    loader = EpochBatches(Draws(), 4, None, 1, seed=1, pin_memory=True).loader
    assert (loader.num_workers, loader.persistent_workers, loader.pin_memory) == (1, True, True)


# ---- checkpoint: whole-or-nothing saves, runs refused, resumes ----------------------------------------

class FailsToPickle:
    """An object whose pickling fails, so that a save fails midway."""

    def __reduce__(self):
        raise RuntimeError("failed mid-save")


def test_a_save_that_fails_midway_leaves_the_old_checkpoint_and_no_temporary(tmp_path, monkeypatch):
    """Kills writing in place, a temporary left behind or put elsewhere."""
    path = tmp_path / "checkpoint.pt"
    checkpoint.save_atomically({'step': 1}, str(path))
    with pytest.raises(RuntimeError, match="mid-save"):
        checkpoint.save_atomically({'step': 2, 'x': FailsToPickle()}, str(path))
    assert torch.load(path) == {'step': 1} and os.listdir(tmp_path) == ["checkpoint.pt"]
    renamed = []
    replace = os.replace
    monkeypatch.setattr(os, 'replace', lambda source, target: renamed.append(source) or replace(source, target))
    checkpoint.save_atomically({'step': 3}, str(path))
    assert torch.load(path) == {'step': 3} and os.listdir(tmp_path) == ["checkpoint.pt"]
    assert os.path.dirname(renamed[0]) == str(tmp_path) and os.path.basename(renamed[0]).startswith(
        ".checkpoint.pt.")


def test_generator_states_come_back():
    """Kills a generator left out of the saved or restored states."""
    states = checkpoint.rng_states()
    drawn = random.random(), float(np.random.rand()), float(torch.rand(1))
    checkpoint.set_rng_states(states)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == drawn
    assert states['cuda'] == [] and checkpoint.every_process(5, ONE_PROCESS) == [5]


TWO_PROCESSES = types.SimpleNamespace(world=2, rank=0, main=True)


def test_processes_share_their_values_and_their_interrupts(monkeypatch, tmp_path, sigint_kept):
    """Kills a wrong gather of every process's value, or an interrupt not agreed on (the MAX of the flags)."""
    def gather(values, value):
        """all_gather_object with a second process whose value is 'rank 1'."""
        values[:] = [value, 'rank 1']
    others = []

    def reduce(flag, op):
        """all_reduce with a second process whose flag is the last of `others`."""
        assert op is dist.ReduceOp.MAX
        flag.copy_(torch.maximum(flag, torch.tensor([others[-1]])))
    monkeypatch.setattr(dist, 'all_gather_object', gather)
    monkeypatch.setattr(dist, 'all_reduce', reduce)
    assert checkpoint.every_process('rank 0', TWO_PROCESSES) == ['rank 0', 'rank 1']
    saver = checkpoint.Checkpointer(str(tmp_path / "checkpoint.pt"), IDENTITY, 10, TWO_PROCESSES)
    others.append(0.0)
    assert saver.stop_now() is False
    others.append(1.0)
    assert saver.stop_now() is True
    assert checkpoint.Checkpointer(str(tmp_path / "checkpoint.pt"), IDENTITY, 10, ONE_PROCESS).stop_now() is False


ONE_PROCESS = types.SimpleNamespace(world=1, rank=0, main=True)
IDENTITY = {'stage': 'vanilla_pretrain', 'vocabulary': 'x' * 70}


def test_a_checkpoint_of_another_run_or_none_is_refused_in_one_line(tmp_path):
    """Kills a checkpoint of another run accepted, or a garbled message."""
    path = tmp_path / "checkpoint.pt"
    with pytest.raises(InputError, match=r"^no checkpoint to resume from at .*checkpoint.pt: start the stage "
                                         r"without --resume$"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match=r"^cannot read the checkpoint .*checkpoint.pt \(UnpicklingError\)$"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    torch.save({'identity': dict(IDENTITY, vocabulary='y' * 70), 'step': 4}, path)
    with pytest.raises(InputError, match=rf"is of another run: its vocabulary is '{'y' * 57}\.\.\.', this run's is "
                                         rf"'{'x' * 57}\.\.\.'$"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    torch.save({'identity': dict(IDENTITY, vocabulary='x' * 59)}, path)
    with pytest.raises(InputError, match=rf"its vocabulary is '{'x' * 59}', this"):
        checkpoint.read_checkpoint(str(path), dict(IDENTITY, vocabulary='x' * 58))
    torch.save({'identity': dict(IDENTITY, vocabulary='y' * 60)}, path)
    with pytest.raises(InputError, match=rf"its vocabulary is '{'y' * 57}\.\.\.', this"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    torch.save({'step': 4}, path)
    with pytest.raises(InputError, match=r"its stage is None, this run's is 'vanilla_pretrain'$"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    torch.save([1], path)
    with pytest.raises(InputError, match=r"its stage is None, this run's is 'vanilla_pretrain'$"):
        checkpoint.read_checkpoint(str(path), IDENTITY)
    torch.save({'identity': IDENTITY, 'step': 4}, path)
    assert checkpoint.read_checkpoint(str(path), IDENTITY)['step'] == 4


@pytest.fixture
def sigint_kept():
    """SIGINT's handler as it was before the test."""
    handler = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, handler)


def toy_trainer():
    """What a Checkpointer reads and sets of a Trainer: a model, an optimizer, a scaler, counters, a loader."""
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.5)
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    scaler = types.SimpleNamespace(state={'scale': 8.0}, state_dict=lambda: {'scale': 8.0})
    scaler.load_state_dict = lambda state: scaler.state.update(loaded=state)
    loader = types.SimpleNamespace(position=3, start_at=lambda epoch, position: started.append((epoch, position)))
    started = []
    return types.SimpleNamespace(model=model, optimizer=optimizer, step_fn=types.SimpleNamespace(scaler=scaler),
                                 tokens=100, step=6, epoch=2, loader=loader, lr=None, started=started)


def test_a_checkpoint_is_saved_every_so_many_steps_and_each_epoch(tmp_path, sigint_kept):
    """Kills a save missed or made at the wrong step, epoch or position."""
    path = tmp_path / "checkpoint.pt"
    saver = checkpoint.Checkpointer(str(path), IDENTITY, 3, ONE_PROCESS)
    trainer = toy_trainer()
    trainer.step = 5
    saver(trainer, 'step')
    assert not path.exists()
    trainer.step = 6
    saver(trainer, 'step')
    state = torch.load(path, weights_only=False)
    assert (state['step'], state['epoch'], state['position'], state['tokens']) == (6, 2, 3, 100)
    assert state['identity'] == IDENTITY and state['scaler'] == {'scale': 8.0}
    saver(trainer, 'epoch_end')
    state = torch.load(path, weights_only=False)
    assert (state['epoch'], state['position']) == (3, 0)
    saver(trainer, 'start')  # nothing to resume
    trainer.step_fn = types.SimpleNamespace()  # a trainer without a grad scaler
    saver(trainer, 'epoch_end')
    assert torch.load(path, weights_only=False)['scaler'] is None


def test_ctrl_c_saves_then_stops_and_a_second_one_stops_at_once(tmp_path, sigint_kept):
    """Kills an interrupt that does not save, does not stop, or cannot be forced."""
    path = tmp_path / "checkpoint.pt"
    saver = checkpoint.Checkpointer(str(path), IDENTITY, 1000, ONE_PROCESS)
    os.kill(os.getpid(), signal.SIGINT)
    assert saver.interrupted and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    trainer = toy_trainer()
    with pytest.raises(checkpoint.Interrupted):
        saver(trainer, 'step')
    assert torch.load(path, weights_only=False)['step'] == 6


def test_a_resume_restores_every_part_of_the_run(tmp_path, sigint_kept):
    """Kills a part of the state left out of the resume."""
    path = tmp_path / "checkpoint.pt"
    trainer = toy_trainer()
    checkpoint.Checkpointer(str(path), IDENTITY, 1, ONE_PROCESS).save(trainer, 4, 7)
    drawn = random.random(), float(np.random.rand()), float(torch.rand(1))
    fresh = toy_trainer()
    with torch.no_grad():
        fresh.model.weight.zero_()
    fresh.tokens, fresh.step, fresh.epoch = 0, 0, 0
    fresh.optimizer.param_groups[0]['lr'] = 0.25
    resume = checkpoint.read_checkpoint(str(path), IDENTITY)
    fresh.optimizer.param_groups[0]['lr'] = 0.125
    checkpoint.Checkpointer(str(path), IDENTITY, 1, ONE_PROCESS, resume)(fresh, 'start')
    assert torch.equal(fresh.model.weight, trainer.model.weight)
    assert fresh.optimizer.state_dict()['state'][0]['step'] == 1 and fresh.lr == 0.5
    assert (fresh.tokens, fresh.step, fresh.epoch, fresh.started) == (100, 6, 4, [(4, 7)])
    assert fresh.step_fn.scaler.state['loaded'] == {'scale': 8.0}
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == drawn
