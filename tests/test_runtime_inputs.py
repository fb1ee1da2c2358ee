"""
The runtime's reading and writing (src/runtime/): whole-or-nothing writes
(atomic_files.py), the parameters' vocabulary stamp (params.py), and the
input files and question files (inputs.py). Each test's docstring says what
it kills; all run in-process on tiny inputs and tiny random models.
"""

import collections
import datetime
import os

import pytest
import torch

from assignment.facts import MASK_CHAR, PAD_CHAR
from runtime import atomic_files
from runtime import inputs
from runtime import params
from runtime.inputs import (InputError, chosen_device, need_file, need_output_folder, pretraining_dataset,
                           read_questions, read_text)

from runtime_helpers import STOI, VOCABULARY, tiny_model, written


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
        atomic_files.write_predictions(str(path), failing_predictions(3))
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["dev.predictions"]


def test_predictions_are_utf8_one_a_line_with_line_breaks_made_spaces(tmp_path, ascii_locale):
    """Kills another encoding (the locale's), a changed separator or a line break kept inside a prediction."""
    path = tmp_path / "dev.predictions"
    path.write_text("older and longer\n" * 5)
    atomic_files.write_predictions(str(path), ["Zürich", "New\nYork", "Ca\rir\r\no"])
    assert path.read_bytes() == "Zürich\nNew York\nCa ir  o\n".encode('utf-8')
    assert os.listdir(tmp_path) == ["dev.predictions"]


def test_the_temporary_file_is_hidden_beside_the_output_and_named_by_process(tmp_path):
    """Kills a temporary in another folder, or one another process could share."""
    temporary = atomic_files.temporary_path_beside(str(tmp_path / "a.params"))
    assert temporary == str(tmp_path / f".a.params.{os.getpid()}.tmp")

# ---- params: the vocabulary stamp ---------------------------------------------------------------

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


def test_the_stamp_carries_the_seed_when_one_is_given_and_only_then(tmp_path):
    """Kills a seed dropped from the stamp, stored under another name or value, or a seed=None
    stamped on a run whose seed is not known (seed 0 is a seed)."""
    seeded, unseeded = tiny_model(), tiny_model()
    params.stamp(seeded, VOCABULARY, '', seed=0)
    params.stamp(unseeded, VOCABULARY, 'n_layer=1')
    state = params.checked_params(saved(tmp_path, seeded), tiny_model(), 'vanilla', VOCABULARY)
    assert params.read_stamp(state) == {'version': 1, 'vocabulary': VOCABULARY, 'configuration': '', 'seed': 0}
    assert params.read_stamp(unseeded.state_dict()) == {'version': 1, 'vocabulary': VOCABULARY,
                                                        'configuration': 'n_layer=1'}


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
