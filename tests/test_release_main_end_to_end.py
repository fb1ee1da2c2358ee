"""
The release end to end: one release of a small generated data set, with
thresholds that the test submission's predictions meet exactly, is built
per module run, in this process (the `release` fixture), and inspected:
the starter tree (its regions cut, its signatures and docstrings kept, what
students need and nothing they must not see), the autograder bundle and its
setup, the grader and run_autograder on the starter and on the solution,
and failed releases (on copies of it, run in this process), which say why
in one line and leave OUT as it was.
"""

import ast
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile

import pytest

from instructors.release import checks, regions
from stages import collect_submission

from release_helpers import (HIDDEN_TESTS, REPO, SOLUTION, data_dir, files_under, grader_results, release_here,
                             run_python, seed_sources, solution_sources, write_hidden_tests,
                             write_params)


DATA_FILES = ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv", "birth_test_inputs.tsv")
CORRECT_EVERY = 3


def fraction_right(answers):
    """Predictions that get every CORRECT_EVERY-th answer right and the rest wrong."""
    return [answer if i % CORRECT_EVERY == 0 else "Nowhere" for i, answer in enumerate(answers)]


def answers(labels_path):
    return [line.split("\t")[1] for line in labels_path.read_text(encoding="utf-8").splitlines() if line]


PREDICTION_TESTS = {"dev": ("1d-0-hidden", "1f-1-hidden", "1g-1-hidden"), "test": ("1d-1-hidden", "1f-2-hidden",
                                                                               "1g-2-hidden")}


def fitting_thresholds(data):
    """thresholds.json entries that fraction_right() predictions meet exactly, for every prediction test."""
    entries = {}
    for split, labels in (("dev", data / "birth_dev.tsv"), ("test", data / "birth_test.tsv")):
        given = answers(labels)
        correct = sum(p == a for p, a in zip(fraction_right(given), given))
        for test in PREDICTION_TESTS[split]:
            entries[test] = {"min_accuracy": correct / len(given), "min_correct": correct}
    return entries


@pytest.fixture(scope="module")
def thresholds(data_dir):
    path = data_dir.parent / "thresholds.json"
    path.write_text(json.dumps(fitting_thresholds(data_dir)))
    return path


@pytest.fixture(scope="module")
def grading(data_dir):
    """grading.json that grades the prediction files as handed in (tests/test_grade_regenerate.py
    regenerates them from the parameters)."""
    path = data_dir.parent / "grading.json"
    path.write_text(json.dumps({"predictions": "files"}))
    return path


@pytest.fixture(scope="module")
def release(tmp_path_factory, data_dir, thresholds, grading):
    """OUT of one successful release of data_dir, with thresholds that fraction_right() predictions
    meet, grading the prediction files as they are."""
    out = tmp_path_factory.mktemp("release") / "out"
    status, stderr = release_here(out, data_dir, "--thresholds", str(thresholds), "--grading", str(grading))
    assert status == 0, stderr
    return out


# ------------------------------------------------------------ student tree

def test_starter_regions_put_back_rebuild_the_solution_byte_for_byte(release):
    """The seed edition's solution: the reference without the other editions' blocks."""
    starter = release / "student" / "src" / "submission"
    assert sorted(p.name for p in starter.glob("*.py")) == sorted(seed_sources())
    for name, solution in seed_sources().items():
        cut = (starter / name).read_bytes().decode("utf-8")
        if regions.locate(solution):
            assert cut != solution, f"{name} was not cut"
        assert regions.restore(cut, regions.regions(solution), name) == solution, name


