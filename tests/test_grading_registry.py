"""
The registry of tests and probes (grading/registry.py): @graded and its
thresholds, the order and selection of tests, and a hidden bundle's tests.
"""

import os
import sys

import pytest

from grading import cli, registry
from grading.bundle import HiddenBundle
from grading.registry import GradedTest

from grading_helpers import write


# ---- the registry ------------------------------------------------------------------------------

def test_graded_registers_a_test_with_its_description(registered):
    @registry.graded("2b-1-hidden", points=3, visibility="hidden", timeout=7)
    def judged(ctx):
        """  a first line  \n        and more"""
    test = registered["2b-1-hidden"]
    assert test == GradedTest("2b-1-hidden", 3.0, "hidden", 7.0, "a first line", judged, {}, __file__)
    assert type(test.points) is float and type(test.timeout) is float and test.part == "2b"
    assert registry.graded("2b-1-hidden", 3, "hidden", 7)(judged) is judged  # the same file may register it again


def test_a_test_gives_its_thresholds_as_numbers(registered):
    def judged(ctx):
        """scored"""
    registry.graded("1f-1-hidden", 5, "hidden", 9, min_accuracy=0.1, min_correct=2)(judged)
    assert registered["1f-1-hidden"].thresholds == {"min_accuracy": 0.1, "min_correct": 2}
    for wrong in ("0.1", True, float("nan"), None):
        with pytest.raises(ValueError, match="^test 1f-2-hidden: thresholds must be numbers$"):
            registry.graded("1f-2-hidden", 5, "hidden", 9, min_accuracy=wrong)


def test_the_source_of_a_decorated_function_is_the_file_that_wrote_it():
    import functools

    def inner(sub):
        return sub
    wrapped = functools.wraps(inner)(lambda sub: inner(sub))
    namespace = {}
    exec(compile("def elsewhere(sub):\n    return sub\n", "/somewhere/probes.py", "exec"), namespace)
    assert registry.source_of(wrapped) == registry.source_of(inner) == __file__
    assert registry.source_of(namespace["elsewhere"]) == "/somewhere/probes.py"


@pytest.mark.parametrize("test_id, visibility, told", [
    ("2b-1", "basic", "should look like '1e-0-basic'"),
    ("b-1-basic", "basic", "should look like"),
    ("2b-1-basic ", "basic", "should look like"),
    (" 2b-1-basic", "basic", "should look like"),
    ("2b-1-basic", "hidden", "visibility must be one of ('basic', 'hidden') and end its id"),
    ("2b-1-public", "public", "should look like"),
])
def test_a_badly_named_test_is_refused(registered, test_id, visibility, told):
    with pytest.raises(ValueError) as caught:
        registry.graded(test_id, 1, visibility, 1)
    assert told in str(caught.value)


def test_a_test_needs_a_docstring_and_one_file(registered):
    with pytest.raises(ValueError, match=r"^test 2b-1-basic needs a docstring: its first line is the description$"):
        registry.graded("2b-1-basic", 1, "basic", 1)(lambda ctx: None)
    namespace = {}
    exec(compile('def judged(ctx):\n    """other"""\n', "other_tests.py", "exec"), namespace)

    def judged(ctx):
        """mine"""
    registry.graded("2b-1-basic", 1, "basic", 1)(judged)
    with pytest.raises(ValueError, match=r"^test id 2b-1-basic is registered twice$"):
        registry.graded("2b-1-basic", 1, "basic", 1)(namespace["judged"])
    registry.graded("2b-2-basic", 1, "basic", 1)(namespace["judged"])
    assert list(registered) == ["2b-1-basic", "2b-2-basic"]


def test_select_gives_the_tests_in_id_order(registered):
    def judged(ctx):
        """a test"""
    for test_id in ("1f-10-hidden", "1f-2-hidden", "2a-0-basic", "1e-0-basic", "1ab-0-basic"):
        registry.graded(test_id, 1, test_id.rsplit("-", 1)[1], 1)(judged)
    assert [t.test_id for t in registry.select([])] == ["1ab-0-basic", "1e-0-basic", "1f-2-hidden", "1f-10-hidden",
                                                        "2a-0-basic"]


