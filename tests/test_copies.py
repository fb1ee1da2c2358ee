"""
The class copy report (src/instructors/copies, ./run.sh copies) on a class
trained here, once for the module: a small generated world, tiny models
(2 layers, 32 wide), 1 pretraining and 20 finetuning epochs on the CPU,
through run.py (--small, for no loader workers, with the sizes given). Honest students train with their own seeds, two of them
with another correct span corruption; planted copies are made from their
files. The report is run on the class as submitted (no labels), and with a
hidden bundle (answers regenerated from the parameters by the grader's
trusted regeneration, labels known). Then the statistic on its own: its
tail bound, Holm's correction, and its false-positive rate on simulated
classes of independent hand-ins.
"""

import contextlib
import csv
import io
import json
import math
import random
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

import run
from instructors.copies.__main__ import main as copies
from instructors.copies.handins import submitters
from instructors.copies.parameters import relative_distances, sketch_of
from instructors.copies.simulate import false_positives, flagged, simulated_class
from instructors.copies.statistic import chernoff_log_p, holm
from instructors.copies.verdicts import ALPHA_COPY, ALPHA_SUSPECT
from instructors.release.autograder import write_hidden_bundle
from instructors.worldgen import write_world
from submission import GPT, GPTConfig
from submission.dataset import CharCorruptionDataset

from runtime_helpers import one_thread

REPO = Path(__file__).resolve().parents[1]
SIZE = dict(n_layer=2, n_head=2, n_embd=32)
OPTIONS = ["--small"] + [f"--{name}={value}" for name, value in SIZE.items()] + ["--dropout=0", "--device=cpu"]
PRETRAIN = ["--max_epochs=1", "--batch_size=32", "--pretrain_lr=2e-3"]
FINETUNE = ["--max_epochs=20", "--batch_size=16", "--finetune_lr=3e-3"]
PREDICTIONS = ("vanilla.pretrain.dev.predictions", "vanilla.pretrain.test.predictions")
# The pairs planted: a whole copy, predictions with a tenth changed, a finetuning of another's
# pretraining, predictions copied from a known hand-in (twice: hal and ivy hold the same answers),
# and a copy of a known hand-in.
PLANTED = {("ann", "eve"), ("cat", "fay"), ("ben", "gus"), ("hal", "known/public"), ("ivy", "known/public"),
           ("hal", "ivy")}


