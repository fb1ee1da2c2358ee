"""
Greedy answers to "Where was X born?" questions.

A question is prompted as `question MASK`; the model greedily writes 32
characters after it, and the prediction is the text between the first and
the second MASK of the completed string.
"""

import torch
from tqdm import tqdm

from submission.utils import sample

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
