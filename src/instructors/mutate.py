"""
Mutation testing of the infrastructure with mutmut, one module at a time and
with only that module's tests:

    ./run.sh mutate [module ...]     # e.g. src/runtime/atomic_files.py; none given: every module of MODULES
    ./run.sh mutate --plausible [module ...]     # the hand-written plausible bugs instead (plausible.py)
    ./run.sh mutate --plausible --catalogue tests/mutants/FILE.py [module ...]     # another set of them
    ./run.sh mutate --check     # no run: the tables here, the catalogues and the docs agree with the tree

For each module the tree (src/, tests/, data/, run.sh, pyproject.toml, grader.py) is
copied to a temporary folder with mutmut.cfg (beside this file) as its
setup.cfg plus the module and its tests, and `mutmut run` mutates it there:
the work tree is never changed. Prints, per module, its survivors (with the
diffs of those neither in EQUIVALENT nor in GPU_ONLY) and a row for
docs/mutation-testing.md's table: mutants, killed (a failing test or a timeout), equivalent
(the survivors in EQUIVALENT), score = killed / (mutants - equivalent); the
survivors in GPU_ONLY count against the score.
"""

import argparse
import configparser
import datetime
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from . import mutation_check, plausible
from .module_tests import HANDOUT_TESTS, MODULE_TESTS
from .tree_copy import ROOT, copy_environment, tree_copy

CONFIG = Path(__file__).with_name('mutmut.cfg')
CATALOGUES = ROOT / 'tests' / 'mutants'  # the sets of plausible bugs: test data, loaded by path
CATALOGUE = CATALOGUES / 'written_with_the_tests.py'  # the set --plausible runs unless given --catalogue

REGION_TESTS = tuple(f'tests/test_release_regions.py::test_{name}' for name in (
    'cut_keeps_the_markers_and_leaves_one_placeholder_per_region', 'cut_example_runs_as_the_skeleton_it_promises',
    'restore_inverts_cut', 'restoring_each_solution_file_from_its_cut_is_byte_for_byte',
    'restore_rejects_a_different_number_of_regions', 'unpaired_markers_name_the_file_and_line',
    'the_solution_has_the_regions_the_handout_names'))  # test_release_regions.py's tests of the regions themselves

DECODER_TESTS = tuple(f'tests/test_decoding_batched.py::test_{name}' for name in (
    'shared_prefix_stops_at_the_first_difference_and_before_the_shortest_prompts_last_token',
    'argmax_ties_break_as_topk_does'))  # the decoder tests of test_decoding_batched.py that train no model
QUICK_DECODING_TESTS = ('tests/test_kv_cache.py', 'tests/test_decoding_check.py', 'tests/test_greedy_ties.py')

# module -> the pytest arguments that select its tests (files or test ids)
MODULES = {
    'src/runtime/atomic_files.py': ('tests/test_atomic_files.py',),
    'src/runtime/params.py': ('tests/test_params.py', 'tests/test_run_plain.py'),
    'src/runtime/inputs.py': ('tests/test_runtime_inputs.py',),
    'src/assignment/question_files.py': MODULE_TESTS['src/assignment/question_files.py'],
    'src/stages/collect_submission.py': ('tests/test_stages.py',),
    **{f'src/runtime/decoding/{name}.py': ('tests/test_runtime_decoding.py', *DECODER_TESTS, *QUICK_DECODING_TESTS)
       for name in ('__init__', 'greedy', 'kv_cache')},
    'src/runtime/training/batches.py': ('tests/test_runtime_training.py', 'tests/test_batches.py'),  # test_resume.py
    'src/runtime/training/checkpoint.py': ('tests/test_runtime_training.py', 'tests/test_checkpoint.py'),  # trains in
    # subprocesses, which mutmut cannot trace to a function
    'src/instructors/release/checks.py': MODULE_TESTS['src/instructors/release/checks.py'],
    'src/instructors/release/import_check.py': MODULE_TESTS['src/instructors/release/import_check.py'],
    'src/instructors/release/regions.py': ('tests/test_release_checks.py', *REGION_TESTS),
    **{f'src/grading/handout/{name}.py': HANDOUT_TESTS  # probes run in-process there
       for name in ('answers', 'corpora', 'spans', 'configs', 'models', 'predictions')},
    'src/assignment/not_written_yet.py': HANDOUT_TESTS,
    **{f'src/grading/{name}.py': (f'tests/test_grading_{name}.py',) for name in ('context', 'suite', 'trusted')},
    'src/grading/bundle.py': MODULE_TESTS['src/grading/bundle.py'],
    'src/grading/cli.py': ('tests/test_grading_cli.py', 'tests/test_grading_editions.py'),
    'src/grading/registry.py': ('tests/test_grading_registry.py', 'tests/test_grading_editions.py'),
    'src/grading/runner.py': ('tests/test_grading_runner_channel.py', 'tests/test_grading_runner_folders.py',
                              'tests/test_grading_runner_processes.py', 'tests/test_probe_links.py',
                              'tests/test_slow_zygote.py', 'tests/test_probe_answer.py'),
    'src/grading/results.py': ('tests/test_grading_results.py', 'tests/test_grading_report.py'),
    'src/grading/report.py': ('tests/test_grading_report.py',),
}

