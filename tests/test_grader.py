"""
The autograder judged as instructors need it: the reference gets full marks,
each broken variant loses exactly the points it should, hostile submissions
earn nothing they did not do, and the outputs have the platform's format.
Every run is grader.py in its own process, on a copy of the reference.
"""

import json
import os
import pwd
import re
import shutil

import pytest

from grader_fixtures import (GRADER, JUST_ENOUGH, POINTS, PREDICTION_TESTS, ROOT, copy_reference, grade,
                             hand_in, in_background, make_bundle, run_grader, statuses, write_predictions)
from submission_variants import (HANG_IN_GETITEM, HOSTILE_IMPORTS, MUTANTS, SYSTEM_EXIT_IN_HELPERS, Mutant,
                            apply)

ALL_TESTS = list(POINTS)
FILES_MODE = {"predictions": "files"}


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """The reference with its tiny models' parameters and predictions, graded on everything with --json."""
    root = tmp_path_factory.mktemp("full")
    package = copy_reference(root / "submission")
    bundle, _ = make_bundle(root / "bundle")
    hand_in(package)
    completed = run_grader("--submission", package, "--hidden", bundle, "--json", root / "results.json")
    results = json.loads((root / "results.json").read_text())
    return completed, results


@pytest.fixture
def graded_copy(tmp_path):
    """The reference with predictions, and a bundle grading the files as they are: (package, bundle, answers)."""
    package = copy_reference(tmp_path / "submission")
    bundle, answers = make_bundle(tmp_path / "bundle", settings=FILES_MODE)
    write_predictions(package, answers)
    return package, bundle, answers


def test_reference_gets_full_marks(full_run):
    completed, results = full_run
    assert completed.returncode == 0, completed.stderr
    assert statuses(completed.stdout) == {test: "pass" for test in ALL_TESTS}
    assert {t["number"]: t["score"] for t in results["tests"]} == {k: float(v) for k, v in POINTS.items()}
    assert results["score"] == 64.0
    assert "basic: 33/33 points" in completed.stdout and "hidden: 31/31 points" in completed.stdout
    structure = next(t for t in results["tests"] if t["number"] == "1c-0-hidden")
    assert "same parameters and outputs as the reference" in structure["output"]
    dev = next(t for t in results["tests"] if t["number"] == "1f-1-hidden")
    assert "regenerated from vanilla.finetune.params with the reference's model" in dev["output"]


def test_results_json_has_exactly_the_platform_fields(full_run):
    _, results = full_run
    assert set(results) == {"score", "execution_time", "tests"}
    assert type(results["score"]) is float and type(results["execution_time"]) is float
    assert results["execution_time"] > 0
    for test in results["tests"]:
        assert set(test) == {"name", "number", "score", "max_score", "output", "visibility"}
        assert [type(test[k]) for k in ("name", "number", "score", "max_score", "output", "visibility")] == \
            [str, str, float, float, str, str]
        assert test["visibility"] == ("visible" if test["number"].endswith("basic") else "after_due_date")
        assert test["name"] and test["output"].startswith("pass")


def test_one_answer_below_each_threshold_fails_it(graded_copy):
    package, bundle, answers = graded_copy
    write_predictions(package, answers, {key: right - 1 for key, right in JUST_ENOUGH.items()})
    found, stdout = grade(package, PREDICTION_TESTS, "--hidden", bundle)
    assert found == {test: "fail" for test in PREDICTION_TESTS}
    assert "5 of 60 correct (8.3%); needed at least 10%" in stdout
    assert "0 of 60 correct (0.0%); needed at least 1 correct" in stdout


def test_thresholds_json_overrides_the_defaults(tmp_path):
    package = copy_reference(tmp_path / "submission")
    strict = {"1f-1-hidden": {"min_accuracy": 0.5}, "1g-2-hidden": {"min_correct": 2}}
    bundle, answers = make_bundle(tmp_path / "bundle", reference=False, thresholds=strict, settings=FILES_MODE)
    write_predictions(package, answers)
    found, stdout = grade(package, PREDICTION_TESTS, "--hidden", bundle)
    assert found == dict({test: "pass" for test in PREDICTION_TESTS}, **{"1f-1-hidden": "fail", "1g-2-hidden": "fail"})
    assert "needed at least 50%" in stdout and "needed at least 2 correct" in stdout


def test_unknown_threshold_is_a_usage_error(tmp_path):
    package = copy_reference(tmp_path / "submission")
    bundle, _ = make_bundle(tmp_path / "bundle", reference=False, thresholds={"vanilla.dev": {"min_accuracy": 0.1}})
    completed = run_grader("--submission", package, "--hidden", bundle, "1f-1-hidden")
    assert completed.returncode == 2
    assert "unknown threshold 'vanilla.dev'" in completed.stderr


