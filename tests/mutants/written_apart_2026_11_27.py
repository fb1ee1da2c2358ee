"""
Plausible bugs written apart from the tests, from the code and docs alone:
the second such set, written on 2026-11-27.

30 hand-written mutants over 29 modules, in the format of
written_with_the_tests.py: each a find/replace on its module's text that a
developer could write in good faith, with one line naming the bug. They
were written after the tests of issue 37's edges and failure paths, from
the code and the docs alone, by a reader who had read neither the tests,
nor the other two sets, nor the history: an independent measure of how
well the tests catch bugs. Each module's tests are its row of
src/instructors/module_tests.py. The set was committed before it ran, and
no test has been written against it. Its mutant of grading/bundle.py went
with its promise to assignment/question_files.py when the question files
got their one reader.

First run on 2026-11-27, on the tree of commit 8da9810, which adds the
set: 30 of 30 killed (100%), in 10.3 minutes on two cores. Latest on
2026-11-28, on a fresh clone of 37f56b1: 30 of 30 killed (100%). Run by

    ./run.sh mutate --plausible --catalogue tests/mutants/written_apart_2026_11_27.py
"""

from instructors.module_tests import MODULE_TESTS
from instructors.plausible import Module, Mutant

MODULES = (
    # the student's package (here the reference solution)
    Module('src/submission/attention.py', MODULE_TESTS['src/submission/attention.py'], (
        Mutant("the fused self-attention applies attention dropout in eval mode too: the model's outputs in eval "
               "mode are no longer deterministic",
               "            dropout = self.attn_drop.p if self.training else 0.0\n"
               "            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)"
               "  # (B, nh, T, hs)",
               "            dropout = self.attn_drop.p\n"
               "            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)"
               "  # (B, nh, T, hs)"),
    )),
    Module('src/submission/dataset.py', MODULE_TESTS['src/submission/dataset.py'], (
        Mutant("NameDataset's y pads the whole question and starts at the answer: y is no longer x shifted left by "
               "one, and the MASK after the question is no longer a target",
               "        y = self.PAD_CHAR * (len(inp) - 1) + x[len(inp):]",
               "        y = self.PAD_CHAR * len(inp) + x[len(inp) + 1:]"),
        Mutant("span corruption's truncation stops one short of its bound: int(block_size * 7/8) characters are "
               "never kept, though every length from 4 to the bound should be possible",
               "        truncated = document[:random.randint(4, int(self.block_size * 7 / 8))]",
               "        truncated = document[:random.randint(4, int(self.block_size * 7 / 8) - 1)]"),
    )),
    Module('src/submission/helper.py', MODULE_TESTS['src/submission/helper.py'], (
        Mutant("finetune's epochs are swapped: 10 without pretraining and 75 with it, against the handout's table",
               "        max_epochs=75 if reading_params_path is None else 10,",
               "        max_epochs=10 if reading_params_path is None else 75,"),
    )),
    Module('src/submission/trainer.py', MODULE_TESTS['src/submission/trainer.py'], (
        Mutant("the cosine schedule's progress is clamped at 1, so past final_tokens the rate stays at 10% instead "
               "of rising again as the docstring (and minGPT) says",
               "    progress = (tokens - config.warmup_tokens) / max(1, config.final_tokens - config.warmup_tokens)",
               "    progress = min(1.0, (tokens - config.warmup_tokens) / max(1, config.final_tokens - "
               "config.warmup_tokens))"),
    )),
    Module('src/submission/utils.py', MODULE_TESTS['src/submission/utils.py'], (
        Mutant("sample crops a context longer than block_size to its first block_size ids instead of its last, so "
               "a long prompt's later characters are never seen",
               "        x_cond = x if x.size(1) <= block_size else x[:, -block_size:]  # crop context if needed",
               "        x_cond = x if x.size(1) <= block_size else x[:, :block_size]  # crop context if needed"),
    )),
    # the runtime
    Module('src/runtime/inputs.py', MODULE_TESTS['src/runtime/inputs.py'], (
        Mutant("a finetuning line of exactly block_size - 2 characters, which fits a block with its two MASKs, is "
               "refused (>= for >)",
               "        if finetuning and len(read) + 2 > BLOCK_SIZE:",
               "        if finetuning and len(read) + 2 >= BLOCK_SIZE:"),
    )),
    Module('src/runtime/atomic_files.py', MODULE_TESTS['src/runtime/atomic_files.py'], (
        Mutant("replace_when_done no longer removes its temporary file when the write fails: a failure leaves a "
               ".NAME.PID.tmp file behind",
               "    try:\n"
               "        write(temporary)\n"
               "        os.replace(temporary, path)\n"
               "    finally:\n"
               "        if os.path.exists(temporary):\n"
               "            os.remove(temporary)\n",
               "    write(temporary)\n"
               "    os.replace(temporary, path)\n"),
    )),
    Module('src/runtime/params.py', MODULE_TESTS['src/runtime/params.py'], (
        Mutant("the stamped vocabulary is compared as a set: parameters trained on the same characters in another "
               "order (other ids) are loaded instead of refused",
               "    if saved_chars is not None and saved_chars != vocabulary:",
               "    if saved_chars is not None and set(saved_chars) != set(vocabulary):"),
    )),
    Module('src/runtime/seeds.py', MODULE_TESTS['src/runtime/seeds.py'], (
        Mutant("a resumed run takes the recorded seed even when --seed is given (and fails without a seed.txt), "
               "though the given seed should win",
               "    if given is not None:\n"
               "        return given\n"
               "    if resume:\n"
               "        return recorded_seed(run_dir)\n",
               "    if resume:\n"
               "        return recorded_seed(run_dir)\n"
               "    if given is not None:\n"
               "        return given\n"),
    )),
    Module('src/runtime/training/batches.py', MODULE_TESTS['src/runtime/training/batches.py'], (
        Mutant("a seeded example made in the main process no longer puts the random generators back: what is "
               "drawn after it (dropout, the next draws) depends on the examples made",
               "        python_state, numpy_state, torch_state = random.getstate(), np.random.get_state(), "
               "torch.get_rng_state()\n"
               "        example = self.made(epoch, index)\n"
               "        random.setstate(python_state)\n"
               "        np.random.set_state(numpy_state)\n"
               "        torch.set_rng_state(torch_state)\n"
               "        return example\n",
               "        return self.made(epoch, index)\n"),
    )),
    Module('src/runtime/training/checkpoint.py', MODULE_TESTS['src/runtime/training/checkpoint.py'], (
        Mutant("the end-of-epoch checkpoint records the epoch just finished instead of the next one, so a run "
               "resumed from it trains that epoch again",
               "            self.save(trainer, trainer.epoch + 1, 0)",
               "            self.save(trainer, trainer.epoch, 0)"),
    )),
    Module('src/runtime/training/fast_training.py', MODULE_TESTS['src/runtime/training/fast_training.py'], (
        Mutant("collate_trimmed cuts the batch at its last target column instead of after it, dropping that "
               "column's targets: the loss is no longer the plain loop's",
               "    width = int(target_columns.max()) + 1 if len(target_columns) else 1",
               "    width = int(target_columns.max()) if len(target_columns) else 1"),
    )),
    Module('src/runtime/training/records.py', MODULE_TESTS['src/runtime/training/records.py'], (
        Mutant("a resumed run's recorder drops the earlier CSV's row of the checkpoint's own step (< for <=)",
               "if row and float(row[0]) <= self.resume_step]",
               "if row and float(row[0]) < self.resume_step]"),
    )),
    Module('src/runtime/decoding/vanilla_cache.py', MODULE_TESTS['src/runtime/decoding/vanilla_cache.py'], (
        Mutant("a cached step lets a row shorter than the batch's longest prompt attend to the padding slot just "
               "after its prompt (<= for <): its answers differ from sample's",
               "        mask = ((slots < self.lengths[:, None]) | (slots >= W))[:, None, None]",
               "        mask = ((slots <= self.lengths[:, None]) | (slots >= W))[:, None, None]"),
    )),
    # the stages
    Module('src/run.py', MODULE_TESTS['src/run.py'], (
        Mutant("finetuning from pretrained parameters no longer checks them before training: parameters of "
               "another size or vocabulary are not refused with one line",
               "    if args.function == 'evaluate' or args.reading_params_path:",
               "    if args.function == 'evaluate':"),
    )),
    Module('src/stages/collect_submission.py', MODULE_TESTS['src/stages/collect_submission.py'], (
        Mutant("the zip keeps mkstemp's mode 0600 instead of the one the user's umask gives a new file",
               "        umask = os.umask(0)\n"
               "        os.umask(umask)\n"
               "        os.chmod(temporary, 0o666 & ~umask)  # as a file the user makes, not mkstemp's 0600\n",
               ""),
    )),
    Module('src/stages/london_baseline.py', MODULE_TESTS['src/stages/london_baseline.py'], (
        Mutant("the most frequent training answer is tie-broken alphabetically instead of by first appearance in "
               "the file",
               "    most_frequent, count = Counter(train_places).most_common(1)[0]",
               "    most_frequent, count = Counter(sorted(train_places)).most_common(1)[0]"),
    )),
    Module('run.sh', MODULE_TESTS['run.sh'], (
        Mutant("a relative OUT_DIR is no longer made absolute against the caller's folder, so it is taken from the "
               "repository root (run.sh changes to it) instead",
               'OUT_DIR=${OUT_DIR:+$(absolute "$OUT_DIR")}',
               'OUT_DIR=${OUT_DIR:+$OUT_DIR}'),
    )),
    # the grader
    Module('grader.py', MODULE_TESTS['grader.py'], (
        Mutant("span_shift accepts only x and y of block_size - 1 ids, failing the handout's other accepted "
               "length, block_size",
               "len(e.x) == len(e.y) and len(e.x) in (BLOCK_SIZE - 1, BLOCK_SIZE)",
               "len(e.x) == len(e.y) and len(e.x) == BLOCK_SIZE - 1"),
    )),
    Module('src/assignment/question_files.py', MODULE_TESTS['src/assignment/question_files.py'], (
        Mutant("a labels line with an empty answer is accepted, so every empty prediction to it would be scored "
               "right",
               "    if labelled and not place.strip():\n"
               "        raise InputError(f\"{path} line {number}: the place is empty\")\n",
               ""),
    )),
    Module('src/grading/context.py', MODULE_TESTS['src/grading/context.py'], (
        Mutant("the snapshot reads a prediction or parameters file that is a symbolic link, following it to "
               "whatever it points at",
               "            if not os.path.isfile(path) or os.path.islink(path):",
               "            if not os.path.isfile(path):"),
    )),
    Module('src/grading/sandbox.py', MODULE_TESTS['src/grading/sandbox.py'], (
        Mutant("a long traceback is cut to its first ERROR_CHARS characters instead of its last, losing the error "
               "itself",
               '    return text if len(text) <= ERROR_CHARS else "...\\n" + text[-ERROR_CHARS:]',
               '    return text if len(text) <= ERROR_CHARS else "...\\n" + text[:ERROR_CHARS]'),
    )),
    Module('src/grading/runner.py', MODULE_TESTS['src/grading/runner.py'], (
        Mutant("the package copy made for another user keeps symbolic links, copying their targets (a root-only "
               "file, say) where that user can read them",
               "    return set(COPY_IGNORED(folder, names)) | links",
               "    return set(COPY_IGNORED(folder, names))"),
    )),
    Module('src/grading/handout/predictions.py', MODULE_TESTS['src/grading/handout/predictions.py'], (
        Mutant("a prediction file that differs from the regenerated answers on exactly the allowed number of "
               "questions fails the agreement check (< for <=)",
               "    check(differ <= allowed,",
               "    check(differ < allowed,"),
    )),
    Module('src/grading/results.py', MODULE_TESTS['src/grading/results.py'], (
        Mutant("results.json shows the first OUTPUT_TAIL_CHARS characters of what the submission printed "
               "instead of the last part",
               "        tail = result.output[-OUTPUT_TAIL_CHARS:]",
               "        tail = result.output[:OUTPUT_TAIL_CHARS]"),
    )),
    # the instructors' tools
    Module('src/instructors/release/regions.py', MODULE_TESTS['src/instructors/release/regions.py'], (
        Mutant("a region followed by code at its START line's own indentation gets raise NotImplementedError "
               "instead of pass (> for >=), so e.g. initialize_vanilla_model's return is cut off",
               "    continues = following is not None and len(indentation(following)) >= len(indent)",
               "    continues = following is not None and len(indentation(following)) > len(indent)"),
    )),
    Module('src/instructors/release/student.py', MODULE_TESTS['src/instructors/release/student.py'], (
        Mutant("the starter's sources no longer leave out LEFT_OUT: the perceiver's decoding cache, which writes "
               "out part (g), is shipped to students",
               "    return sorted(path for path in files if path not in LEFT_OUT)",
               "    return sorted(files)"),
    )),
    Module('src/instructors/copies/statistic.py', MODULE_TESTS['src/instructors/copies/statistic.py'], (
        Mutant("Holm's adjustment drops its running maximum, so adjusted p-values no longer keep the order of the "
               "raw ones",
               "    adjusted = np.minimum(np.maximum.accumulate(np.log(count - np.arange(count)) + log_p[order]), 0.0)",
               "    adjusted = np.minimum(np.log(count - np.arange(count)) + log_p[order], 0.0)"),
    )),
    Module('src/instructors/worldgen/world.py', MODULE_TESTS['src/instructors/worldgen/world.py'], (
        Mutant("with several paraphrases wiki.txt lists each person's biographies together instead of in rounds "
               "(every person's first, then every person's second, ...)",
               "    lines = [texts[turn] for turn in range(paraphrases) for texts in by_person]",
               "    lines = [texts[turn] for texts in by_person for turn in range(paraphrases)]"),
    )),
)
