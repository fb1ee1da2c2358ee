"""
The assignment's facts, each stated once: the oldest Python it runs on, the
graded model and training settings, the reserved characters, the data files,
the stage table (stage -> function, variant, the files it reads and writes,
the stage that makes each of its inputs), the deliverables and the functions
students write. grader.py and the grading package, run.py, the stages, the
release and the bench all read them from here. Standard library only, so
that `./run.sh help` and the grader's own process work before torch is
imported.
"""

from dataclasses import dataclass
from typing import Optional

from .editions import EDITIONS, SEED_EDITION

# The edition of this checkout: None in this repository, which runs every edition's stages; a starter's
# (instructors/release) names its own, and then only its stages are run, handed in and listed.
EDITION = None

# The oldest Python the assignment runs on: torch 2.13.0 (requirements.txt) has no wheel for an older one.
# run.sh refuses an older one; README.md, environment.yml and the starter's README state it too.
PYTHON_MINIMUM = (3, 10)

BLOCK_SIZE = 128
GRADED_MODEL = dict(n_layer=4, n_head=8, n_embd=256)
BOTTLENECK_DIM = 32
PAD_CHAR = '\u25A1'  # id 0; the loss ignores it
MASK_CHAR = '\u2047'  # id 1
RESERVED_CHARS = {PAD_CHAR: 'PAD', MASK_CHAR: 'MASK'}

GRADED_SIZE = dict(GRADED_MODEL, block_size=BLOCK_SIZE, bottleneck_dim=BOTTLENECK_DIM)
COURSE_VOCAB_SIZE = 256  # the course's wiki.txt: 254 characters, PAD and MASK

# The longest truncation of span corruption the course's starters allow: int(block_size * 3/4) in the
# Winter, Spring and Fall 2024 editions, int(block_size * 7/8) in Fall 2023. Either reading follows a handout.
TRUNCATION_BOUNDS = (int(BLOCK_SIZE * 3 / 4), int(BLOCK_SIZE * 7 / 8))

# The trainer configurations the handout fixes; final_tokens = 200 * len(pretrain_dataset) * block_size.
COMMON_TRAINING = dict(lr_decay=True, warmup_tokens=512 * 20, num_workers=4, ckpt_path=None)
GRADED_TRAINING = {
    'finetune_without_pretraining': dict(max_epochs=75, batch_size=256, learning_rate=6e-4, **COMMON_TRAINING),
    'finetune_with_pretraining': dict(max_epochs=10, batch_size=256, learning_rate=6e-4, **COMMON_TRAINING),
    'pretrain': dict(max_epochs=650, batch_size=128, learning_rate=6e-3, **COMMON_TRAINING),
}
# The trainer's own defaults for the settings the handout leaves alone (minGPT's TrainerConfig).
TRAINER_DEFAULTS = dict(betas=(0.9, 0.95), grad_norm_clip=1.0, weight_decay=0.1)

CORPUS = 'wiki.txt'
TRAIN_QUESTIONS = 'birth_places_train.tsv'
DEV_QUESTIONS = 'birth_dev.tsv'
TEST_QUESTIONS = 'birth_test_inputs.tsv'
TEST_LABELS = 'birth_test.tsv'  # the instructors' labelled test questions: in the hidden bundle only
DATA_FILES = (CORPUS, TRAIN_QUESTIONS, DEV_QUESTIONS, TEST_QUESTIONS)


@dataclass(frozen=True)
class Stage:
    """One graded stage of run.sh: `function` of run.py on `variant`, reading
    `params_in` (a file of OUT_DIR, or None) and `questions` (a data file, or
    'test' for $TEST_FILE), writing `writes` into OUT_DIR."""
    name: str
    function: str
    variant: str
    writes: str
    params_in: Optional[str] = None
    questions: Optional[str] = None
    summary: str = ''


def pretrained_chain(variant, model):
    """The four stages of `variant` with pretraining: pretrain, finetune, answer the dev and the test questions."""
    pretrained, finetuned = f'{variant}.pretrain.params', f'{variant}.finetune.params'
    return (Stage(f'{variant}_pretrain', 'pretrain', variant, pretrained,
                  summary=f"span-corruption pretraining of the {model} on wiki.txt"),
            Stage(f'{variant}_finetune_with_pretrain', 'finetune', variant, finetuned, pretrained, TRAIN_QUESTIONS,
                  f"finetune the pretrained {model}"),
            Stage(f'{variant}_eval_dev_with_pretrain', 'evaluate', variant, f'{variant}.pretrain.dev.predictions',
                  finetuned, DEV_QUESTIONS, "answer the dev questions, print accuracy"),
            Stage(f'{variant}_eval_test_with_pretrain', 'evaluate', variant, f'{variant}.pretrain.test.predictions',
                  finetuned, 'test', "answer the test questions"))


