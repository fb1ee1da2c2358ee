"""
instructors.agreement, on tiny randomly initialised models saved as the
stages save them (stamped): the fp32 answers compared with a file of the
tool's own fp32 answers differ nowhere and are the model's own, a file with
k answers changed differs in exactly k, the printed line's format with and
without labels, the size read from the stamp or the shapes, and one error
line with exit status 1 for each bad input.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from assignment.facts import BLOCK_SIZE, BOTTLENECK_DIM, GRADED_MODEL
from instructors import agreement
from runtime.command_line import parse_args as run_arguments
from runtime.decoding import predict_places
from runtime.inputs import pretraining_dataset
from runtime.params import stamp, vocabulary_string
from submission import GPT, GPTConfig

pytestmark = pytest.mark.usefixtures("single_thread")

SRC = Path(__file__).resolve().parents[1] / "src"
PEOPLE = [("Ada Lund", "Lisbon"), ("Bo Kahn", "Osaka"), ("Cy Hale", "Quito"), ("Di Ferro", "Perth"),
          ("Ed Cole", "Lagos"), ("Flo Dunn", "Bergen"), ("Gus Ivers", "Brno"), ("Hal Jory", "Leeds")]
SIZES = {"vanilla": dict(n_layer=2, n_head=4, n_embd=16),  # 4 heads, not the graded 8: only the stamp says so
         "perceiver": dict(n_layer=3, n_head=4, n_embd=16, bottleneck_dim=4)}
LINE = re.compile(r"^(vanilla|perceiver), (\d+) questions: (\d+) answers differ \((\d+\.\d)%\)"
                  r"(?:; fp32 right (\d+), (\S+) right (\d+))?$")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A corpus, labelled and unlabelled questions, and stamped parameters of each variant."""
    folder = tmp_path_factory.mktemp("agreement")
    wiki = " ".join(f"Where was {name} born? In {place} ." for name, place in PEOPLE)  # no line break to answer
    (folder / "wiki.txt").write_text(wiki, encoding="utf-8")
    (folder / "dev.tsv").write_text("".join(f"Where was {name} born?\t{place}\n" for name, place in PEOPLE),
                                    encoding="utf-8")
    (folder / "inputs.tsv").write_text("".join(f"Where was {name} born?\n" for name, _ in PEOPLE), encoding="utf-8")
    dataset = pretraining_dataset(str(folder / "wiki.txt"))
    models = {}
    for variant, size in SIZES.items():
        torch.manual_seed(0)
        extra = dict(perceiver=True) if variant == "perceiver" else {}
        model = GPT(GPTConfig(dataset.vocab_size, BLOCK_SIZE, **size, **extra))
        with torch.no_grad():  # weights far from the initial ones, so that the answers differ between questions
            for parameter in model.parameters():
                parameter.normal_(0, 0.5)
        stamp(model, vocabulary_string(dataset), " ".join(f"{name}={value}" for name, value in size.items()))
        torch.save(model.state_dict(), folder / f"{variant}.params")
        models[variant] = model
    return folder, dataset, models


def command(folder, variant="vanilla", questions="dev.tsv", params=None, *extra):
    return ["--params", str(params or folder / f"{variant}.params"), "--variant", variant,
            "--corpus", str(folder / "wiki.txt"), "--questions", str(folder / questions), "--threads", "1", *extra]


def printed(capsys, argv):
    """main(argv)'s exit status, its stdout lines, and its stderr's lines that are not progress bars."""
    threads = torch.get_num_threads()
    try:
        status = agreement.main(argv)
    finally:
        torch.set_num_threads(threads)
    out, err = capsys.readouterr()
    errors = [line for line in err.replace("\r", "\n").split("\n") if line.strip() and "predicting" not in line]
    return status, out.splitlines(), errors


