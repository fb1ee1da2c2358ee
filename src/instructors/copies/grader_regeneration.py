"""
The grader's own trusted regeneration, as the copy report uses it; all the
report takes from the grader is here. The hidden bundle is read as
grader.py reads it, and a hand-in's parameters are loaded
(torch.load(..., weights_only=True)) into the bundle's reference model in a
trusted process that never imports submitted code, which answers the
questions with the stages' batched, cached greedy decoding: the grader's
probe regenerated_predictions (grading.handout.predictions), run by
grading.trusted. Parameters that do
not fit the reference's model are not regenerated (the grader would decode
them with the submitted code, which the report never runs). Within
forking(), as in a grading run, each trusted process is forked from one
that has imported torch once (grading.zygote), started with the first
regeneration, rather than a new interpreter importing it again.
"""

import contextlib

from assignment.facts import GRADED_SIZE
from grading.bundle import load_bundle
from grading.handout.predictions import regenerated_predictions
from grading.registry import source_of
from grading.runner import ProbeRunner
from grading.trusted import FORKING, TrustedFailure, forked_from, run_trusted

PROBE_SEED = 5  # the seed of the model's initial weights before the parameters are loaded: any will do


class Unregenerated(Exception):
    """The parameters could not be regenerated from; the message says why."""


def read_bundle(path):
    """The hidden bundle at `path`, as the grader reads it; BundleError when it is not one."""
    return load_bundle(path)


def cannot_regenerate(bundle):
    """Why answers cannot be regenerated with `bundle`, or None when they can."""
    missing = [what for what, there in (('reference/', bundle.reference), ('runtime/', bundle.runtime),
                                        ('vocabulary.json', bundle.vocabulary)) if not there]
    return f"the hidden bundle has no {', '.join(missing)}" if missing else None


@contextlib.contextmanager
def forking(folder):
    """Regenerations in the block are forked from one zygote, which imports torch once, where a new
    interpreter takes seconds a parameters file to import it; `folder` is the zygote's working folder."""
    runner = ProbeRunner(folder, token=None, preload=('torch',))
    try:
        with forked_from(runner):
            yield
    finally:
        runner.close()


def regenerated_answers(bundle, params_path, variant, questions, timeout):
    """The reference model's answers (stripped) to `questions` with the `variant` parameters at
    `params_path`; Unregenerated when there are none."""
    request = dict(variant=variant, size=bundle.model or GRADED_SIZE, params_path=params_path,
                   vocabulary=bundle.vocabulary, questions=questions, seed=PROBE_SEED)
    if FORKING:
        FORKING[-1].warm_up()  # the zygote starts with the first regeneration: none for a class without any
    try:
        result = run_trusted(source_of(regenerated_predictions), regenerated_predictions.__name__, request,
                             bundle.reference, bundle.runtime, timeout)
    except TrustedFailure as failure:
        raise Unregenerated(str(failure).strip().splitlines()[0] if str(failure).strip() else 'the trusted process failed') from None
    if 'failure' in result:
        raise Unregenerated(result['failure'])
    value = result['value']
    if 'unloadable' in value:
        raise Unregenerated(f"it cannot be read ({value['unloadable']})")
    if value['misfit']:
        raise Unregenerated(f"it does not fit the reference's model ({'; '.join(value['misfit'])})")
    return [answer.strip() for answer in value['predictions']]
