"""
Greedy answers to "Where was X born?" questions: the package's entry point,
predict_places (and predict_places_plain, the one-at-a-time loop it must equal).

A question is prompted as `question MASK`; the model greedily writes 32
characters after it, and the prediction is the text between the first and
the second MASK of the completed string.

predict_places_plain answers one question at a time with
submission.utils.sample, running the whole sequence through the model for
every character; predict_places answers many questions per forward pass,
with a key/value cache where there is one, and gives the same predictions.
The modules: greedy.py (the batched decoding loop and its safety check),
kv_cache.py (what both caches share), vanilla_cache.py and perceiver_cache.py
(one cache for each model).
"""

import sys

import torch
from tqdm import tqdm

from submission.utils import sample

from .greedy import CacheUnusable, greedy_decode

ANSWER_STEPS = 32


def prediction_from_completion(completion, mask_char):
    """The text between the first and the second MASK of a completed prompt."""
    return completion.split(mask_char)[1]


def predict_places_plain(model, questions, dataset, device):
    """Answer each question in its own forward passes, with submission.utils.sample."""
    model.eval()
    predictions = []
    for question in tqdm(questions, desc="predicting"):
        prompt = question + dataset.MASK_CHAR
        x = torch.tensor([dataset.stoi[c] for c in prompt], dtype=torch.long, device=device)[None, ...]
        completion = sample(model, x, ANSWER_STEPS, sample=False)[0]
        predictions.append(prediction_from_completion(''.join(dataset.itos[int(i)] for i in completion),
                                                      dataset.MASK_CHAR))
    return predictions


def predict_places(model, questions, dataset, device, batch_size=128, stop_at_mask=True):
    """
    Answer the questions `batch_size` at a time with cached greedy decoding,
    shortest prompts together (less padding). With stop_at_mask a row stops
    at the first MASK it writes: the prediction ends there (and a question
    that holds a MASK itself has its prediction inside the prompt); without,
    every row runs all 32 steps as sample does. A prompt too long to decode
    without cropping the context (length + 31 > block_size) goes through
    predict_places_plain, which crops as sample does, and so does every
    remaining question when the batched logits differ from the model's own
    forward on one prompt (a model whose blocks are not the cache's, or one
    that is not causal); that fallback is said on stderr. A variant without a
    cache in this copy (the starter's perceiver) is decoded in batches all
    the same, recomputing the whole sequence at each step. The predictions are those of predict_places_plain, in the
    questions' order.
    """
    model.eval()
    stop = dataset.stoi[dataset.MASK_CHAR] if stop_at_mask else None
    prompts = [[dataset.stoi[c] for c in question + dataset.MASK_CHAR] for question in questions]
    fits = [len(p) + ANSWER_STEPS - 1 <= model.get_block_size() for p in prompts]
    order = sorted((i for i in range(len(prompts)) if fits[i]), key=lambda i: len(prompts[i]))
    predictions = [None] * len(questions)
    with tqdm(total=len(questions), desc="predicting") as bar:
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            try:
                completions = greedy_decode(model, [prompts[i] for i in rows], ANSWER_STEPS, stop=stop)
            except CacheUnusable as error:
                tqdm.write(f"predict_places: {error}; answering one question at a time "
                           f"(the same predictions, slower)", file=sys.stderr)
                break  # the questions left unanswered go to predict_places_plain below
            for i, completion in zip(rows, completions):
                predictions[i] = prediction_from_completion(''.join(dataset.itos[c] for c in completion),
                                                            dataset.MASK_CHAR)
            bar.update(len(rows))
        long_rows = [i for i in range(len(questions)) if predictions[i] is None]
        if long_rows:
            cropped = predict_places_plain(model, [questions[i] for i in long_rows], dataset, device)
            for i, prediction in zip(long_rows, cropped):
                predictions[i] = prediction
            bar.update(len(long_rows))
    return predictions
