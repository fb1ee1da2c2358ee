"""
grader.py's command line (grading/cli.py): the options, the bundle or the
local check, the usage errors, the listing, the exit statuses, and its
results.json, which an interrupted grading or a failed write leaves as it
was and a path that cannot be written refuses before the tests run.
"""

import json
import os
import pwd
import signal
import sys

import pytest

from grading import bundle, cli, registry

from grading_helpers import result, write
from runtime_helpers import DISK_FULL, leftovers, raising, then_raising, tree


# ---- the command line --------------------------------------------------------------------------

class RecordingSuite:
    """Stands in for Suite in cli.main: records its arguments, passes every test."""

    made = []

    def __init__(self, *args, **kwargs):
        self.args = args
        RecordingSuite.made.append(self)

    def run(self, tests):
        return [result(t.test_id, "pass", points=t.points, description=t.description) for t in tests], 2.0


@pytest.fixture
def command_line(tmp_path, monkeypatch, registered):
    """cli.main with two registered tests, a submission package and no real runs."""
    def judged(ctx):
        """the description"""
    registry.graded("1e-0-basic", 5, "basic", 9)(judged)
    registry.graded("1f-0-hidden", 2, "hidden", 9, min_accuracy=0.1)(judged)
    write(tmp_path / "src" / "submission" / "__init__.py", "")
    monkeypatch.setattr(cli, "Suite", RecordingSuite)
    monkeypatch.delenv(bundle.HIDDEN_ENV, raising=False)
    monkeypatch.setattr(signal, "signal", lambda *args: None)
    RecordingSuite.made = []
    return lambda *argv: cli.main(list(argv), tests_file=str(tmp_path / "grader.py"), preload=("torch",))


def test_the_command_line_grades_the_selected_tests(command_line, tmp_path, monkeypatch, capsys):
    handlers = []
    monkeypatch.setattr(signal, "signal", lambda *args: handlers.append(args))
    assert command_line("1e", "--json", str(tmp_path / "r" / "results.json")) == 0
    assert handlers == [(signal.SIGTERM, signal.default_int_handler)]  # a terminated run cleans up like Ctrl-C
    out, err = capsys.readouterr()
    assert out.startswith(f"Grading {tmp_path / 'src' / 'submission'}\nhidden bundle: none (hidden tests are graded "
                          "on submission)\n\n1e-0-basic")
    assert out.endswith(f"wrote {tmp_path / 'r' / 'results.json'}\n")
    assert err == "grader: no hidden bundle: hidden tests score 0 in the results file\n"
    assert json.loads((tmp_path / "r" / "results.json").read_text())["score"] == 5.0
    package, given, limits, user, jobs, timeout, preload = RecordingSuite.made[0].args
    assert (package, given, user, timeout, preload) == (str(tmp_path / "src" / "submission"), None, None, None,
                                                        ("torch",))
    assert limits.memory_bytes == 4096 << 20 and jobs == min(2, os.cpu_count() or 1)


def test_command_line_options_reach_the_suite(command_line, tmp_path, monkeypatch, capsys):
    made = []
    monkeypatch.setattr(cli, "Suite", lambda *args, **kwargs: made.append((args, kwargs)) or RecordingSuite())
    assert command_line("--memory-mb", "100", "--jobs", "3", "--timeout", "2.5", "--spawn", "-v") == 0
    (args, kwargs), = made
    assert args[2].memory_bytes == 100 << 20 and args[4:6] == (3, 2.5) and kwargs == {"fork": False, "files_dir": None}
    assert command_line("--files", str(tmp_path)) == 0 and made[1][1] == {"fork": True, "files_dir": str(tmp_path)}
    assert "1f-0-hidden" in capsys.readouterr().out


def test_the_hidden_bundle_comes_from_the_option_or_the_environment(command_line, tmp_path, monkeypatch, capsys):
    root = tmp_path / "bundle"
    write(root / "thresholds.json", '{"1f-0-hidden": {"min_accuracy": 0.5}}')
    assert command_line("--hidden", str(root)) == 0
    given = RecordingSuite.made[-1].args[1]
    assert given.path == str(root) and given.thresholds["1f-0-hidden"] == {"min_accuracy": 0.5}
    assert f"hidden bundle: {root}\n" in capsys.readouterr().out
    monkeypatch.setenv(bundle.HIDDEN_ENV, str(root))
    assert command_line("--json", str(tmp_path / "r.json")) == 0
    assert RecordingSuite.made[-1].args[1].path == str(root) and capsys.readouterr().err == ""
    write(root / "thresholds.json", '{"1e-0-basic": {"min_accuracy": 0.5}}')
    assert command_line() == 2
    assert capsys.readouterr().err == (f"grader: {root / 'thresholds.json'}: unknown threshold '1e-0-basic'; the "
                                       "tests with thresholds are 1f-0-hidden\n")
    write(root / "grading.json", "[")
    assert command_line() == 2
    assert capsys.readouterr().err.startswith(f"grader: {root / 'grading.json'} is not valid JSON")