def other_span_corruption(self, idx):
    """Another correct span corruption (a student's): truncation up to 3/4 of the block, as the 2024
    handouts say, and the masked span placed by where it ends."""
    text = self.data[idx][:random.randint(4, self.block_size * 3 // 4)]
    span = min(len(text), random.randint(1, max(1, len(text) // 2)))
    end = random.randint(span, len(text))
    pieces = text[:end - span], text[end:], text[end - span:end]
    corrupted = pieces[0] + self.MASK_CHAR + pieces[1] + self.MASK_CHAR + pieces[2] + self.MASK_CHAR
    corrupted += self.PAD_CHAR * (self.block_size - len(corrupted))
    ids = torch.tensor([self.stoi[c] for c in corrupted], dtype=torch.long)
    return ids[:-1], ids[1:]


@contextlib.contextmanager
def quiet_single_thread():
    with one_thread(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def run_py(world, records, *args):
    assert run.main([*args, "--pretrain_corpus_path", str(world / "wiki.txt"), "--experiments_dir", str(records),
                     *OPTIONS]) == 0


def train(world, records, folder, seed, pretrained=None, other_code=False, predict=True):
    """A student's run into `folder`: pretraining (unless `pretrained` params are given), finetuning,
    and the dev and test predictions (unless not `predict`)."""
    folder.mkdir(parents=True)
    seeded = ["--seed", str(seed)]
    with pytest.MonkeyPatch.context() as patch:
        if other_code:
            patch.setattr(CharCorruptionDataset, "__getitem__", other_span_corruption)
        if pretrained is None:
            pretrained = folder / "vanilla.pretrain.params"
            run_py(world, records, "--function=pretrain", "--variant=vanilla", f"--writing_params_path={pretrained}",
                   *PRETRAIN, *seeded)
        run_py(world, records, "--function=finetune", "--variant=vanilla", f"--reading_params_path={pretrained}",
               f"--finetune_corpus_path={world / 'birth_places_train.tsv'}",
               f"--writing_params_path={folder / 'vanilla.finetune.params'}", *FINETUNE, *seeded)
    for split, name in zip(("dev", "test"), PREDICTIONS if predict else ()):
        run_py(world, records, "--function=evaluate", "--variant=vanilla",
               f"--reading_params_path={folder / 'vanilla.finetune.params'}",
               f"--eval_corpus_path={world / f'birth_{split}.tsv'}", f"--outputs_path={folder / name}")


def lines(path):
    return Path(path).read_text(encoding="utf-8").splitlines()


def change_a_tenth(source, target):
    """The prediction files of `source`, every tenth answer changed, into `target`."""
    target.mkdir()
    for name in PREDICTIONS:
        answers = [f"Elsewhere {i}" if i % 10 == 0 else answer for i, answer in enumerate(lines(source / name))]
        (target / name).write_text("".join(a + "\n" for a in answers), encoding="utf-8")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A small world and its hidden bundle, as the release writes it, for the tiny model."""
    folder = tmp_path_factory.mktemp("world")
    write_world(folder / "data", seed=27, n_train=80, n_dev=40, n_test=30, paraphrases=2, style="short")
    (folder / "grading.json").write_text(json.dumps({"model": dict(SIZE, block_size=128, bottleneck_dim=32)}))
    write_hidden_bundle(str(REPO), str(folder / "data"), str(folder / "data" / "birth_test.tsv"),
                        {"grading.json": str(folder / "grading.json")}, str(folder / "bundle"))
    return folder


@pytest.fixture(scope="module")
def classroom(world, tmp_path_factory):
    """submissions/ (one folder or zip a hand-in) and known/ (one public hand-in), with the planted copies."""
    root = tmp_path_factory.mktemp("classroom")
    data, records, runs = world / "data", root / "records", root / "runs"
    with quiet_single_thread():
        for number, name in enumerate(("ann", "ben", "cat", "dan", "public", "hal")):
            train(data, records, runs / name, seed=1000 + number, other_code=name in ("ben", "dan"),
                  predict=name != "hal")  # hal hands in public's answers
        train(data, records, runs / "gus", seed=1010, pretrained=runs / "ben" / "vanilla.pretrain.params")
    submissions, known = root / "submissions", root / "known"
    for name in ("ann", "ben", "cat", "gus"):
        shutil.copytree(runs / name, submissions / name)
    with zipfile.ZipFile(submissions / "dan.zip", "w") as archive:
        for path in sorted((runs / "dan").iterdir()):
            archive.write(path, path.name)
    shutil.copytree(runs / "ann", submissions / "eve")
    change_a_tenth(runs / "cat", submissions / "fay")
    shutil.copytree(runs / "hal", submissions / "hal")
    for name in PREDICTIONS:
        shutil.copyfile(runs / "public" / name, submissions / "hal" / name)
    shutil.copytree(runs / "public", submissions / "ivy")
    shutil.copytree(runs / "public", known / "public")
    return root


def copy_report(out, *args):
    """Run the report into `out`; (exit status, stderr, {(a, b): pairs.csv row})."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        status = copies([*map(str, args), "--out", str(out)])
    rows = {}
    if (out / "pairs.csv").is_file():
        with open(out / "pairs.csv", newline="", encoding="utf-8") as f:
            rows = {tuple(sorted((row["a"], row["b"]))): row for row in csv.DictReader(f)}
    return status, stderr.getvalue(), rows


@pytest.fixture(scope="module")
def as_submitted(classroom, tmp_path_factory):
    out = tmp_path_factory.mktemp("reports") / "as_submitted"
    return copy_report(out, "--submissions", classroom / "submissions", "--known", classroom / "known") + (out,)


@pytest.fixture(scope="module")
def regenerated(classroom, world, tmp_path_factory):
    out = tmp_path_factory.mktemp("reports") / "regenerated"
    return copy_report(out, "--submissions", classroom / "submissions", "--known", classroom / "known",
                       "--hidden", world / "bundle", "--jobs", 2) + (out,)


def flagged_pairs(rows):
    return {pair for pair, row in rows.items() if row["verdict"] != "independent"}


@pytest.mark.parametrize("report", ["as_submitted", "regenerated"])
def test_every_planted_copy_is_flagged_and_every_honest_pair_is_independent(report, request):
    status, _, rows, _ = request.getfixturevalue(report)
    assert status == 0
    assert flagged_pairs(rows) == PLANTED
    assert len(rows) == 9 * 8 // 2 + 9  # the class's pairs, and each of the class against the known one


@pytest.mark.parametrize("report", ["as_submitted", "regenerated"])
def test_each_copy_is_flagged_by_the_evidence_that_shows_it(report, request):
    _, _, rows, _ = request.getfixturevalue(report)
    assert rows[("ann", "eve")]["identical_params"] == "vanilla.pretrain.params;vanilla.finetune.params"
    assert rows[("ivy", "known/public")]["identical_params"] == "vanilla.pretrain.params;vanilla.finetune.params"
    assert "finetune.params and ben's vanilla.pretrain.params" in rows[("ben", "gus")]["evidence"]
    assert rows[("ben", "gus")]["verdict"] == "copy" and rows[("ben", "gus")]["identical_params"] == ""
    assert "vanilla.pretrain.dev.predictions" in rows[("cat", "fay")]["evidence"]
    assert rows[("cat", "fay")]["verdict"] == "copy"
    assert "submitted of hal" in rows[("hal", "known/public")]["evidence"]
    assert rows[("hal", "known/public")]["verdict"] == "copy"


def test_identical_params_are_flagged_without_labels(as_submitted):
    _, _, rows, out = as_submitted
    assert rows[("ann", "eve")]["verdict"] == "copy" and rows[("ann", "eve")]["shared_wrong"] == ""
    assert "Without labels" in (out / "report.md").read_text(encoding="utf-8")


def test_the_known_source_is_named(as_submitted, classroom):
    _, _, rows, out = as_submitted
    source = str(classroom / "known" / "public")
    assert rows[("ivy", "known/public")]["known_source"] == source
    assert rows[("ann", "eve")]["known_source"] == ""
    assert f"ivy and known/public (known, from `{source}`)" in (out / "report.md").read_text(encoding="utf-8")


def test_with_the_bundle_answers_are_regenerated_and_wrong_answers_counted(regenerated, as_submitted):
    status, stderr, rows, out = regenerated
    assert status == 0 and "regenerating: 100%" in stderr
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "9 parameters files of 9 hand-ins" in text  # every vanilla.finetune.params: fay has none
    assert "submitted of hal, regenerated of ivy" in rows[("hal", "ivy")]["evidence"]
    assert rows[("ann", "eve")]["shared_wrong"] != "" and int(rows[("ann", "eve")]["shared_wrong"]) > 0
    assert as_submitted[2][("ann", "ben")]["identical_answers"] == rows[("ann", "ben")]["identical_answers"]


def test_the_outputs_are_the_report_the_table_and_the_heat_map(as_submitted):
    _, _, rows, out = as_submitted
    assert sorted(p.name for p in out.iterdir()) == ["agreement.png", "pairs.csv", "report.md"]
    assert (out / "agreement.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(out / "pairs.csv", newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert header[:6] == ["a", "b", "verdict", "identical_answers", "shared_wrong", "identical_params"]
    text = (out / "report.md").read_text(encoding="utf-8")
    ranked = [line for line in text.splitlines() if line.startswith("### ")]
    assert len(ranked) == len(PLANTED) and all(line.split(". ", 1)[1].startswith("copy") for line in ranked)


def tiny_params(path, vocab_size):
    torch.manual_seed(0)
    torch.save(GPT(GPTConfig(vocab_size, 128, **SIZE)).state_dict(), path)


def test_bad_hand_ins_are_one_line_each_and_the_rest_is_compared(classroom, tmp_path):
    submissions = tmp_path / "submissions"
    shutil.copytree(classroom / "submissions" / "ann", submissions / "ann")
    shutil.copytree(classroom / "submissions" / "eve", submissions / "eve")
    shutil.copytree(classroom / "submissions" / "ben", submissions / "odd")
    tiny_params(submissions / "odd" / "vanilla.finetune.params", vocab_size=40)
    (submissions / "broken.zip").write_bytes(b"not a zip")
    answers = (classroom / "submissions" / "ben" / PREDICTIONS[0]).read_bytes()
    with zipfile.ZipFile(submissions / "damaged.zip", "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(PREDICTIONS[0], answers)
    damaged = (submissions / "damaged.zip").read_bytes()
    (submissions / "damaged.zip").write_bytes(damaged.replace(answers[:8], bytes(8), 1))  # a bad CRC-32
    (submissions / "empty").mkdir()
    (submissions / "empty" / "notes.txt").write_text("nothing to hand in")
    out = tmp_path / "out"
    status, _, rows = copy_report(out, "--submissions", submissions)
    assert status == 0 and flagged_pairs(rows) == {("ann", "eve")}
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "- broken: not a readable zip (File is not a zip file): not compared" in text
    assert "- empty: no parameters or prediction files" in text
    assert f"- damaged: {PREDICTIONS[0]} cannot be read (BadZipFile: Bad CRC-32" in text
    assert ("- odd: vanilla.finetune.params is of another size or vocabulary than the class's (head.weight is "
            "(40, 32) there, (63, 32) in most hand-ins): compared by its hash only") in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "submissions"]  # nothing written outside OUT


def test_out_is_replaced_only_with_force(classroom, tmp_path):
    """On two hand-ins of the class: --force does not depend on the class's size."""
    submissions = tmp_path / "submissions"
    for name in ("ann", "ben"):
        shutil.copytree(classroom / "submissions" / name, submissions / name)
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("an earlier report")
    status, stderr, _ = copy_report(out, "--submissions", submissions)
    assert status == 1 and stderr.strip().splitlines() == [f"copies: --out {out} is not empty; pass --force to "
                                                           f"replace an earlier report there"]
    assert (out / "report.md").read_text() == "an earlier report"
    status, _, rows = copy_report(out, "--submissions", submissions, "--force")
    assert status == 0 and (out / "report.md").read_text().startswith("# Copy report") and rows


@pytest.mark.parametrize("arguments, message", [
    (["--submissions", "{tmp}/nowhere"], "copies: --submissions {tmp}/nowhere is not a folder"),
    (["--submissions", "{tmp}/class", "--hidden", "{tmp}/nowhere"],
     "copies: hidden bundle {tmp}/nowhere is not a directory"),
    (["--submissions", "{tmp}"], "copies: --out {tmp}/out and the hand-ins' folder {tmp} must not hold one another"),
])
def test_a_bad_argument_is_one_line_and_writes_nothing(arguments, message, tmp_path):
    (tmp_path / "class").mkdir()
    status, stderr, _ = copy_report(tmp_path / "out", *[a.format(tmp=tmp_path) for a in arguments])
    assert status == 1 and stderr.strip().splitlines() == [message.format(tmp=tmp_path)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["class"]


METADATA = """\
---
submission_101:
  :submitters:
  - :name: Ann Lee
    :sid: '4411'
    :email: ann@example.edu
  :created_at: 2026-11-20 10:00:00.000000000 -08:00
  :score: 64.0
  :results:
    :tests:
    - :name: '1f-1-hidden: vanilla pretrained dev'
      :output: |-
        12 of 40 correct: a line with a colon
        - and one that looks like an item
submission_102:
  :submitters:
  - :name: Eve Moss
  - :name: "Sam O'Neil"
"""


def test_gradescope_export_names_each_hand_in_by_its_submitters(classroom, tmp_path):
    export = tmp_path / "export"
    export.mkdir()
    (export / "submission_metadata.yml").write_text(METADATA, encoding="utf-8")
    shutil.copytree(classroom / "submissions" / "ann", export / "submission_101")
    shutil.copytree(classroom / "submissions" / "eve", export / "submission_102" / "src" / "submission")
    shutil.copytree(classroom / "submissions" / "ben", export / "submission_103")
    status, _, rows = copy_report(tmp_path / "out", "--submissions", export)
    assert status == 0
    assert flagged_pairs(rows) == {("Ann Lee (submission_101)", "Eve Moss & Sam O'Neil (submission_102)")}
    assert ("Ann Lee (submission_101)", "submission_103") in rows


RUBY_METADATA = """\
submission_104:
  :submitters:
  - &1
    :name: Bo Chen
  :score: !ruby/object:BigDecimal 18:0.64e2
submission_105:
  :submitters:
  - *1
  - {":name": "Di Ruiz"}
"""


def test_the_metadata_names_every_submitter_through_rubys_tags_anchors_and_aliases(tmp_path):
    path = tmp_path / "submission_metadata.yml"
    path.write_text(METADATA + RUBY_METADATA, encoding="utf-8")
    problems = []
    assert submitters(path, problems, "export") == {
        "submission_101": "Ann Lee", "submission_102": "Eve Moss & Sam O'Neil",
        "submission_104": "Bo Chen", "submission_105": "Bo Chen & Di Ruiz"}
    assert problems == []


def test_metadata_that_is_not_yaml_is_one_line_and_hand_ins_keep_their_folders_names(tmp_path):
    path = tmp_path / "submission_metadata.yml"
    path.write_text("submission_101:\n  :submitters: [unclosed\n", encoding="utf-8")
    problems = []
    assert submitters(path, problems, "export") == {}
    assert len(problems) == 1 and problems[0].startswith("export/submission_metadata.yml: ")
    assert problems[0].endswith(": hand-ins are named by their folders") and "\n" not in problems[0]


FAKE_PYTHON = """#!/bin/sh
# says every module asked for is missing, and logs what pip is asked to install
case "$1" in
    -c) shift 2; echo "$@" ;;
    -m) [ "$2" = pip ] && echo "$@" >> "$(dirname "$0")/pip.log"; exit 0 ;;
esac
"""


def test_run_sh_installs_pyyaml_for_the_yaml_module_the_copy_report_imports(tmp_path):
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    done = subprocess.run(["bash", str(Path(__file__).resolve().parents[1] / "run.sh"), "copies"],
                          env={"PATH": "/usr/bin:/bin", "PYTHON": str(python)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    installed = (tmp_path / "pip.log").read_text().split()
    assert installed[:3] == ["-m", "pip", "install"] and "pyyaml" in installed and "yaml:pyyaml" not in installed
    assert "matplotlib" in installed and "installing" in done.stderr


def test_the_sketch_distance_is_the_relative_distance_within_a_few_percent():
    generator = torch.Generator().manual_seed(3)
    a = {"w": torch.randn(300, 400, generator=generator), "ln.weight": torch.ones(400)}
    for noise in (0.05, 0.3, 1.0):
        b = {"w": a["w"] + noise * torch.randn(300, 400, generator=generator), "ln.weight": torch.ones(400) * 1.1}
        exact = float((a["w"] - b["w"]).norm() / ((a["w"].norm() ** 2 + b["w"].norm() ** 2) / 2).sqrt())
        files = [type("File", (), {"sketch": sketch_of(state)}) for state in (a, b)]
        assert abs(float(relative_distances(files[:1], files[1:])[0, 0]) / exact - 1) < 0.05


def exact_tail(probabilities, count):
    """P(X >= count) for X a sum of independent Bernoulli(probabilities), by convolution."""
    distribution = np.array([1.0])
    for p in probabilities:
        distribution = np.convolve(distribution, [1 - p, p])
    return distribution[count:].sum()


def test_the_chernoff_bound_is_above_the_exact_tail():
    probabilities = np.random.default_rng(4).uniform(0.1, 0.4, 60)
    mean = probabilities.sum()
    for count in range(int(mean) + 1, 40):
        bound = math.exp(chernoff_log_p(count, mean))
        assert exact_tail(probabilities, count) <= bound < 1
    assert chernoff_log_p(3, mean) == 0


def test_holm_multiplies_the_kth_smallest_p_by_the_tests_left_and_keeps_the_order():
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.5])
    expected = np.array([0.04, 0.09, 0.09, 0.025, 0.5])  # 5 * 0.005, 4 * 0.01, 3 * 0.03, max(2 * 0.04, 0.09), 0.5
    assert np.allclose(np.exp(holm(np.log(p))), expected)


def test_the_false_positive_rate_on_independent_classes_stays_under_its_bounds():
    """Simulated classes of independent hand-ins (seeded): unadjusted p-values below 0.05 for at
    most 5% of pairs, a class with a flagged pair at most ALPHA_SUSPECT of the time; the figures of
    docs/copies.md come from `python3 -m instructors.copies.simulate`."""
    for with_labels in (True, False):
        rates = false_positives(seed=7, classes=30, size=30, questions=300, with_labels=with_labels)
        assert rates["unadjusted_below_0_05"] <= 0.05
        assert rates["classes_flagged"] <= ALPHA_SUSPECT and rates["classes_copy"] <= ALPHA_COPY


@pytest.mark.parametrize("with_labels", [True, False])
def test_a_simulated_copy_with_a_tenth_changed_is_flagged(with_labels):
    generator = np.random.default_rng(8)
    ids, labels = simulated_class(generator, 30, 300)
    changed = generator.random(300) < 0.1
    ids[1] = np.where(changed, generator.integers(1, 200, 300), ids[0])
    _, adjusted = flagged(ids, labels if with_labels else None)
    assert adjusted[0] < math.log10(ALPHA_COPY)  # the first pair of np.triu_indices is (0, 1)
    assert (adjusted[1:] > math.log10(ALPHA_SUSPECT)).all()
