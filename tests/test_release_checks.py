"""
Tests written to kill the mutants that `./run.sh mutate` found alive in the
release's checks (src/instructors/release/checks.py) and its cutting of the
student regions (regions.py), and the check of the student files (their
labels, regions, wording and origin) on a starter cut here. Each works on a
small tree made here, so none needs a release.
"""


from pathlib import Path

import pytest

from assignment.editions import EDITIONS, SEED_EDITION
from assignment.facts import GIVEN_FOR_PARTS
from instructors.release import checks, regions

SOLUTION = (
    "def attention(x):\n"
    "    \"\"\"Docstring.\"\"\"\n"
    "    ### START_CODE_HERE ###\n"
    "    # a comment that is long enough to be telling\n"
    "    weights = softmax(query @ key.transpose(-2, -1))\n"
    "    short = 1\n"
    "    ### END_CODE_HERE ###\n"
    "    return weights\n"
)


def write(path, text):
    """Write `text` to `path`, making its folders; the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def starter(tmp_path):
    """A starter tree that imports, a solution package beside it, and a labels file."""
    tree = tmp_path / "starter"
    write(tree / "src" / "pkg" / "__init__.py", "assert __name__ == 'pkg', 'imported twice'\n")
    write(tree / "tools" / "script.py", "raise SystemExit('a script, not a module of src/')\n")
    write(tree / "src" / "pkg" / "model.py", regions.cut(SOLUTION))
    write(tree / "src" / "pkg" / "__main__.py", "raise SystemExit('never imported')\n")
    write(tree / "README.md", "Where was Ada born?\n")
    write(tmp_path / "solution" / "model.py", SOLUTION)
    write(tmp_path / "solution" / "notes.txt", "    weights = softmax(query @ key.transpose(-2, -1))\n")
    write(tmp_path / "labels.tsv", "Where was Zoe born?\tLisbon\r\n\nWhere was Bo born?\tOsaka\n")
    return tree


def problems(tmp_path, tree):
    """checks.problems on `tree` with the fixture's labels and solution."""
    return checks.problems(str(tree), str(tmp_path / "labels.tsv"), str(tmp_path / "solution"))


def test_a_clean_starter_has_no_problems(tmp_path, starter):
    """Kills a check that refuses a good starter (e.g. __main__.py imported, short lines counted)."""
    assert problems(tmp_path, starter) == []


def test_a_trained_output_in_the_starter_is_refused(tmp_path, starter):
    """Kills the release shipping a params or predictions file."""
    write(starter / "src" / "pkg" / "vanilla.model.params", "weights")
    write(starter / "dev.predictions", "Lisbon\n")
    write(starter / "notes.params.txt", "not an output")
    assert problems(tmp_path, starter) == ["dev.predictions is a trained output",
                                           "src/pkg/vanilla.model.params is a trained output"]


def test_a_label_line_in_the_starter_is_refused(tmp_path, starter, ascii_locale):
    """Kills a labels leak missed, label lines kept with their line ends, or files read in the locale's encoding."""
    write(tmp_path / "labels.tsv", "Where was Zoë born?\tLisbon\r\n\nWhere was Bo born?\tOsaka\n")
    write(starter / "data" / "hints.txt", "x Where was Zoë born?\tLisbon y\n")
    (starter / "data" / "binary.bin").write_bytes(b"\xff\xfe Where was Bo born?\tOsaka")
    assert problems(tmp_path, starter) == ["data/binary.bin contains a line of the test labels",
                                           "data/hints.txt contains a line of the test labels"]


def test_a_solution_line_in_the_starter_is_refused(tmp_path, starter):
    """Kills a solution leak missed."""
    write(starter / "src" / "pkg" / "hint.txt", "weights = softmax(query @ key.transpose(-2, -1))\n")
    assert problems(tmp_path, starter) == ["src/pkg/hint.txt contains a line of the solution's regions"]


def test_a_starter_that_does_not_import_is_refused(tmp_path, starter):
    """Kills an import failure missed or reported without its error."""
    write(starter / "src" / "pkg" / "broken.py", "import no_such_module_anywhere\n")
    assert problems(tmp_path, starter) == [
        "the starter does not import: ModuleNotFoundError: No module named 'no_such_module_anywhere'"]