@pytest.mark.parametrize("variant", ["vanilla", "perceiver"])
def test_fp32_answers_are_the_models_own_and_agree_with_themselves(files, tmp_path, capsys, variant):
    folder, dataset, models = files
    written = tmp_path / "fp32.predictions"
    status, out, _ = printed(capsys, command(folder, variant, "dev.tsv", None, "--write", str(written)))
    assert status == 0 and len(out) == 1 and LINE.match(out[0]).group(6) == "bf16"
    questions = [f"Where was {name} born?" for name, _ in PEOPLE]
    own = predict_places(models[variant], questions, dataset, "cpu")
    assert written.read_text(encoding="utf-8").split("\n")[:-1] == own  # the stamp's size, heads included
    assert len(set(own)) > 1  # answers that differ between questions, so a shuffle would show
    status, out, _ = printed(capsys, command(folder, variant, "dev.tsv", None, "--against", str(written)))
    assert status == 0
    assert out == [f"{variant}, {len(PEOPLE)} questions: 0 answers differ (0.0%); fp32 right 0, "
                   f"fp32.predictions right 0"]


def test_a_file_with_k_answers_changed_differs_in_k(files, tmp_path, capsys):
    folder, dataset, models = files
    questions = [f"Where was {name} born?" for name, _ in PEOPLE]
    answers = predict_places(models["vanilla"], questions, dataset, "cpu")
    changed = list(answers)
    for i in (0, 3, 5):
        changed[i] = changed[i] + "x"
    changed[1] = "  " + changed[1] + " "  # spaces around an answer do not count, as in the grader
    against = tmp_path / "changed.predictions"
    against.write_text("".join(line + "\n" for line in changed), encoding="utf-8")
    status, out, _ = printed(capsys, command(folder, "vanilla", "dev.tsv", None, "--against", str(against)))
    assert status == 0 and out == [f"vanilla, 8 questions: 3 answers differ (37.5%); fp32 right 0, "
                                   f"changed.predictions right 0"]


def test_accuracies_count_the_labels_and_are_left_out_without_them(files, tmp_path, capsys):
    folder, _, _ = files
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(place + "\n" for _, place in PEOPLE[:6]) + "Nowhere\nNowhere\n", encoding="utf-8")
    status, out, _ = printed(capsys, command(folder, "vanilla", "dev.tsv", None, "--against", str(labels)))
    found = LINE.match(out[0])
    assert status == 0 and found.group(7) == "6" and found.group(5) == "0"
    assert int(found.group(3)) == 8 and found.group(4) == "100.0"
    status, out, _ = printed(capsys, command(folder, "vanilla", "inputs.tsv", None, "--against", str(labels)))
    assert status == 0 and out == ["vanilla, 8 questions: 8 answers differ (100.0%)"]


