"""
Bad inputs to src/run.py and run.sh: one clear error line on stderr, exit 1
and untouched outputs for every missing or malformed corpus, parameters
file or output folder, for a run that diverges, for bad training data and a
missing test file or data folder of a stage; the baseline's too. --small is
never the default.

run.py's main runs in this process, a stage's with the options run.sh gives
it (tests/test_run_sh.py checks them); tests/test_run_stages.py runs run.sh
on a missing DATA_DIR, which shows that run.sh passes on run.py's one line
and exit status.

Outputs go to temporary folders, never to src/submission/.
"""

import pytest

import run
from runtime import command_line
from stages import london_baseline

from run_helpers import DATA_FILES, REPO, evaluate_args, finetune_args, folder_state, inputs, run_argv


BAD_INPUTS = {
    "missing pretraining corpus": (finetune_args, dict(pretrain_corpus_path="{inputs}/none.txt"), "not found"),
    "missing finetuning corpus": (finetune_args, dict(finetune_corpus_path="{inputs}/none.tsv"), "not found"),
    "missing evaluation corpus": (evaluate_args, dict(eval_corpus_path="{inputs}/none.tsv"), "not found"),
    "missing params to evaluate": (evaluate_args, dict(reading_params_path="{inputs}/none.params"), "not found"),
    "missing params to finetune": (finetune_args, dict(reading_params_path="{inputs}/none.params"), "not found"),
    "finetuning line without a tab": (finetune_args, dict(finetune_corpus_path="{inputs}/no_tab.tsv"),
                                      "line 2: expected 'question<TAB>place'"),
    "evaluation line without a tab": (evaluate_args, dict(eval_corpus_path="{inputs}/no_tab.tsv"),
                                      "line 2: expected 'question<TAB>place'"),
    "questions with and without labels": (evaluate_args, dict(eval_corpus_path="{inputs}/mixed.tsv"),
                                          "line 2 has a tab, but line 1 has none"),
    "finetuning characters not in the vocabulary": (finetune_args, dict(finetune_corpus_path="{inputs}/unknown_chars.tsv"),
                                                    "line 2: characters not in the pretraining corpus's vocabulary: '#', '9', 'Z'"),
    "question characters not in the vocabulary": (evaluate_args, dict(eval_corpus_path="{inputs}/unknown_chars.tsv"),
                                                  "line 2: characters not in the pretraining corpus's vocabulary: '#', '9', 'Z', 'ë'"),
    "perceiver params for vanilla": (evaluate_args, dict(reading_params_path="{inputs}/perceiver.params"),
                                     "holds perceiver parameters, but --variant is vanilla"),
    "vanilla params for perceiver": (finetune_args, dict(variant="perceiver", reading_params_path="{inputs}/vanilla.params"),
                                     "holds vanilla parameters, but --variant is perceiver"),
    "params of another vocabulary": (evaluate_args, dict(reading_params_path="{inputs}/other_vocab.params"),
                                     "was saved with a vocabulary of"),
    "params of another model size": (finetune_args, dict(reading_params_path="{inputs}/deeper.params"),
                                     "saved from a model of another size (blocks.2."),
    "params of a vocabulary of the same size": (finetune_args, dict(reading_params_path="{inputs}/same_size_vocab.params"),
                                                "was trained with another vocabulary (it differs in 'a', '~')"),
    "not a params file": (evaluate_args, dict(reading_params_path="{inputs}/not_params.params"),
                          "cannot read parameters"),
    "params file cut short": (evaluate_args, dict(reading_params_path="{inputs}/cut_short.params"),
                              "not a PyTorch parameters file, or cut short"),
    "params folder is a file": (finetune_args, dict(writing_params_path="{inputs}/wiki.txt/vanilla.params"),
                                "the folder of --writing_params_path is a file, not a folder"),
    "missing folder for params": (finetune_args, dict(writing_params_path="{out}/none/vanilla.params"),
                                  "the folder of --writing_params_path does not exist"),
    "missing folder for predictions": (evaluate_args, dict(outputs_path="{out}/none/dev.predictions"),
                                       "the folder of --outputs_path does not exist"),
}