def signatures(text):
    """(qualified name, arguments, docstring) of every function and class in the source text."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            arguments = ast.dump(node.args) if not isinstance(node, ast.ClassDef) else ""
            found.append((node.name, arguments, ast.get_docstring(node)))
    return found


def test_starter_keeps_every_signature_and_docstring(release):
    for name, solution in seed_sources().items():
        starter = (release / "student" / "src" / "submission" / name).read_text(encoding="utf-8")
        assert signatures(starter) == signatures(solution), name


def test_student_tree_holds_what_students_need(release, data_dir, thresholds):
    student = release / "student"
    for path in ("run.sh", "grader.py", "environment.yml", "requirements.txt", "README.md",
                 "src/run.py", "src/stages/collect_submission.py", "src/submission/__init__.py"):
        assert (student / path).is_file(), path
    assert (student / "LICENSE").read_bytes() == (REPO / "LICENSE").read_bytes()
    assert os.stat(student / "run.sh").st_mode & stat.S_IXUSR
    for notebook in ("src/submission/mingpt-demo/play_char.ipynb", "notebooks/attention.ipynb"):
        assert (student / notebook).read_bytes() == (REPO / notebook).read_bytes(), notebook
    for name in DATA_FILES:
        assert (student / "data" / name).read_bytes() == (data_dir / name).read_bytes()
    readme = (student / "README.md").read_text(encoding="utf-8")
    for needed in ("./run.sh vanilla_pretrain", "./run.sh perceiver_eval_test_with_pretrain",
                   "python grader.py", "./run.sh collect_submission"):
        assert needed in readme
    for name in collect_submission.DELIVERABLES:
        assert f"src/submission/{name}" in readme
    environment = [line.split(":", 1)[1].strip() for line in
                   (REPO / "environment.yml").read_text(encoding="utf-8").splitlines() if line.startswith("name:")]
    assert f"conda activate {environment[0]}" in readme
    assert "{environment}" not in readme and "{deliverables}" not in readme and "{thresholds}" not in readme
    perceiver_dev = json.loads(thresholds.read_text())["1g-1-hidden"]
    assert (f"- `1g-1-hidden` (perceiver pretrained: dev accuracy): at least {100 * perceiver_dev['min_accuracy']:g}% "
            f"and at least {perceiver_dev['min_correct']} correct") in readme and "./run.sh score_dev" in readme


def test_student_tree_leaks_no_labels_outputs_tests_or_tooling(release, data_dir):
    student = release / "student"
    files = files_under(student)
    assert not [f for f in files if f.endswith((".params", ".predictions", ".pyc"))]
    assert not [f for f in files if f.startswith(("tests/", "src/instructors/", ".ci/"))
                or f in ("src/runtime/decoding/perceiver_cache.py", "data/birth_test.tsv")]
    labels = [line for line in (data_dir / "birth_test.tsv").read_text(encoding="utf-8").splitlines() if line]
    for name in files:
        text = (student / name).read_bytes().decode("utf-8", errors="replace")
        assert not [line for line in labels if line in text], f"{name} holds test labels"


def test_the_starters_student_files_keep_their_labels_regions_and_origin_and_speak_of_no_grading(release):
    assert checks.student_file_problems(str(release / "student")) == []
    for path in (release / "student" / "src" / "submission").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert checks.ORIGIN_LINE in text and not re.search("grader|reference|runtime|hooks", text, re.I), path.name


def test_starter_imports_and_its_cut_functions_are_placeholders(release):
    probe = (
        "import submission\n"
        "from submission import helper, CharCorruptionDataset, GPTConfig\n"
        "from submission.model import DownProjectBlock\n"
        "config = GPTConfig(10, 16, n_layer=2, n_head=2, n_embd=8, bottleneck_dim=4)\n"
        "assert helper.initialize_vanilla_model(config) is None\n"
        "assert helper.pretrain(None, 16, None) == (None, None)\n"
        "for call in (lambda: CharCorruptionDataset('abc de', 16)[0], lambda: DownProjectBlock(config)):\n"
        "    try:\n"
        "        call()\n"
        "    except NotImplementedError:\n"
        "        continue\n"
        "    raise SystemExit('a cut function ran')\n"
        "print('placeholders ok', flush=True)\n"
        "import runpy, sys\n"  # then `src/run.py --help`, in the same process: torch is imported once
        "sys.argv[:] = ['src/run.py', '--help']\n"
        "runpy.run_path('src/run.py', run_name='__main__')\n"
    )
    student = release / "student"
    done = run_python(["-c", probe], cwd=student, env={"PYTHONPATH": str(student / "src")})
    assert done.returncode == 0, done.stderr
    assert "placeholders ok" in done.stdout and "usage: run.py" in done.stdout, done.stdout


# ------------------------------------------------------- bad release inputs

def damage(kind, data, tmp_path):
    """Damage the copy of the data at `data` as `kind` says; returns the release's extra arguments."""
    labels = data / "birth_test.tsv"
    if kind == "leak":
        with open(data / "birth_dev.tsv", "a", encoding="utf-8") as f:
            f.write(labels.read_text(encoding="utf-8").splitlines()[0] + "\n")
    elif kind == "mismatch":
        labels.write_text("".join(labels.read_text(encoding="utf-8").splitlines(keepends=True)[1:]),
                          encoding="utf-8")
    elif kind == "no labels":
        labels.unlink()
    elif kind == "solution":
        longest = max(regions.regions(seed_sources()["helper.py"])[2].splitlines(), key=len)
        with open(data / "birth_places_train.tsv", "a", encoding="utf-8") as f:
            f.write(longest.strip() + "\n")
    elif kind == "broken test":
        return ["--tests", str(write_hidden_tests(tmp_path / "tests", {"broken.py": "import no_such_module_here\n"}))]
    elif kind == "no tests":
        return ["--tests", str(write_hidden_tests(tmp_path / "tests", {"notes.txt": "no tests"}))]
    elif kind == "test in the starter":
        with open(data / "birth_places_train.tsv", "a", encoding="utf-8") as f:
            f.write(HIDDEN_TESTS["extra.py"].splitlines()[3] + "\n")
        return ["--tests", str(write_hidden_tests(tmp_path / "tests"))]
    else:
        (tmp_path / "thresholds.json").write_text(json.dumps({"vanilla.pretrain.devv": {"min_accuracy": 0.5}}))
        return ["--thresholds", str(tmp_path / "thresholds.json")]
    return []


