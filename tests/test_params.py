"""
The parameters' stamp (src/runtime/params.py): the vocabulary in index
order, the configuration and the seed stamped on a model's parameters and
read back, and parameters of another vocabulary, variant or size, or that
are no parameters at all, refused in one line that names the misfit. Each
test's docstring says what it kills; all run in-process on tiny random
models.
"""

import collections
import datetime

import pytest
import torch

from runtime import params
from runtime.inputs import InputError

from runtime_helpers import VOCABULARY, tiny_gpt, tiny_model


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


def variant_model(variant):
    """A tiny model of `variant`: 'vanilla', 'perceiver' or 'rope'."""
    return tiny_gpt(len(VOCABULARY), rope=True) if variant == 'rope' else tiny_model(perceiver=variant == 'perceiver')


@pytest.mark.parametrize("variant, saved_as, message", [
    ('vanilla', 'perceiver', "holds perceiver parameters, but --variant is vanilla"),
    ('perceiver', 'vanilla', "holds vanilla parameters, but --variant is perceiver"),
    ('vanilla', 'rope', "holds rope parameters, but --variant is vanilla"),
    ('rope', 'vanilla', "holds vanilla parameters, but --variant is rope"),
])
def test_params_of_the_other_variant_are_refused(tmp_path, variant, saved_as, message):
    """Kills a wrong variant test, and a RoPE model's parameters (a rope_cache a layer) not told
    apart or named wrongly: they would be called vanilla, or another size."""
    path = saved(tmp_path, variant_model(saved_as))
    with pytest.raises(InputError, match=message):
        params.checked_params(path, variant_model(variant), variant, VOCABULARY)


def test_params_of_a_rope_model_are_read_as_rope(tmp_path):
    """Kills a rope_cache not recognized or the variant misnamed: the RoPE model's own parameters,
    read with --variant=rope, would be refused."""
    model = variant_model('rope')
    state = params.checked_params(saved(tmp_path, model), variant_model('rope'), 'rope', VOCABULARY)
    assert any(key.endswith('.attn.rope_cache') for key in state)
    assert sorted(state) == sorted(model.state_dict())


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


@pytest.mark.parametrize("content", [torch.zeros(3), [torch.zeros(3)], ('tok_emb.weight',)])
def test_a_file_of_something_other_than_a_state_dict_is_refused_in_one_line(tmp_path, content):
    """Kills a saved tensor, list or tuple taken through to the key test (a tensor raises there, and a
    tuple holding the key passes it)."""
    path = tmp_path / "x.params"
    torch.save(content, path)
    with pytest.raises(InputError, match=r"does not hold the parameters of a GPT$"):
        params.checked_params(str(path), tiny_model(), 'vanilla', VOCABULARY)


def test_params_saved_from_a_gpu_are_read_on_the_cpu(tmp_path, monkeypatch):
    """Kills params loaded onto the device they were saved from: a model trained on a GPU would not load
    where there is none (a student's laptop, the grader). The file is made here as a GPU's would be, its
    tensors tagged cuda:0."""
    model = tiny_model()
    path = tmp_path / "gpu.params"
    with monkeypatch.context() as patch:
        patch.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
        torch.save(model.state_dict(), path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    state = params.checked_params(str(path), tiny_model(), 'vanilla', VOCABULARY)
    assert all(tensor.device.type == 'cpu' and torch.equal(tensor, model.state_dict()[key])
               for key, tensor in state.items())


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
