"""
The demo (src/instructors/demo.py, ./run.sh demo): its options and --quick
form, the world it writes and reads, each row's model, the printed table, a
stopped demo, and the same seed training the same bits.
What the --quick rows show (pretraining beats finetuning alone, the RoPE
model too, the perceiver learns only its training questions) is judged in
test_demo_pretraining.py, test_demo_rope.py and test_demo_perceiver.py,
which train those rows side by side (tests/demo_rows.py).
"""

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assignment.question_files import read_question_file
from instructors import demo
from instructors.worldgen import make_world

from question_file_cases import ACCEPTED, QUESTIONS_ALONE, REFUSED, reader_refusal, refusal
from runtime_helpers import written

REPO = Path(__file__).resolve().parents[1]
RUNS = ('always "', 'finetuned without pretraining', 'pretrained, then finetuned', 'RoPE, pretrained, then finetuned',
        'perceiver (m=24, 3 layers)')
ROW = re.compile(r"^\| (.+?) \| (\d+\.\d)% \((\d+)/(\d+)\) \| (\d+\.\d)% \((\d+)/(\d+)\) \|")


@pytest.mark.parametrize("case", REFUSED)
def test_the_worlds_questions_are_read_by_the_one_reader(tmp_path, case):
    """Kills the demo reading its question files by rules of its own (a BOM kept in the first question, a
    place's spaces kept, a third column or an empty place taken): it reads the file read_question_file
    accepts as that reads it, and refuses each file it refuses with its message."""
    accepted = written(tmp_path, ACCEPTED, "accepted.tsv")
    assert demo.labelled(accepted) == [(line.question, line.place) for line in read_question_file(accepted, True)]
    refused = written(tmp_path, REFUSED[case], "refused.tsv")
    assert refusal(demo.labelled, refused) == reader_refusal(refused)


def test_a_world_of_questions_alone_is_refused(tmp_path):
    """Kills the world's questions read as the file says: questions without places scored against None."""
    alone = written(tmp_path, QUESTIONS_ALONE, "alone.tsv")
    assert refusal(demo.labelled, alone) == reader_refusal(alone)


def test_quick_options_override_defaults_and_explicit_options_override_quick():
    quick = demo.parse_args(["--quick"])
    for name, value in demo.QUICK.items():
        assert getattr(quick, name) == value, name
    assert quick.finetune_lr == demo.DEFAULTS["finetune_lr"]
    full = demo.parse_args([])
    for name, value in demo.DEFAULTS.items():
        assert getattr(full, name) == value, name
    assert demo.parse_args(["--quick", "--n_embd", "48"]).n_embd == 48
    assert full.threads == quick.threads == demo.THREADS == 2  # what docs/demo.md's table was measured with


def test_the_perceiver_row_is_a_perceiver_of_the_options():
    args = demo.parse_args(["--quick", "--perceiver_layers", "4", "--bottleneck", "16"])
    model = demo.new_model(args, 40, "perceiver")
    assert model.perceiver and tuple(model.down_block.C.shape) == (1, 16, args.n_embd)
    assert len(model.blocks) == 2 and all(block.attn.mask.size(-1) == 16 for block in model.blocks)
    assert [(name, pretrained) for name, variant, pretrained, _ in demo.runs(args) if variant == "perceiver"] == [
        ("perceiver (m=16, 4 layers), pretrained, then finetuned", True)]
    assert not demo.new_model(args, 40, "vanilla").perceiver


def test_the_rope_row_is_the_vanilla_model_with_rotated_positions():
    """Kills the RoPE row built as the vanilla model (a learnt position embedding kept) or as another
    depth than the vanilla model's."""
    args = demo.parse_args(["--quick", "--n_layer", "3"])
    rope, vanilla = demo.new_model(args, 40, "rope"), demo.new_model(args, 40, "vanilla")
    assert rope.rope and not vanilla.rope and len(rope.blocks) == len(vanilla.blocks) == 3
    assert any(name.endswith("rope_cache") for name, _ in rope.named_buffers()) and "pos_emb" not in rope.state_dict()
    assert [(variant, pretrained, epochs) for name, variant, pretrained, epochs in demo.runs(args)
            if name.startswith("RoPE")] == [("rope", True, args.finetune_epochs)]


def test_each_row_trains_for_its_own_epochs(monkeypatch):
    """Kills the perceiver pretrained for the vanilla model's epochs (or the vanilla and RoPE models for the
    perceiver's), and a row finetuned for another row's epochs: trained_row with the training recorded."""
    args = demo.parse_args(["--quick", "--pretrain_epochs", "7", "--perceiver_pretrain_epochs", "3"])
    world = demo.World(type("Corpus", (list,), {"vocab_size": 40})(), "questions", [], [])
    trained = []
    monkeypatch.setattr(demo, "train_on", lambda args, model, dataset, epochs, *rest: trained.append((dataset, epochs)))
    monkeypatch.setattr(demo, "score", lambda *unused: (0, 0))
    with contextlib.redirect_stdout(io.StringIO()):
        for run in demo.runs(args):
            demo.trained_row(args, world, run)
    assert trained == [("questions", args.scratch_epochs), (world.corpus, 7), ("questions", args.finetune_epochs),
                       (world.corpus, 7), ("questions", args.finetune_epochs),
                       (world.corpus, 3), ("questions", args.perceiver_finetune_epochs)]


