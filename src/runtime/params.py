"""
Parameters files: checked against the model before loading, and stamped with
what they were trained with, in the state_dict's metadata (which
load_state_dict ignores and torch.load(..., weights_only=True) reads), so a
params file stays a plain state_dict:

    state_dict._metadata['']['vocabulary']     the vocabulary's characters in index order
    state_dict._metadata['']['configuration']  '' for the graded configuration, else what
                                               differs from it ('n_layer=2 max_epochs=1 ...')
    state_dict._metadata['']['seed']           the training run's seed (seeds.py), when known
"""

import torch

from .inputs import InputError, need_file, shown


def vocabulary_string(dataset):
    """The dataset's characters in index order: what a params file is stamped with."""
    return ''.join(dataset.itos[i] for i in range(dataset.vocab_size))


def stamp(model, vocabulary, configuration, seed=None):
    """From now on, model.state_dict() carries `vocabulary`, `configuration` and `seed` (if given)
    in its metadata, so the save that writes the parameters (the student's train()) writes the stamp."""
    seeded = {} if seed is None else dict(seed=seed)

    def write_stamp(module, state_dict, prefix, local_metadata):
        if prefix == '':
            local_metadata.update(vocabulary=vocabulary, configuration=configuration, **seeded)
    model.register_state_dict_post_hook(write_stamp)


def read_stamp(state):
    """The stamp of a loaded state_dict: {'vocabulary': ..., 'configuration': ...}, {} when unstamped."""
    return dict(getattr(state, '_metadata', {}).get('', {}))


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
    saved_variant = ('perceiver' if any(key.startswith('down_block.') for key in state) else
                     'rope' if any(key.endswith('.attn.rope_cache') for key in state) else 'vanilla')
    if saved_variant != variant:
        raise InputError(f"{path} holds {saved_variant} parameters, but --variant is {variant}")
    expected = model.state_dict()
    saved_vocab, vocab = state['tok_emb.weight'].shape[0], expected['tok_emb.weight'].shape[0]
    if saved_vocab != vocab:
        raise InputError(f"{path} was saved with a vocabulary of {saved_vocab} entries, but the pretraining "
                         f"corpus gives {vocab}: use parameters trained with this corpus")
    saved_chars = read_stamp(state).get('vocabulary')
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
