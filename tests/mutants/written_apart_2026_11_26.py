"""
Plausible bugs written apart from the tests, from the code and docs alone:
the first such set, written on 2026-11-26.

30 hand-written mutants over 27 modules, in the format of
written_with_the_tests.py: each a find/replace on its module's text that a
developer could write in good faith, with one line naming the promise it
breaks. They were written from the code and its documentation (the
modules' docstrings, README.md and docs/) alone, by a reader who had read
neither the tests nor the mutants written with them, so that the share of
them the suite catches is an independent measure of the suite. Each
module's tests were first chosen by their file names; since the tests
moved into files named after their modules, each module runs its row of
src/instructors/module_tests.py. The first mutant's line is gone from the
code (text mode reads \\r\\n as \\n); it now breaks the same promise where
the file is read. Both mutants of runtime/inputs.py went with their
promises to assignment/question_files.py when the question files got their
one reader.

First run on 2026-11-26, on the tree of commit a12046b: 22 of 30 killed
(73%); each of the eight survivors has had a test since. Latest on
2026-11-28, on a fresh clone of 39a5fa6: 30 of 30 killed (100%), in 15.8
minutes. Run by

    ./run.sh mutate --plausible --catalogue tests/mutants/written_apart_2026_11_26.py
"""

from instructors.module_tests import MODULE_TESTS
from instructors.plausible import Module, Mutant