def flaws(*damages_and_messages):
    """A parametrize case: (damages, messages), named by its damages."""
    damages, messages = damages_and_messages[0::2], damages_and_messages[1::2]
    return pytest.param(damages, messages, id="+".join(damages))


# One release of three flaws of the starter: the starter's checks each name their own in the one line.
@pytest.mark.parametrize("damages, messages", [
    flaws("leak", "contains a line of the test labels", "solution", "contains a line of the solution's regions",
          "test in the starter", "names a hidden test"),
    flaws("mismatch", "does not ask the questions"),
    flaws("no labels", "do not exist"),
    flaws("thresholds", "the grader does not accept the hidden bundle"),
    flaws("broken test", "the grader does not accept the hidden bundle: grader: "),
    flaws("no tests", "holds no .py files of hidden tests"),
])
def test_a_failed_release_says_why_in_one_line_and_leaves_out_as_it_was(tmp_path, release, data_dir, damages,
                                                                        messages):
    data = tmp_path / "data"
    shutil.copytree(data_dir, data)
    out = tmp_path / "out"
    shutil.copytree(release, out)
    before = {name: (out / name).read_bytes() for name in files_under(out)}
    extra = [argument for kind in damages for argument in damage(kind, data, tmp_path)]
    status, stderr = release_here(out, data, "--force", *extra)
    assert status != 0
    assert all(message in stderr for message in messages) and stderr.strip().count("\n") == 0, stderr
    assert {name: (out / name).read_bytes() for name in files_under(out)} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".release-")]


# ------------------------------------------------------------ autograder

