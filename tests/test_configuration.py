"""
The configuration stamp (src/runtime/command_line.py): a run says, and its
parameters carry, every setting that differs from the graded configuration,
each once at the value the run used, so a run that is not the graded one is
never stamped as graded (collect_submission would hand it in) and is written
to smoke/ rather than where the hand-in is collected from. And each number
the command line takes is accepted at its limit and refused one past it,
in one line.
"""

from pathlib import Path

import pytest

from assignment.facts import BLOCK_SIZE
from runtime import command_line
from runtime.seeds import SEED_RANGE


@pytest.fixture(autouse=True)
def smoke_folder(tmp_path, monkeypatch):
    """smoke/ in a temporary folder, not yet made."""
    folder = tmp_path / "smoke"
    monkeypatch.setattr(command_line, "SMOKE_OUT", str(folder))
    return folder


def stage_args(*argv):
    return command_line.parse_args(["--stage", "vanilla_pretrain", *argv])


def test_a_smoke_stage_makes_its_folder_and_a_graded_one_makes_none(smoke_folder, tmp_path):
    """Kills a fresh clone's first SMALL=1 run refused for want of smoke/, and a folder made for a run
    that writes elsewhere."""
    stage_args("--out_dir", str(tmp_path / "elsewhere"), "--small")
    assert not smoke_folder.exists() and not (tmp_path / "elsewhere").exists()
    assert stage_args("--small").writing_params_path == str(smoke_folder / "vanilla.pretrain.params")
    assert smoke_folder.is_dir()


@pytest.mark.parametrize("name, value", [("n_layer", "3"), ("n_head", "4"), ("n_embd", "128"), ("max_epochs", "5"),
                                         ("batch_size", "64"), ("dropout", "0.2"), ("bottleneck_dim", "16"),
                                         ("pretrain_lr", "0.001"), ("finetune_lr", "0.001")])
def test_each_setting_away_from_the_graded_one_is_stamped(name, value):
    args = stage_args(f"--{name}", value)
    assert args.configuration == f"{name}={value}"
    assert args.writing_params_path == str(Path(command_line.SMOKE_OUT) / "vanilla.pretrain.params")


def test_a_size_given_beside_small_is_stamped_once_at_its_value():
    small = "n_layer=2 n_head=2 n_embd=32 max_epochs=1 batch_size=32"
    assert stage_args("--small").configuration == small
    assert stage_args("--small", "--n_layer", "3").configuration == small.replace("n_layer=2", "n_layer=3")
    assert stage_args("--small", "--batch_size", "16").configuration == small.replace("batch_size=32", "batch_size=16")


def parsed(*argv):
    return command_line.parse_args(["--function", "evaluate", "--variant", "perceiver", *argv])


@pytest.mark.parametrize("option, refused, accepted", [
    *[(f"--{name}", "0", "1") for name in ("n_layer", "n_head", "n_embd", "max_epochs", "batch_size",
                                           "eval_batch_size", "checkpoint_every")],
    ("--bottleneck_dim", "0", "1"), ("--bottleneck_dim", str(BLOCK_SIZE + 1), str(BLOCK_SIZE)),
    ("--seed", "-1", "0"), ("--seed", str(SEED_RANGE), str(SEED_RANGE - 1)),
    ("--dropout", "-0.01", "0"), ("--dropout", "1.01", "1"), ("--dropout", "nan", "0.5"),
])
def test_each_number_is_accepted_at_its_limit_and_refused_one_past_it(capsys, option, refused, accepted):
    """Kills a number that reaches the run past its limit (n_head 0 divides by zero, batch_size 0 and
    eval_batch_size 0 end in tracebacks, a bottleneck past the block, a seed numpy refuses, a dropout
    torch refuses), and a limit that refuses its own edge."""
    assert getattr(parsed(option, accepted), option[2:]) == float(accepted)
    with pytest.raises(SystemExit) as exit:
        parsed(option, refused)
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert exit.value.code == 2 and len(errors) == 1 and f"error: argument {option}: {refused} is " in errors[0]
