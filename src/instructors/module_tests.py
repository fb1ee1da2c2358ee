"""
Which tests guard which module: for every module of the tree, the test
files that a change to it must pass, each selection running in a minute or
two on one core. A reader who writes bugs for a module (a plausible-bug
catalogue of tests/mutants/, run by `./run.sh mutate --plausible
--catalogue FILE`) runs these; `./run.sh mutate --check` keeps the table
whole: every module of src/ that holds code, grader.py and run.sh has a
row, and every test a row names exists.
"""

SUBMISSION_MODEL_TESTS = ('tests/test_model.py', 'tests/test_dropout.py', 'tests/test_rope.py')
DECODING_TESTS = ('tests/test_kv_cache.py', 'tests/test_decoding_batched.py', 'tests/test_decoding_check.py',
                  'tests/test_greedy_ties.py', 'tests/test_runtime_decoding.py')
HANDOUT_TESTS = ('tests/test_grading_handout_answers.py', 'tests/test_grading_handout_configs.py',
                 'tests/test_grading_handout_corpora.py', 'tests/test_grading_handout_models.py',
                 'tests/test_grading_handout_predictions.py', 'tests/test_grading_handout_spans.py',
                 'tests/test_grading_handout_rope.py', 'tests/test_assignment_not_written_yet.py')
WORLDGEN_TESTS = ('tests/test_worldgen.py', 'tests/test_data.py')
# the tests of tests/test_copies.py that train nothing (its module fixtures train a class)
COPIES_STATISTIC_TESTS = tuple(f'tests/test_copies.py::{name}' for name in (
    'test_the_chernoff_bound_is_above_the_exact_tail',
    'test_holm_multiplies_the_kth_smallest_p_by_the_tests_left_and_keeps_the_order',
    'test_the_false_positive_rate_on_independent_classes_stays_under_its_bounds',
    'test_a_simulated_copy_with_a_tenth_changed_is_flagged'))
FULL_RUN_TESTS = tuple(f'tests/test_full_run.py::{name}' for name in (  # not the chain through ./run.sh: minutes
    'test_the_figures_are_read_from_run_pys_own_lines',
    'test_the_chains_are_each_variants_training_and_dev_stages_in_the_stage_tables_order',
    'test_a_chain_stops_at_its_first_failed_stage_and_the_other_goes_on',
    'test_parallel_chains_run_side_by_side_and_are_tabled_in_the_order_given', 'test_an_unknown_chain_is_one_line',
    'test_each_stage_runs_run_sh_with_outs_folders_its_output_and_errors_logged_and_read',
    'test_a_failed_stage_is_named_and_the_chain_stops'))
RUNNER_TESTS = ('tests/test_grading_runner_channel.py', 'tests/test_grading_runner_folders.py',
                'tests/test_grading_runner_processes.py', 'tests/test_slow_zygote.py', 'tests/test_probe_links.py',
                'tests/test_probe_answer.py', 'tests/test_grade_regenerate.py')
ROPE_GRADING_TESTS = ('tests/test_grade_rope_editions.py',)  # RoPE hand-ins graded end to end
SANDBOX_TESTS = ('tests/test_grading_sandbox.py', 'tests/test_sandbox_limits.py', 'tests/test_sandbox_isolation.py',
                 'tests/test_probe_answer.py')