def test_the_telling_lines_are_long_code_lines_found_only_in_regions(tmp_path, ascii_locale):
    """Kills counting comments, short lines, given code, files that are not Python, or the locale's encoding."""
    write(tmp_path / "a.py", SOLUTION + "x = 1  # weights = softmax(query @ key.transpose(-2, -1))\n"
          "### START_CODE_HERE ###\nline_of_exactly_thirty_ch = 12\n# é\nthis_line_is_twenty_nine = 12\n"
          "### END_CODE_HERE ###\n")
    write(tmp_path / "b.txt", "### START_CODE_HERE ###\nnot python but long enough to count = 1\n"
          "### END_CODE_HERE ###\n")
    assert checks.solution_lines(str(tmp_path)) == ["line_of_exactly_thirty_ch = 12"]


def test_solution_lines_given_in_an_earlier_file_do_not_count(tmp_path):
    """Kills keeping only the last file's code outside the regions."""
    line = "self.ln1 = nn.LayerNorm(config.n_embd)  # given"
    write(tmp_path / "a.py", line + "\n")
    write(tmp_path / "b.py", f"### START_CODE_HERE ###\n{line}\n### END_CODE_HERE ###\n")
    assert checks.solution_lines(str(tmp_path)) == []


def test_unpaired_markers_in_the_solution_name_the_file(tmp_path):
    """Kills the file's name lost from the error."""
    write(tmp_path / "bad.py", "### END_CODE_HERE ###\n")
    with pytest.raises(regions.RegionError, match=r"^bad.py:1: END_CODE_HERE without"):
        checks.solution_lines(str(tmp_path))


def test_tree_files_are_relative_and_sorted(tmp_path):
    """Kills absolute or unsorted paths."""
    for name in ("b/z.txt", "a.txt", "b/a/y.txt"):
        write(tmp_path / name, "")
    assert checks.tree_files(str(tmp_path)) == ["a.txt", "b/a/y.txt", "b/z.txt"]


def test_python_failure_reports_the_last_line_or_the_exit_status(tmp_path):
    """Kills a failure missed, the wrong line reported, or a silent failure reported as None."""
    write(tmp_path / "src" / "here.py", "VALUE = 3\n")
    assert checks.python_failure(str(tmp_path), "import here, sys; assert sys.argv[1:] == ['a']", "a") is None
    assert checks.python_failure(str(tmp_path), "import sys; print('one', file=sys.stderr); sys.exit('two')") == "two"
    assert checks.python_failure(str(tmp_path), "import sys; sys.exit(3)") == "exit status 3"
    assert not (tmp_path / "src" / "__pycache__").exists()


def test_python_runs_with_the_callers_environment_and_writes_no_bytecode(tmp_path, monkeypatch):
    """Kills the caller's environment dropped, or the starter's tree left with __pycache__ folders."""
    monkeypatch.setenv("RELEASE_CHECK", "kept")
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    write(tmp_path / "src" / "here.py", "VALUE = 3\n")
    assert checks.python_failure(str(tmp_path), "import os, here; assert os.environ['RELEASE_CHECK'] == 'kept'") is None
    assert not (tmp_path / "src" / "__pycache__").exists()


def test_bundle_failure_is_the_graders_complaint(tmp_path):
    """Kills the bundle check not asking the starter's grader.py to list the tests with the bundle."""
    write(tmp_path / "grader.py", "import sys\n"
                                  "if sys.argv[1:3] != ['--list', '--hidden'] or not sys.argv[3].endswith('good'):\n"
                                  "    sys.exit(f'grader: {sys.argv[1:]} is refused')\n")
    assert checks.bundle_failure(str(tmp_path), "hidden_good") is None
    assert checks.bundle_failure(str(tmp_path), "hidden_bad") == \
        "grader: ['--list', '--hidden', 'hidden_bad'] is refused"


# ---- regions ---------------------------------------------------------------------------------------

def test_the_placeholder_raises_when_the_region_ends_its_block():
    """Kills the wrong placeholder, or one that loses the START line's indentation or line end."""
    text = "def f():\r\n\t### START_CODE_HERE ###\r\n\tx = 1\r\n\t### END_CODE_HERE ###\r\n\r\n# end\r\ng = 2\r\n"
    assert regions.cut(text) == ("def f():\r\n\t### START_CODE_HERE ###\r\n\traise NotImplementedError\r\n"
                                 "\t### END_CODE_HERE ###\r\n\r\n# end\r\ng = 2\r\n")