def test_table_has_every_run_with_its_accuracies_and_minutes():
    """format_table on rows of the --quick runs' names (made here: the trained rows are judged in
    test_demo_pretraining.py and its siblings): every row's counts, percent and minutes, '-' where a row has
    no such phase, and the total."""
    args = demo.parse_args(["--quick"])
    rows = [demo.Row('always "Paris" (most frequent training place)', (1, 25), (4, 50), {})]
    for number, (name, _, pretrained, _) in enumerate(demo.runs(args), start=1):
        phases = dict(pretrain=1.25 * number) if pretrained else {}
        rows.append(demo.Row(name, (number, 25), (2 * number + 1, 50), dict(phases, finetune=0.5, evaluate=0.01)))
    table = demo.format_table(rows, world_minutes=0.1)
    lines = [line for line in table.splitlines() if ROW.match(line)]
    assert len(lines) == len(RUNS) == len(rows)
    for line, run, row in zip(lines, RUNS, rows):
        name, dev_pct, dev_correct, dev_total, _, train_correct, train_total = ROW.match(line).groups()
        assert name.startswith(run)
        assert (int(dev_correct), int(dev_total)) == row.dev
        assert (int(train_correct), int(train_total)) == row.train
        assert float(dev_pct) == round(100 * row.dev[0] / row.dev[1], 1)
        assert [cell.strip() for cell in line.split("|")[4:7]] == \
            [f"{row.minutes[phase]:.2f}" if phase in row.minutes else "-" for phase in demo.PHASES]
    total = 0.1 + sum(sum(row.minutes.values()) for row in rows)
    assert re.search(rf"^total: {total:.1f} minutes \(world generation 0\.10\)$", table, re.MULTILINE)


def test_world_is_the_seeded_short_world_of_the_options(tmp_path):
    quick = demo.parse_args(["--quick"])
    world = demo.written_world(quick, tmp_path)
    assert (len(world.questions), len(world.train), len(world.dev)) == (quick.train_people,) * 2 + (quick.dev_people,)
    expected = make_world(0, n_train=quick.train_people, n_dev=quick.dev_people, n_test=0,
                          paraphrases=quick.paraphrases, style="short", name_from_birth_country=quick.name_link)
    for name, text in expected.items():
        assert (tmp_path / name).read_text(encoding="ascii") == text, name


def test_a_stopped_demo_removes_its_temporary_world(tmp_path):
    """SIGTERM during the run: the demo exits 143 and its world folder in $TMPDIR is gone."""
    env = dict(os.environ, TMPDIR=str(tmp_path))
    demo_run = subprocess.Popen([sys.executable, "-m", "instructors.demo", "--quick", "--threads", "1"],
                                cwd=REPO, env=dict(env, PYTHONPATH=str(REPO / "src")), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("demo-world-*/wiki.txt")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(tmp_path.glob("demo-world-*/wiki.txt")), "the demo wrote no world"
        demo_run.send_signal(signal.SIGTERM)
        assert demo_run.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        demo_run.kill()
    assert not list(tmp_path.glob("demo-world-*"))


REPEAT = """
import hashlib, json, sys
from instructors import demo

digests = []
score = demo.score


def score_and_hash(model, pairs, corpus, device):
    weights = b"".join(t.detach().cpu().numpy().tobytes() for t in model.state_dict().values())
    digests.append(hashlib.sha256(weights).hexdigest())
    return score(model, pairs, corpus, device)


demo.score = score_and_hash
args = demo.parse_args(sys.argv[2:] + ["--out_dir", sys.argv[1]])
rows, _ = demo.run_demo(args, sys.argv[1])
world = demo.written_world(args, sys.argv[1])
alone = [demo.trained_row(args, world, run) for run in reversed(demo.runs(args))]
print(" ".join(digests))
print(json.dumps([row.run for row in rows]))
"""
TINY = ["--train_people", "12", "--dev_people", "6", "--paraphrases", "2", "--n_embd", "32", "--n_head", "2",
        "--block_size", "64", "--bottleneck", "16", "--pretrain_epochs", "2", "--perceiver_pretrain_epochs", "2",
        "--finetune_epochs", "2",
        "--scratch_epochs", "2", "--perceiver_finetune_epochs", "2", "--dropout", "0.1", "--threads", "1"]


def test_the_same_seed_trains_every_model_of_the_table_to_the_same_bits_in_another_process(tmp_path):
    """Two processes of the demo's whole pipeline (tiny sizes, with dropout), hashed with different
    PYTHONHASHSEEDs: every model, the perceiver's included, ends with the same parameters; and each row
    trained alone, in the other order, ends with its parameters in the whole table (tests/demo_rows.py
    trains the rows one at a time)."""
    def start(name, hash_seed):
        (tmp_path / name).mkdir()
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"), PYTHONHASHSEED=hash_seed)
        return subprocess.Popen([sys.executable, "-c", REPEAT, str(tmp_path / name), *TINY], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    runs = [start("first", "1"), start("second", "2")]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    lines = [output.strip().splitlines() for output in outputs]
    digests = [printed[-2].split() for printed in lines]
    assert len(digests[0]) == 16 and digests[0] == digests[1], outputs
    whole, alone = digests[0][:8], digests[0][8:]  # a model's digest twice (dev, train); alone in reverse
    assert whole == alone[::-1], outputs
    names = json.loads(lines[0][-1])
    assert names[0].startswith(RUNS[0]) and names[1:] == [run[0] for run in demo.runs(demo.parse_args(TINY))], names
