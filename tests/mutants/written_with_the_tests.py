"""
Plausible bugs written with the tests in view: the catalogue that
`./run.sh mutate --plausible` runs (src/instructors/plausible.py) when no
--catalogue names another.

89 hand-written mutants over 16 modules, each a find/replace on its
module's text that a developer could write in good faith, with one line
naming the bug; a mutant no test here can catch says why in `uncaught`.
They were written on 2026-11-24 by the authors of the tests, from the code
with its tests in view, after 10 of 25 such bugs, tried by hand against
the tree of 2026-11-23, got past a suite that mutmut scored 96-100%; the
tests were then written to kill them, so their score measures the suite
against the bugs it was made for. The sets written apart from the tests
(written_apart_*.py beside this file) measure it independently.
The three mutants of assignment/question_files.py, a module of their own,
came from the release's autograder and the grading bundle when the
question files got their one reader; the six of grading/zygote_parent.py
and the seventh of grading/runner.py (the parent's address kept from the
probes) were written with the zygote parent, its tests in view.

Each module's tests are chosen here, kept to what runs in seconds: unit
tests, and the end-to-end tests only where nothing else reaches the code
(the sandbox and the zygote run as real processes, as root where a test
needs another user).

First measured on 2026-11-24, with 80 mutants: 79 of 80 killed (99%), in
8.4 minutes. Latest on 2026-12-02: 88 of 89 killed (99%), in 10.7
minutes on this repository's later two-core machine; the survivor,
sandbox.py's package copy left writable, says in `uncaught` why no test
can catch it here. Both by

    ./run.sh mutate --plausible
"""

from instructors.module_tests import HANDOUT_TESTS
from instructors.plausible import Module, Mutant

DECODER_TESTS = ('tests/test_decoding_check.py', 'tests/test_greedy_ties.py', 'tests/test_runtime_decoding.py')