def test_the_placeholder_passes_when_code_of_the_block_follows():
    """Kills a deeper or equal following line taken as the block's end."""
    text = ("def f():\n    ### START_CODE_HERE ###\n    x = 1\n    ### END_CODE_HERE ###\n"
            "    # a comment\n\n        return x\n")
    assert regions.cut(text).splitlines()[2] == "    pass"
    assert regions.cut(text.replace("        return", "    return")).splitlines()[2] == "    pass"
    assert regions.cut(text.replace("    # a comment\n\n        return", "    return")).splitlines()[2] == "    pass"


def test_a_comment_after_the_region_does_not_continue_its_block():
    """Kills an indented comment taken for code of the block: the region ends its function, whose next
    line of code is outside it."""
    text = ("def f():\n    ### START_CODE_HERE ###\n    return 1\n    ### END_CODE_HERE ###\n"
            "    # the function ends here\n\n\ng = 2\n")
    assert regions.cut(text).splitlines()[2] == "    raise NotImplementedError"


def test_a_region_at_the_end_of_the_file_raises():
    """Kills a region with nothing after it given `pass`."""
    assert regions.cut("### START_CODE_HERE ###\nx = 1\n### END_CODE_HERE ###") == (
        "### START_CODE_HERE ###\nraise NotImplementedError\n### END_CODE_HERE ###")


def test_regions_are_the_lines_strictly_between_the_markers():
    """Kills a marker line taken into the region, or a region cut short."""
    text = ("a\n# ### START_CODE_HERE ###\nb\nc\n### END_CODE_HERE ### x\nd\n"
            "### START_CODE_HERE ###\n### END_CODE_HERE ###\n")
    assert regions.regions(text, "f.py") == ["b\nc\n", ""]
    assert regions.locate(text) == [(1, 4), (6, 7)]


@pytest.mark.parametrize("text, message", [
    ("x\n### END_CODE_HERE ###\n", r"^f.py:2: END_CODE_HERE without a START_CODE_HERE before it$"),
    ("### START_CODE_HERE ###\n\n### START_CODE_HERE ###\n",
     r"^f.py:3: START_CODE_HERE inside the region opened on line 1$"),
    ("x\n### START_CODE_HERE ###\n", r"^f.py:2: START_CODE_HERE is never closed by an END_CODE_HERE$"),
])
def test_markers_that_do_not_pair_name_the_file_and_line(text, message):
    """Kills a wrong line number or file name in the message."""
    with pytest.raises(regions.RegionError, match=message):
        regions.locate(text, "f.py")


def test_restore_puts_each_body_back_in_order():
    """Kills bodies swapped, dropped or put beside the placeholder."""
    text = "### START_CODE_HERE ###\n1\n### END_CODE_HERE ###\nx\n### START_CODE_HERE ###\n2\n### END_CODE_HERE ###\n"
    assert regions.restore(regions.cut(text), ["a\n", "b\nc\n"]) == text.replace("1", "a").replace("2", "b\nc")
    with pytest.raises(regions.RegionError, match=r"^f.py: the starter has 2 regions but 1 bodies were given$"):
        regions.restore(text, ["a\n"], "f.py")
    with pytest.raises(regions.RegionError, match=r"^f.py: the starter has 2 regions but 3 bodies were given$"):
        regions.restore(text, ["a\n", "b\n", "c\n"], "f.py")


def test_indentation_and_code_lines():
    """Kills wrong indentation or a comment or blank line taken as code."""
    assert regions.indentation(" \t x = 1") == " \t "
    assert [regions.is_code(line) for line in ("  # c", "   ", "", " x")] == [False, False, False, True]


def test_label_lines_drop_line_ends_and_blank_lines(tmp_path, ascii_locale):
    """Kills blank lines or line ends kept, and the locale's encoding."""
    path = write(tmp_path / "labels.tsv", "a\tb \r\n \n\nc\td\ne\tXé\nf\tX\n")
    assert checks.label_lines(str(path)) == ["a\tb ", "c\td", "e\tXé", "f\tX"]


@pytest.mark.parametrize("cut_or_read", [regions.locate, regions.regions, regions.cut,
                                         lambda text: regions.restore(text, [])])
def test_markers_that_do_not_pair_name_the_text_by_default(cut_or_read):
    """Kills another default name, or the name not passed on."""
    with pytest.raises(regions.RegionError, match=r"^<text>:1: END_CODE_HERE without"):
        cut_or_read("### END_CODE_HERE ###\n")


def test_restore_names_the_file_of_unpaired_markers():
    """Kills restore's file name lost on the way to locate."""
    with pytest.raises(regions.RegionError, match=r"^f.py:2: START_CODE_HERE is never closed"):
        regions.restore("x\n### START_CODE_HERE ###\n", [], "f.py")