def test_a_local_check_grades_against_the_labels_given(command_line, tmp_path, capsys):
    dev = write(tmp_path / "data" / "birth_dev.tsv", "Q1\tA1\n")
    assert command_line("--labels", str(dev)) == 0
    given = RecordingSuite.made[-1].args[1]
    assert given.local and given.predictions == "files" and list(given.labels) == ["birth_dev.tsv"]
    assert f"local check: labels {dev} (prediction files graded as they are)\n" in capsys.readouterr().out
    assert command_line("--labels", str(dev), "--hidden", str(tmp_path)) == 2
    assert capsys.readouterr().err == ("grader: give either --hidden (the instructors' bundle) or --labels (a local "
                                       "check), not both\n")
    assert command_line("--files", str(tmp_path / "none")) == 2
    assert capsys.readouterr().err == f"grader: --files {tmp_path / 'none'} is not a folder\n"


def test_a_files_folder_that_is_a_file_is_refused(command_line, tmp_path, capsys):
    """Kills --files checked only to exist: a file given there is refused before any test runs."""
    given = write(tmp_path / "out" / "vanilla.model.params", "p")
    assert command_line("--files", str(given)) == 2
    assert capsys.readouterr().err == f"grader: --files {given} is not a folder\n" and RecordingSuite.made == []


def test_usage_errors_exit_2(command_line, tmp_path, capsys):
    assert command_line("1z", "2a") == 2
    assert capsys.readouterr().err == ("grader: unknown test 1z, 2a; known tests:\n"
                                       "  1e-0-basic      5 pts  the description\n"
                                       "  1f-0-hidden     2 pts  the description (min_accuracy 0.1)\n")
    assert command_line("--submission", str(tmp_path)) == 2
    assert capsys.readouterr().err == f"grader: {tmp_path} is not a submission package (no __init__.py)\n"
    assert command_line("--user", "no-such-user-here") == 2
    assert capsys.readouterr().err == "grader: no user named 'no-such-user-here'\n"
    assert RecordingSuite.made == []


def test_list_prints_the_tests(command_line, capsys):
    assert command_line("--list") == 0
    assert capsys.readouterr().out == ("  1e-0-basic      5 pts  the description\n"
                                       "  1f-0-hidden     2 pts  the description (min_accuracy 0.1)\n")


def test_list_shows_the_thresholds_the_bundle_sets(command_line, tmp_path, capsys):
    """Kills a listing that shows each test's own thresholds where the bundle's thresholds.json replaces them."""
    write(tmp_path / "bundle" / "thresholds.json", '{"1f-0-hidden": {"min_accuracy": 0.25, "min_correct": 3}}')
    assert command_line("--list", "--hidden", str(tmp_path / "bundle")) == 0
    assert capsys.readouterr().out == ("  1e-0-basic      5 pts  the description\n"
                                       "  1f-0-hidden     2 pts  the description (min_accuracy 0.25, min_correct 3)\n")


def test_an_unknown_test_lists_the_thresholds_the_bundle_sets(command_line, tmp_path, capsys):
    """Kills the known tests listed, after an unknown one, with their own thresholds in place of the bundle's."""
    write(tmp_path / "bundle" / "thresholds.json", '{"1f-0-hidden": {"min_accuracy": 0.25}}')
    assert command_line("1z", "--hidden", str(tmp_path / "bundle")) == 2
    assert capsys.readouterr().err.endswith("  1f-0-hidden     2 pts  the description (min_accuracy 0.25)\n")


def test_a_user_who_cannot_read_the_grader_is_refused(command_line, tmp_path, monkeypatch, capsys):
    user = pwd.getpwuid(os.getuid())
    checked = []
    monkeypatch.setattr(cli, "readable_by", lambda who, path: checked.append(path) or path != checked[0])
    assert command_line("--user", user.pw_name) == 2
    assert capsys.readouterr().err == (f"grader: user {user.pw_name} cannot read {os.path.dirname(os.__file__)}: "
                                       "install Python and the grader where that user can read them, or omit --user\n")
    monkeypatch.setattr(cli, "readable_by", lambda who, path: checked.append(path) or who == user)
    assert command_line("--user", user.pw_name) == 0
    assert checked[-2:] == [os.path.dirname(os.__file__), os.path.dirname(os.path.dirname(cli.__file__))]
    assert RecordingSuite.made[-1].args[3] == user