# surviving mutants that cannot change behaviour: mutmut's name -> why
UTF8_ALIAS = "'UTF-8' names the same codec as 'utf-8'"
WEIGHTS_ONLY = "weights_only=True is torch.load's default in the pinned torch (2.13)"
TEMPORARY_NAME = "the temporary file's suffix is never seen: it is renamed or removed"
EQUIVALENT = {
    'runtime.atomic_files.x_write_predictions__mutmut_10': UTF8_ALIAS,
    **{f'runtime.params.x_checked_params__mutmut_{n}': WEIGHTS_ONLY for n in (16, 19)},
    'runtime.inputs.x_read_text__mutmut_12': UTF8_ALIAS,
    'runtime.inputs.x_ascii_part__mutmut_6': "'ASCII' names the same codec as 'ascii'",
    **{f'grading.cli.x_main__mutmut_{n}': "registry.select takes None as it takes []: no selectors, every test"
       for n in (45, 58)},
    'assignment.question_files.x_question_lines__mutmut_14': UTF8_ALIAS,
    'assignment.question_files.x_read_question_file__mutmut_5': "first is only tested for truth, and '' is falsy as "
                                                                "None is",
    **{f'stages.collect_submission.x_not_graded__mutmut_{n}': WEIGHTS_ONLY for n in (4, 7)},
    'stages.collect_submission.x_write_zip__mutmut_14': "the umask is read and put back at once; nothing is created between",
    **{f'stages.collect_submission.x_write_zip__mutmut_{n}': TEMPORARY_NAME for n in (5, 7, 9, 10)},
    **{f'runtime.training.checkpoint.x_save_atomically__mutmut_{n}': TEMPORARY_NAME for n in (7, 10, 12, 13)},
    **{f'instructors.release.checks.x_{name}': UTF8_ALIAS
       for name in ('files_leaking__mutmut_14', 'label_lines__mutmut_6', 'solution_lines__mutmut_17',
                    'hidden_test_lines__mutmut_7', 'hidden_test_lines__mutmut_23', 'references_elsewhere__mutmut_22',
                    'student_file_problems__mutmut_31')},
    'instructors.release.checks.x_student_file_problems__mutmut_64': "str.count reads a None start as 0",
    'instructors.release.checks.x_student_file_problems__mutmut_83': "the joined lines are only searched for "
    "labels, which hold neither a newline nor an X",
    'instructors.release.checks.x_solution_lines__mutmut_2': "a telling line (30+ characters) cannot lie in 'XXXX'",
    **{f'instructors.release.checks.x_solution_lines__mutmut_{n}': "cut() names the file only in a RegionError, "
       "which regions() raised first on the same text" for n in (27, 29)},
    'instructors.release.checks.x_python_failure__mutmut_10': "cwd is the tree, so a relative src is the same folder",
    'instructors.release.checks.x_python_failure__mutmut_14': "any non-empty PYTHONDONTWRITEBYTECODE disables bytecode",
    **{f'instructors.release.import_check.x_forked_failure__mutmut_{n}': UTF8_ALIAS for n in (43, 58)},
    'instructors.release.import_check.x_forked_failure__mutmut_47': "the child exits 2 rather than 1 after writing "
                                                                    "its complaint, which is what is reported",
    **{f'runtime.decoding.greedy.x_greedy_next__mutmut_{n}': "the logits are 2-D (B, vocab): dims 1, -1 and the implicit "
       "one are the same" for n in (7, 9, 11, 12, 15)},
    'runtime.decoding.greedy.xǁRecomputeǁ__init____mutmut_14': "columns past the last one fed are never read",
    'runtime.decoding.greedy.xǁRecomputeǁlogits__mutmut_9': "attention is causal: a column after every row's last position "
                                                 "changes no logits at those positions",
    'runtime.decoding.kv_cache.x_attend__mutmut_15': "the keys are 4-D (B, nh, Tk, hs): dims +2 and -2 are the same",
    'runtime.decoding.kv_cache.x_attend__mutmut_37': "float('-INF') is float('-inf')",
    **{f'runtime.decoding.x_predict_places_plain__mutmut_{n}': "a list of ints makes an int64 tensor" for n in (12, 15)},
    **{f'runtime.decoding.x_predict_places_plain__mutmut_{n}': "sample's default is sample=False" for n in (21, 25)},
    'grading.bundle.x_read_json__mutmut_6': UTF8_ALIAS,
    **{f'grading.results.x_write_results__mutmut_{n}': "json.dump escapes every non-ASCII character: the file's "
       "bytes are the same in any encoding" for n in (21, 24, 28)},
    **{f'grading.results.x_write_results__mutmut_{n}': TEMPORARY_NAME for n in (17, 18)},
    'grading.context.xǁContextǁrun__mutmut_4': "getattr's default None is falsy, as False is",
    'grading.context.xǁContextǁrun_reference__mutmut_8': "getattr's default None is falsy, as False is",
    'grading.context.xǁSnapshotǁ__init____mutmut_26': UTF8_ALIAS,
    **{f'grading.context.xǁSnapshotǁ__init____mutmut_{n}': "a text read past max_bytes characters is longer than "
       "max_bytes and kept as None either way; only how much is read differs" for n in (31, 33)},
    **{f'grading.runner.x_processes_of__mutmut_{n}': "only ASCII fields are read (the Uid line, the numbers after "
       "the name); with errors='replace' the name decodes to something under any codec"
       for n in (11, 14, 17)},
    **{f'grading.runner.xǁProbeRunnerǁprepare__mutmut_{n}': "copytree's default is symlinks=False"
       for n in (19, 23, 85, 89)},
    'grading.runner.xǁProbeRunnerǁprepare__mutmut_92': "the copy for another user ignores every link, so none is "
                                                  "copied, as a link or as its target",
    'grading.runner.x_ignored_for_another_user__mutmut_9': "an ignore_patterns function never reads the folder",
    **{f'grading.runner.{name}': "bytes.decode's default codec is UTF-8" for name in (
        'xǁCappedBufferǁtext__mutmut_4', 'xǁTailBufferǁtext__mutmut_3', 'xǁProbeRunnerǁrun_trusted__mutmut_48')},
    **{f'grading.runner.{name}': UTF8_ALIAS for name in (
        'xǁCappedBufferǁtext__mutmut_7', 'xǁTailBufferǁtext__mutmut_6', 'xǁProbeRunnerǁrun_trusted__mutmut_52')},
    **{f'grading.runner.{name}': "differs only when a monotonic clock reading equals the bound to the last bit"
       for name in ('xǁProbeRunnerǁcollect__mutmut_12', 'xǁProbeRunnerǁcollect__mutmut_20',
                    'xǁProbeRunnerǁcollect__mutmut_45', 'xǁProbeRunnerǁend__mutmut_9')},
    'grading.runner.xǁProbeRunnerǁcollect__mutmut_7': "None is falsy as False is, and the flag is a bool from the first "
                                                 "closed pipe on",
    **{f'grading.runner.xǁProbeRunnerǁcollect__mutmut_{n}': "the read size only cuts the same bytes into other chunks"
       for n in (35, 36)},
    'grading.runner.xǁProbeRunnerǁoutcome__mutmut_54': "'ASCII' names the same codec as 'ascii'",
    'grading.runner.xǁProbeRunnerǁoutcome__mutmut_59': UTF8_ALIAS,
    'grading.runner.xǁProbeRunnerǁstart__mutmut_50': UTF8_ALIAS,
    'grading.trusted.x_answer__mutmut_56': "getattr's default None is falsy, as False is",
    **{f'grading.trusted.x_answer__mutmut_{n}': "nothing looks the tests module up by the name it is loaded under"
       for n in (6, 7)},
    **{f'grading.trusted.{name}': "json.dump escapes every non-ASCII character: the answer's bytes are the same in "
       "any encoding" for name in ('x_main__mutmut_15', 'x_main__mutmut_18', 'x_main__mutmut_24',
                                   'x_enter__mutmut_41', 'x_enter__mutmut_44', 'x_enter__mutmut_48')},
    'grading.trusted.x_enter__mutmut_9': "with no PYTHONPATH the default's one entry is dropped from the path; '' is "
                                         "dropped there anyway, and no path is named XXXX",
    **{f'grading.trusted.x_spawned__mutmut_{n}': "run_trusted reads neither output of a process that timed out"
       for n in (27, 28)},
    'grading.handout.answers.x_answered__mutmut_17': "check(None, ...) fails as check(False, ...) does",
    **{f'grading.handout.models.x_fingerprint__mutmut_{n}': "the condition stored each parameter's first name "
       "already, so setdefault returns it whatever its default" for n in (26, 28)},
    'grading.handout.models.x_fingerprint__mutmut_30': "remove_duplicate=None is falsy, as False is",
    **{f'grading.handout.spans.x_ids__mutmut_{n}': "iterating a 1-D tensor gives 0-d tensors, which int() reads as "
       ".tolist()'s numbers" for n in (2, 4, 8, 9)},
    'grading.handout.configs.x_same_setting__mutmut_22': "math.isclose's default rel_tol is 1e-9",
    'grading.handout.models.x_set_weights__mutmut_16': "the noise is symmetric and submission and reference get the "
                                                       "same weights: fingerprints are only compared with each other",
    **{f'grading.handout.corpora.x_write_biographies__mutmut_{n}': "the biographies are ASCII: every encoding writes "
       "the same bytes" for n in (27, 30, 34, 38, 41, 45)},
    **{f'grading.handout.corpora.x_write_span_corpus__mutmut_{n}': "the span corpus is ASCII words: every encoding "
       "writes the same bytes" for n in (46, 49)},
    'grading.handout.corpora.x_write_span_corpus__mutmut_53': UTF8_ALIAS,
    **{f'grading.handout.configs.x_check_train__mutmut_{n}': "calls only shows that train() was called: any item "
       "makes it non-empty" for n in (2, 3)},
    **{f'grading.handout.configs.x_check_train__mutmut_{n}': WEIGHTS_ONLY for n in (45, 48)},
    'grading.handout.models.x_judge_perceiver_as_specified__mutmut_31': "a spread of exactly 0.5 is accepted: the "
                                                                        "branch never sees it",
    'grading.handout.models.x_judge_perceiver_as_specified__mutmut_35': "check(None, ...) fails as check(False, ...) "
                                                                        "does",
}