def test_a_hidden_tests_line_in_the_starter_is_refused(tmp_path, starter):
    """Kills hidden tests shipped in the starter, and grader.py's own @graded lines taken for hidden ones."""
    shared = '@graded("1f-1-hidden", points=5, visibility="hidden", timeout=300, min_accuracy=0.10)'
    hidden = '@graded("1h-0-hidden", points=1, visibility="hidden", timeout=60)'
    write(tmp_path / "tests" / "term.py", f"from grading import graded\n\n{shared}\ndef a(ctx):\n    '''a'''\n\n"
                                          f"    {hidden}\ndef b(ctx):\n    '''b'''\n")
    write(starter / "grader.py", f"{shared}\n")
    write(starter / "src" / "pkg" / "extra.py", f"# {hidden}\n")
    assert checks.problems(str(starter), str(tmp_path / "labels.tsv"), str(tmp_path / "solution"),
                           [str(tmp_path / "tests" / "term.py")]) == ["src/pkg/extra.py names a hidden test"]
    assert checks.hidden_test_lines(str(starter), [str(tmp_path / "tests" / "term.py")]) == [hidden]


def test_hidden_test_lines_read_the_tests_and_grader_py_as_utf8_whatever_the_locale(tmp_path, starter,
                                                                                     ascii_locale):
    """Kills the tests file or the starter's grader.py read in the locale's encoding (ASCII here)."""
    shared = '@graded("1f-1-hidden", points=5, visibility="hidden", timeout=300)  # café'
    hidden = '@graded("1h-0-hidden", points=1, visibility="hidden", timeout=60)  # naïve'
    tests = write(tmp_path / "tests" / "term.py", f"{shared}\n{hidden}\n")
    write(starter / "grader.py", f"# “the starter's grader”\n{shared}\n")
    assert checks.hidden_test_lines(str(starter), [str(tests)]) == [hidden]


# ---- the student files: labels, regions, wording, origin --------------------------------------------

SUBMISSION = Path(__file__).resolve().parents[1] / "src" / "submission"


@pytest.fixture
def cut_starter(tmp_path):
    """A starter tree holding the student files cut as the release cuts them, and a LICENSE."""
    tree = tmp_path / "cut"
    for path in sorted(SUBMISSION.glob("*.py")):
        write(tree / "src" / "submission" / path.name, regions.cut(path.read_text(encoding="utf-8"), path.name))
    write(tree / "LICENSE", "the notices\n")
    return tree


def damaged(tree, name, old, new, count=1):
    """Replace `old` by `new` in the student file `name` of `tree`, checking it was there `count` times."""
    path = tree / "src" / "submission" / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == count, (name, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def line_of(tree, name, needle):
    """The number of the first line of a student file that holds `needle`."""
    lines = (tree / "src" / "submission" / name).read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, start=1) if needle in line)


def test_the_cut_student_files_and_the_solution_read_as_the_handout_describes_them(cut_starter, tmp_path):
    """Kills a check that refuses the real starter or the solution (labels in a class docstring, a
    label on its own comment line, given code labelled without a region)."""
    assert checks.student_file_problems(str(cut_starter)) == []
    solution = tmp_path / "solution"
    for path in SUBMISSION.glob("*.py"):
        write(solution / "src" / "submission" / path.name, path.read_text(encoding="utf-8"))
    write(solution / "LICENSE", "the notices\n")
    assert checks.student_file_problems(str(solution)) == []


def test_a_part_label_lost_is_named_for_each_function_it_labelled(cut_starter):
    """Kills a label looked for anywhere in the file, or only in the function's own lines (the
    perceiver's blocks carry theirs in the class docstring)."""
    damaged(cut_starter, "dataset.py", "[part e]", "[part E]", count=2)
    damaged(cut_starter, "model.py", "[part g]", "", count=2)
    assert checks.student_file_problems(str(cut_starter)) == [
        "src/submission/dataset.py: CharCorruptionDataset.__getitem__ lacks its label [part e]",
        "src/submission/model.py: DownProjectBlock.__init__ lacks its label [part g]",
        "src/submission/model.py: DownProjectBlock.forward lacks its label [part g]",
        "src/submission/model.py: UpProjectBlock.__init__ lacks its label [part g]",
        "src/submission/model.py: UpProjectBlock.forward lacks its label [part g]"]