def test_autograder_bundle_layout(release, data_dir, thresholds, grading):
    autograder = release / "autograder"
    for script in ("setup.sh", "run_autograder"):
        assert os.stat(autograder / script).st_mode & stat.S_IXUSR, script
    assert (autograder / "deliverables.txt").read_text().split() == list(collect_submission.DELIVERABLES)
    assert files_under(autograder / "starter") == files_under(release / "student")
    hidden = autograder / "hidden"
    assert (hidden / "birth_test.tsv").read_bytes() == (data_dir / "birth_test.tsv").read_bytes()
    assert (hidden / "birth_dev.tsv").read_bytes() == (data_dir / "birth_dev.tsv").read_bytes()
    assert (hidden / "thresholds.json").read_bytes() == thresholds.read_bytes()
    assert (hidden / "grading.json").read_bytes() == grading.read_bytes()
    reference = {p.name: p.read_bytes().decode("utf-8") for p in (hidden / "reference").iterdir()}
    assert reference == solution_sources()
    with zipfile.ZipFile(release / "autograder.zip") as archive:
        assert sorted(n for n in archive.namelist() if not n.endswith("/")) == files_under(autograder)
        mode = archive.getinfo("run_autograder").external_attr >> 16
        assert mode & stat.S_IXUSR


def test_setup_sh_makes_a_venv_and_installs_the_starter_requirements(release, tmp_path):
    """setup.sh run with a stand-in python3 that records what it is asked to do."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    stand_in = (
        "#!/usr/bin/env bash\n"
        f'echo "$0 $*" >> "{log}"\n'
        'if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; fi\n'
    )
    (bin_dir / "python3").write_text(stand_in)
    (bin_dir / "python3").chmod(0o755)
    source = release / "autograder"
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", AUTOGRADER_SOURCE=str(source),
               AUTOGRADER_VENV=str(tmp_path / "venv"), AUTOGRADER_APT="0")
    done = subprocess.run(["bash", str(source / "setup.sh")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == f"{bin_dir}/python3 -m venv {tmp_path / 'venv'}"
    assert f"{tmp_path / 'venv'}/bin/python -m pip install --no-cache-dir -r {source}/starter/requirements.txt" \
        in calls


# ------------------------------------------------- grading the starter and the solution

def test_grader_runs_to_the_end_on_the_starter_and_every_basic_test_scores_zero(release, tmp_path):
    done, tests = grader_results(release / "student", tmp_path)
    basic = [t for t in tests if t.endswith("-basic")]
    hidden = [t for t in tests if t.endswith("-hidden")]
    assert basic and hidden, "the grader lists basic and hidden tests"
    assert all(tests[t]["score"] == 0 and tests[t]["max_score"] > 0 for t in basic)
    assert all(tests[t]["score"] == 0 for t in hidden)
    assert "total:" in done.stdout


def write_solution_submission(folder, data):
    """A finished submission: the solution's code, stand-in params, fraction_right() predictions."""
    folder.mkdir()
    for path in SOLUTION.glob("*.py"):
        shutil.copyfile(path, folder / path.name)
    for name in collect_submission.DELIVERABLES:
        if name.endswith(".params"):
            write_params(folder / name, perceiver=name.startswith("perceiver"))
        elif name.endswith(".predictions"):
            labels = data / ("birth_dev.tsv" if ".dev." in name else "birth_test.tsv")
            (folder / name).write_text("".join(p + "\n" for p in fraction_right(answers(labels))),
                                       encoding="utf-8")