# surviving mutants that only a run on a GPU could kill (they count as survivors): mutmut's name -> why
CPU_ONLY = "device=None (or none given) is the CPU here, as is every tensor"
CPU_LOAD = "map_location=None loads CPU-saved tensors on the CPU, as 'cpu' does"
NO_CUDA = "without CUDA there are no CUDA generator states to save or restore"
GPU_ONLY = {
    **{f'runtime.params.x_checked_params__mutmut_{n}': CPU_LOAD for n in (15, 18)},
    **{f'stages.collect_submission.x_not_graded__mutmut_{n}': CPU_LOAD for n in (3, 6)},
    **{f'runtime.training.checkpoint.x_read_checkpoint__mutmut_{n}': CPU_LOAD for n in (6, 9)},
    **{f'grading.handout.configs.x_check_train__mutmut_{n}': CPU_LOAD for n in (44, 47)},
    **{f'runtime.decoding.greedy.xǁRecomputeǁstep__mutmut_{n}': CPU_ONLY for n in (3, 5)},
    **{f'runtime.decoding.x_predict_places_plain__mutmut_{n}': CPU_ONLY for n in (13, 16)},
    **{f'runtime.training.checkpoint.{name}': NO_CUDA for name in (
        'x_rng_states__mutmut_9', 'x_rng_states__mutmut_10', 'x_set_rng_states__mutmut_12',
        'x_set_rng_states__mutmut_13', 'x_set_rng_states__mutmut_14')},
}