def test_missing_prediction_file_fails_with_the_stage_that_makes_it(graded_copy):
    package, bundle, _ = graded_copy
    (package / "perceiver.pretrain.test.predictions").unlink()
    found, stdout = grade(package, ["1g-1-hidden", "1g-2-hidden"], "--hidden", bundle)
    assert found == {"1g-1-hidden": "pass", "1g-2-hidden": "fail"}
    assert "perceiver.pretrain.test.predictions is missing: make it with ./run.sh perceiver_eval_test_with_pretrain" in stdout


def test_without_a_bundle_hidden_tests_are_listed_as_graded_on_submission(tmp_path):
    package = copy_reference(tmp_path / "submission")
    (package / "vanilla.pretrain.dev.predictions").write_text("London\n")
    completed = run_grader("--submission", package, "--json", tmp_path / "results.json", "hidden")
    assert completed.returncode == 0, completed.stderr
    assert statuses(completed.stdout) == {test: "hidden" for test in ["1c-0-hidden"] + PREDICTION_TESTS}
    assert "hidden: 31 points graded on submission" in completed.stdout
    assert "make it with ./run.sh vanilla_eval_test_with_pretrain" in completed.stdout
    assert "vanilla_eval_dev_with_pretrain" not in completed.stdout
    tests = json.loads((tmp_path / "results.json").read_text())["tests"]
    assert [(t["number"], t["score"], t["max_score"]) for t in tests] == \
        [(test, 0.0, float(POINTS[test])) for test in ["1c-0-hidden"] + PREDICTION_TESTS]


def test_unknown_test_id_lists_the_known_ids_and_exits_nonzero():
    completed = run_grader("1z-9-basic")
    assert completed.returncode != 0
    assert "unknown test 1z-9-basic" in completed.stderr
    assert all(test in completed.stderr for test in ALL_TESTS)


NON_CAUSAL = next(m for m in MUTANTS if m.name == "non-causal attention mask")


@pytest.fixture(scope="module")
def mutant_runs(request, tmp_path_factory):
    """Each mutant graded on its tests with a full bundle, but the non-causal mask with one without reference/
    (its model test must fail on causality alone): {mutant: future of (statuses, stdout)}."""
    def graded_mutant(mutant):
        root = tmp_path_factory.mktemp("mutant")
        package = copy_reference(root / "submission")
        bundle, answers = make_bundle(root / "bundle", reference=mutant != NON_CAUSAL)
        write_predictions(package, answers)
        apply(mutant, package)
        return grade(package, mutant.run, "--hidden", bundle)

    return in_background(request, "mutant", graded_mutant, also=[NON_CAUSAL])


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_mutant_fails_its_own_tests_and_only_those(mutant, mutant_runs):
    found, stdout = mutant_runs[mutant].result()
    assert {test for test, status in found.items() if status != "pass"} == set(mutant.failing), stdout
    assert all(found[test] == "fail" for test in mutant.failing), stdout


def test_non_causal_mask_fails_even_without_a_reference(mutant_runs):
    found, stdout = mutant_runs[NON_CAUSAL].result()
    assert found["1c-0-hidden"] == "fail"
    assert "attention sees the future" in stdout


HOSTILE_CASES = {
    # name: (mutant applied too, tests run, expected statuses, text the report must show); where any test
    # would do, 1f-0-basic: the cheapest probe that imports the package (1c-1-basic's trains a model)
    "sys.exit(0) at import": (None, ["1f-0-basic", "1e-2-basic"], "error", "SystemExit"),
    "os._exit(0) at import": (None, ["1f-0-basic", "1e-2-basic"], "error", "ended without answering (exit code 0)"),
    "writes forged answers to every descriptor": (None, ["1f-0-basic", "1e-2-basic"], "error",
                                                  "the result channel was tampered with"),
    "prints fake pass lines and results.json": ("mask fraction 1/2", ["1e-3-basic", "1e-2-basic"],
                                                {"1e-3-basic": "fail", "1e-2-basic": "pass"}, "basic: 5/10 points"),
    "monkeypatches unittest and builtins": ("no truncation", ["1e-0-basic", "1e-3-basic"],
                                            {"1e-0-basic": "fail", "1e-3-basic": "pass"}, "basic: 5/10 points"),
    "floods its output": (None, ["1f-0-basic"], "pass", "basic: 7/7 points"),
}