def test_an_interrupted_run_exits_130(command_line, monkeypatch, capsys):
    def interrupted(self, tests):
        raise KeyboardInterrupt
    monkeypatch.setattr(RecordingSuite, "run", interrupted)
    assert command_line() == 130
    assert capsys.readouterr().err == "grader: interrupted\n"


def test_only_posix_systems_are_graded(command_line, monkeypatch, capsys):
    monkeypatch.setattr(os, "name", "nt")
    assert command_line() == 2
    assert capsys.readouterr().err == "grader: the grader needs a POSIX system: Linux, macOS, or WSL on Windows\n"


def test_the_tests_file_defaults_to_the_running_script(command_line, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "grader.py")])
    assert cli.main([]) == 0
    assert RecordingSuite.made[-1].args[0] == str(tmp_path / "src" / "submission")


class Flushes:
    """A standard output that records what was written and what of it was flushed."""

    def __init__(self):
        self.written, self.flushed = "", ""

    def write(self, text):
        self.written += text

    def flush(self):
        self.flushed = self.written


def test_the_heading_is_flushed_before_the_tests_run(command_line, monkeypatch):
    out = Flushes()
    monkeypatch.setattr(sys, "stdout", out)
    shown = []
    monkeypatch.setattr(RecordingSuite, "run", lambda self, tests: shown.append(out.flushed) or ([], 0.0))
    assert command_line() == 0
    assert shown[0].startswith("Grading ") and "hidden bundle: none" in shown[0]


def test_verbose_shows_what_failing_code_printed(command_line, monkeypatch, capsys):
    def prints(self, tests):
        return [result(status="fail", message="wrong", output="my debug line")], 1.0
    monkeypatch.setattr(RecordingSuite, "run", prints)
    assert command_line() == 0
    out = capsys.readouterr().out
    assert "my debug line" not in out and out.endswith("\n(1.0 s)\n")
    assert command_line("-v") == 0 and "      | my debug line" in capsys.readouterr().out


def test_the_help_tells_each_option(monkeypatch):
    """Kills an option's help, metavar or choices left out or reworded: the help is what a user reads."""
    monkeypatch.setenv("COLUMNS", "2000")
    text = " ".join(cli.parser("/sub").format_help().split())
    assert " Grade a submission: basic tests here, hidden tests with a hidden bundle. " in text
    for told in ("usage: ", "[TEST ...]",
                 "TEST test ids (e.g. 1e-0-basic), parts (e.g. 1e), or 'basic' / 'hidden'; default: all",
                 "--json PATH also write Gradescope's results.json to PATH",
                 f"--hidden DIR the instructors' hidden bundle (default: ${bundle.HIDDEN_ENV}; none: hidden tests are "
                 "graded on submission)",
                 "--submission DIR the submission package to grade (default: /sub)",
                 "--timeout SECONDS time limit for every test instead of its own",
                 "--jobs JOBS tests run at once (default: ",
                 "--memory-mb MEMORY_MB address-space limit of each test process (default: 4096)",
                 "--spawn start each test process as a new interpreter instead of forking it (slower)",
                 "--user USER run submission code as this user (the grader itself must run as root)",
                 "--list list the tests and exit",
                 "--labels FILE a local check instead of a bundle: grade the prediction files as they are against "
                 "these labelled files (e.g. data/birth_dev.tsv); repeatable",
                 "--files DIR the folder of the parameters and prediction files (default: the submission package)",
                 f"--edition {{{','.join(sorted(registry.EDITIONS))}}} the course edition whose tests to grade "
                 f"(default: the checkout's, else ${registry.EDITION_ENV}, else {registry.SEED_EDITION})",
                 "-v, --verbose show what the submission printed in failing tests"):
        assert told in text, told


def test_two_tests_run_at_once_where_two_cores_or_more_allow(monkeypatch):
    for cores, jobs in ((8, 2), (1, 1), (None, 1)):
        monkeypatch.setattr(os, "cpu_count", lambda: cores)
        assert cli.parser("/sub").parse_args([]).jobs == jobs


