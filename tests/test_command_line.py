"""
run.py's command line (src/runtime/command_line.py): the options and
their defaults, a --stage filled in from the stage table (its function,
variant, run name and files, each setting of run.sh's taking its place),
the check that every file a stage reads is there (naming what makes it or
the setting to fix), and the model's size checked before any model is
built. What a run stamps as its configuration: tests/test_configuration.py.
"""

import pytest

from runtime.command_line import model_size, parse_args, stage_inputs_exist
from runtime.inputs import InputError


def staged(stage, *argv):
    return parse_args(["--stage", stage, "--data_dir", "D", "--out_dir", "O", *argv])


def test_an_evaluation_stage_reads_the_corpus_its_params_and_its_questions_and_writes_predictions():
    """Kills a stage filled with another function, variant, run name, input or output."""
    args = staged("perceiver_eval_dev_with_pretrain")
    assert (args.function, args.variant, args.tb_expt_name) == ("evaluate", "perceiver",
                                                                "perceiver_eval_dev_with_pretrain")
    assert (args.pretrain_corpus_path, args.reading_params_path, args.eval_corpus_path, args.outputs_path) == (
        "D/wiki.txt", "O/perceiver.finetune.params", "D/birth_dev.tsv", "O/perceiver.pretrain.dev.predictions")
    assert args.writing_params_path is None


def test_a_finetuning_stage_reads_the_training_questions_and_writes_params():
    """Kills a finetuning stage reading the wrong questions or params, or writing predictions."""
    args = staged("vanilla_finetune_with_pretrain")
    assert (args.function, args.variant) == ("finetune", "vanilla")
    assert (args.pretrain_corpus_path, args.reading_params_path, args.finetune_corpus_path,
            args.writing_params_path) == ("D/wiki.txt", "O/vanilla.pretrain.params", "D/birth_places_train.tsv",
                                          "O/vanilla.finetune.params")
    assert args.outputs_path is None
    scratch = staged("vanilla_finetune_without_pretrain")
    assert (scratch.reading_params_path, scratch.finetune_corpus_path) == (None, "D/birth_places_train.tsv")


def test_a_test_stage_reads_test_file_when_given_and_the_data_folders_questions_otherwise():
    """Kills TEST_FILE ignored, or taken for the questions of a dev stage."""
    assert staged("vanilla_eval_test_with_pretrain").eval_corpus_path == "D/birth_test_inputs.tsv"
    assert staged("vanilla_eval_test_with_pretrain", "--test_file", "T.tsv").eval_corpus_path == "T.tsv"
    assert staged("vanilla_eval_dev_with_pretrain", "--test_file", "T.tsv").eval_corpus_path == "D/birth_dev.tsv"


def test_a_stages_run_name_is_its_own_unless_one_is_given():
    """Kills --tb_expt_name overridden by the stage's name (the run's records would go elsewhere)."""
    assert staged("vanilla_pretrain").tb_expt_name == "vanilla_pretrain"
    assert staged("vanilla_pretrain", "--tb_expt_name", "mine").tb_expt_name == "mine"


def test_the_defaults_are_those_the_docs_give():
    """Kills a default swapped for another: the device, the precision, the folders, the decoding batch,
    the checkpoints' interval (every 500 steps), the seed (drawn, so none) and the graded rates."""
    args = parse_args(["--function", "pretrain", "--variant", "vanilla"])
    assert (args.device, args.precision, args.experiments_dir, args.data_dir, args.out_dir, args.test_file) == (
        "auto", "tf32", "experiments", "data", None, None)
    assert (args.eval_batch_size, args.checkpoint_every, args.seed, args.bottleneck_dim) == (256, 500, None, 32)
    assert (args.pretrain_lr, args.finetune_lr, args.resume, args.compile, args.small) == (6e-3, 6e-4, False,
                                                                                          False, False)
    assert args.backend == "inductor"


def test_compile_is_on_off_and_a_backend_of_the_courses(capsys):
    """Kills --no-compile (the course's 'no-compile') refused or taken as on, a backend not kept, or one that
    torch.compile does not know let through to fail in the middle of a run."""
    base = ["--function", "pretrain", "--variant", "vanilla"]
    assert parse_args(base + ["--compile", "--backend", "aot_eager"]).compile is True
    assert parse_args(base + ["--compile", "--backend=cudagraphs"]).backend == "cudagraphs"
    assert parse_args(base + ["--compile", "--no-compile"]).compile is False
    with pytest.raises(SystemExit) as exit:
        parse_args(base + ["--backend", "tensorrt"])
    assert exit.value.code == 2 and "invalid choice: 'tensorrt'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--function", "pretrain"], ["--variant", "vanilla"], []])
def test_a_function_and_a_variant_are_both_needed_without_a_stage(capsys, argv):
    """Kills a run without a variant (or a function) let through to build a model of neither."""
    with pytest.raises(SystemExit) as exit:
        parse_args(argv)
    assert exit.value.code == 2
    assert "error: --function and --variant are needed (or --stage)" in capsys.readouterr().err


# ---- a stage's input files ------------------------------------------------------------------

@pytest.fixture
def data(tmp_path):
    """A data folder holding wiki.txt and the training and dev questions, an empty out folder."""
    (tmp_path / "data").mkdir()
    for name in ("wiki.txt", "birth_places_train.tsv", "birth_dev.tsv"):
        (tmp_path / "data" / name).write_text("x\n")
    (tmp_path / "out").mkdir()
    return tmp_path