KILLED = ('killed', 'timeout', 'segfault', 'caught by type check')


def work_copy(module):
    """A temporary copy of the tree set up to mutate `module` with its tests; its path."""
    folder = tree_copy()
    config = configparser.ConfigParser()
    config.read(CONFIG)
    config['mutmut']['only_mutate'] = module
    config['mutmut']['pytest_add_cli_args_test_selection'] = '\n' + '\n'.join(MODULES[module])
    with open(folder / 'setup.cfg', 'w') as f:
        config.write(f)
    return folder


def mutmut(folder, *args, capture=False):
    """Run `python -m mutmut ARGS` in `folder` on one thread; its output if `capture`."""
    result = subprocess.run([sys.executable, '-m', 'mutmut', *args], cwd=folder, env=copy_environment(), check=True,
                            text=True, stdout=subprocess.PIPE if capture else None)
    return result.stdout


def statuses(folder):
    """{mutant name: status} of the last run in `folder`."""
    lines = mutmut(folder, 'results', '--all', 'true', capture=True).splitlines()
    return dict(line.strip().rsplit(': ', 1) for line in lines if ': ' in line)


def measure(module):
    """Mutate `module`, print its survivors and its table row; return its score (None: no mutants)."""
    folder = work_copy(module)
    try:
        mutmut(folder, 'run', '--max-children', '1')
        found = statuses(folder)
        survivors = sorted(name for name, status in found.items() if status not in KILLED)
        for name in survivors:
            print(f"{name}: {found[name]}" + (f" (equivalent: {EQUIVALENT[name]})" if name in EQUIVALENT else
                                               f" (needs a GPU: {GPU_ONLY[name]})" if name in GPU_ONLY else ""))
            if name not in EQUIVALENT and name not in GPU_ONLY:
                print(mutmut(folder, 'show', name, capture=True))
    finally:
        shutil.rmtree(folder)
    equivalent = sum(name in EQUIVALENT for name in survivors)
    killed = len(found) - len(survivors)
    score = killed / (len(found) - equivalent) if len(found) > equivalent else None
    shown = f"{score:.0%}" if score is not None else "n/a"
    print(f"| `{module}` | {len(found)} | {killed} | {equivalent} | {shown} | {datetime.date.today()} |")
    return score


