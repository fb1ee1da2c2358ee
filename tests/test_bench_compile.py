"""
Eager against torch.compile over the stages' real batches
(src/instructors/bench_compile.py), on a tiny model with dynamo's "eager"
backend (graphs captured, nothing compiled to code): the compiled stages keep
one batch shape, the trimmed widths recompile, and every way trains the same
losses.
"""

import re

import pytest
import torch

from instructors import bench_compile
from submission import CharCorruptionDataset, GPT, NameDataset

from runtime_helpers import one_thread

pytestmark = pytest.mark.usefixtures("single_thread")
SHAPE = dict(batch_size=16, learning_rate=6e-4, max_epochs=1)


@pytest.fixture(scope="module")
def names(corpus):
    return NameDataset(corpus.questions, CharCorruptionDataset(corpus.wiki, 64))


def tiny_model(names, tiny_config):
    return lambda: GPT(tiny_config(len(names.stoi), 64, n_layer=2))


STEPS = 12  # 200 questions: an epoch of 13 batches of 16, so no partial batch here


@pytest.fixture(scope="module")
def runs(names, tiny_config):
    """{way: (seconds, losses, graphs)} of STEPS steps of each way, compiled once for both tests."""
    with one_thread():
        return {way: bench_compile.timed_steps(tiny_model(names, tiny_config), names, SHAPE, torch.device("cpu"),
                                               STEPS, "fp32", "eager", 0, options)
                for way, options in bench_compile.WAYS.items()}


def test_compiled_steps_keep_one_shape_and_trimmed_widths_recompile(runs):
    """Kills whole batches left trimmed (a graph a width), a width not made symbolic, or a compiled
    way that trains other numbers than eager (the PAD targets are ignored; measured 2.5e-7 apart at one
    and two threads)."""
    assert [len(runs[way][0]) for way in runs] == [STEPS] * 4
    assert runs["eager"][2] == 0 and runs["compiled, whole batches"][2] == 1
    assert runs["compiled, trimmed widths, dynamic"][2] == 1
    assert runs["compiled, trimmed widths"][2] > 1
    for way in list(bench_compile.WAYS)[1:]:
        assert runs[way][1] == pytest.approx(runs["eager"][1], rel=1e-5)


def test_the_rows_compare_each_compiled_way_with_eager(names, tiny_config, runs, monkeypatch):
    """The rows of each way's first 3 steps, from the runs above: compile_rows asks timed_steps for each
    way in turn, with the model, data and settings it was given (a stand-in hands back those runs)."""
    make_model, device, asked = tiny_model(names, tiny_config), torch.device("cpu"), []

    def stand_in(*args):
        asked.append(args)
        way = next(way for way, options in bench_compile.WAYS.items() if options is args[-1])
        seconds, losses, graphs = runs[way]
        return seconds[:args[4]], losses[:args[4]], graphs
    monkeypatch.setattr(bench_compile, "timed_steps", stand_in)
    rows = bench_compile.compile_rows(make_model, [("finetuning", names, SHAPE)], device, 3, "fp32", "eager", 0)
    assert asked == [(make_model, names, SHAPE, device, 3, "fp32", "eager", 0, options)
                     for options in bench_compile.WAYS.values()]
    assert [row[0].split(",")[0] for row in rows] == ["finetuning step s after the first"] * 3
    for measure, eager, compiled, ratio, check in rows:
        assert ratio == pytest.approx(float(eager) / float(compiled), rel=1e-2)
        assert "graphs" in check and "from eager's" in check
    assert [row[4].split(":")[0] for row in rows] == list(bench_compile.WAYS)[1:]
    assert all(re.search(r"loss \S+ from eager's \(relative\) at the first step", row[4]) for row in rows)