def stage_argv(stage, data, out, tmp_path, test_file=None):
    """The options run.sh gives run.py for `stage` with SMALL=1 and these folders."""
    return ["--stage", stage, "--data_dir", str(data), "--test_file", str(test_file or data / "birth_test_inputs.tsv"),
            "--experiments_dir", str(tmp_path / "experiments"), "--device", "cpu", "--out_dir", str(out), "--small"]


def test_a_diverged_run_gives_one_line_and_keeps_the_earlier_parameters(inputs, tmp_path, capsys):
    """Kills NaN parameters saved over good ones (their predictions are all PAD, and decoding falls
    back to the slow loop): a learning rate of 1e30 makes the weights overflow within the epoch.
    --small for its loader without worker processes, which would only cost their start."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept.params").write_bytes(b"earlier parameters")
    before = folder_state(out)
    assert run.main(run_argv(finetune_args(inputs, out, finetune_lr=1e30, batch_size=8)) + ["--small"]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("run.py: error")]
    assert len(errors) == 1 and errors[0].startswith("run.py: error: training diverged: the parameters hold NaN")
    assert folder_state(out) == before


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_gives_one_line_and_touches_nothing(case, inputs, tmp_path, capsys):
    make_args, changes, message = BAD_INPUTS[case]
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept.params").write_bytes(b"earlier parameters")
    (out / "kept.predictions").write_text("earlier predictions\n")
    before = folder_state(out)
    args = make_args(inputs, out, **{k: v.format(inputs=inputs, out=out) for k, v in changes.items()})
    assert run.main(run_argv(args)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("run.py: error: ") and message in err, err
    assert folder_state(out) == before
    assert not (tmp_path / "experiments").exists()


def test_bad_input_of_a_stage_leaves_the_submission_files(inputs, tmp_path, capsys):
    """The same checks hold for a whole stage: bad training data, the earlier params stay."""
    data = tmp_path / "data"
    data.mkdir()
    for name in DATA_FILES:
        (data / name).write_bytes((inputs / name).read_bytes())
    (data / "birth_places_train.tsv").write_bytes((inputs / "no_tab.tsv").read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    (out / "vanilla.model.params").write_bytes(b"earlier parameters")
    assert run.main(stage_argv("vanilla_finetune_without_pretrain", data, out, tmp_path)) == 1
    assert [line for line in capsys.readouterr().err.split("\n") if line.strip() and "SMALL=1" not in line] == \
        [f"run.py: error: {data}/birth_places_train.tsv line 2: expected 'question<TAB>place', "
         f"found no tab: {(inputs / 'no_tab.tsv').read_text().split(chr(10))[1][:70]!r}"]
    assert (out / "vanilla.model.params").read_bytes() == b"earlier parameters"


@pytest.mark.parametrize("missing", ["data folder", "test file"])
def test_a_missing_data_file_names_the_setting_to_fix(tmp_path, missing, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "vanilla.finetune.params").write_bytes(b"earlier parameters")
    if missing == "data folder":
        argv = stage_argv("vanilla_pretrain", tmp_path / "no_data", out, tmp_path)
        expected = f"set DATA_DIR to the folder holding the data files (now {tmp_path / 'no_data'})"
    else:
        argv = stage_argv("vanilla_eval_test_with_pretrain", REPO / "data", out, tmp_path, tmp_path / "none.tsv")
        expected = f"needs {tmp_path / 'none.tsv'}, which is not there; set TEST_FILE to the test questions"
    status, stderr = run.main(argv), capsys.readouterr().err
    lines = [line for line in stderr.split("\n") if line.strip() and "SMALL=1" not in line]
    assert status != 0 and len(lines) == 1 and lines[0].endswith(expected), stderr
    assert (out / "vanilla.finetune.params").read_bytes() == b"earlier parameters"


def test_small_is_never_the_default():
    args = command_line.parse_args(["--function", "pretrain", "--variant", "vanilla"])
    assert not args.small and command_line.model_size(args) == dict(n_layer=4, n_head=8, n_embd=256)
    small = command_line.parse_args(["--function", "pretrain", "--variant", "vanilla", "--small", "--n_embd", "64"])
    assert command_line.model_size(small) == dict(command_line.SMALL_MODEL, n_embd=64)


def test_baseline_rejects_a_line_without_a_tab(inputs, capsys):
    assert london_baseline.main(["--train_path", str(inputs / "no_tab.tsv"), "--dev_path", str(inputs / "birth_dev.tsv")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 2" in err