MODULES = (
    # the assignment: the one reader of question files
    Module('src/assignment/question_files.py', MODULE_TESTS['src/assignment/question_files.py'], (
        Mutant("a question file with Windows line ends is refused at evaluation: each question keeps its \\r",
               "LINE_END = re.compile(r'\\r\\n|\\r|\\n')", "LINE_END = re.compile(r'\\n')"),
        Mutant("a questions-only file with a tab on a later line is taken as questions-only (the check on one side only)",
               "    if not labelled and tabs and first:\n"
               "        raise InputError(f\"{path} line {number} has a tab, but line {first} has none: either every "
               "line is \"\n"
               "                         f\"'question<TAB>place' or none is\")\n"
               "    if not labelled and tabs:\n"
               "        raise InputError(f\"{path} line {number}: expected a question alone, found a tab: "
               "{text[:SHOWN]!r}\")\n",
               ""),
    )),
    # runtime: input checks, whole-or-nothing writes, parameters' stamps
    Module('src/runtime/atomic_files.py', MODULE_TESTS['src/runtime/atomic_files.py'], (
        Mutant("a carriage return inside a prediction is written as it is, so the file's lines no longer align",
               "place.replace('\\r', ' ').replace('\\n', ' ')", "place.replace('\\n', ' ')"),
    )),
    Module('src/runtime/params.py', MODULE_TESTS['src/runtime/params.py'], (
        Mutant("parameters stamped with the same characters in another order are accepted",
               "if saved_chars is not None and saved_chars != vocabulary:",
               "if saved_chars is not None and set(saved_chars) != set(vocabulary):"),
    )),
    # runtime: training
    Module('src/runtime/training/batches.py', MODULE_TESTS['src/runtime/training/batches.py'], (
        Mutant("the last global batch of an epoch that the batch size does not divide runs past the dataset's end",
               "range(start, min(start + self.batch_size, self.size))", "range(start, start + self.batch_size)"),
    )),
    Module('src/runtime/training/distributed.py', MODULE_TESTS['src/runtime/training/distributed.py'], (
        Mutant("questions that do not divide evenly across the processes lose the remainder at evaluation",
               "per = -(-len(items) // processes.world)", "per = len(items) // processes.world"),
    )),
    Module('src/runtime/training/records.py', MODULE_TESTS['src/runtime/training/records.py'], (
        Mutant("a resumed run's metrics drop the earlier row of the checkpoint's own step",
               "float(row[0]) <= self.resume_step", "float(row[0]) < self.resume_step"),
    )),
    # runtime: decoding
    Module('src/runtime/decoding/greedy.py', MODULE_TESTS['src/runtime/decoding/greedy.py'], (
        Mutant("batched decoding takes the argmax of the logits, which breaks near-ties otherwise than sample's "
               "topk of the softmax",
               "_, ix = torch.topk(F.softmax(logits, dim=-1), k=1, dim=-1)\n    return ix[:, 0]",
               "return logits.argmax(dim=-1)"),
    )),
    Module('src/runtime/decoding/__init__.py', MODULE_TESTS['src/runtime/decoding/__init__.py'], (
        Mutant("a prompt one character past the limit is sent to batched decoding (whose assert refuses it) "
               "instead of being cropped as sample does",
               "fits = [len(p) + ANSWER_STEPS - 1 <= model.get_block_size() for p in prompts]",
               "fits = [len(p) + ANSWER_STEPS - 2 <= model.get_block_size() for p in prompts]"),
    )),
    # grading: the sandbox and the runner
    Module('src/grading/sandbox.py', MODULE_TESTS['src/grading/sandbox.py'], (
        Mutant("the probe's resource limits set only the soft limit: submitted code can raise them again",
               "resource.setrlimit(limit, (value, value))",
               "resource.setrlimit(limit, (value, resource.getrlimit(limit)[1]))"),
        Mutant("a long traceback is cut to its first characters, losing the error line at its end",
               "\"...\\n\" + text[-ERROR_CHARS:]", "text[:ERROR_CHARS] + \"\\n...\""),
    )),
    Module('src/grading/runner.py', MODULE_TESTS['src/grading/runner.py'], (
        Mutant("a symbolic link in the hand-in is followed when the package is copied for another user, "
               "giving it a root-only file's contents",
               "return set(COPY_IGNORED(folder, names)) | links", "return set(COPY_IGNORED(folder, names))"),
    )),
    # grading: what tests see and what the student reads
    Module('src/grading/context.py', MODULE_TESTS['src/grading/context.py'], (
        Mutant("a prediction file that is a symbolic link (to the labels, say) is read into the snapshot",
               "if not os.path.isfile(path) or os.path.islink(path):", "if not os.path.isfile(path):"),
    )),
    Module('src/grading/results.py', MODULE_TESTS['src/grading/results.py'], (
        Mutant("results.json shows the start of what the submission printed, not its last part",
               "tail = result.output[-OUTPUT_TAIL_CHARS:]", "tail = result.output[:OUTPUT_TAIL_CHARS]"),
    )),
    Module('src/grading/report.py', MODULE_TESTS['src/grading/report.py'], (
        Mutant("the basic or hidden total counts the points graded on submission as possible here",
               "line = f\"{visibility}: {points(earned)}/{points(possible - ungraded)} points\"",
               "line = f\"{visibility}: {points(earned)}/{points(possible)} points\""),
    )),
    Module('src/grading/handout/predictions.py', MODULE_TESTS['src/grading/handout/predictions.py'], (
        Mutant("an accuracy exactly at the threshold fails the test",
               "name == \"min_accuracy\" and accuracy < value", "name == \"min_accuracy\" and accuracy <= value"),
    )),
    # the other stages
    Module('src/stages/collect_submission.py', MODULE_TESTS['src/stages/collect_submission.py'], (
        Mutant("submission.zip keeps mkstemp's 0600 mode instead of the user's umask",
               "    os.chmod(temporary, 0o666 & ~umask)  # as a file the user makes, not mkstemp's 0600\n", ""),
        Mutant("an unstamped perceiver params file is taken for a model of another size (its down and up "
               "blocks counted as one layer)",
               "layers += 2 * any(key.startswith('down_block.') for key in state)",
               "layers += any(key.startswith('down_block.') for key in state)"),
    )),
    # instructors: the release
    Module('src/instructors/release/checks.py', MODULE_TESTS['src/instructors/release/checks.py'], (
        Mutant("a student file that speaks of the 'Grader' or a 'Reference' in capitals passes the check",
               "match = re.search(re.escape(word), text, re.IGNORECASE)", "match = re.search(re.escape(word), text)"),
    )),
    Module('src/instructors/release/regions.py', MODULE_TESTS['src/instructors/release/regions.py'], (
        Mutant("a region followed by code at its own indentation (a `return`) is cut to raise "
               "NotImplementedError instead of pass",
               "continues = following is not None and len(indentation(following)) >= len(indent)",
               "continues = following is not None and len(indentation(following)) > len(indent)"),
    )),
    Module('src/instructors/release/autograder.py', MODULE_TESTS['src/instructors/release/autograder.py'], (
        Mutant("test labels asking the inputs' questions in another order are accepted",
               "if questions(labels_path, labelled=True) != questions(inputs_path, labelled=False):",
               "if len(questions(labels_path, labelled=True)) != len(questions(inputs_path, labelled=False)):"),
    )),
    # instructors: the copy report
    Module('src/instructors/copies/statistic.py', MODULE_TESTS['src/instructors/copies/statistic.py'], (
        Mutant("an answer counts as common with the pair's own two answers among its givers",
               "return c - 2 >= np.maximum(COMMON_SHARE * (total[None, :] - 2), COMMON_LEAST)",
               "return c >= np.maximum(COMMON_SHARE * (total[None, :] - 2), COMMON_LEAST)"),
    )),
    Module('src/instructors/copies/handins.py', MODULE_TESTS['src/instructors/copies/handins.py'], (
        Mutant("a deliverable reached through a linked folder (src/ a link elsewhere) is read",
               "if os.path.realpath(candidate) != os.path.join(top, relative) or not os.path.isfile(candidate):",
               "if os.path.islink(candidate) or not os.path.isfile(candidate):"),
    )),
    Module('src/instructors/copies/verdicts.py', MODULE_TESTS['src/instructors/copies/verdicts.py'], (
        Mutant("the class's hand-ins are never compared with the known ones",
               "if hand_ins[i].known is None or hand_ins[j].known is None}",
               "if hand_ins[i].known is None and hand_ins[j].known is None}"),
    )),
    # the student package (the reference solution)
    Module('src/submission/model.py', MODULE_TESTS['src/submission/model.py'], (
        Mutant("the loss counts the PAD targets too",
               ", targets.view(-1), ignore_index=0)", ", targets.view(-1))"),
    )),
    Module('src/submission/attention.py', MODULE_TESTS['src/submission/attention.py'], (
        Mutant("fused self-attention drops attention weights in eval mode too",
               "            dropout = self.attn_drop.p if self.training else 0.0\n"
               "            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)  # (B, nh, T, hs)",
               "            dropout = self.attn_drop.p\n"
               "            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)  # (B, nh, T, hs)"),
    )),
    Module('src/submission/dataset.py', MODULE_TESTS['src/submission/dataset.py'], (
        Mutant("span corruption never truncates a document to the bound itself (randrange excludes it)",
               "truncated = document[:random.randint(4, int(self.block_size * 7 / 8))]",
               "truncated = document[:random.randrange(4, int(self.block_size * 7 / 8))]"),
    )),
    Module('src/submission/trainer.py', MODULE_TESTS['src/submission/trainer.py'], (
        Mutant("the model is put in training mode once, so every epoch after a test loss trains in eval mode "
               "(no dropout)",
               "        for epoch in range(self.epoch, config.max_epochs):\n"
               "            self.epoch = epoch\n"
               "            model.train()\n",
               "        model.train()\n"
               "        for epoch in range(self.epoch, config.max_epochs):\n"
               "            self.epoch = epoch\n"),
    )),
    Module('src/submission/helper.py', MODULE_TESTS['src/submission/helper.py'], (
        Mutant("finetuning runs 10 epochs without pretraining and 75 with it (the two swapped)",
               "max_epochs=75 if reading_params_path is None else 10,",
               "max_epochs=10 if reading_params_path is None else 75,"),
    )),
    Module('src/submission/utils.py', MODULE_TESTS['src/submission/utils.py'], (
        Mutant("sample crops a context longer than the block to its first characters, not its last",
               "x_cond = x if x.size(1) <= block_size else x[:, -block_size:]",
               "x_cond = x if x.size(1) <= block_size else x[:, :block_size]"),
    )),
)