def checked(data, stage, *argv):
    """stage_inputs_exist for `stage` on the fixture's folders: the InputError's message, or None."""
    args = parse_args(["--stage", stage, "--data_dir", str(data / "data"), "--out_dir", str(data / "out"), *argv])
    try:
        stage_inputs_exist(args)
    except InputError as error:
        return str(error)
    return None


def test_a_stage_whose_files_are_all_there_is_let_through(data):
    """Kills a stage refused with every file it reads in place."""
    (data / "out" / "vanilla.finetune.params").write_bytes(b"params")
    (data / "test.tsv").write_text("Where?\n")
    assert checked(data, "vanilla_pretrain") is None
    assert checked(data, "vanilla_eval_dev_with_pretrain") is None
    assert checked(data, "vanilla_eval_test_with_pretrain", "--test_file", str(data / "test.tsv")) is None
    assert stage_inputs_exist(parse_args(["--function", "pretrain", "--variant", "vanilla"])) is None


def test_missing_params_name_the_stage_that_makes_them(data):
    """Kills a missing params file told as a data file, or the wrong stage named."""
    assert checked(data, "perceiver_eval_dev_with_pretrain") == (
        f"perceiver_eval_dev_with_pretrain needs {data}/out/perceiver.finetune.params, which ./run.sh "
        f"perceiver_finetune_with_pretrain makes: run that stage first")


def test_a_missing_test_file_says_to_set_test_file(data):
    """Kills a missing test file told to set DATA_DIR."""
    (data / "out" / "vanilla.model.params").write_bytes(b"params")
    assert checked(data, "vanilla_eval_test_without_pretrain", "--test_file", str(data / "none.tsv")) == (
        f"vanilla_eval_test_without_pretrain needs {data}/none.tsv, which is not there; set TEST_FILE to the "
        f"test questions")


@pytest.mark.parametrize("missing", ["wiki.txt", "birth_places_train.tsv"])
def test_a_missing_data_file_says_to_set_data_dir(data, missing):
    """Kills a missing corpus or question file told to set TEST_FILE, or not told at all."""
    (data / "data" / missing).unlink()
    assert checked(data, "vanilla_finetune_without_pretrain") == (
        f"vanilla_finetune_without_pretrain needs {data}/data/{missing}, which is not there; set DATA_DIR to the "
        f"folder holding the data files (now {data}/data)")


def test_a_folder_in_place_of_a_file_a_stage_reads_is_missing(data):
    """Kills a folder named like an input taken for it (the run would fail later, in a traceback)."""
    (data / "out" / "vanilla.pretrain.params").mkdir()
    assert "./run.sh vanilla_pretrain makes" in checked(data, "vanilla_finetune_with_pretrain")
    (data / "data" / "birth_dev.tsv").unlink()
    (data / "data" / "birth_dev.tsv").mkdir()
    (data / "out" / "vanilla.model.params").write_bytes(b"params")
    assert "set DATA_DIR" in checked(data, "vanilla_eval_dev_without_pretrain")


# ---- the model's size -----------------------------------------------------------------------

def sized(variant, *argv):
    return model_size(parse_args(["--function", "pretrain", "--variant", variant, *argv]))


@pytest.mark.parametrize("n_embd, n_head, fits", [(32, 4, True), (32, 3, False), (30, 4, False), (4, 4, True),
                                                 (3, 4, False)])
def test_the_width_must_be_a_multiple_of_the_heads(n_embd, n_head, fits):
    """Kills a width that the heads do not divide let through to the model (an assertion there), or a
    multiple refused."""
    argv = ("--small", "--n_embd", str(n_embd), "--n_head", str(n_head))
    if fits:
        assert sized("vanilla", *argv) == dict(n_layer=2, n_head=n_head, n_embd=n_embd)
        return
    with pytest.raises(InputError, match=f"^n_embd {n_embd} is not a multiple of n_head {n_head}$"):
        sized("vanilla", *argv)


def test_the_perceiver_needs_two_layers_and_the_vanilla_model_one():
    """Kills a two-layer perceiver (--small's) refused, a one-layer perceiver accepted, or the vanilla
    model held to the perceiver's limit."""
    assert sized("perceiver", "--small")["n_layer"] == 2
    assert sized("vanilla", "--n_layer", "1")["n_layer"] == 1
    with pytest.raises(InputError, match=r"^the perceiver needs n_layer >= 2 \(a down and an up block\)$"):
        sized("perceiver", "--small", "--n_layer", "1")


@pytest.mark.parametrize("option, value, kind", [("--n_layer", "two", "int"), ("--seed", "1.5", "int"),
                                                 ("--dropout", "half", "float"), ("--bottleneck_dim", "", "int")])
def test_a_number_that_is_not_one_is_refused_naming_its_kind(capsys, option, value, kind):
    """Kills argparse's message naming the checking function ('invalid parse value') rather than the
    kind of number the option takes."""
    with pytest.raises(SystemExit) as exit:
        parse_args(["--function", "pretrain", "--variant", "vanilla", option, value])
    assert exit.value.code == 2
    assert f"error: argument {option}: invalid {kind} value: '{value}'" in capsys.readouterr().err