def test_select_by_id_part_or_visibility(registered):
    def judged(ctx):
        """a test"""
    for test_id in ("1c-0-hidden", "1c-1-basic", "1e-0-basic", "1e-1-basic", "1f-0-hidden"):
        registry.graded(test_id, 1, test_id.rsplit("-", 1)[1], 1)(judged)
    ids = lambda selectors: [t.test_id for t in registry.select(selectors)]  # noqa: E731
    assert ids([]) == list(registered)
    assert ids(["1e"]) == ["1e-0-basic", "1e-1-basic"]
    assert ids(["1f-0-hidden", "1c-1-basic"]) == ["1c-1-basic", "1f-0-hidden"]
    assert ids(["hidden"]) == ["1c-0-hidden", "1f-0-hidden"]
    assert ids(["basic", "1c"]) == ["1c-0-hidden", "1c-1-basic", "1e-0-basic", "1e-1-basic"]
    with pytest.raises(KeyError) as caught:
        registry.select(["1e", "1z", "1e-0", "public"])
    assert caught.value.args[0] == ["1z", "1e-0", "public"]


def test_probe_marks_the_function_itself():
    def observe(sub):
        return 1
    assert registry.probe(observe) is observe and observe.is_probe is True

# ---- hidden tests of the bundle ----------------------------------------------------------------

@pytest.fixture
def bundle_tests(registered, monkeypatch, tmp_path):
    """A registry with one test of grader.py (tmp_path/grader.py), and a writer of bundle test files."""
    monkeypatch.setattr(registry, "BUNDLE_FILES", [])
    namespace = {"graded": registry.graded}
    exec(compile('@graded("1f-1-hidden", points=5, visibility="hidden", timeout=9, min_accuracy=0.1)\n'
                 'def dev(ctx):\n    """vanilla dev"""\n', str(tmp_path / "grader.py"), "exec"), namespace)
    return lambda name, text: write(tmp_path / "bundle" / "tests" / name, "from grading import graded\n\n" + text)


def test_a_bundles_tests_add_tests_and_replace_one_by_its_id(bundle_tests, registered, tmp_path):
    stricter = bundle_tests("stricter.py", '@graded("1f-1-hidden", points=6, visibility="hidden", timeout=9, '
                                           'min_accuracy=0.5)\ndef dev(ctx):\n    """vanilla dev, stricter"""\n')
    added = bundle_tests("added.py", '@graded("1h-0-hidden", points=1, visibility="hidden", timeout=9)\n'
                                     'def new(ctx):\n    """a new hidden test"""\n')
    registry.load_bundle_tests([str(added), str(stricter)])
    replaced = registered["1f-1-hidden"]
    assert (replaced.points, replaced.thresholds, replaced.source) == (6.0, {"min_accuracy": 0.5}, str(stricter))
    assert replaced.replaces.description == "vanilla dev" and replaced.replaces.source == str(tmp_path / "grader.py")
    assert registered["1h-0-hidden"].replaces is None and registered["1h-0-hidden"].source == str(added)
    assert [t.test_id for t in registry.select(["hidden"])] == ["1f-1-hidden", "1h-0-hidden"]
    listed = cli.listing(registry.select([]), HiddenBundle(str(tmp_path), {}, {"1f-1-hidden": {"min_accuracy": 0.7}},
                                                           None))
    assert listed.splitlines() == [
        "  1f-1-hidden     6 pts  vanilla dev, stricter (min_accuracy 0.7)  [from stricter.py, in place of "
        "grader.py's]",
        "  1h-0-hidden     1 pts  a new hidden test  [from added.py]"]