class CatalogueError(Exception):
    """A path that holds no catalogue of plausible bugs; its message is one line that names it."""


def load_catalogue(path):
    """{module path: Module} of the MODULES of the catalogue file at `path` (one of CATALOGUES); a
    CatalogueError where `path` is no .py file, or one that defines no MODULES."""
    path = Path(path)
    if path.suffix != '.py' or not path.is_file():
        raise CatalogueError(f"no catalogue at {path}: no such .py file")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    catalogue = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(catalogue)
    if not hasattr(catalogue, 'MODULES'):
        raise CatalogueError(f"no catalogue at {path}: it defines no MODULES")
    return {module.path: module for module in catalogue.MODULES}


def configuration():
    """What `--check` holds against the tree: MODULES, EQUIVALENT, GPU_ONLY, the plausible bugs (CATALOGUE
    and every other set of CATALOGUES, those written apart from the tests) and module_tests.py."""
    written_apart = sorted(path for path in CATALOGUES.glob('*.py') if path != CATALOGUE)
    return mutation_check.Configuration(ROOT, MODULES, EQUIVALENT, GPU_ONLY, load_catalogue(CATALOGUE),
                                        tuple(load_catalogue(path) for path in written_apart), MODULE_TESTS)


def main(argv=None):
    """Measure the modules named (every module of MODULES, or of the plausible catalogue, if none);
    exit 1 if one scores under 90%. With --check, check the tables instead (mutation_check.py)."""
    parser = argparse.ArgumentParser(description="Mutation testing of the infrastructure (mutmut)")
    parser.add_argument('modules', nargs='*', help=f"modules to mutate (default: all of {len(MODULES)}, or all "
                                                   f"of the catalogue with --plausible)")
    parser.add_argument('--plausible', action='store_true', help="run the hand-written plausible bugs of "
                        f"{CATALOGUE.relative_to(ROOT)}, each against its module's tests in a copy of the tree, "
                        "not mutmut")
    parser.add_argument('--catalogue', metavar='PATH', help="with --plausible, the bugs of the catalogue file at "
                        f"PATH instead (another set of {CATALOGUES.relative_to(ROOT)}/, one written apart from the "
                        "tests)")
    parser.add_argument('--check', action='store_true', help="run nothing: check that MODULES, EQUIVALENT, "
                        "GPU_ONLY, the catalogues, module_tests.py and docs/mutation-testing.md agree with the "
                        "tree; one line per problem, exit 1 if any")
    args = parser.parse_args(argv)
    if args.check:
        if args.modules or args.plausible or args.catalogue:
            parser.error("--check takes no module and no other option")
        sys.exit(mutation_check.main(configuration()))
    if args.catalogue and not args.plausible:
        parser.error("--catalogue goes with --plausible")
    try:
        known = load_catalogue(args.catalogue or CATALOGUE) if args.plausible else MODULES
    except CatalogueError as error:
        print(f"mutate: {error}", file=sys.stderr)
        sys.exit(1)
    unknown = [module for module in args.modules if module not in known]
    if unknown:
        parser.error(f"not configured: {', '.join(unknown)}; the modules are: {', '.join(known)}")
    if args.plausible:
        sys.exit(plausible.measure_all([known[module] for module in args.modules or known]))
    scores = [measure(module) for module in args.modules or MODULES]
    sys.exit(0 if all(score is None or score >= 0.9 for score in scores) else 1)


if __name__ == '__main__':
    main()
