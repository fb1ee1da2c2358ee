"""
Regenerating a class's answers from its parameters: every parameters file
an evaluation stage reads (vanilla.model.params, vanilla.finetune.params,
perceiver.finetune.params) of every hand-in is answered once, on the
bundle's dev and test questions together, by the grader's trusted
regeneration (grader_regeneration.py, forked from one zygote), `jobs` processes at a time
under a progress bar; the answers are split back into the prediction files its stages make.
A parameters file from a zip is copied into the scratch folder for its
turn and removed after.
"""

import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from tqdm import tqdm

from assignment.facts import STAGES, labels

from .handins import Unreadable
from .grader_regeneration import Unregenerated, forking, regenerated_answers


@dataclass(frozen=True)
class Output:
    """A prediction file an evaluation stage makes: from which parameters, of which variant, on which
    labelled file of the bundle."""
    file: str
    params: str
    variant: str
    labels: str


OUTPUTS = tuple(Output(stage.writes, stage.params_in, stage.variant, labels(stage))
                for stage in STAGES if stage.function == 'evaluate')


@dataclass
class Regenerated:
    """The answers regenerated, {(hand-in number, prediction file): answers}, and how long it took."""
    answers: dict
    files: int
    hand_ins: int
    seconds: float


def regenerate_class(hand_ins, bundle, scratch, jobs, timeout, problems):
    """Regenerated answers of every hand-in's parameters files; a line in `problems` for each that fails."""
    tasks = []
    for index, hand_in in enumerate(hand_ins):
        for params in dict.fromkeys(output.params for output in OUTPUTS):
            outputs = [o for o in OUTPUTS if o.params == params and o.labels in bundle.labels]
            if params in hand_in.files and outputs:
                tasks.append((index, params, outputs))

    def regenerate(task):
        index, params, outputs = task
        path = hand_ins[index].on_disk(params, os.path.join(scratch, f"{index}-{params}"))
        questions = [question for output in outputs for question in bundle.questions(output.labels)]
        try:
            return regenerated_answers(bundle, path, outputs[0].variant, questions, timeout)
        finally:
            if path.startswith(scratch + os.sep):
                os.remove(path)

    answers, started = {}, time.perf_counter()
    with forking(scratch), ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(regenerate, task): task for task in tasks}
        for future in tqdm(as_completed(futures), total=len(tasks), desc='regenerating', unit='params file'):
            index, params, outputs = futures[future]
            try:
                regenerated = future.result()
            except Unreadable as error:
                problems.append(str(error))
                continue
            except Unregenerated as reason:
                problems.append(f"{hand_ins[index].name}: {params} not regenerated: {reason}; its prediction files "
                                f"are compared as submitted")
                continue
            for output in outputs:
                count = len(bundle.labels[output.labels])
                answers[(index, output.file)], regenerated = regenerated[:count], regenerated[count:]
    return Regenerated(answers, len(tasks), len({task[0] for task in tasks}), time.perf_counter() - started)