def run_autograder(release, submission, tmp_path, **env):
    """run_autograder of `release` on the files in `submission`; returns (process, results.json)."""
    results = tmp_path / "results"
    env = {**os.environ, "AUTOGRADER_SOURCE": str(release / "autograder"), "AUTOGRADER_SUBMISSION": str(submission),
           "AUTOGRADER_RESULTS": str(results), "AUTOGRADER_PYTHON": sys.executable, "AUTOGRADER_USER": "",
           "AUTOGRADER_WORK": str(tmp_path), "PYTHONPATH": "", **env}
    done = subprocess.run(["bash", str(release / "autograder" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("grading.")], "the work folder is left behind"
    return done, json.loads((results / "results.json").read_text())


def test_run_autograder_gives_a_zip_of_the_solution_full_marks(release, data_dir, tmp_path):
    write_solution_submission(tmp_path / "solution", data_dir)
    archive = tmp_path / "submission.zip"
    assert collect_submission.main(["--submission-dir", str(tmp_path / "solution"), "--out", str(archive)]) == 0
    uploaded = tmp_path / "uploaded"
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(uploaded)
    work = tmp_path / "work"
    work.mkdir()
    done, results = run_autograder(release, uploaded, work)
    tests = results["tests"]
    assert {t["number"].rsplit("-", 1)[1] for t in tests} == {"basic", "hidden"}
    assert [t["number"] for t in tests if t["score"] != t["max_score"]] == [], done.stdout
    assert results["score"] == sum(t["max_score"] for t in tests) > 0


def test_run_autograder_gives_the_starter_zero_and_takes_only_the_deliverables(release, tmp_path):
    """The starter's code with no outputs, plus a grader.py that would award full marks and a symlink to
    the solution's helper.py: run_autograder must take neither."""
    uploaded = tmp_path / "uploaded"
    (uploaded / "src" / "submission").mkdir(parents=True)
    for path in (release / "student" / "src" / "submission").glob("*.py"):
        if path.name != "helper.py":
            shutil.copyfile(path, uploaded / path.name)
    (uploaded / "src" / "submission" / "helper.py").symlink_to(SOLUTION / "helper.py")
    (uploaded / "grader.py").write_text(
        "import sys, json\n"
        "path = sys.argv[sys.argv.index('--json') + 1]\n"
        "json.dump({'score': 64, 'tests': []}, open(path, 'w'))\n")
    work = tmp_path / "work"
    work.mkdir()
    done, results = run_autograder(release, uploaded, work)
    assert results["tests"], done.stdout
    assert [t["number"] for t in results["tests"] if t["score"] != 0] == []
    assert results["score"] == 0
    assert "the submission has no helper.py" in done.stdout
    assert "the submission has no vanilla.model.params" in done.stdout


def test_run_autograder_leaves_a_zero_result_when_the_grader_cannot_run(release, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    done, results = run_autograder(release, tmp_path, work, AUTOGRADER_PYTHON="false")
    assert results["score"] == 0 and results["tests"] == []
    assert "exit status 1" in results["output"]


def test_the_starters_help_lists_only_what_the_starter_runs(release):
    student = release / "student"
    done = subprocess.run(["./run.sh", "help"], cwd=student, capture_output=True, text=True)
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ")}
    assert done.returncode == 0 and "vanilla_pretrain" in listed and "collect_submission" in listed
    assert not listed & {"demo", "test", "bench", "release"}
    done = subprocess.run(["./run.sh", "demo"], cwd=student, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == "run.sh: demo is an instructors' stage; this checkout has no src/instructors\n"


def test_the_starters_own_stages_run(release):
    student = release / "student"
    done = subprocess.run(["./run.sh", "collect_submission"], cwd=student, capture_output=True, text=True)
    assert done.returncode != 0
    outputs = sum(not name.endswith(".py") for name in collect_submission.DELIVERABLES)
    assert f"{outputs} of 18 deliverables missing" in done.stderr and not (student / "submission.zip").exists()
    done = subprocess.run(["./run.sh", "london_baseline"], cwd=student, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "London" in done.stdout


def test_every_package_the_starters_code_imports_is_in_its_requirements(release):
    """Kills a starter requirements.txt that lacks what its code imports (the starter installs only its
    own list), or that keeps the tests' and instructors' packages."""
    student = release / "student"
    local = {path.stem for path in (student / "src").iterdir()} | {"grader"}
    imported = set()
    for path in student.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - local
    listed = {re.split(r"[=<>!~;\s\[]", line, maxsplit=1)[0]
              for line in (student / "requirements.txt").read_text(encoding="utf-8").splitlines()}
    assert third_party <= listed and listed == {"torch", "numpy", "tqdm", "matplotlib"}