@pytest.mark.parametrize("text, told", [
    ("import no_such_module_here\n", " does not import: ModuleNotFoundError: No module named 'no_such_module_here'"),
    ("raise RuntimeError('first\\nsecond')\n", " does not import: RuntimeError: first"),
    ("raise ValueError()\n", " does not import: ValueError"),
    ("raise ValueError('" + "x" * 250 + "')\n", " does not import: ValueError: " + "x" * 250),  # not cut at 200
    ("raise ValueError('not a test of ours')\n", " does not import: ValueError: not a test of ours"),
    ('@graded("1h-0-secret", points=1, visibility="secret", timeout=9)\ndef t(ctx):\n    """d"""\n',
     ": test id '1h-0-secret' should look like '1e-0-basic'"),
    ('@graded("1h-0-hidden", points=1, visibility="basic", timeout=9)\ndef t(ctx):\n    """d"""\n',
     ": test 1h-0-hidden: visibility must be one of ('basic', 'hidden') and end its id"),
    ('@graded("1h-0-hidden", points=1, visibility="hidden", timeout=9)\ndef t(ctx):\n    pass\n',
     ": test 1h-0-hidden needs a docstring: its first line is the description"),
])
def test_a_bundle_test_file_that_cannot_be_read_is_named_in_one_line(bundle_tests, text, told):
    path = bundle_tests("broken.py", text)
    with pytest.raises(ValueError) as caught:
        registry.load_bundle_tests([str(path)])
    assert str(caught.value) == f"{path}{told}"


def test_a_bundle_test_file_is_its_module_in_sys_modules_while_it_imports(bundle_tests, registered, tmp_path):
    """Kills the module left out of sys.modules while it runs: a dataclass with postponed annotations
    (from __future__ import annotations) looks its module up there."""
    path = write(tmp_path / "bundle" / "tests" / "rows.py",
                 'from __future__ import annotations\n\nimport dataclasses\n\nfrom grading import graded\n\n\n'
                 '@dataclasses.dataclass\nclass Row:\n    name: str\n\n\n'
                 '@graded("1h-0-hidden", points=1, visibility="hidden", timeout=9)\ndef t(ctx):\n    """d"""\n')
    registry.load_bundle_tests([str(path)])
    assert registered["1h-0-hidden"].source == str(path)


def test_each_bundle_file_stays_its_own_module_in_sys_modules(bundle_tests, registered):
    """Kills every bundle file imported under one module name: the later file then takes the earlier
    one's place in sys.modules, where its functions' module (pickle, inspect, dataclasses) is looked up."""
    paths = [bundle_tests(f"{name}.py", f'@graded("1h-{n}-hidden", points=1, visibility="hidden", timeout=9)\n'
                                        f'def t(ctx):\n    """d"""\n')
             for n, name in enumerate(("first", "second"))]
    registry.load_bundle_tests([str(path) for path in paths])
    for n, path in enumerate(paths):
        function = registered[f"1h-{n}-hidden"].function
        assert sys.modules[function.__module__].__file__ == str(path)


def test_a_bundle_file_is_graded_as_its_text_says_not_as_a_cached_compilation(bundle_tests, registered,
                                                                              monkeypatch):
    """Kills a loader that reads or writes a bytecode cache beside the bundle's tests: a cache is trusted by
    its source's size and whole-second mtime, so a file rewritten at the same size within one second would
    run its old code."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as in a process started without PYTHONDONTWRITEBYTECODE
    path = bundle_tests("same.py", '@graded("1h-0-hidden", points=1, visibility="hidden", timeout=9)\n'
                                   'def t(ctx):\n    """d"""\n')
    for test_id in ("1h-0-hidden", "1h-1-hidden"):
        write(path, path.read_text().replace("1h-0-hidden", test_id))
        os.utime(path, (1_700_000_000, 1_700_000_000))
        registry.load_bundle_tests([str(path)])
        assert test_id in registered
    assert "__pycache__" not in {child.name for child in path.parent.iterdir()}


def test_two_bundle_files_cannot_give_the_same_test(bundle_tests):
    text = '@graded("1h-0-hidden", points=1, visibility="hidden", timeout=9)\ndef t(ctx):\n    """d"""\n'
    first, second = bundle_tests("first.py", text), bundle_tests("second.py", text)
    for ids in ('"1h-0-hidden"', '"1f-1-hidden"'):
        write(first, first.read_text().replace('"1f-1-hidden"', '"1h-0-hidden"').replace('"1h-0-hidden"', ids))
        write(second, first.read_text())
        with pytest.raises(ValueError, match=f"^{second}: test id {ids[1:-1]} is registered twice$"):
            registry.load_bundle_tests([str(first), str(second)])