MODULE_TESTS = {
    # the student's package (here the reference solution)
    'src/submission/attention.py': ('tests/test_attention.py',) + SUBMISSION_MODEL_TESTS,
    'src/submission/model.py': SUBMISSION_MODEL_TESTS,
    'src/submission/dataset.py': ('tests/test_dataset.py',),
    'src/submission/helper.py': ('tests/test_helper.py', 'tests/test_learning.py', 'tests/test_rope.py',
                                 'tests/test_editions.py'),
    'src/submission/trainer.py': ('tests/test_trainer.py', 'tests/test_recipe.py'),
    'src/submission/utils.py': ('tests/test_utils.py', 'tests/test_greedy_ties.py'),
    # the assignment's facts
    'src/assignment/facts.py': ('tests/test_facts.py', 'tests/test_layout.py', 'tests/test_configuration.py',
                                'tests/test_python_minimum.py'),
    'src/assignment/not_written_yet.py': HANDOUT_TESTS,
    'src/assignment/editions.py': ('tests/test_editions.py',) + ROPE_GRADING_TESTS,
    'src/assignment/measured.py': ('tests/test_measured.py', 'tests/test_release_readme_tables.py'),
    'src/assignment/question_files.py': ('tests/test_question_files.py', 'tests/test_runtime_inputs.py',
                                         'tests/test_grading_bundle.py', 'tests/test_london_baseline.py',
                                         'tests/test_release_labels.py'),
    # the runtime
    'src/runtime/inputs.py': ('tests/test_runtime_inputs.py',),
    'src/runtime/atomic_files.py': ('tests/test_atomic_files.py',),
    'src/runtime/params.py': ('tests/test_params.py', 'tests/test_run_rope.py',
                   'tests/test_run_plain.py'),
    'src/runtime/command_line.py': ('tests/test_command_line.py', 'tests/test_configuration.py', 'tests/test_run_plain.py'),
    'src/runtime/seeds.py': ('tests/test_seeds.py',),
    'src/runtime/training/batches.py': ('tests/test_batches.py', 'tests/test_runtime_training.py'),
    'src/runtime/training/checkpoint.py': ('tests/test_checkpoint.py', 'tests/test_runtime_training.py'),
    'src/runtime/training/distributed.py': ('tests/test_distributed.py',),
    'src/runtime/training/duration.py': ('tests/test_duration.py',),
    'src/runtime/training/fast_training.py': ('tests/test_fast_training.py', 'tests/test_fast.py',
                                              'tests/test_trainer.py', 'tests/test_bench_compile.py'),
    'src/runtime/training/records.py': ('tests/test_records.py',),
    'src/runtime/decoding/__init__.py': DECODING_TESTS,
    'src/runtime/decoding/greedy.py': DECODING_TESTS,
    'src/runtime/decoding/kv_cache.py': DECODING_TESTS,
    'src/runtime/decoding/vanilla_cache.py': DECODING_TESTS,
    'src/runtime/decoding/perceiver_cache.py': DECODING_TESTS,
    # the stages
    'src/run.py': ('tests/test_atomic_files.py', 'tests/test_seeds.py', 'tests/test_run_main.py',
                   'tests/test_run_bad_inputs.py', 'tests/test_run_student_code.py', 'tests/test_run_stages.py', 'tests/test_run_rope.py',
                   'tests/test_run_plain.py'),
    'src/stages/collect_submission.py': ('tests/test_stages.py', 'tests/test_stages_collect_submission.py'),
    'src/stages/help.py': ('tests/test_help.py', 'tests/test_run_sh.py'),
    'src/stages/london_baseline.py': ('tests/test_london_baseline.py',),
    'src/stages/plot.py': ('tests/test_plot.py',),
    'run.sh': ('tests/test_run_sh.py', 'tests/test_python_minimum.py'),
    # the grader
    'grader.py': ('tests/test_grader_judges.py', 'tests/test_grading_editions.py') + ROPE_GRADING_TESTS,
    'src/grading/bundle.py': ('tests/test_grading_bundle.py', 'tests/test_bundle_settings.py'),
    'src/grading/cli.py': ('tests/test_grading_cli.py', 'tests/test_grading_editions.py'),
    'src/grading/context.py': ('tests/test_grading_context.py',),
    'src/grading/registry.py': ('tests/test_grading_registry.py', 'tests/test_grading_editions.py'),
    'src/grading/report.py': ('tests/test_grading_report.py',),
    'src/grading/results.py': ('tests/test_grading_results.py', 'tests/test_grading_report.py'),
    'src/grading/suite.py': ('tests/test_grading_suite.py',),
    'src/grading/trusted.py': ('tests/test_grading_trusted.py', 'tests/test_grade_regenerate.py'),
    'src/grading/runner.py': RUNNER_TESTS,
    'src/grading/sandbox.py': SANDBOX_TESTS,
    'src/grading/zygote.py': ('tests/test_zygote.py', 'tests/test_slow_zygote.py',
                              'tests/test_grade_regenerate.py', 'tests/test_zygote_parent.py'),
    'src/grading/zygote_parent.py': ('tests/test_zygote_parent.py', 'tests/test_zygote.py',
                                     'tests/test_suite_costs.py'),
    'src/grading/forked_zygote.py': ('tests/test_zygote_parent.py', 'tests/test_zygote.py'),
    **{f'src/grading/handout/{name}.py': HANDOUT_TESTS
       for name in ('answers', 'configs', 'corpora', 'models', 'spans')},
    **{f'src/grading/handout/{name}.py': HANDOUT_TESTS + ROPE_GRADING_TESTS for name in ('predictions', 'rope')},
    # the instructors' tools
    'src/instructors/agreement.py': ('tests/test_agreement.py',),
    'src/instructors/bench.py': ('tests/test_bench.py',),
    'src/instructors/bench_compile.py': ('tests/test_bench_compile.py',),
    'src/instructors/demo.py': ('tests/test_demo.py', 'tests/test_demo_pretraining.py', 'tests/test_demo_rope.py',
                                'tests/test_demo_perceiver.py'),
    'src/instructors/full_run.py': FULL_RUN_TESTS,
    'src/instructors/mutate.py': ('tests/test_mutation_check.py', 'tests/test_plausible.py'),
    'src/instructors/mutation_check.py': ('tests/test_mutation_check.py',),
    'src/instructors/module_tests.py': ('tests/test_mutation_check.py',),
    'src/instructors/plausible.py': ('tests/test_plausible.py',),
    'src/instructors/tree_copy.py': ('tests/test_plausible.py',),
    'src/instructors/staging.py': ('tests/test_staging.py',),
    'src/instructors/suite_costs.py': ('tests/test_suite_costs.py',),
    'src/instructors/release/__main__.py': ('tests/test_release_main.py', 'tests/test_staging.py',
                                            'tests/test_release_edition.py'),
    'src/instructors/release/autograder.py': ('tests/test_release_autograder.py', 'tests/test_release_labels.py',
                                              'tests/test_release_edition.py'),
    'src/instructors/release/checks.py': ('tests/test_release_checks.py', 'tests/test_release_import_check.py'),
    'src/instructors/release/import_check.py': ('tests/test_release_import_check.py',),
    'src/instructors/release/regions.py': ('tests/test_release_checks.py', 'tests/test_release_regions.py'),
    'src/instructors/release/edition_blocks.py': ('tests/test_release_edition_blocks.py', 'tests/test_release_edition.py',
                                                  'tests/test_release_regions.py'),
    'src/instructors/release/student.py': ('tests/test_release_student.py', 'tests/test_release_checks.py',
                                           'tests/test_release_edition.py'),
    'src/instructors/release/readme_tables.py': ('tests/test_release_readme_tables.py', 'tests/test_release_student.py'),
    'src/instructors/copies/__main__.py': ('tests/test_copies_main.py', 'tests/test_staging.py'),
    'src/instructors/copies/answers.py': ('tests/test_copies_answers.py', 'tests/test_copies_main.py'),
    'src/instructors/copies/class_regeneration.py': ('tests/test_copies_class_regeneration.py',),
    'src/instructors/copies/grader_regeneration.py': ('tests/test_copies_grader_regeneration.py',
                                                      'tests/test_copies.py'),
    'src/instructors/copies/handins.py': (
        'tests/test_copies_handins.py', 'tests/test_copies_class_regeneration.py', 'tests/test_copies_main.py',
        'tests/test_copies.py::test_the_metadata_names_every_submitter_through_rubys_tags_anchors_and_aliases',
        'tests/test_copies.py::test_metadata_that_is_not_yaml_is_one_line_and_hand_ins_keep_their_folders_names'),
    'src/instructors/copies/heatmap.py': ('tests/test_copies_heatmap.py',),
    'src/instructors/copies/parameters.py': ('tests/test_copies_parameters.py',
                                             'tests/test_copies.py::test_the_sketch_distance_is_the_relative_distance_'
                                             'within_a_few_percent'),
    'src/instructors/copies/report.py': ('tests/test_copies_report.py', 'tests/test_copies_main.py'),
    'src/instructors/copies/simulate.py': ('tests/test_copies_simulate.py', *COPIES_STATISTIC_TESTS),
    'src/instructors/copies/speed.py': ('tests/test_copies_speed.py',),
    'src/instructors/copies/statistic.py': ('tests/test_copies_statistic.py', *COPIES_STATISTIC_TESTS),
    'src/instructors/copies/verdicts.py': ('tests/test_copies_verdicts.py', 'tests/test_copies_main.py'),
    **{f'src/instructors/worldgen/{name}.py': WORLDGEN_TESTS for name in (
        '__main__', 'biographies', 'careers', 'cultures', 'names', 'people', 'places', 'world')},
}