@pytest.fixture(scope="module")
def hostile_runs(request, tmp_path_factory):
    """Each hostile submission graded with --json: {name: future of (statuses, stdout, results)}."""
    def graded_hostile(name):
        mutant_name, tests, _, _ = HOSTILE_CASES[name]
        root = tmp_path_factory.mktemp("hostile")
        package = copy_reference(root / "submission")
        if mutant_name:
            apply(next(m for m in MUTANTS if m.name == mutant_name), package)
        with open(package / "__init__.py", "a", encoding="utf-8") as f:
            f.write("\n" + HOSTILE_IMPORTS[name])
        found, stdout = grade(package, tests, "--json", root / "results.json")
        return found, stdout, json.loads((root / "results.json").read_text())

    return in_background(request, "name", graded_hostile)


@pytest.mark.parametrize("name", HOSTILE_CASES)
def test_hostile_submission_earns_nothing_it_did_not_do(name, hostile_runs):
    _, tests, expected, shown = HOSTILE_CASES[name]
    found, stdout, results = hostile_runs[name].result()
    if isinstance(expected, str):
        expected = {test: expected for test in tests}
    assert found == expected, stdout
    assert shown in stdout
    assert "64/64" not in stdout
    assert results["score"] == sum(float(POINTS[t]) for t, status in expected.items() if status == "pass")
    assert all(len(t["output"]) < 4000 for t in results["tests"])


def test_infinite_loop_times_out_and_the_run_goes_on(tmp_path):
    package = copy_reference(tmp_path / "submission")
    apply(HANG_IN_GETITEM, package)
    found, stdout = grade(package, HANG_IN_GETITEM.run, "--timeout", 10)  # room for 1f-0 on a loaded machine
    assert found == {"1e-0-basic": "timeout", "1f-0-basic": "pass"}
    stopped = re.search(r"did not finish within the time limit \(stopped after (\d+) s\)", stdout)
    assert stopped and 10 <= int(stopped.group(1)) < 60  # --timeout 10, not the test's own 60 s


def test_system_exit_inside_the_helpers_is_an_error_not_a_pass(tmp_path):
    package = copy_reference(tmp_path / "submission")
    apply(SYSTEM_EXIT_IN_HELPERS, package)
    found, stdout = grade(package, SYSTEM_EXIT_IN_HELPERS.run)
    assert found == {test: "error" for test in SYSTEM_EXIT_IN_HELPERS.run}
    assert "SystemExit: 0" in stdout and "total: 0/9 points" in stdout


def test_memory_limit_stops_a_greedy_submission(tmp_path):
    package = copy_reference(tmp_path / "submission")
    with open(package / "__init__.py", "a", encoding="utf-8") as f:
        f.write("\nhoard = bytearray(3 << 30)\n")
    found, stdout = grade(package, ["1c-1-basic"], "--memory-mb", 2048)
    assert found == {"1c-1-basic": "error"}
    assert "MemoryError" in stdout


def test_spawned_processes_report_how_they_ended(tmp_path):
    package = copy_reference(tmp_path / "submission")
    with open(package / "__init__.py", "a", encoding="utf-8") as f:
        f.write("\nimport os\nos._exit(3)\n")
    found, stdout = grade(package, ["1c-1-basic"], "--spawn")
    assert found == {"1c-1-basic": "error"}
    assert "ended without answering (exit code 3)" in stdout


def nobody():
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        return None


@pytest.mark.usefixtures("on_readable_python")  # skips unless root, with a 'nobody' user and a Python it can read
@pytest.mark.parametrize("user", [None, "nobody"])
def test_user_option_keeps_submission_code_out_of_the_graders_files(user, tmp_path):
    package = copy_reference(tmp_path / "submission")
    escaped = tmp_path / "escaped"
    with open(package / "__init__.py", "a", encoding="utf-8") as f:
        f.write(f"\ntry:\n    open({str(escaped)!r}, 'w').write('x')\nexcept OSError:\n    pass\n")
    found, _ = grade(package, ["1f-0-basic"], *(["--user", user] if user else []))
    assert found == {"1f-0-basic": "pass"}
    assert escaped.exists() == (user is None)