def test_the_parsers_defaults():
    args = cli.parser("/sub").parse_args([])
    assert (args.tests, args.json, args.submission, args.timeout, args.memory_mb, args.spawn, args.user, args.list,
            args.verbose) == ([], None, "/sub", None, 4096, False, None, False, False)

# ---- hidden tests of the bundle ----------------------------------------------------------------

def test_the_command_line_loads_the_bundles_tests_and_lists_them(command_line, tmp_path, capsys):
    """Kills a listing that hides which file a bundle's test comes from, or which test of the grader it replaces."""
    write(tmp_path / "bundle" / "tests" / "added.py", 'from grading import graded\n\n'
          '@graded("1h-0-hidden", points=1, visibility="hidden", timeout=9)\ndef new(ctx):\n    """new"""\n')
    assert command_line("--list", "--hidden", str(tmp_path / "bundle")) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "  1h-0-hidden     1 pts  new  [from added.py]"
    write(tmp_path / "bundle" / "tests" / "term.py", 'from grading import graded\n\n'
          '@graded("1f-0-hidden", points=3, visibility="hidden", timeout=9)\ndef judged(ctx):\n    """its own"""\n')
    assert command_line("--list", "--hidden", str(tmp_path / "bundle")) == 0
    assert ("  1f-0-hidden     3 pts  its own  [from term.py, in place of test_grading_cli.py's]"
            in capsys.readouterr().out.splitlines())
    write(tmp_path / "bundle" / "tests" / "broken.py", "import no_such_module_here\n")
    assert command_line("--hidden", str(tmp_path / "bundle")) == 2
    assert capsys.readouterr().err == (f"grader: {tmp_path / 'bundle' / 'tests' / 'broken.py'} does not import: "
                                       "ModuleNotFoundError: No module named 'no_such_module_here'\n")


# ---- the grader's results.json -----------------------------------------------------------------

def test_an_interrupted_grading_leaves_the_earlier_results_and_the_next_one_writes_them(command_line, tmp_path,
                                                                                       monkeypatch):
    """Kills results.json written (or emptied) before the tests end: Ctrl-C or SIGTERM must leave the
    earlier file, which run_autograder replaces by a score of 0 only when there is none."""
    results = tmp_path / "results" / "results.json"
    results.parent.mkdir()
    results.write_text('{"score": 1.0}')
    with monkeypatch.context() as patch:
        patch.setattr(RecordingSuite, "run", raising(KeyboardInterrupt()))
        assert command_line("--json", str(results)) == 130
    assert tree(results.parent) == {"results.json": b'{"score": 1.0}'}
    assert command_line("--json", str(results)) == 0
    assert json.loads(results.read_text())["score"] == 7.0 and os.listdir(results.parent) == ["results.json"]


@pytest.mark.parametrize("kind", ["earlier results", "folders made"])
def test_results_that_cannot_be_written_leave_what_was_there_and_the_next_run_writes_them(command_line, tmp_path,
                                                                                         monkeypatch, kind):
    """Kills results.json written in place (half a document where the earlier one was), its
    .partial file left, or the folders made for it left behind empty."""
    results = tmp_path / ("made/results" if kind == "folders made" else "results") / "results.json"
    if kind == "earlier results":
        results.parent.mkdir()
        results.write_text('{"score": 1.0}')
    before = tree(tmp_path)
    with monkeypatch.context() as patch, pytest.raises(OSError):
        patch.setattr(json, "dump", then_raising(json.dump, DISK_FULL))
        command_line("--json", str(results))
    assert tree(tmp_path) == before
    assert command_line("--json", str(results)) == 0
    assert json.loads(results.read_text())["score"] == 7.0 and not leftovers(tmp_path)


@pytest.mark.parametrize("where", ["a folder", "under a file"])
def test_a_results_path_that_cannot_be_written_is_refused_before_the_tests_run(command_line, tmp_path, capsys,
                                                                               where):
    """Kills a --json path found unwritable only once every test has run (a traceback, and the whole
    grading lost), a folder there replaced by the results, or the wrong reason given."""
    (tmp_path / "taken").mkdir() if where == "a folder" else (tmp_path / "taken").write_text("a file")
    results = tmp_path / "taken" / ("" if where == "a folder" else "results.json")
    before = tree(tmp_path)
    assert command_line("--json", str(results)) == 2
    assert RecordingSuite.made == [] and tree(tmp_path) == before
    why = "a folder, not a file" if where == "a folder" else f"{tmp_path / 'taken'} is not a folder"
    assert capsys.readouterr().err == f"grader: --json {results}: {why}\n"
