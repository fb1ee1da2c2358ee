"""
The autograder held against the attacks students use (autograder_attacks.py),
as the grading server runs it: every case is a hand-in built from the
reference solution with one hostile edit, graded by the release's
run_autograder as root, with submitted code running as the unprivileged
user `student` on a Python every user can read. Each case must earn exactly
what its honest parts earn (the honest hand-in's score on the same tests,
zero for the tests it breaks), leave a results.json, say why each failed
test failed, leak no hidden label or line of the reference, and leave no
process behind.

The grader runs only the tests an attack concerns (run_autograder passes its
arguments to grader.py); the cases run two at a time, except the fork bomb
(the user's process limit is shared) and the case without namespaces (whose
clean-up kills every process of the user), which run alone afterwards.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import privileged
from grader_fixtures import PREDICTION_TESTS
from submission_variants import MUTANTS, apply
from assignment.facts import DELIVERABLES
from runtime.params import stamp, vocabulary_string

from autograder_attacks import ATTACKS, EVERY_ATTACK, HAND_IN_ATTACKS


ROOT = Path(__file__).resolve().parents[1]
USER = "student"
SECRET = "reference-secret-4f1c9b"  # a comment put into the bundle's reference only
FORGED = '{"score": 64.0, "tests": []}'
PARAMS = {"vanilla.model.params": "vanilla", "vanilla.pretrain.params": "vanilla",
          "vanilla.finetune.params": "vanilla", "perceiver.pretrain.params": "perceiver",
          "perceiver.finetune.params": "perceiver"}
RUN_SECONDS = 240


# ---------------------------------------------------------------- the setting

@pytest.fixture(scope="session")
def student():
    """The unprivileged user submitted code runs as (made when absent); skips unless root."""
    reason = privileged.missing_privilege("nobody")
    if reason:
        pytest.skip(reason)
    return privileged.ensure_user(USER)


@pytest.fixture(scope="session")
def shared_root():
    """A folder every user may enter, for the work folders of run_autograder."""
    folder = tempfile.mkdtemp(prefix="adversarial-")
    os.chmod(folder, 0o755)
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def release(tmp_path_factory):
    """One release of the repository's data (the nopretrain thresholds at 0 correct); the secret in its reference."""
    root = tmp_path_factory.mktemp("release")
    thresholds = root / "thresholds.json"
    thresholds.write_text(json.dumps({"1d-0-hidden": {"min_correct": 0},
                                      "1d-1-hidden": {"min_correct": 0}}))
    done = subprocess.run(["./run.sh", "release", "--out", str(root / "out"), "--thresholds", str(thresholds)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    autograder = root / "out" / "autograder"
    with open(autograder / "hidden" / "reference" / "model.py", "a", encoding="utf-8") as f:
        f.write(f"\n# {SECRET}\n")
    return autograder


def random_params(path, variant, vocabulary, seed):
    """Parameters of an untrained graded-size model, stamped as run.py stamps them."""
    import submission
    torch.manual_seed(seed)
    mconf = submission.GPTConfig(len(vocabulary), 128, n_layer=4, n_head=8, n_embd=256)
    model = (submission.initialize_perceiver_model(mconf, bottleneck_dim=32) if variant == "perceiver"
             else submission.initialize_vanilla_model(mconf))
    stamp(model, vocabulary, "")
    torch.save(model.state_dict(), path)


def predict(folder, stages):
    """Run run.py's evaluation `stages` (at once) on the params in `folder`, writing their predictions there."""
    started = [subprocess.Popen([sys.executable, "src/run.py", "--stage", stage, "--out_dir", str(folder),
                                 "--device", "cpu"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
               for stage in stages]
    for process in started:
        _, errors = process.communicate(timeout=300)
        assert process.returncode == 0, errors


@pytest.fixture(scope="session")
def honest(tmp_path_factory):
    """
    The honest hand-in: the reference code, untrained graded params, the
    nopretrain predictions made by run.py from vanilla.model.params, and
    Atlantis (never right) for every other answer.
    """
    from submission import CharCorruptionDataset
    folder = tmp_path_factory.mktemp("honest")
    for path in (ROOT / "src" / "submission").glob("*.py"):
        shutil.copyfile(path, folder / path.name)
    vocabulary = vocabulary_string(CharCorruptionDataset((ROOT / "data" / "wiki.txt").read_text(), 128))
    for seed, (name, variant) in enumerate(PARAMS.items()):
        random_params(folder / name, variant, vocabulary, seed)
    predict(folder, ("vanilla_eval_dev_without_pretrain", "vanilla_eval_test_without_pretrain"))
    for name in DELIVERABLES:
        split = "birth_dev.tsv" if ".dev." in name else "birth_test_inputs.tsv"
        if name.endswith(".predictions") and not (folder / name).exists():
            count = len((ROOT / "data" / split).read_text().splitlines())
            (folder / name).write_text("Atlantis\n" * count)
    return folder, vocabulary


def hidden_test_labels(release):
    """The lines of the hidden test labels (the dev labels are in the starter's data/)."""
    return [line for line in (release / "hidden" / "birth_test.tsv").read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------- building hand-ins

def marker(attack):
    """The process name the attack's code takes first (children inherit it), for the leftover check."""
    return f"atk-{attack.name}"[:15]


def fill(code, values):
    """`code` with each {key!r} replaced by repr(value) and each {key} by str(value)."""
    for key, value in values.items():
        code = code.replace(f"{{{key}!r}}", repr(value)).replace(f"{{{key}}}", str(value))
    return code


def hostile_hand_in(attack, honest, folder, context):
    """A copy of the honest hand-in with `attack`'s edit."""
    source, vocabulary = honest
    shutil.copytree(source, folder)
    if attack.mutant:
        apply(next(m for m in MUTANTS if m.name == attack.mutant), folder)
    if attack.code:
        with open(folder / "__init__.py", "a", encoding="utf-8") as f:
            f.write(f"\nimport ctypes as _c\n_c.CDLL(None).prctl(15, {marker(attack).encode()!r})\n")
            f.write(fill(attack.code, dict(context, forged=FORGED, secret_head=SECRET[:9], secret_tail=SECRET[9:])))
    if attack.name in HAND_IN_ATTACKS:
        HAND_IN_EDITS[attack.name](folder, context, vocabulary)
    return folder


def links(folder, context, vocabulary):
    """
    Deliverables reached through links: helper.py a link to the hidden
    reference, dataset.py only under a linked src/ leading out of the
    hand-in, and names a shell would expand, plus a grader.py and a
    src/grading that would award full marks.
    """
    outside = folder.parent / f"{folder.name}-outside" / "submission"
    outside.mkdir(parents=True)
    for name in ("helper.py", "dataset.py"):
        shutil.move(folder / name, outside / name)
    (folder / "helper.py").symlink_to(Path(context["source"]) / "hidden" / "reference" / "helper.py")
    (folder / "src").symlink_to(outside.parent)
    for name in ("$(touch pwned)", "`touch pwned`", "-rf", "*", "..dataset.py"):
        (folder / name).write_text("x")
    forged = f"import json, sys\njson.dump({FORGED}, open(sys.argv[sys.argv.index('--json') + 1], 'w'))\n"
    (folder / "grader.py").write_text(forged)


def labels_as_predictions(folder, context, vocabulary):
    """Every prediction file copied from the hidden labels; the params stay untrained."""
    hidden = Path(context["source"]) / "hidden"
    for name in DELIVERABLES:
        if name.endswith(".predictions"):
            split = "birth_dev.tsv" if ".dev." in name else "birth_test.tsv"
            answers = [line.split("\t")[1] for line in (hidden / split).read_text().splitlines() if line.strip()]
            (folder / name).write_text("".join(a + "\n" for a in answers))


def other_models_predictions(folder, context, vocabulary):
    """vanilla.model.params of another model than the one the nopretrain predictions came from."""
    random_params(folder / "vanilla.model.params", "vanilla", vocabulary, seed=99)


HAND_IN_EDITS = {"links": links, "labels-as-predictions": labels_as_predictions,
                 "other-models-predictions": other_models_predictions}


# ---------------------------------------------------------------- running run_autograder

@dataclass
class Run:
    completed: subprocess.CompletedProcess
    results: dict  # results.json as the server reads it
    text: str  # results.json's text
    after: str  # results.json's text a moment after run_autograder ended
    leftovers: list  # processes named after the attack still running afterwards
    connections: int  # connections the loopback listener accepted during the run


class Listener:
    """A loopback TCP server counting the connections it accepts (the network attack's target)."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        self.running = True
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while self.running:
            try:
                self.server.accept()[0].close()
                self.accepted += 1
            except OSError:
                pass

    def close(self):
        self.running = False
        self.thread.join()
        self.server.close()
        return self.accepted


def named_processes(prefix):
    """Processes whose name starts with `prefix`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().startswith(prefix):
                found.append(int(pid))
        except OSError:
            pass
    return found


def run_autograder(release, submission, root, python, tests, options=(), extra_env=()):
    """run_autograder as the server runs it (root, AUTOGRADER_USER=student) on `submission`; returns a Run."""
    results = root / "results"
    env = dict(os.environ, AUTOGRADER_SOURCE=str(release), AUTOGRADER_SUBMISSION=str(submission),
               AUTOGRADER_RESULTS=str(results), AUTOGRADER_PYTHON=python, AUTOGRADER_USER=USER,
               AUTOGRADER_WORK=str(root.parent), PYTHONPATH="", **dict(extra_env))
    completed = subprocess.run(["bash", str(release / "run_autograder"), *options, *tests], env=env,
                               capture_output=True, text=True, timeout=RUN_SECONDS)
    text = (results / "results.json").read_text()
    return Run(completed, json.loads(text), text, "", [], 0)


def run_attack(attack, release, honest, shared_root, python, hand_ins):
    """Build the attack's hand-in and grade it; then look again at results.json and for leftover processes."""
    root = Path(tempfile.mkdtemp(prefix=f"{attack.name}-", dir=shared_root))
    listener = Listener()
    context = dict(results=str(root / "results" / "results.json"), source=str(release),
                   work=str(shared_root), port=listener.port)
    hand_in = hostile_hand_in(attack, honest, hand_ins / attack.name, context)
    run = run_autograder(release, hand_in, root, python, attack.tests, attack.options, attack.env)
    time.sleep(1.0)  # a daemon that outlived the grader would rewrite results.json by now
    run.after = (root / "results" / "results.json").read_text()
    run.leftovers = named_processes(marker(attack)) if attack.code else []
    run.connections = listener.close()
    return run


@pytest.fixture(scope="session")
def runs(request, tmp_path_factory, student, release, honest, shared_root, readable_python):
    """
    The honest hand-in on every test, and each selected attack on its tests:
    {name: future of Run}. Two at a time; serial attacks alone afterwards.
    """
    selected = {item.callspec.params["name"] for item in request.session.items
                if "name" in getattr(getattr(item, "callspec", None), "params", {})}
    for name in ("links", "disk-fill"):
        selected |= {name} if any(name.replace("-", "_") in item.name for item in request.session.items) else set()
    hand_ins = tmp_path_factory.mktemp("hand-ins")
    attacks = [EVERY_ATTACK[name] for name in EVERY_ATTACK if name in selected]
    pool, alone = ThreadPoolExecutor(max_workers=2), ThreadPoolExecutor(max_workers=1)

    def honest_run():
        root = Path(tempfile.mkdtemp(prefix="honest-", dir=shared_root))
        return run_autograder(release, honest[0], root, readable_python, ())

    futures = {"honest": pool.submit(honest_run)}
    for attack in attacks:
        if not attack.serial:
            futures[attack.name] = pool.submit(run_attack, attack, release, honest, shared_root, readable_python,
                                              hand_ins)
    parallel = list(futures.values())

    def after_the_others(attack):
        for future in parallel:
            future.exception()
        return run_attack(attack, release, honest, shared_root, readable_python, hand_ins)

    for attack in attacks:
        if attack.serial:
            futures[attack.name] = alone.submit(after_the_others, attack)
    pool.shutdown(wait=False)
    alone.shutdown(wait=False)
    return futures


# ---------------------------------------------------------------- the tests

def scores(run):
    """{test id: score} of a run's results.json."""
    return {t["number"]: t["score"] for t in run.results["tests"]}


def check_attack(attack, run, honest_run, release):
    """What every attack must come to: honest scores, reasons, the same results.json, no leak, nothing left."""
    report = f"{attack.name}:\n{run.completed.stdout[-3000:]}\n{run.completed.stderr[-2000:]}"
    honest_scores = scores(honest_run)
    expected = {t: 0.0 if t in attack.broken else honest_scores[t] for t in attack.tests}
    assert scores(run) == expected, report
    assert run.results["score"] == sum(expected.values()), report
    for test in run.results["tests"]:
        if test["score"] < test["max_score"]:
            status, _, why = test["output"].partition(": ")
            assert status in ("fail", "error", "timeout") and why.strip(), test
            assert attack.broken.get(test["number"], "") in test["output"], test
    assert run.after == run.text, "results.json changed after run_autograder ended"
    assert run.leftovers == [], f"processes of the attack outlived the run: {run.leftovers}"
    assert SECRET not in run.text and not any(line in run.text for line in hidden_test_labels(release))
    for text in attack.forbidden:
        assert text not in run.text, report
    if attack.shown:
        assert attack.shown in run.text, report
    assert run.connections == 0
    assert len(run.text) < 200_000


def test_honest_hand_in_scores_what_it_should(runs):
    run = runs["honest"].result()
    assert run.completed.returncode == 0, run.completed.stderr
    found = scores(run)
    assert all(found[t] == 0 for t in PREDICTION_TESTS if not t.startswith("1d")), run.completed.stdout
    assert {t: s for t, s in found.items() if t not in PREDICTION_TESTS} == {
        t["number"]: t["max_score"] for t in run.results["tests"] if t["number"] not in PREDICTION_TESTS}
    assert found["1d-0-hidden"] == 2 and found["1d-1-hidden"] == 4, run.completed.stdout


@pytest.mark.parametrize("name", [a.name for a in ATTACKS] + ["links"])
def test_attack_earns_only_its_honest_parts(name, runs, release):
    run = runs[name].result()
    assert run.completed.returncode == 0, run.completed.stderr
    check_attack(EVERY_ATTACK[name], run, runs["honest"].result(), release)


@pytest.mark.parametrize("name", ["labels-as-predictions", "other-models-predictions"])
def test_predictions_that_the_params_did_not_make_earn_nothing(name, runs, release):
    run = runs[name].result()
    check_attack(EVERY_ATTACK[name], run, runs["honest"].result(), release)


def test_links_and_odd_names_reach_nothing_outside_the_hand_in(runs):
    run = runs["links"].result()
    assert "the submission has no dataset.py" in run.completed.stdout
    assert "the submission has no helper.py" in run.completed.stdout
    assert not (ROOT / "pwned").exists() and not Path("pwned").exists()


def test_disk_fill_stays_within_the_probes_space(runs):
    """The attack tries 768 MB in each writable-looking folder; it gets the home and /dev/shm tmpfs at most."""
    run = runs["disk-fill"].result()
    written = int(re.search(r"DISK wrote (\d+) MB", run.text).group(1))
    assert 0 < written <= (256 + 64), run.text


def test_no_process_of_the_user_outlives_the_runs(runs, student):
    for future in runs.values():
        future.exception()
    assert [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
            if owner(pid) == student.pw_uid] == []


def owner(pid):
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None
