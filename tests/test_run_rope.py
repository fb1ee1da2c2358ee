"""
The RoPE edition's stages through src/run.py, in-process on a small corpus:
rope_pretrain, rope_finetune_with_pretrain and the evaluations, with the
stages' fast steps and batched decoding; the parameters a RoPE model saves
(no pos_emb, a rope_cache a layer) and a variant that does not match them
refused in one line.
"""

import contextlib
import io

import pytest
import torch

import run
from assignment import facts
from runtime.decoding import predict_places_plain
from runtime.inputs import pretraining_dataset
from submission import GPTConfig, helper

from run_helpers import TINY, inputs, write_corpus  # noqa: F401 (inputs is a fixture)
from runtime_helpers import one_thread

ROPE_STAGES = ("rope_pretrain", "rope_finetune_with_pretrain", "rope_eval_dev_with_pretrain",
               "rope_eval_test_with_pretrain")


@pytest.fixture(scope="module")
def rope_chain(tmp_path_factory):
    """The four RoPE stages run in order with --stage on a small corpus, tiny and for one epoch:
    (data folder, out folder, {stage: (exit status, what it printed)})."""
    tmp = tmp_path_factory.mktemp("rope")
    data, out = write_corpus(tmp / "data"), tmp / "out"
    out.mkdir()
    size = [f"--{name}={value}" for name, value in TINY.items()]
    ran = {}
    with one_thread():
        for stage in ROPE_STAGES:
            argv = [f"--stage={stage}", f"--data_dir={data}", f"--out_dir={out}", f"--experiments_dir={tmp / 'e'}",
                    "--device=cpu", "--seed=0", "--small", "--batch_size=16", *size]
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                ran[stage] = run.main(argv), printed.getvalue()
    return data, out, ran


def test_the_rope_stages_are_the_tables_and_each_runs_and_writes_its_file(rope_chain):
    _, out, ran = rope_chain
    assert tuple(s.name for s in facts.STAGES if s.variant == "rope") == ROPE_STAGES
    for stage in ROPE_STAGES:
        assert ran[stage][0] == 0, stage
        assert (out / facts.GRADED_STAGES[stage].writes).stat().st_size > 0, stage
    assert "Correct:" in ran["rope_eval_dev_with_pretrain"][1]


def test_a_rope_models_parameters_have_a_cache_a_layer_and_no_position_embedding(rope_chain):
    _, out, _ = rope_chain
    state = torch.load(out / "rope.finetune.params", weights_only=True)
    assert "pos_emb" not in state
    assert sorted(k for k in state if k.endswith("rope_cache")) == [f"blocks.{i}.attn.rope_cache"
                                                                    for i in range(TINY["n_layer"])]


def test_the_dev_predictions_are_the_one_at_a_time_loops(rope_chain, single_thread):
    """Kills a batched RoPE decoder that rotates a generated token at its slot rather than its position."""
    data, out, _ = rope_chain
    corpus = pretraining_dataset(str(data / "wiki.txt"))
    model = helper.initialize_rope_model(GPTConfig(corpus.vocab_size, facts.BLOCK_SIZE, **TINY))
    model.load_state_dict(torch.load(out / "rope.finetune.params", weights_only=True))
    questions = [line.split("\t")[0] for line in (data / "birth_dev.tsv").read_text().splitlines()]
    written = (out / "rope.pretrain.dev.predictions").read_text().split("\n")[:-1]
    assert len(written) == len(questions)
    assert written[:8] == predict_places_plain(model, questions[:8], corpus, "cpu")


@pytest.mark.parametrize("variant", ["vanilla", "perceiver"])
def test_rope_parameters_read_as_another_variant_are_refused_in_one_line(rope_chain, tmp_path, capsys, variant):
    data, out, _ = rope_chain
    argv = [f"--function=evaluate", f"--variant={variant}", f"--pretrain_corpus_path={data / 'wiki.txt'}",
            f"--reading_params_path={out / 'rope.finetune.params'}", f"--eval_corpus_path={data / 'birth_dev.tsv'}",
            f"--outputs_path={tmp_path / 'p'}", "--device=cpu", *[f"--{k}={v}" for k, v in TINY.items()]]
    assert run.main(argv) == 1
    assert capsys.readouterr().err.strip().endswith(f"holds rope parameters, but --variant is {variant}")