def test_the_second_decoding_is_the_stages_own_under_bf16_autocast(files, capsys, monkeypatch):
    folder, _, _ = files
    calls = []

    def spy(*args, **kwargs):
        calls.append(torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu"))
        return predict_places(*args, **kwargs)
    monkeypatch.setattr(agreement, "predict_places", spy)
    status, out, _ = printed(capsys, command(folder))
    assert status == 0 and LINE.match(out[0]) and calls == [False, torch.bfloat16]


def test_the_size_comes_from_the_stamp_or_else_the_shapes(files, tmp_path):
    folder, dataset, models = files
    assert agreement.trained_size(folder / "perceiver.params") == SIZES["perceiver"]
    unstamped = tmp_path / "unstamped.params"
    torch.save(dict(models["perceiver"].state_dict()), unstamped)  # a plain dict: no metadata
    assert agreement.trained_size(unstamped) == dict(SIZES["perceiver"], n_head=GRADED_MODEL["n_head"])
    torch.save(dict(models["vanilla"].state_dict()), unstamped)
    assert agreement.trained_size(unstamped) == dict(SIZES["vanilla"], n_head=GRADED_MODEL["n_head"],
                                                     bottleneck_dim=BOTTLENECK_DIM)
    assert agreement.trained_size(tmp_path / "missing.params")["n_layer"] == GRADED_MODEL["n_layer"]


def test_a_file_without_a_final_newline_and_one_question_a_batch_are_read_as_any_other(files, tmp_path, capsys):
    """Kills the last answer of a prediction file without a final newline dropped, and --batch_size 1
    refused."""
    folder, dataset, models = files
    questions = [f"Where was {name} born?" for name, _ in PEOPLE]
    answers = predict_places(models["vanilla"], questions, dataset, "cpu")
    against = tmp_path / "unended.predictions"
    against.write_text("\n".join(answers[:-1] + ["elsewhere"]), encoding="utf-8")
    status, out, _ = printed(capsys, command(folder, "vanilla", "dev.tsv", None, "--against", str(against),
                                             "--batch_size", "1"))
    assert status == 0 and out == ["vanilla, 8 questions: 1 answers differ (12.5%); fp32 right 0, "
                                   "unended.predictions right 0"]


def test_the_defaults_decode_on_the_cpu_in_run_pys_batches():
    args = agreement.parse_args(["--params", "p", "--variant", "vanilla", "--corpus", "w", "--questions", "q"])
    assert (args.device, args.threads, args.against, args.write) == ("cpu", None, None, None)
    assert args.batch_size == run_arguments(["--function", "evaluate", "--variant", "vanilla"]).eval_batch_size


def bad_inputs(folder, tmp_path):
    (tmp_path / "other_wiki.txt").write_text("Ada Lund was born in Zurich ;\n", encoding="utf-8")
    (tmp_path / "short.predictions").write_text("Lisbon\n", encoding="utf-8")
    (tmp_path / "junk.params").write_bytes(b"not parameters")
    return {
        "missing params": (command(folder, "vanilla", "dev.tsv", tmp_path / "none.params"),
                           "parameters file not found"),
        "junk params": (command(folder, "vanilla", "dev.tsv", tmp_path / "junk.params"), "cannot read parameters"),
        "wrong variant": (command(folder, "perceiver", "dev.tsv", folder / "vanilla.params"),
                          "holds vanilla parameters, but --variant is perceiver"),
        "another vocabulary": (command(folder) + ["--corpus", str(tmp_path / "other_wiki.txt")],
                               "was saved with a vocabulary of"),
        "missing questions": (command(folder, "vanilla", "none.tsv"), "question file not found"),
        "short prediction file": (command(folder) + ["--against", str(tmp_path / "short.predictions")],
                                  "has 1 predictions for 8 questions"),
        "missing prediction file": (command(folder) + ["--against", str(tmp_path / "none")],
                                    "prediction file not found"),
        "no threads": (command(folder) + ["--threads", "0"], "--threads 0"),
        "no batch": (command(folder) + ["--batch_size", "0"], "--batch_size 0: give 1 or more"),
        "write into no folder": (command(folder) + ["--write", str(tmp_path / "none" / "fp32.predictions")],
                                 f"the folder of --write does not exist: {tmp_path / 'none'}"),
        "write onto a folder": (command(folder) + ["--write", str(tmp_path)], "--write is a folder, not a file"),
    }


@pytest.mark.parametrize("case", ["missing params", "junk params", "wrong variant", "another vocabulary",
                                  "missing questions", "short prediction file", "missing prediction file",
                                  "no threads", "no batch", "write into no folder", "write onto a folder"])
def test_a_bad_input_gets_one_line_and_status_1(files, tmp_path, capsys, case):
    folder, _, _ = files
    argv, said = bad_inputs(folder, tmp_path)[case]
    status, out, errors = printed(capsys, argv)
    assert status == 1 and out == []
    assert len(errors) == 1 and errors[0].startswith("agreement: error: ") and said in errors[0], errors


def test_the_module_runs_as_a_command(files, tmp_path):
    folder, _, _ = files
    done = subprocess.run([sys.executable, "-m", "instructors.agreement",
                           *command(folder, "vanilla", "dev.tsv", tmp_path / "none.params")],
                          env=dict(os.environ, PYTHONPATH=str(SRC)), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [f"agreement: error: parameters file not found: {tmp_path / 'none.params'} "
                                        f"(--params)"]