ALL_STAGES = (
    Stage('vanilla_finetune_without_pretrain', 'finetune', 'vanilla', 'vanilla.model.params',
          questions=TRAIN_QUESTIONS, summary="train a vanilla GPT from scratch on the training questions"),
    Stage('vanilla_eval_dev_without_pretrain', 'evaluate', 'vanilla', 'vanilla.nopretrain.dev.predictions',
          'vanilla.model.params', DEV_QUESTIONS, "answer the dev questions, print accuracy"),
    Stage('vanilla_eval_test_without_pretrain', 'evaluate', 'vanilla', 'vanilla.nopretrain.test.predictions',
          'vanilla.model.params', 'test', "answer the test questions"),
    *pretrained_chain('vanilla', 'vanilla GPT'),
    *pretrained_chain('perceiver', 'perceiver'),
    *pretrained_chain('rope', 'RoPE model'),
)


def stages_of(edition):
    """The graded stages of an edition: the vanilla model's and its second model's, in the table's order."""
    return tuple(stage for stage in ALL_STAGES if stage.variant in ('vanilla', EDITIONS[edition].second_model))


STAGES = ALL_STAGES if EDITION is None else stages_of(EDITION)  # the stages this checkout runs
GRADED_STAGES = {stage.name: stage for stage in STAGES}
MAKER = {stage.writes: stage.name for stage in STAGES}  # output file -> the stage that writes it

# The other stages of run.sh, and who may run them: 'all' ship in the
# student starter, 'instructors' only in this repository.
OTHER_STAGES = {
    'london_baseline': ('all', 'dev accuracy of always answering "London" and the most frequent training place'),
    'plot': ('all', 'loss and learning-rate curves of a run -> experiments/<run>/curves.png (needs matplotlib)'),
    'score_dev': ('all', "the hidden tests on the dev predictions, against data/'s dev labels (a local check)"),
    'collect_submission': ('all', 'zip the deliverables of src/submission/ for upload'),
    'help': ('all', 'this list'),
    'demo': ('instructors', 'the whole experiment on a small generated world, minutes on a CPU'),
    'test': ('instructors', "the project's tests, in parallel (--quick: the fast tier; installs what is missing)"),
    'bench': ('instructors', 'plain vs fast paths, side by side on this machine'),
    'release': ('instructors', f"cut one edition's student starter and autograder bundle (--edition NAME, "
                               f"{list(EDITIONS)[0]} to {list(EDITIONS)[-1]}; default {SEED_EDITION})"),
    'mutate': ('instructors', "mutation tests of the infrastructure (mutmut), one module or all; --check: the tables"),
    'copies': ('instructors', "the class copy report: hand-ins compared by parameters and answers -> OUT/report.md"),
}

# The stages whose outputs are handed in: the edition's (the seed edition's in this repository); and the files to
# hand in, in the handout's order: the package's code, then every output of those stages.
HANDED_IN_STAGES = stages_of(EDITION or SEED_EDITION)
CODE_FILES = ('__init__.py', 'attention.py', 'dataset.py', 'helper.py', 'model.py', 'trainer.py', 'utils.py')


def deliverables(edition):
    """The files an edition's students hand in: the package's code, then its stages' outputs."""
    return CODE_FILES + tuple(stage.writes for stage in stages_of(edition))


DELIVERABLES = deliverables(EDITION or SEED_EDITION)


def reads(stage):
    """The files `stage` reads, as (folder, name) with folder 'data', 'out' or 'test'."""
    files = [('data', CORPUS)]
    if stage.params_in:
        files.append(('out', stage.params_in))
    if stage.questions == 'test':
        files.append(('test', TEST_QUESTIONS))
    elif stage.questions:
        files.append(('data', stage.questions))
    return files


def labels(stage):
    """The labelled file an evaluation stage's predictions are scored against (the hidden bundle's)."""
    return TEST_LABELS if stage.questions == 'test' else stage.questions


# The functions students write, with the handout's part of each, as they are named in tracebacks: the edition's;
# in this repository the seed edition's, and the other editions' own functions with their parts.
def student_functions():
    if EDITION is not None:
        return dict(EDITIONS[EDITION].parts)
    seed = EDITIONS[SEED_EDITION].parts
    others = {name: part for edition in EDITIONS.values() for name, part in edition.parts.items() if name not in seed}
    return {**seed, **others}


STUDENT_FUNCTIONS = student_functions()
# Given code the handout sends students to read for a part; the student's files label it with its part,
# as they label each function above.
GIVEN_FOR_PARTS = {'CausalCrossAttention': 'g'}