def test_each_label_of_a_function_of_two_parts_is_needed_before_its_region(cut_starter):
    """Kills 'c and f' read as one label, or a label after the region taken for one before it."""
    damaged(cut_starter, "helper.py", "[part c] [part f] Set up", "[part c] Set up")
    damaged(cut_starter, "helper.py", "    - [part f] When", "    - When")
    damaged(cut_starter, "helper.py", "    return tconf, trainer_obj\n\n\ndef pretrain",
            "    # [part f]\n    return tconf, trainer_obj\n\n\ndef pretrain")
    assert checks.student_file_problems(str(cut_starter)) == [
        "src/submission/helper.py: finetune lacks its label [part f]"]


def test_given_code_the_handout_labels_keeps_its_label(cut_starter):
    damaged(cut_starter, "attention.py", "[part g] Given", "Given")
    assert checks.student_file_problems(str(cut_starter)) == [
        "src/submission/attention.py: CausalCrossAttention lacks its label [part g]"]


def test_a_region_lost_or_a_function_gone_is_named(cut_starter):
    """Kills a region of another function counted for this one, and a missing function let pass."""
    path = cut_starter / "src" / "submission" / "model.py"
    text = path.read_text(encoding="utf-8")
    last = text.rindex("        ### START_CODE_HERE ###\n")
    path.write_text(text[:last] + text[last:].replace("        ### START_CODE_HERE ###\n", "", 1)
                    .replace("        ### END_CODE_HERE ###\n", "", 1), encoding="utf-8")
    damaged(cut_starter, "helper.py", "def train(model,", "def train_model(model,")
    assert checks.student_file_problems(str(cut_starter)) == [
        "train, of part (c), is missing from src/submission",
        "src/submission/model.py: UpProjectBlock.forward has no region to write in"]


def test_a_student_file_that_does_not_compile_or_whose_markers_do_not_pair_is_named(cut_starter):
    damaged(cut_starter, "utils.py", "def set_seed(seed):", "def set_seed(seed:")
    damaged(cut_starter, "dataset.py", "        ### END_CODE_HERE ###\n", "")
    found = checks.student_file_problems(str(cut_starter))
    assert found[0].startswith("src/submission/dataset.py:") and "START_CODE_HERE is never closed" in found[0]
    assert found[1].startswith("src/submission/utils.py does not compile: ")
    assert found[2:] == ["CharCorruptionDataset.__getitem__, of part (e), is missing from src/submission"]


@pytest.mark.parametrize("said, word", [("# the Grader reads this", "grader"), ("# as the reference does", "reference"),
                                        ("# see src/runtime/training", "runtime"), ("# hooks", "hooks")])
def test_a_student_file_that_speaks_of_the_grading_or_the_stages_is_named_at_its_line(cut_starter, said, word):
    """Kills a word missed in another case, or the wrong line named."""
    damaged(cut_starter, "model.py", "class GPTConfig:\n", f"{said}\nclass GPTConfig:\n")
    number = line_of(cut_starter, "model.py", said)
    assert checks.student_file_problems(str(cut_starter)) == [f"src/submission/model.py:{number} speaks of the {word}"]


def test_a_student_file_without_its_origin_or_a_starter_without_the_licence_is_named(cut_starter):
    damaged(cut_starter, "trainer.py", checks.ORIGIN_LINE, "")
    (cut_starter / "LICENSE").unlink()
    assert checks.student_file_problems(str(cut_starter)) == [
        f"src/submission/trainer.py does not say where its code comes from ({checks.ORIGIN_LINE!r})",
        "LICENSE is missing, and every student file points to it"]


def test_only_the_python_files_of_the_student_package_are_read(cut_starter):
    """Kills a note, a notebook's folder or a cache of src/submission read as a student file (its words
    then refused, or a folder opened as a file)."""
    folder = cut_starter / "src" / "submission"
    write(folder / "mingpt-demo" / "play_char.ipynb", "{}")
    write(folder / "notes.md", "the grader's reference, ### START_CODE_HERE ###\n")
    write(folder / "__pycache__" / "model.cpython-311.pyc", "runtime")
    assert checks.student_file_problems(str(cut_starter)) == []


def test_a_starter_without_student_files_misses_every_function(tmp_path):
    found = checks.student_file_problems(str(tmp_path))
    assert len(found) == len(EDITIONS[SEED_EDITION].parts) + len(GIVEN_FOR_PARTS) + 1
    assert "initialize_vanilla_model, of part (c), is missing from src/submission" in found