@pytest.mark.skipif(os.geteuid() != 0 or nobody() is None, reason="needs root and a 'nobody' user")
def test_user_option_refuses_a_user_who_cannot_read_the_grader(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    shutil.copy(GRADER, private / "grader.py")
    for package in ("grading", "assignment"):
        shutil.copytree(ROOT / "src" / package, private / "src" / package)
    completed = run_grader("--submission", ROOT / "src" / "submission", "--user", "nobody", "1c-1-basic",
                           grader=private / "grader.py")
    assert completed.returncode == 2
    assert "user nobody cannot read" in completed.stderr


def test_mutants_edit_only_what_they_name(tmp_path):
    package = copy_reference(tmp_path / "submission")
    before = {p.name: p.read_text() for p in package.glob("*.py")}
    mutant = MUTANTS[0]
    apply(mutant, package)
    changed = [name for name, text in before.items() if (package / name).read_text() != text]
    assert changed == [mutant.filename]
    with pytest.raises(AssertionError, match="no longer applies"):
        apply(Mutant("absent", "helper.py", "no such code", "", (), ()), package)


# ---- hidden tests of the bundle ----------------------------------------------------------------

STRICTER_DEV = '''
from grading import graded
from grading.handout.predictions import score_predictions


@graded("1f-1-hidden", points=6, visibility="hidden", timeout=300, min_accuracy=0.9)
def stricter_vanilla_dev(ctx):
    """vanilla pretrained: dev accuracy, as this term grades it"""
    return score_predictions(ctx, "vanilla.pretrain.dev.predictions")
'''

DROPOUT_TEST = '''
from grading import check, graded, probe


@probe
def dropout(sub, vocab_size):
    config = sub.GPTConfig(vocab_size, 8)
    return [config.embd_pdrop, config.resid_pdrop, config.attn_pdrop]


@graded("1h-0-hidden", points=1, visibility="hidden", timeout=120)
def default_dropout(ctx):
    """GPTConfig: the handout's dropout"""
    rates = ctx.run(dropout, vocab_size=10)
    check(rates == [0.1, 0.1, 0.1], f"GPTConfig's dropout rates are {rates}, expected 0.1 each")
    return "dropout 0.1"
'''


def bundle_with_tests(root):
    """A bundle whose tests/ replaces 1f-1-hidden (a stricter threshold, 6 points) and adds 1h-0-hidden."""
    bundle, _ = make_bundle(root / "bundle", settings=FILES_MODE)
    (bundle / "tests").mkdir()
    (bundle / "tests" / "stricter.py").write_text(STRICTER_DEV, encoding="utf-8")
    (bundle / "tests" / "dropout.py").write_text(DROPOUT_TEST, encoding="utf-8")
    return bundle


def test_a_bundles_tests_are_graded_as_they_say(tmp_path):
    package = copy_reference(tmp_path / "submission")
    bundle = bundle_with_tests(tmp_path)
    _, answers = make_bundle(tmp_path / "labels_only", reference=False)
    write_predictions(package, answers)
    completed = run_grader("--submission", package, "--hidden", bundle, "--json", tmp_path / "results.json",
                           "1f", "1h")
    assert completed.returncode == 0, completed.stderr
    tests = {t["number"]: t for t in json.loads((tmp_path / "results.json").read_text())["tests"]}
    assert {number: (t["score"], t["max_score"]) for number, t in tests.items()} == {
        "1f-0-basic": (7.0, 7.0), "1f-1-hidden": (0.0, 6.0), "1f-2-hidden": (8.0, 8.0), "1h-0-hidden": (1.0, 1.0)}
    assert tests["1f-1-hidden"]["output"].endswith("6 of 60 correct (10.0%); needed at least 90%")
    assert tests["1h-0-hidden"]["output"] == "pass: dropout 0.1" and tests["1h-0-hidden"]["visibility"] == \
        "after_due_date"
    listed = run_grader("--list", "--hidden", bundle).stdout.splitlines()
    assert "  1f-1-hidden     6 pts  vanilla pretrained: dev accuracy, as this term grades it (min_accuracy 0.9)  " \
           "[from stricter.py, in place of grader.py's]" in listed
    assert listed[-1] == "  1h-0-hidden     1 pts  GPTConfig: the handout's dropout  [from dropout.py]"
    (bundle / "tests" / "secret.py").write_text(DROPOUT_TEST.replace('"1h-0-hidden", points=1, visibility="hidden"',
                                                                    '"1h-1-secret", points=1, visibility="secret"'))
    refused = run_grader("--submission", package, "--hidden", bundle, "1h")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == f"grader: {bundle / 'tests' / 'secret.py'}: test id '1h-1-secret' should look like " \
                             "'1e-0-basic'\n"


@pytest.mark.usefixtures("on_readable_python")  # skips unless root, with a 'nobody' user and a Python it can read
def test_a_bundle_tests_probe_runs_as_the_submissions_user_from_a_bundle_it_cannot_read(tmp_path):
    package = copy_reference(tmp_path / "submission")
    bundle = bundle_with_tests(tmp_path)
    os.chmod(bundle, 0o700)
    found, stdout = grade(package, ["1h-0-hidden"], "--hidden", bundle, "--user", "nobody")
    assert found == {"1h-0-hidden": "pass"}, stdout