MODULES = (
    Module('src/runtime/training/checkpoint.py', ('tests/test_checkpoint.py', 'tests/test_runtime_training.py'), (
        Mutant("every process restores rank 0's random generators",
               "set_rng_states(state['rng'][self.processes.rank])", "set_rng_states(state['rng'][0])"),
        Mutant("the temporary checkpoint is renamed without an fsync",
               "            f.flush()\n            os.fsync(f.fileno())\n", "            f.flush()\n"),
        Mutant("a checkpoint at an epoch's end names the epoch just trained, so a resume trains it again",
               "self.save(trainer, trainer.epoch + 1, 0)", "self.save(trainer, trainer.epoch, 0)"),
        Mutant("Ctrl-C stops training without saving a checkpoint",
               "if stop or trainer.step % self.every == 0:", "if trainer.step % self.every == 0:"),
        Mutant("a resume leaves AdamW's moments at zero",
               "        trainer.optimizer.load_state_dict(state['optimizer'])\n", ""),
        Mutant("a checkpoint whose identity lacks a key is taken for this run's",
               "if saved.get(key) != value:", "if key in saved and saved[key] != value:"),
        Mutant("after training Ctrl-C gets Python's default handler, not the one it had",
               "signal.signal(signal.SIGINT, self.former_handler)",
               "signal.signal(signal.SIGINT, signal.default_int_handler)"),
        Mutant("every process saves the main process's generators as its own",
               "rngs = every_process(rng_states(), self.processes)",
               "rngs = [rng_states()] * self.processes.world"),
    )),
    Module('src/runtime/training/batches.py', ('tests/test_batches.py', 'tests/test_runtime_training.py'), (
        Mutant("a resumed pass counts its position from 0",
               "self.position = self.order.skip", "self.position = 0"),
        Mutant("a resumed pass skips as many examples as it should skip batches",
               "starts = range(self.skip * self.batch_size,", "starts = range(self.skip,"),
        Mutant("an example is corrupted the same way every epoch",
               "seed = example_seed(self.seed, epoch, index)", "seed = example_seed(self.seed, 0, index)"),
        Mutant("the batches a resume skips are skipped again in the epochs after it",
               "self.order.epoch, self.order.skip, self.position = self.order.epoch + 1, 0, 0",
               "self.order.epoch, self.position = self.order.epoch + 1, 0"),
        Mutant("making an example moves python's generator, which the model's dropout draws from",
               "        random.setstate(python_state)\n", ""),
        Mutant("a resumed pass's length counts the batches it skips",
               "return self.batches_an_epoch - self.order.skip", "return self.batches_an_epoch"),
        Mutant("an example reseeds every GPU's generator, the training's dropout among them",
               "torch.default_generator.manual_seed(seed)", "torch.manual_seed(seed)"),
        Mutant("a loader worker makes its examples unseeded",
               "return self.made(epoch, index)", "return self.dataset[index]"),
    )),
    Module('src/runtime/training/records.py', ('tests/test_records.py',
                                               'tests/test_run_stages.py::test_recorder_writes_one_row_a_step_'
                                               'from_the_trainer_tags'), (
        Mutant("a resume drops the row of the checkpoint's own step",
               "float(row[0]) <= self.resume_step", "float(row[0]) < self.resume_step"),
        Mutant("a resume keeps the interrupted run's rows past the checkpoint",
               "if row and float(row[0]) <= self.resume_step]", "if row]"),
        Mutant("a resumed run starts a new CSV, without the earlier rows",
               "if self.resume_step is not None and os.path.isfile(self.csv_path):",
               "if self.resume_step is None and os.path.isfile(self.csv_path):"),
        Mutant("a row is written before its last column arrives",
               "if len(row) == len(COLUMNS):", "if len(row) == len(COLUMNS) - 1:"),
        Mutant("the CSV is emptied when the recorder is made, so a run refused before its first row loses it",
               "        self.csv_file = None  # opened, fresh, at the first row: a run refused before it keeps "
               "the old file\n",
               "        self.csv_file = open(self.csv_path, 'w', newline='', encoding='utf-8')\n"),
    )),
    Module('src/runtime/command_line.py', ('tests/test_configuration.py',
                                           'tests/test_run_student_code.py::test_the_graded_configuration_is_'
                                           'stamped_empty_and_goes_to_the_submission'), (
        Mutant("a dropout other than the graded one is not stamped",
               "'batch_size',\n                                                            'dropout')",
               "'batch_size')"),
        Mutant("a latent count other than the graded one is not stamped",
               "('bottleneck_dim', 'pretrain_lr', 'finetune_lr')\n", "('pretrain_lr', 'finetune_lr')\n"),
        Mutant("a size given beside --small is stamped at --small's value",
               "    differ.update((name, getattr(args, name)) for name in ('n_layer', 'n_head', 'n_embd', "
               "'max_epochs', 'batch_size',",
               "    differ.update((name, getattr(args, name)) for name in ('n_layer', 'n_head', 'n_embd', "
               "'max_epochs', 'batch_size',\n                                                            'dropout')"
               " if getattr(args, name) is not None and name not in differ)\n    differ.update((name, getattr(args, "
               "name)) for name in ("),
        Mutant("a smoke run writes where the hand-in is collected from",
               "args.out_dir or (SMOKE_OUT if args.configuration else GRADED_OUT)", "args.out_dir or GRADED_OUT"),
        Mutant("--small's batch size is left out of the stamp",
               "if name != 'num_workers')", "if name not in ('num_workers', 'batch_size'))"),
    )),
    Module('src/grading/handout/predictions.py', ('tests/test_score_dev.py', *HANDOUT_TESTS), (
        Mutant("a file exactly at its accuracy threshold falls short",
               'name == "min_accuracy" and accuracy < value', 'name == "min_accuracy" and accuracy <= value'),
        Mutant("a file with exactly the correct answers needed falls short",
               'name == "min_correct" and correct < value', 'name == "min_correct" and correct <= value'),
        Mutant("a file with more predictions than questions is scored on its first lines",
               "check(len(predicted) == len(answers),", "check(len(predicted) >= len(answers),"),
        Mutant("answers are compared with the whitespace a file keeps around them",
               "correct = sum(p.strip() == a for p, a in zip(predicted, answers))",
               "correct = sum(p == a for p, a in zip(predicted, answers))"),
    )),
    Module('src/runtime/decoding/greedy.py', DECODER_TESTS, (
        Mutant("the check before batched decoding leaves out the most padded prompt",
               ".indices.tolist() + [int(lengths.argmin())]", ".indices.tolist()"),
        Mutant("the next token is the argmax, whose ties break otherwise than sample's topk",
               "    _, ix = torch.topk(F.softmax(logits, dim=-1), k=1, dim=-1)\n    return ix[:, 0]",
               "    return logits.argmax(dim=-1)"),
        Mutant("without a cache each row's logits are read at the batch's last column, not its own",
               "return out[torch.arange(len(last), device=last.device), last]", "return out[:, -1]"),
        Mutant("a finished row is kept decoding, its later tokens written into its answer",
               "ends[rows[ended]] = step + 1", "ends[rows[ended]] = steps"),
        Mutant("the check tolerates logits a whole unit apart",
               "rtol=1e-4, atol=1e-4", "rtol=1e-4, atol=1.0"),
    )),
    Module('src/runtime/decoding/__init__.py', DECODER_TESTS, (
        Mutant("a prompt too long to decode uncropped goes into a batch",
               "fits = [len(p) + ANSWER_STEPS - 1 <= model.get_block_size() for p in prompts]",
               "fits = [len(p) <= model.get_block_size() for p in prompts]"),
        Mutant("answers are stored in the length order of the batches, not in the questions' order",
               "for i, completion in zip(rows, completions):",
               "for i, completion in zip(range(start, start + len(rows)), completions):"),
        Mutant("a prediction runs to the end of the completion, past the second MASK",
               "return completion.split(mask_char)[1]", "return completion.split(mask_char, 1)[1]"),
        Mutant("stop_at_mask=False still stops each row at its MASK",
               "stop = dataset.stoi[dataset.MASK_CHAR] if stop_at_mask else None",
               "stop = dataset.stoi[dataset.MASK_CHAR]"),
    )),
    Module('src/instructors/release/checks.py', ('tests/test_release_checks.py',), (
        Mutant("the starter is searched for the first label line only",
               'return [line.rstrip("\\r\\n") for line in f if line.strip()]',
               'return [line.rstrip("\\r\\n") for line in f if line.strip()][:1]'),
        Mutant("prediction files shipped in the starter go unnoticed",
               'FORBIDDEN_SUFFIXES = (".params", ".predictions")', 'FORBIDDEN_SUFFIXES = (".params",)'),
        Mutant("the bundle check lists grader.py's tests without the bundle",
               "['grader.py', '--list', '--hidden', sys.argv[1]]", "['grader.py', '--list']"),
        Mutant("a solution line that also stands outside the regions counts as telling",
               'not line.startswith("#") and line not in outside', 'not line.startswith("#")'),
    )),
    Module('src/assignment/question_files.py', ('tests/test_question_files.py',), (
        Mutant("a label line with a third column is taken",
               "if labelled and tabs != 1:", "if labelled and tabs < 1:"),
        Mutant("a label without an answer is taken (an empty prediction would match it)",
               '    if labelled and not place.strip():\n'
               '        raise InputError(f"{path} line {number}: the place is empty")\n', ''),
        Mutant("the hidden answers keep the whitespace around them",
               "place.strip() if labelled else None", "place if labelled else None"),
    )),
    Module('src/instructors/release/autograder.py', ('tests/test_release_labels.py',), (
        Mutant("the test labels are checked by their count only",
               "if questions(labels_path, labelled=True) != questions(inputs_path, labelled=False):",
               "if len(questions(labels_path, labelled=True)) != len(questions(inputs_path, labelled=False)):"),
        Mutant("the test labels are checked as a set of questions, in any order",
               "if questions(labels_path, labelled=True) != questions(inputs_path, labelled=False):",
               "if sorted(questions(labels_path, labelled=True)) != sorted(questions(inputs_path, labelled=False)):"),
        Mutant("the bundle's test labels are the data folder's, not the ones given",
               "shutil.copyfile(labels_path, os.path.join(hidden_dir, TEST_LABELS))",
               "shutil.copyfile(os.path.join(data_dir, TEST_LABELS), os.path.join(hidden_dir, TEST_LABELS))"),
    )),
    Module('src/grading/bundle.py', ('tests/test_bundle_settings.py', 'tests/test_grading_bundle.py'), (
        Mutant("a grading.json model that leaves fields out is taken",
               "set(model) != set(MODEL_FIELDS)", "set(model) - set(MODEL_FIELDS)"),
        Mutant("a threshold entry with a misspelt field is taken (and its threshold silently not applied)",
               "or set(entry) - set(THRESHOLD_FIELDS)\n                or ", "or "),
        Mutant("a threshold for a test that has none (a misspelt or old key) is taken and never applied",
               "        if key not in known:", "        if key not in bundle.thresholds:"),
        Mutant("a vocabulary with a repeated character is taken",
               "len(set(vocabulary)) != len(vocabulary) or ", ""),
    )),
    Module('src/grading/context.py', ('tests/test_grading_context.py',), (
        Mutant("a prediction file behind a symbolic link is read",
               "if not os.path.isfile(path) or os.path.islink(path):", "if not os.path.isfile(path):"),
        Mutant("a prediction file past the size cap is graded on its start",
               "self.files[name] = text if len(text) <= max_bytes else None", "self.files[name] = text[:max_bytes]"),
        Mutant("parameters are read where the submission can change them, not from the private copy",
               "self.params[name] = shutil.copyfile(path, os.path.join(private_dir, name))",
               "self.params[name] = path"),
        Mutant("a missing hand-in file fails its test even without the bundle",
               "            if self.bundle is None or self.bundle.local:\n                raise NotGraded",
               "            if False:\n                raise NotGraded"),
        Mutant("a final line break makes an empty last prediction",
               '    if lines[-1] == "":\n        lines.pop()\n', ""),
        Mutant("the zygote's start-up counts against the test's time",
               "self.deadline += self.runner.warm_up()  # the one-off", "self.runner.warm_up()  # the one-off"),
    )),
    Module('src/grading/runner.py', ('tests/test_grading_runner_channel.py', 'tests/test_grading_runner_folders.py',
                                     'tests/test_grading_runner_processes.py', 'tests/test_slow_zygote.py',
                                     'tests/test_probe_links.py', 'tests/test_zygote_parent.py'), (
        Mutant("past a slow fork the probe is spawned on the pipes the zygote may still fork on",
               "                    self.fork = False  # the zygote died or hangs: spawn from now on\n"
               "                return None\n",
               "                    self.fork = False  # the zygote died or hangs: spawn from now on\n"),
        Mutant("a package copied for another user keeps symbolic links' targets",
               "ignore=ignored_for_another_user, symlinks=False", "ignore=COPY_IGNORED, symlinks=False"),
        Mutant("an answer without this run's token is taken",
               'if result.dropped or header != self.token.encode("ascii"):', "if result.dropped:"),
        Mutant("an ended probe's process group is not killed",
               "            time.sleep(0.01)\n        self.kill(probe.pid)\n", "            time.sleep(0.01)\n"),
        Mutant("the sweep kills the processes of probes still running",
               "if sid not in live]", "]"),
        Mutant("a probe's environment names the hidden bundle",
               "if k not in self.hidden_env and k != PARENT_ENV}", "if k != PARENT_ENV}"),
        Mutant("a probe's environment names the zygote parent's socket", " and k != PARENT_ENV}", "}"),
    )),
    Module('src/grading/zygote_parent.py', ('tests/test_zygote_parent.py',), (
        Mutant("the forked zygote keeps the parent's environment",
               '        os.environ.clear()\n        os.environ.update(request["env"])\n', ""),
        Mutant("the forked zygote keeps the parent's umask", '        os.umask(request["umask"])\n', ""),
        Mutant("the parent forks a zygote whatever environment the run has", "    if differing:\n",
               "    if False:\n"),
        Mutant("the forked zygote keeps the parent's listening socket", "        listener.close()\n", ""),
        Mutant("the forked zygote keeps the parent's module, which a new zygote never imports",
               "        del sys.modules[__name__]  # a new zygote never imports this module\n", ""),
        Mutant("the forked zygote stays in the parent's session", "        os.setsid()\n", ""),
    )),
    Module('src/grading/zygote.py', ('tests/test_zygote.py', 'tests/test_slow_zygote.py'), (
        Mutant("a forked probe keeps the zygote's socket, so it can forge the zygote's replies",
               "        connection.close()\n        signal.signal", "        signal.signal"),
        Mutant("a forked probe stays in the zygote's session, out of reach of a kill of its group",
               "        os.setsid()\n", ""),
        Mutant("a forked probe's standard error is not its output",
               "        os.dup2(output_fd, 2)\n", ""),
        Mutant("the zygote keeps its copies of a probe's pipes, which then never close",
               "            for fd in fds:\n                os.close(fd)\n", ""),
        Mutant("the zygote never reports a child's exit",
               "        reap(connection)\n", ""),
        Mutant("a forked probe outlives the zygote",
               "        die_with(zygote_pid)\n", ""),
        Mutant("a request given up on runs when the zygote forks it late",
               "                self.given_up.add(ticket)\n", ""),
    )),
    Module('src/grading/sandbox.py', ('tests/test_sandbox_isolation.py', 'tests/test_probe_answer.py'), (
        Mutant("the probe keeps root's user id", '    os.setuid(order["uid"])\n', ""),
        Mutant("the probe keeps root's supplementary groups", "    os.setgroups([])\n", ""),
        Mutant("the probe keeps the network",
               "CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET) == 0", "CLONE_NEWNS | CLONE_NEWPID) == 0"),
        Mutant("the package copy is mounted writable",
               '    try_mount(None, order["package"], None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | '
               'MS_NODEV)\n', "",
               uncaught="a bind mount keeps its source's read-only flag and the work folder is under /tmp, made "
                        "read-only first: only a work folder outside /tmp, /var/tmp and /run/lock tells, and no "
                        "folder every user may enter is a test's to use outside them"),
        Mutant("/tmp stays writable in a probe's namespace",
               'READ_ONLY_SHARED = ("/tmp", "/var/tmp", "/run/lock")', 'READ_ONLY_SHARED = ("/var/tmp", "/run/lock")'),
        Mutant("descriptors the zygote holds reach the submission",
               "    close_other_descriptors(result_fd)\n", ""),
        Mutant("a probe has no memory limit",
               "limits = [(resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_FSIZE, file_bytes), ",
               "limits = [(resource.RLIMIT_FSIZE, file_bytes), "),
        Mutant("the probe's /proc shows the grader's processes",
               '    try_mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)\n', ""),
        Mutant("the answer goes out without the run's token",
               'data = (request["token"] + "\\n" + message).encode("utf-8")', 'data = message.encode("utf-8")'),
        Mutant("exit hooks the submission registered run after the answer",
               "    os.close(result_fd)\n    os._exit(0)\n", "    os.close(result_fd)\n    sys.exit(0)\n"),
    )),
)