def student_file(tmp_path, text):
    """The lines of student_file_problems about initialize_vanilla_model, on a starter whose one student
    file is `text` after ORIGIN_LINE."""
    write(tmp_path / "LICENSE", "the notices\n")
    write(tmp_path / "src" / "submission" / "model.py", f"# {checks.ORIGIN_LINE}\n{text}")
    found = checks.student_file_problems(str(tmp_path), SEED_EDITION)
    return [line for line in found if "initialize_vanilla_model" in line]


def test_a_region_opened_right_after_the_def_line_labelled_there_is_the_functions(tmp_path):
    """Kills a region starting on the line after `def` not counted, or the `def` line skipped when
    looking for the label."""
    assert student_file(tmp_path, "def initialize_vanilla_model():  # [part c]\n    ### START_CODE_HERE ###\n"
                                  "    raise NotImplementedError\n    ### END_CODE_HERE ###\n") == []


def test_a_label_before_the_def_or_a_region_after_its_last_line_is_not_the_functions(tmp_path):
    """Kills the line above `def` searched for the label, or a region opened on the line after the
    function's last statement counted as its own."""
    assert student_file(tmp_path, "# [part c]\ndef initialize_vanilla_model():\n    return None\n"
                                  "### START_CODE_HERE ###\n### END_CODE_HERE ###\n") == [
        "src/submission/model.py: initialize_vanilla_model has no region to write in",
        "src/submission/model.py: initialize_vanilla_model lacks its label [part c]"]


def test_student_files_are_read_as_utf8_whatever_the_locale(cut_starter, ascii_locale):
    """Kills a student file read in the locale's encoding (ASCII here), which cannot read 'naïve'."""
    damaged(cut_starter, "model.py", "class GPTConfig:\n", "# a naïve model\nclass GPTConfig:\n")
    assert checks.student_file_problems(str(cut_starter)) == []


def test_a_file_that_does_not_compile_does_not_stop_the_reading_of_the_next(cut_starter):
    """Kills the files after one that does not compile left unread (their functions then missing)."""
    write(cut_starter / "src" / "submission" / "a_draft.py", "def draft(:\n")
    found = checks.student_file_problems(str(cut_starter))
    assert len(found) == 1 and found[0].startswith("src/submission/a_draft.py does not compile: ")


def test_a_word_unsaid_is_named_at_its_line_when_the_file_opens_with_a_blank_line(cut_starter):
    """Kills the line counted from the file's second character (one line short after a leading blank)."""
    write(cut_starter / "src" / "submission" / "notes.py", f"\n# {checks.ORIGIN_LINE}\n# the grader\n")
    assert checks.student_file_problems(str(cut_starter)) == ["src/submission/notes.py:3 speaks of the grader"]


def test_definitions_name_the_file_of_a_syntax_error():
    """Kills the source parsed without its path, so a syntax error would not say which file."""
    with pytest.raises(SyntaxError) as error:
        checks.definitions("src/submission/model.py", "def f(:\n")
    assert error.value.filename == "src/submission/model.py"


def test_part_labels():
    assert checks.part_labels("e") == ["[part e]"]
    assert checks.part_labels("c and f") == ["[part c]", "[part f]"]


def test_a_page_or_stage_the_starter_lacks_is_named_with_its_line(tmp_path, starter):
    """Kills a starter that sends students to a docs/ page it does not ship, or to an instructors' stage
    (./run.sh bench) it cannot run; a page it ships and a student's stage are fine."""
    write(starter / "docs" / "shipped.md", "# here\n")
    write(starter / "src" / "pkg" / "notes.py", "# see docs/shipped.md\n# ./run.sh vanilla_pretrain\n"
                                                 "# measured: docs/gpu.md\n")
    write(starter / "run.sh", "# ./run.sh benchmark is no stage\n# TEST_WORKERS for ./run.sh test\n")
    write(starter / "data" / "wiki.txt", "docs/gpu.md is only text in the data\n")
    assert problems(tmp_path, starter) == [
        "run.sh:2 points to a page or stage the starter does not have",
        "src/pkg/notes.py:3 points to a page or stage the starter does not have"]


def test_references_are_read_as_utf8_with_bad_bytes_replaced_whatever_the_locale(tmp_path, ascii_locale):
    """Kills a text file read in the locale's encoding (ASCII here: the page's name is lost) or with
    its undecodable bytes raising instead of replaced."""
    write(tmp_path / "notes.md", "# see docs/café.md\n")
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe not UTF-8\nsee docs/gone.md\n")
    assert checks.references_elsewhere(str(tmp_path)) == ["bad.md:2", "notes.md:1"]
