"""
The probes and judges of this assignment's grading (src/grading/handout/),
tested in-process: the probes run on the reference package (src/submission)
and the judges read plain data, either the probes' answers or answers made
up to be wrong in one way each. The prediction judges are held at their
edges too: files with any line ends, a line more or fewer than the
questions, accuracies and agreements exactly at their thresholds
(hypothesis properties, derandomized so that CI sees the same examples on
every run). (The rest of the suite runs grader.py in other processes, which
a mutation run cannot trace to a function.)
"""

import importlib.util
import math
import os
import sys
import types
from fractions import Fraction
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import submission
from assignment import facts, not_written_yet
from grading import BundleError, NotGraded
from grading.bundle import HiddenBundle, read_labels
from grading.context import TestFailure as Failed
from grading.handout import answers, configs, corpora, models, predictions, spans
from grading.handout import predictions as judges

from grading_helpers import STAGE_FILE, scoring_context
from runtime_helpers import EDGE, joined, line_ends, path_of

ROOT = Path(__file__).resolve().parents[1]

TINY = dict(n_layer=1, n_head=2, n_embd=8, block_size=16, bottleneck_dim=4)


@pytest.fixture
def trainer_kept(monkeypatch):
    """Put back, after the test, the train functions the config probe replaces in the reference."""
    helper = sys.modules[submission.finetune.__module__]
    for owner in (submission, helper):
        monkeypatch.setattr(owner, "train", owner.train)
    monkeypatch.setattr(submission.Trainer, "train", submission.Trainer.train)


class InProcess:
    """A test's ctx whose probes run here, on `sub` (the reference unless given), with canned answers first."""

    def __init__(self, scratch, sub=submission, bundle=None, canned=None, reference=None):
        self.scratch, self.sub, self.bundle = str(scratch), sub, bundle
        self.canned, self.reference, self.calls = canned or {}, reference or {}, []

    def run(self, probe, **kwargs):
        self.calls.append((probe.__name__, kwargs))
        if probe.__name__ in self.canned:
            return self.canned[probe.__name__]
        return probe(self.sub, **kwargs)

    def run_reference(self, probe, **kwargs):
        self.calls.append(("reference " + probe.__name__, kwargs))
        return self.reference[probe.__name__]

    def require_bundle(self):
        if self.bundle is None:
            raise NotGraded("graded on submission")
        return self.bundle


def failure(function, *args, **kwargs):
    """The message of the test failure that function(*args, **kwargs) raises."""
    with pytest.raises(Failed) as caught:
        function(*args, **kwargs)
    return str(caught.value)


# ---- the grader's own corpora ----------------------------------------------------------------

def test_biographies_name_each_person_first_and_ask_their_birthplace(tmp_path):
    corpus_path, names_path, documents = corpora.write_biographies(str(tmp_path))
    corpus = Path(corpus_path).read_text(encoding="utf-8")
    lines = corpus.split("\n")
    assert documents == len(lines) == len(corpora.PEOPLE) + 1 and lines[-1] == ""
    for line, (name, place) in zip(lines, corpora.PEOPLE):
        assert line.startswith(f"{name}. Where was {name} born? In {place}, and {name} lived in ")
    assert lines[0].endswith(f"lived in {corpora.PEOPLE[-1][1]}.")
    assert lines[1].endswith(f"lived in {corpora.PEOPLE[0][1]}.")
    names = Path(names_path).read_text(encoding="utf-8")
    assert names == "".join(f"Where was {name} born?\t{place}\n" for name, place in corpora.PEOPLE)
    assert (corpus_path, names_path) == (str(tmp_path / "wiki.txt"), str(tmp_path / "birth_places_train.tsv"))


def test_the_span_corpus_is_seeded_with_long_and_short_documents(tmp_path):
    path, documents = corpora.write_span_corpus(str(tmp_path), count=240, seed=spans.SPAN_SEED)
    assert Path(path).read_text(encoding="utf-8") == "\n".join(documents)
    assert len(documents) == 240
    long, short = documents[::2], documents[1::2]
    assert all(corpora.LONG_DOCUMENT <= len(d) <= facts.BLOCK_SIZE - 3 for d in long)
    assert all(4 <= len(d) < corpora.LONG_DOCUMENT for d in short)
    assert len({len(d) for d in long}) > 8 and min(len(d) for d in short) < 20
    assert all(d[0].isupper() and d.split(" ")[0].rstrip(",.").lower() in corpora.WORDS for d in documents)
    assert corpora.write_span_corpus(str(tmp_path), count=6, seed=spans.SPAN_SEED)[1] == documents[:6]


def test_span_document_lengths_reach_both_ends_of_their_ranges(tmp_path):
    documents = corpora.write_span_corpus(str(tmp_path), count=2000, seed=spans.SPAN_SEED)[1]
    long, short = [len(d) for d in documents[::2]], [len(d) for d in documents[1::2]]
    assert (min(long), max(long)) == (corpora.LONG_DOCUMENT, facts.BLOCK_SIZE - 3)
    assert (min(short), max(short)) == (4, corpora.LONG_DOCUMENT - 1)
    assert corpora.write_span_corpus(str(tmp_path), count=6, seed=1)[1] != documents[:6]


# ---- failures in student code, as data ---------------------------------------------------------

def test_an_unwritten_function_is_named_with_its_part():
    assert not_written_yet.part_of("finetune") == "part (c and f)"
    assert str(not_written_yet.unwritten("pretrain", "returned None")) == \
        "part (f): pretrain returned None: it is not written yet"
    assert not_written_yet.written(0, "pretrain") == 0
    with pytest.raises(not_written_yet.PartFailure, match=r"^part \(g\): initialize_perceiver_model returned None"):
        not_written_yet.written(None, "initialize_perceiver_model")


@pytest.mark.parametrize("error, line", [
    (ValueError(), "ValueError"),
    (RuntimeError("  \n"), "RuntimeError"),
    (RuntimeError("first\nsecond"), "RuntimeError: first"),
    (OSError("x" * 300), "OSError: " + "x" * 200),
])
def test_an_error_is_told_in_one_line_even_without_a_message(error, line):
    assert not_written_yet.error_line(error) == line


def student_package(tmp_path):
    """A package whose functions, named as the handout's, raise NotImplementedError; imported as a module object."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .helper import finetune, pretrain, unknown\n")
    (package / "helper.py").write_text("def finetune():\n    train()\n\n\n"
                                       "def train():\n    raise NotImplementedError\n\n\n"
                                       "def pretrain():\n    inner()\n\n\n"
                                       "def inner():\n    raise NotImplementedError\n\n\n"
                                       "def unknown():\n    raise NotImplementedError\n\n\n"
                                       "class DownProjectBlock:\n"
                                       "    def forward(self):\n        raise NotImplementedError\n")
    spec = importlib.util.spec_from_file_location("pkg_under_test", package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["pkg_under_test"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["pkg_under_test"], sys.modules["pkg_under_test.helper"]
    return module


def test_the_unwritten_function_is_the_innermost_student_function_of_the_package(tmp_path):
    sub = student_package(tmp_path)
    package_dir = str(tmp_path / "pkg")
    for call, innermost in ((sub.pretrain, "pretrain"), (sub.finetune, "train"),
                            (sub.helper.DownProjectBlock().forward, "DownProjectBlock.forward")):
        with pytest.raises(NotImplementedError) as caught:
            call()
        assert not_written_yet.unimplemented_function(caught.value, package_dir) == innermost
        assert not_written_yet.unimplemented_function(caught.value, str(tmp_path / "elsewhere")) is None
        assert not_written_yet.unimplemented_function(caught.value) == innermost
    with pytest.raises(NotImplementedError) as caught:
        sub.unknown()
    assert not_written_yet.unimplemented_function(caught.value, package_dir) is None


def test_a_loader_workers_traceback_text_names_the_function():
    error = NotImplementedError("Caught NotImplementedError in DataLoader worker process 0.\n"
                                "  File \"dataset.py\", line 9, in __getitem__\n    raise NotImplementedError\n")
    assert not_written_yet.unimplemented_function(error) == "CharCorruptionDataset.__getitem__"
    assert not_written_yet.unimplemented_line(error) == ("part (e): CharCorruptionDataset.__getitem__ raises "
                                                   "NotImplementedError: it is not written yet")
    assert not_written_yet.unimplemented_line(NotImplementedError("elsewhere")) == \
        "some of your code raises NotImplementedError: it is not written yet"


def raised_outside(tmp_path, source, call):
    """The NotImplementedError that `call`, a function of `source` compiled as a file outside every package
    (tmp_path/elsewhere.py), raises."""
    namespace = {}
    exec(compile(source, str(tmp_path / "elsewhere.py"), "exec"), namespace)
    with pytest.raises(NotImplementedError) as caught:
        eval(call, namespace)
    return caught.value


def test_a_function_of_a_student_functions_name_outside_the_package_is_not_named(tmp_path):
    """Kills the package's folder not passed on to unimplemented_function (by unimplemented_line and
    forward_failure): a frame of another file whose function has a student function's name is not the student's."""
    error = raised_outside(tmp_path, "def pretrain():\n    raise NotImplementedError\n", "pretrain()")
    package_dir = os.path.dirname(os.path.abspath(submission.__file__))
    assert not_written_yet.unimplemented_line(error) == \
        "part (f): pretrain raises NotImplementedError: it is not written yet"
    assert not_written_yet.unimplemented_line(error, package_dir) == \
        "some of your code raises NotImplementedError: it is not written yet"
    error = raised_outside(tmp_path, "class UpProjectBlock:\n    def forward(self):\n        raise NotImplementedError\n",
                           "UpProjectBlock().forward()")
    assert str(models.forward_failure(error, submission, "forward pass")) == \
        "part (g): the perceiver's forward pass at block size raises NotImplementedError"


def test_a_python_without_co_qualname_names_the_function_by_co_name(monkeypatch):
    """Kills the fallback to co_name lost (Python before 3.11 has no co_qualname)."""
    code = types.SimpleNamespace(co_name="pretrain", co_filename=os.path.abspath(submission.__file__))
    monkeypatch.setattr(not_written_yet.traceback, "walk_tb", lambda tb: [(types.SimpleNamespace(f_code=code), 1)])
    assert not_written_yet.unimplemented_function(NotImplementedError()) == "pretrain"


def test_reported_turns_unwritten_code_into_one_line(tmp_path):
    sub = student_package(tmp_path)

    def probe_pretrain(sub, twice):
        return {"twice": 2 * twice} if twice else sub.pretrain()

    run = not_written_yet.reported(probe_pretrain)
    assert run.__name__ == "probe_pretrain"
    assert run(sub, twice=3) == {"value": {"twice": 6}}
    failed = run(sub, twice=0)
    assert failed["failure"] == "part (f): pretrain raises NotImplementedError: it is not written yet"
    assert "NotImplementedError" in failed["traceback"] and "probe_pretrain" not in failed["traceback"]
    named = not_written_yet.reported(lambda sub: sub.unknown())
    assert named(sub)["failure"] == "some of your code raises NotImplementedError: it is not written yet"
    sub.helper.unknown.__code__ = sub.helper.unknown.__code__.replace(co_name="pretrain", co_qualname="pretrain")
    assert named(sub)["failure"] == "part (f): pretrain raises NotImplementedError: it is not written yet"
    refused = not_written_yet.reported(lambda sub: not_written_yet.written(None, "train"))(sub)
    assert refused == {"failure": "part (c): train returned None: it is not written yet", "traceback": ""}


def test_ids_and_plain_values():
    assert spans.ids(torch.tensor([3, 1])) == [3, 1] and spans.ids((2.0, 5)) == [2, 5]
    assert all(type(v) is int for v in spans.ids(torch.tensor([3, 1])))
    assert configs.plain((0.9, [1, None], True, "x")) == [0.9, [1, None], True, "x"]
    assert configs.plain({"a": 1}) == "{'a': 1}"


# ---- models, weights and fingerprints ----------------------------------------------------------

def test_build_model_uses_the_helpers_only_where_asked():
    vanilla, how = models.build_model(submission, "vanilla", 10, TINY)
    assert type(vanilla) is submission.GPT and vanilla.get_block_size() == 16 and how is None
    assert sum(p.numel() for p in vanilla.parameters()) == sum(
        p.numel() for p in submission.GPT(submission.GPTConfig(10, 16, n_layer=1, n_head=2, n_embd=8)).parameters())
    fake = types.SimpleNamespace(GPTConfig=submission.GPTConfig, GPT=submission.GPT,
                                 initialize_vanilla_model=lambda mconf: None,
                                 initialize_perceiver_model=lambda mconf, bottleneck_dim: ("perceiver", bottleneck_dim))
    assert models.build_model(fake, "perceiver", 10, TINY) == (("perceiver", 4), None)
    assert type(models.build_model(fake, "vanilla", 10, TINY)[0]) is submission.GPT
    with pytest.raises(not_written_yet.PartFailure, match=r"part \(c\): initialize_vanilla_model returned None"):
        models.build_model(fake, "vanilla", 10, TINY, helper=True)
    fake.initialize_perceiver_model = lambda mconf, bottleneck_dim: None
    with pytest.raises(not_written_yet.PartFailure, match=r"part \(g\): initialize_perceiver_model"):
        models.build_model(fake, "perceiver", 10, TINY)


def test_a_changed_gpt_constructor_is_built_the_submissions_own_way():
    class Widened(submission.GPT):
        def __init__(self, config, extra):
            super().__init__(config)
            self.extra = extra
    fake = types.SimpleNamespace(GPTConfig=submission.GPTConfig, GPT=Widened,
                                 initialize_vanilla_model=lambda mconf: Widened(mconf, "own"))
    model, how = models.build_model(fake, "vanilla", 10, TINY)
    assert model.extra == "own" and model.get_block_size() == 16
    assert how.startswith("the model was built with initialize_vanilla_model, because GPT(config) raised "
                          "TypeError: ") and "extra" in how
    fake.initialize_vanilla_model = lambda mconf: None
    with pytest.raises(TypeError, match="extra"):
        models.build_model(fake, "vanilla", 10, TINY)


def test_any_error_of_the_gpt_constructor_tries_the_submissions_own_way():
    """Kills the fallback tried for a TypeError only: a constructor that reads a setting the grader's
    config lacks raises AttributeError."""
    class Reading(submission.GPT):
        def __init__(self, config):
            self.norm_first = config.norm_first
            super().__init__(config)

    def own(mconf):
        mconf.norm_first = True
        return Reading(mconf)
    fake = types.SimpleNamespace(GPTConfig=submission.GPTConfig, GPT=Reading, initialize_vanilla_model=own)
    model, how = models.build_model(fake, "vanilla", 10, TINY)
    assert model.norm_first is True and how.startswith("the model was built with initialize_vanilla_model, because "
                                                       "GPT(config) raised AttributeError: ")


def test_refused_training_raises_at_every_entry_and_gives_back_train(trainer_kept):
    own = submission.train, submission.Trainer.train
    helper = sys.modules[submission.finetune.__module__]
    assert configs.refuse_training(submission) == own
    for call in (submission.train, helper.train, submission.Trainer.train):
        with pytest.raises(configs.TrainsItself):
            call(None, "x", None)


def tiny_trainer(ckpt_path=None):
    """A tiny GPT and a real Trainer of the reference on three names, as finetune() would set them up."""
    torch.manual_seed(0)
    corpus = "Ada. Where was Ada born? In Lima.\nBo. Where was Bo born? In Oslo.\n"
    pretraining = submission.CharCorruptionDataset(corpus, 32)
    names = submission.NameDataset("Where was Ada born?\tLima\nWhere was Bo born?\tOslo\n", pretraining)
    model = submission.GPT(submission.GPTConfig(pretraining.vocab_size, 32, n_layer=1, n_head=2, n_embd=8))
    config = submission.TrainerConfig(max_epochs=3, batch_size=2, learning_rate=1e-2, num_workers=4,
                                      ckpt_path=ckpt_path)
    return model, submission.Trainer(model, names, None, config)


def test_check_train_runs_the_submissions_trainer_and_reads_what_train_left(tmp_path, monkeypatch, trainer_kept):
    monkeypatch.chdir(tmp_path)
    model, trainer = tiny_trainer()
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    configs.check_train(submission.train, submission.Trainer.train, model, trainer)
    assert (trainer.config.max_epochs, trainer.config.num_workers, trainer.epoch) == (1, 0, 0)
    saved = torch.load("written.params", weights_only=True)
    assert set(saved) == set(before) and not all(torch.equal(saved[n], before[n]) for n in before)


def test_train_may_save_through_the_trainers_checkpoint(tmp_path, monkeypatch, trainer_kept):
    monkeypatch.chdir(tmp_path)
    model, trainer = tiny_trainer()

    def through_the_trainer(m, path, t):
        t.config.ckpt_path = path
        t.train()
    configs.check_train(through_the_trainer, submission.Trainer.train, model, trainer)
    assert set(torch.load("written.params", weights_only=True)) == set(model.state_dict())


def test_check_train_passes_on_the_arguments_train_gives_trainer_train(tmp_path, monkeypatch):
    """Kills the counting wrapper dropping trainer.train()'s positional or keyword arguments."""
    monkeypatch.chdir(tmp_path)
    model, got = torch.nn.Linear(2, 2), []

    class Trainer:
        config = types.SimpleNamespace(max_epochs=3, num_workers=4)

    def train(m, path, t):
        t.train(1, key=2)
        torch.save(m.state_dict(), path)
    configs.check_train(train, lambda self, *args, **kwargs: got.append((args, kwargs)), model, Trainer())
    assert got == [((1,), {"key": 2})]


def test_check_train_names_what_train_does_wrong(tmp_path, monkeypatch, trainer_kept):
    monkeypatch.chdir(tmp_path)

    def saves_first(m, path, t):
        torch.save(m.state_dict(), path)
        t.train()

    def saves_weights_only(m, path, t):
        t.train()
        torch.save({"weight": m.head.weight}, path)
    cases = {"^part \\(c\\): train never calls trainer.train\\(\\): it is not written yet$": lambda m, path, t: None,
             "^part \\(c\\): train saved nothing to writing_params_path: it is not written yet$":
                 lambda m, path, t: t.train(),
             "^part \\(c\\): train saved something other than the model's state_dict$": saves_weights_only,
             "^part \\(c\\): the parameters train saved are not the trained model's: save them after "
             "trainer.train\\(\\) returns$": saves_first}
    for told, train in cases.items():
        for leftover in tmp_path.glob("*.params"):
            leftover.unlink()
        model, trainer = tiny_trainer()
        with pytest.raises(not_written_yet.PartFailure, match=told):
            configs.check_train(train, submission.Trainer.train, model, trainer)


class Planted:
    """An object whose unpickling makes a folder: code run by loading a saved file."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.mkdir, (self.path,)


def test_check_train_never_runs_code_stored_in_the_saved_file(tmp_path, monkeypatch, trainer_kept):
    monkeypatch.chdir(tmp_path)
    planted = str(tmp_path / "planted")

    def saves_code(m, path, t):
        t.train()
        torch.save(Planted(planted), path)
    model, trainer = tiny_trainer()
    with pytest.raises(Exception):
        configs.check_train(saves_code, submission.Trainer.train, model, trainer)
    assert not os.path.exists(planted)


def tiny_gpt(seed=0, vocab_size=12, perceiver=False):
    torch.manual_seed(seed)
    mconf = submission.GPTConfig(vocab_size, 16, n_layer=2, n_head=2, n_embd=8)
    return submission.initialize_perceiver_model(mconf, 4) if perceiver else submission.GPT(mconf)


def test_set_weights_depends_on_the_names_only():
    a, b = tiny_gpt(0), tiny_gpt(1)
    models.set_weights(a)
    models.set_weights(b)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    norms = [m.weight.detach() for m in a.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert norms and all(0.5 < float(w.mean()) < 1.5 and float(w.std()) > 0.01 for w in norms)
    layer_norm_weights = [m.weight for m in a.modules() if isinstance(m, torch.nn.LayerNorm)]
    others = [p.detach() for p in a.parameters() if not any(p is w for w in layer_norm_weights)]
    assert all(float(p.abs().max()) < 0.5 and float(p.std()) > 0.01 for p in others if p.numel() > 1)
    first, second = others[0], others[1]
    assert not torch.equal(first.flatten()[:4], second.flatten()[:4])


class Spy(torch.nn.Module):
    """A model that records the blocks it is given; its logits are the tokens' embeddings."""

    def __init__(self, block=16, tied=False):
        super().__init__()
        self.block, self.seen = block, []
        self.embed = torch.nn.Embedding(40, 10)
        self.head = torch.nn.Linear(10, 10)
        if tied:
            self.again = self.head
        self.norm = torch.nn.LayerNorm(10)

    def get_block_size(self):
        return self.block

    def forward(self, idx):
        self.seen.append(idx.tolist()[0])
        return self.head(self.norm(self.embed(idx))), None


def test_the_fingerprint_changes_the_block_from_each_causality_position():
    spy = Spy(block=64)
    spy.train()
    found = models.fingerprint(spy, 40, seed=3)
    assert not spy.training
    base, *changed = spy.seen
    assert len(changed) == 2 and all(len(block) == 64 for block in spy.seen)  # only positions 10 and 40 fit
    assert all(2 <= t < 40 for block in spy.seen for t in block) and len(set(base)) > 10
    assert min(base) == 2 and min(t for j, block in zip(models.CAUSALITY_POSITIONS, changed) for t in block[j:]) == 2
    for j, block in zip(models.CAUSALITY_POSITIONS, changed):
        assert block[:j] == base[:j] and block[j:] != base[j:]
    assert len(found["logits"]) == 3 and len(found["logits"][0]) == 64
    assert all(len(row) == models.LOGIT_COLUMNS for row in found["logits"][0])
    assert found["parameters"] == [[n, list(p.shape)] for n, p in spy.named_parameters()]
    assert found["shared"] == [] and models.fingerprint(Spy(block=64), 40, seed=4)["logits"] != found["logits"]
    assert models.fingerprint(Spy(tied=True), 40, 3)["shared"] == [["again.weight", "head.weight"],
                                                                   ["again.bias", "head.bias"]]
    at_a_position = Spy(block=40)
    assert len(models.fingerprint(at_a_position, 40, seed=3)["logits"]) == 2 and len(at_a_position.seen) == 2
    again = Spy(block=64)
    assert models.fingerprint(again, 40, seed=3) == found and again.seen == spy.seen


def test_module_shapes_reports_sequence_lengths_and_removes_its_hooks():
    model = tiny_gpt(perceiver=True)
    logits, seen = models.module_shapes(model, torch.zeros(1, 16, dtype=torch.long), 8)
    assert logits.shape == (1, 16, 12)
    assert {"inputs": [16], "outputs": [4]} in seen or any(s["outputs"] == [4] and 16 in s["inputs"] for s in seen)
    assert any(s["inputs"] == [16] and s["outputs"] == [16] for s in seen)
    assert all(not m._forward_hooks for m in model.modules())
    assert all(isinstance(n, int) for s in seen for n in s["inputs"] + s["outputs"])


class Pair(torch.nn.Module):
    """A block whose output is a tuple: the sequence and its first two positions."""

    def forward(self, x):
        return x, x[:, :2]


def test_module_shapes_reads_every_sequence_of_a_tuple_output():
    _, seen = models.module_shapes(torch.nn.Sequential(Pair()), torch.zeros(1, 5, 3), 3)
    assert {"inputs": [5], "outputs": [5, 2]} in seen


class Cross(torch.nn.Module):
    """A block that attends from its keyword input `latents` to `x`, as a down block may be called."""

    def forward(self, x, latents):
        return latents + x.mean(dim=1, keepdim=True)


class Keyed(torch.nn.Module):
    """A model that passes its block's latents by keyword."""

    def __init__(self):
        super().__init__()
        self.cross = Cross()

    def forward(self, x):
        return self.cross(x, latents=x[:, :2]), None


def test_module_shapes_reads_inputs_given_by_keyword():
    """Kills a block's keyword inputs left out of what it was called with."""
    _, seen = models.module_shapes(Keyed(), torch.zeros(1, 5, 3), 3)
    assert {"inputs": [5, 2], "outputs": [2]} in seen


def test_forward_failure_names_the_error_and_where():
    try:
        submission.GPT.forward(None, None)
    except Exception as error:
        raised = error
    failed = models.forward_failure(raised, submission, "forward pass")
    first_line = str(raised).splitlines()[0]
    assert str(failed) == ("part (g): the perceiver's forward pass at block size raises AttributeError: "
                           f"{first_line}") and first_line
    try:
        submission.model.UpProjectBlock.forward(None, None, None)
    except Exception as error:
        raised = error
    assert str(models.forward_failure(raised, submission, "forward pass")).endswith(" (in UpProjectBlock.forward)")
    assert str(models.forward_failure(ValueError(), submission, "backward pass")) == \
        "part (g): the perceiver's backward pass at block size raises ValueError"


def test_vocabulary_numbers_the_characters_in_order():
    vocabulary = predictions.Vocabulary("ab?")
    assert vocabulary.itos == {0: "a", 1: "b", 2: "?"} and vocabulary.stoi == {"a": 0, "b": 1, "?": 2}
    assert (vocabulary.PAD_CHAR, vocabulary.MASK_CHAR) == (facts.PAD_CHAR, facts.MASK_CHAR)


# ---- judging plain data --------------------------------------------------------------------------

def test_answered_gives_the_value_or_fails_with_the_line_and_traceback():
    assert answers.answered({"value": 0}) == 0
    assert failure(answers.answered, {"oops": 1}) == "the probe's answer is malformed"
    assert failure(answers.answered, {"failure": "part (c): x", "traceback": ""}) == "part (c): x"
    assert failure(answers.answered, {"failure": "part (c): x", "traceback": "Trace"}) == "part (c): x\nTrace"


def test_same_setting_compares_kinds_and_numbers():
    assert configs.same_setting(True, True) and configs.same_setting(1, True) and not configs.same_setting(0, True)
    assert not configs.same_setting("True", True) and not configs.same_setting(None, False)
    assert configs.same_setting([0.9, 0.95], (0.9, 0.95)) and not configs.same_setting([0.9], (0.9, 0.95))
    assert not configs.same_setting((0.9, 0.95), (0.9, 0.95)) and not configs.same_setting([0.9, 0.9], (0.9, 0.95))
    assert configs.same_setting(6e-4 * (1 + 1e-12), 6e-4) and not configs.same_setting(6.1e-4, 6e-4)
    assert not configs.same_setting(6e-4 * (1 + 1e-6), 6e-4)  # equal but for float rounding, nothing looser
    assert configs.same_setting(256, 256.0) and not configs.same_setting(True, 1) and not configs.same_setting("1", 1)


def test_the_reference_configs_pass(tmp_path, monkeypatch, trainer_kept):
    monkeypatch.chdir(tmp_path)
    ctx = InProcess(tmp_path)
    configs.judge_configs(ctx, "vanilla", ["finetune_without_pretraining"], trains=True)
    configs.judge_configs(ctx, "vanilla", ["pretrain", "finetune_with_pretraining"])
    names = [name for name, _ in ctx.calls]
    assert names == ["trainer_configs", "trainer_configs"]
    assert ctx.calls[0][1]["block_size"] == 64 and ctx.calls[0][1]["trains"] is True
    assert ctx.calls[0][1]["variant"] == "vanilla"
    assert ctx.calls[1][1]["stages"] == ["pretrain", "finetune_with_pretraining"]


def test_train_runs_once_on_the_first_stages_trainer(tmp_path, monkeypatch, trainer_kept):
    """Kills train() checked on every stage's trainer when asked for (it trains each time)."""
    monkeypatch.chdir(tmp_path)
    checked = []
    monkeypatch.setattr(configs, "check_train", lambda train, trainer_train, model, trainer: checked.append(trainer))
    corpus_path, names_path, _ = corpora.write_biographies(str(tmp_path))
    observed = answers.answered(configs.trainer_configs(
        submission, corpus_path=corpus_path, names_path=names_path, block_size=64, variant="vanilla",
        stages=["finetune_without_pretraining", "pretrain"], trains=True))
    assert len(checked) == 1 and type(checked[0].train_dataset).__name__ == "NameDataset"
    assert list(observed) == ["finetune_without_pretraining", "pretrain"]


def observed_configs(documents=13, block_size=64, **changes):
    """What trainer_configs reports for the reference's finetuning without pretraining, with `changes`."""
    config = dict(facts.GRADED_TRAINING["finetune_without_pretraining"], **facts.TRAINER_DEFAULTS,
                  final_tokens=200 * documents * block_size)
    config["betas"] = list(config["betas"])
    seen = {"config": {field: config[field] for field in configs.CONFIG_FIELDS}, "loaded": None, "built": None,
            "train_dataset": "NameDataset"}
    for key, value in changes.items():
        (seen if key in seen else seen["config"])[key] = value
    return {"value": {"finetune_without_pretraining": seen}}


def test_each_wrong_setting_of_a_config_is_named(tmp_path):
    def judged(**changes):
        ctx = InProcess(tmp_path, canned={"trainer_configs": observed_configs(**changes)})
        return configs.judge_configs(ctx, "vanilla", ["finetune_without_pretraining"])
    assert judged() is None
    assert failure(judged, max_epochs=10, weight_decay=0.0) == (
        "vanilla model: finetune_without_pretraining: max_epochs is 10, expected 75; "
        "finetune_without_pretraining: weight_decay is 0.0, expected 0.1")
    assert failure(judged, final_tokens=200 * 12 * 64).endswith("final_tokens is 153600, expected 166400")
    assert failure(judged, train_dataset="CharCorruptionDataset") == (
        "vanilla model: finetune_without_pretraining: the trainer trains on a CharCorruptionDataset, "
        "expected a NameDataset")
    assert failure(judged, loaded=False).endswith(
        "the model does not hold the parameters read from reading_params_path")
    assert judged(loaded=True) is None
    assert judged(built="the model was built with initialize_vanilla_model") == \
        "the model was built with initialize_vanilla_model"


def test_problems_of_every_stage_are_named(tmp_path):
    first, second = observed_configs(max_epochs=1)["value"], observed_configs(batch_size=1)["value"]
    observed = {"value": {"pretrain": first["finetune_without_pretraining"],
                          "finetune_with_pretraining": second["finetune_without_pretraining"]}}
    told = failure(configs.judge_configs, InProcess(tmp_path, canned={"trainer_configs": observed}), "perceiver",
                   ["pretrain", "finetune_with_pretraining"])
    assert told.startswith("perceiver model: pretrain: max_epochs is 1, expected 650; ")
    assert "finetune_with_pretraining: batch_size is 1, expected 256" in told


def test_causal_drift_is_the_largest_change_before_each_position():
    base = [[[1.0, 2.0]] * 128]
    changed = [[[1.0, 2.0]] * 9 + [[1.0, 2.5]] + [[9.0, 9.0]] * 118,
               [[1.0, 1.75]] + [[1.0, 2.0]] * 39 + [[9.0, 9.0]] * 88,
               [[1.0, 2.0]] * 99 + [[1.0, 2.125]] + [[9.0, 9.0]] * 28]
    assert models.causal_drift(base + changed) == [(10, 0.5), (40, 0.25), (100, 0.125)]


def fingerprinted(shared=(), parameters=(("w", [2, 3]),), logits=((1.0, 2.0),)):
    return {"shared": [list(s) for s in shared], "parameters": [list(p) for p in parameters],
            "logits": [[list(row) for row in logits]]}


def test_fingerprint_differences_name_sharing_shapes_and_logits():
    want = fingerprinted()
    assert models.fingerprint_differences(fingerprinted(), want) == []
    assert models.fingerprint_differences(fingerprinted(logits=((1.0, 2.0 + 9e-5),)), want) == []
    at_zero = fingerprinted(logits=((0.0, 2.0),))
    assert models.fingerprint_differences(fingerprinted(logits=((1e-4, 2.0),)), at_zero) == []
    assert models.fingerprint_differences(fingerprinted(logits=((1.0, 2.0 + 2e-4),)), want) == [
        "with the same weights the logits differ from the reference's by 0.0002"]
    assert models.fingerprint_differences(fingerprinted(logits=((1.0 - 3e-4, 2.0),)), want) == [
        "with the same weights the logits differ from the reference's by 0.0003"]
    shared = [("b.w", "a.w"), ("c.w", "a.w"), ("d.w", "a.w"), ("e.w", "a.w")]
    assert models.fingerprint_differences(fingerprinted(shared=shared), want) == [
        "modules are shared between blocks (b.w is a.w; c.w is a.w; d.w is a.w): the reference has a module "
        "of its own in each block"]
    wrong = fingerprinted(parameters=[("w", [3, 2])] + [(f"x{i}", [1]) for i in range(7)])
    assert models.fingerprint_differences(wrong, want) == [
        "parameters differ from the reference's: w: [3, 2] instead of [2, 3]; x0: [1] instead of nothing; "
        "x1: [1] instead of nothing; x2: [1] instead of nothing; x3: [1] instead of nothing; "
        "x4: [1] instead of nothing"]
    assert models.fingerprint_differences(fingerprinted(parameters=()), want) == [
        "parameters differ from the reference's: w: missing instead of [2, 3]"]


def test_xavier_bounds_of_a_latent_matrix():
    assert models.xavier_bounds([32, 256]) == (math.sqrt(6 / 288), math.sqrt(6 / 288))
    wide, named = models.xavier_bounds([1, 32, 256])
    assert wide == pytest.approx(math.sqrt(6 / (32 * 256 + 256))) and named == math.sqrt(6 / 288)
    assert models.xavier_bounds([2, 3, 4, 5])[0] == pytest.approx(math.sqrt(6 / (3 * 20 + 2 * 20)))


def test_the_reference_perceiver_passes_its_anatomy():
    anatomy = answers.answered(models.perceiver_anatomy(submission, vocab_size=256, seed=models.FINGERPRINT_SEED))
    models.judge_perceiver(anatomy)
    models.judge_perceiver_as_specified(anatomy)  # causal as observed: in eval mode, without dropout's noise
    assert anatomy["drift"] == [0.0] * len(models.CAUSALITY_POSITIONS)
    assert anatomy["down"] and anatomy["up"] and anatomy["logits_length"] == 128
    assert len(anatomy["latents"]) == 1 and anatomy["latents"][0]["grad"]


def anatomy(**changes):
    bound = math.sqrt(6 / 288)
    good = {"latents": [{"name": "C", "shape": [32, 256], "max": bound * 0.999, "std": bound * 0.577, "grad": True}],
            "down": True, "up": True, "logits_length": 128, "drift": [0.0, 1e-4, 0.0], "latents_move_logits": 0.1}
    for key, value in changes.items():
        if key in good:
            good[key] = value
        else:
            good["latents"][0][key] = value
    return good


def test_each_flaw_of_a_perceivers_structure_is_told():
    models.judge_perceiver(anatomy())
    cases = {
        "part (g): initialize_perceiver_model builds a GPT without down and up blocks: set mconf.perceiver = True":
            dict(latents=[], down=False),
        "part (g): the perceiver has no learnable C of shape (m, d) = (32, 256) (or (1, 32, 256)): the down block's "
        "queries come from it": dict(latents=[]),
        "part (g): no block gives m = 32 positions from the 128 inputs: the down block's queries come from C, its "
        "keys and values from the input": dict(down=False),
        "part (g): no block gives the 128 positions back from the 32 latents and the input: the up block's queries "
        "come from the input X, its keys and values from the previous layer's output": dict(up=False),
        "part (g): the perceiver gives 32 positions of logits for 128 inputs": dict(logits_length=32),
    }
    for told, changes in cases.items():
        assert failure(models.judge_perceiver, anatomy(**changes)) == told
    for flaw in (dict(max=1.0, std=0.01), dict(grad=False), dict(drift=[1.0, 1.0, 1.0]), dict(latents_move_logits=0)):
        models.judge_perceiver(anatomy(**flaw))  # the structure only: a prediction test asks no more


def test_each_departure_from_the_handouts_perceiver_is_told():
    models.judge_perceiver_as_specified(anatomy())
    bound = math.sqrt(6 / 288)
    cases = {
        "part (g): C should start Xavier-uniform (within +-0.1445), but its largest entry is 0.1446":
            dict(max=bound * 1.0015),
        "part (g): C starts as not evenly spread: its largest entry is 0.1442 and its standard deviation 0.0939; "
        "the handout asks for Xavier-uniform (nn.init.xavier_uniform_: evenly spread within +-0.1445)":
            dict(std=bound * 0.65 * 1.001),
        "part (g): C starts as a normal distribution (xavier_normal_ or randn?): its largest entry is 0.1442 and "
        "its standard deviation 0.0707; the handout asks for Xavier-uniform": dict(std=bound * 0.49),
        "part (g): no gradient reaches C: C must feed the down block's queries": dict(grad=False),
        "part (g): the perceiver is not causal: changing the tokens from position 40 on changes the logits before "
        "it (by up to 0.00011)": dict(drift=[0.0, 1.1e-4, 0.0]),
        "part (g): the output does not depend on the latents: the up block's keys and values come from the previous "
        "layer's output": dict(latents_move_logits=1e-6),
    }
    for told, changes in cases.items():
        assert failure(models.judge_perceiver_as_specified, anatomy(**changes)).startswith(told), told
    models.judge_perceiver_as_specified(anatomy(std=bound * 0.501, max=bound * 1.0009))
    models.judge_perceiver_as_specified(anatomy(std=bound * 0.649, max=bound))
    models.judge_perceiver_as_specified(anatomy(shape=[1, 32, 256]))  # the handout's (m, d) bound, not torch's
    models.judge_perceiver_as_specified(anatomy(max=0.125, std=0.0625))  # a spread of exactly 0.5 and 0.65
    models.judge_perceiver_as_specified(anatomy(max=0.125, std=0.08125))
    models.judge_perceiver_as_specified(anatomy(max=math.sqrt(6 / 288) * 1.001))


def test_a_perceiver_started_with_xavier_normal_is_named_but_is_a_perceiver():
    torch.manual_seed(0)
    c = torch.empty(1, 32, 256)
    torch.nn.init.xavier_normal_(c)
    normal = anatomy(shape=[1, 32, 256], max=float(c.abs().max()), std=float(c.std()))
    models.judge_perceiver(normal)
    assert "starts as a normal distribution (xavier_normal_ or randn?)" in \
        failure(models.judge_perceiver_as_specified, normal)


def test_accuracy_summary_counts_stripped_answers_against_both_thresholds():
    answers = ["London", "Kyoto", "Lima", "Lagos"]
    assert predictions.accuracy_summary([" London ", "Kyoto\t", "x", "y"], answers, {"min_accuracy": 0.5}, "f") == \
        "2 of 4 correct (50.0%)"
    assert failure(predictions.accuracy_summary, ["London", "x", "y", "z"], answers, {"min_accuracy": 0.3}, "dev") == \
        "dev: 1 of 4 correct (25.0%); needed at least 30%"
    both = {"min_correct": 1, "min_accuracy": 0.1}
    assert failure(predictions.accuracy_summary, ["x"] * 4, answers, both, "dev") == \
        "dev: 0 of 4 correct (0.0%); needed at least 10% and at least 1 correct"
    assert predictions.accuracy_summary(["London", "x", "y", "z"], answers, {"min_correct": 1}, "dev") == \
        "1 of 4 correct (25.0%)"
    assert predictions.accuracy_summary(["x"] * 4, answers, {}, "dev") == "0 of 4 correct (0.0%)"


# ---- prediction scores ----------------------------------------------------------------------------

class Graded(InProcess):
    """A ctx for the prediction tests: a bundle, the submission's files, the test's thresholds, canned answers."""

    def __init__(self, scratch, predicted, mode="regenerate", thresholds=None, reference=None, canned=None,
                 answers=("London", "Kyoto", "Lima", "Lagos")):
        labels = {"birth_dev.tsv": [(f"Where was P{i} born?", a) for i, a in enumerate(answers)]}
        bundle = HiddenBundle(str(scratch), labels, {}, reference=None if reference is None else str(scratch),
                              predictions=mode, vocabulary="abc")
        super().__init__(scratch, bundle=bundle, canned=canned, reference=reference)
        self.predicted, self.shared_paths, self.asked = predicted, [], []
        self.limits = thresholds or {"min_accuracy": 0.5}

    def predictions(self, filename, stage):
        self.asked.append((filename, stage))
        return self.predicted

    def answers(self, filename):
        return self.bundle.answers(filename)

    def questions(self, filename):
        return self.bundle.questions(filename)

    def threshold(self):
        return self.limits

    def params(self, filename, stage):
        self.asked.append((filename, stage))
        return f"/private/{filename}"

    def shared(self, path):
        self.shared_paths.append(path)
        return f"/scratch/{Path(path).name}"


def score(ctx, perceiver=False):
    return predictions.score_predictions(ctx, f"{'perceiver' if perceiver else 'vanilla'}.pretrain.dev.predictions")


FINGERPRINT = fingerprinted()


def regenerated(predictions, misfit=(), perceiver=True, shapes=None):
    return {"value": {"fingerprint": FINGERPRINT, "predictions": list(predictions), "misfit": list(misfit),
                      "shapes": shapes or {"w": [2, 3]}, "perceiver": perceiver}}


def test_files_mode_scores_the_file_as_it_is(tmp_path):
    ctx = Graded(tmp_path, ["London", "Kyoto", "x", "y"], mode="files")
    assert score(ctx) == "2 of 4 correct (50.0%)"
    assert ctx.calls == [] and ctx.asked == [("vanilla.pretrain.dev.predictions", "vanilla_eval_dev_with_pretrain")]
    ctx.predicted = ["x", "y", "Lima", "z"]
    assert failure(score, ctx) == "vanilla.pretrain.dev.predictions: 1 of 4 correct (25.0%); needed at least 50%"
    short = Graded(tmp_path, ["London"], mode="files")
    assert failure(score, short) == ("vanilla.pretrain.dev.predictions has 1 predictions for 4 questions in "
                                     "birth_dev.tsv: rerun ./run.sh vanilla_eval_dev_with_pretrain")
    longer = Graded(tmp_path, ["London", "London", "Kyoto", "Lima", "Lagos"], mode="files")
    assert failure(score, longer).startswith("vanilla.pretrain.dev.predictions has 5 predictions for 4 questions")
    empty = Graded(tmp_path, [], mode="files", answers=())
    assert failure(score, empty) == "the hidden birth_dev.tsv has no questions"


def test_files_mode_still_checks_the_perceiver_is_one(tmp_path):
    ctx = Graded(tmp_path, ["London", "Kyoto", "x", "y"], mode="files",
                 canned={"perceiver_anatomy": {"value": anatomy(down=False)}})
    assert "no block gives m = 32 positions" in failure(score, ctx, perceiver=True)
    assert ctx.calls == [("perceiver_anatomy", {"vocab_size": 256, "seed": models.FINGERPRINT_SEED})]


def test_regenerating_needs_a_reference_and_a_vocabulary(tmp_path):
    told = ('^regenerating predictions needs reference/ and vocabulary.json \\(or grading.json '
            '{"predictions": "files"}\\)$')
    ctx = Graded(tmp_path, ["London"] * 4)
    with pytest.raises(BundleError, match=told):
        score(ctx)
    ctx = Graded(tmp_path, ["London"] * 4, reference={})
    ctx.bundle.vocabulary = None
    with pytest.raises(BundleError, match=told):
        score(ctx)


def test_predictions_regenerated_with_the_reference_model_and_the_file_agreeing(tmp_path):
    reference = {"regenerated_predictions": regenerated(["London", "Kyoto", "Lima", "x"])}
    ctx = Graded(tmp_path, ["London ", "Kyoto", "Lima", "y"], reference=reference,
                 canned={"model_fingerprint": {"value": FINGERPRINT}}, thresholds={"min_accuracy": 0.5,
                                                                                   "min_agreement": 0.75})
    assert score(ctx) == ("3 of 4 correct (75.0%); regenerated from vanilla.finetune.params with the reference's "
                          "model; the file agrees on 3 of 4")
    request = dict(variant="vanilla", size=facts.GRADED_SIZE, vocabulary="abc",
                   questions=[f"Where was P{i} born?" for i in range(4)], seed=models.FINGERPRINT_SEED)
    assert ctx.calls == [("reference regenerated_predictions", dict(params_path="/private/vanilla.finetune.params",
                                                                     **request)),
                         ("model_fingerprint", dict(variant="vanilla", size=facts.GRADED_SIZE, vocab_size=3,
                                                    seed=models.FINGERPRINT_SEED))]
    assert ctx.asked == [("vanilla.pretrain.dev.predictions", "vanilla_eval_dev_with_pretrain"),
                         ("vanilla.finetune.params", "vanilla_finetune_with_pretrain")]
    ctx.bundle.model = dict(TINY)
    score(ctx)
    assert ctx.calls[-1][1]["size"] == TINY


def test_the_file_and_the_regenerated_answers_agree_whatever_whitespace_either_keeps(tmp_path):
    """Kills the whitespace around a regenerated answer counted as a difference from the file's (it is
    scored without it)."""
    reference = {"regenerated_predictions": regenerated([" London", "Kyoto ", "Lima", "\tLagos"])}
    ctx = Graded(tmp_path, ["London", " Kyoto", "Lima ", "Lagos"], reference=reference,
                 canned={"model_fingerprint": {"value": FINGERPRINT}}, thresholds={"min_accuracy": 0.5,
                                                                                   "min_agreement": 1.0})
    assert score(ctx).endswith("4 of 4 correct (100.0%); regenerated from vanilla.finetune.params with the "
                               "reference's model; the file agrees on 4 of 4")


def test_a_file_that_disagrees_with_its_parameters_fails(tmp_path):
    reference = {"regenerated_predictions": regenerated(["London", "Kyoto", "Lima", "x"])}
    ctx = Graded(tmp_path, ["London", "Kyoto", "a", "b"], reference=reference,
                 canned={"model_fingerprint": {"value": FINGERPRINT}}, thresholds={"min_accuracy": 0.5,
                                                                                   "min_agreement": 0.75})
    assert failure(score, ctx) == (
        "vanilla.pretrain.dev.predictions: 2 of 4 answers differ from those regenerated from "
        "vanilla.finetune.params with the reference's model; at most 1 may (75% agreement)")
    ctx.limits = {"min_accuracy": 0.5}
    assert "at most 0 may (85% agreement)" in failure(score, ctx)
    ctx.predicted = ["London", "Kyoto", "Lima", "b"]
    ctx.limits = {"min_accuracy": 0.5, "min_agreement": 0.75}
    assert score(ctx).endswith("the file agrees on 3 of 4")


def test_regenerated_predictions_are_held_to_the_threshold(tmp_path):
    reference = {"regenerated_predictions": regenerated(["London", "x", "y", "z"])}
    ctx = Graded(tmp_path, ["London", "x", "y", "z"], reference=reference,
                 canned={"model_fingerprint": {"value": FINGERPRINT}})
    assert failure(score, ctx) == ("vanilla.pretrain.dev.predictions (regenerated from vanilla.finetune.params with "
                                   "the reference's model): 1 of 4 correct (25.0%); needed at least 50%")


def test_unreadable_or_foreign_parameters_fail(tmp_path):
    unloadable = {"regenerated_predictions": {"value": {"fingerprint": FINGERPRINT, "unloadable": "EOFError: x"}}}
    ctx = Graded(tmp_path, ["London"] * 4, reference=unloadable)
    assert failure(score, ctx) == "vanilla.finetune.params cannot be read: EOFError: x"
    vanilla = {"regenerated_predictions": regenerated(["London"] * 4, shapes={"w": [256, 32], "v": [1, 32, 255]})}
    ctx = Graded(tmp_path, ["London"] * 4, reference=vanilla)
    assert failure(score, ctx, perceiver=True) == (
        "perceiver.finetune.params holds no bottleneck of shape (32, 256): these are not a perceiver's parameters "
        "(initialize_perceiver_model must set mconf.perceiver = True)")
    assert "holds no bottleneck of shape (32, 256)" in failure(
        score, Graded(tmp_path, ["London"] * 4, reference={"regenerated_predictions": regenerated(
            ["London"] * 4, shapes={"w": [32, 255], "v": [2, 32, 256]})}), perceiver=True)
    for shape in ([32, 256], [1, 32, 256]):
        ctx = Graded(tmp_path, ["London"] * 4, reference={"regenerated_predictions": regenerated(
            ["London"] * 4, shapes={"w": shape})}, canned={"model_fingerprint": {"value": FINGERPRINT}},
            answers=["London"] * 4)
        assert score(ctx, perceiver=True).startswith("4 of 4 correct")


def test_a_model_unlike_the_reference_regenerates_with_its_own_code(tmp_path):
    reference = {"regenerated_predictions": regenerated(["x"] * 4, misfit=["w is [3] there, [2] in the model",
                                                                          "v is missing there"])}
    own = regenerated(["London", "Kyoto", "Lima", "x"])
    ctx = Graded(tmp_path, ["London", "Kyoto", "Lima", "x"], reference=reference,
                 canned={"model_fingerprint": {"value": FINGERPRINT}, "regenerated_predictions": own})
    assert score(ctx) == (
        "3 of 4 correct (75.0%); regenerated from vanilla.finetune.params with the submitted model's code, in the "
        "sandbox, because the parameters do not fit the reference's model: w is [3] there, [2] in the model; "
        "v is missing there; the file agrees on 4 of 4")
    assert ctx.shared_paths == ["/private/vanilla.finetune.params"]
    assert ctx.calls[-1][1]["params_path"] == "/scratch/vanilla.finetune.params"
    assert ctx.calls[-1][1]["questions"] == [f"Where was P{i} born?" for i in range(4)]


def test_a_fingerprint_unlike_the_reference_names_the_difference(tmp_path):
    reference = {"regenerated_predictions": regenerated(["x"] * 4)}
    own = regenerated(["London", "Kyoto", "Lima", "x"])
    other = fingerprinted(logits=((5.0, 2.0),))
    ctx = Graded(tmp_path, ["London", "Kyoto", "Lima", "x"], reference=reference,
                 canned={"model_fingerprint": {"value": other}, "regenerated_predictions": own})
    assert "because with the same weights the logits differ from the reference's by 4" in score(ctx)
    ctx.canned["model_fingerprint"] = {"failure": "part (c): GPT broke", "traceback": ""}
    assert "because part (c): GPT broke;" in score(ctx)


def test_the_submitted_models_own_regeneration_must_work(tmp_path):
    reference = {"regenerated_predictions": regenerated(["x"] * 4, misfit=["w differs"])}
    cases = {
        "vanilla.finetune.params cannot be read: OSError: gone":
            {"fingerprint": FINGERPRINT, "unloadable": "OSError: gone"},
        "vanilla.finetune.params does not fit the submitted model: a; b":
            dict(regenerated(["x"] * 4, misfit=["a", "b"])["value"]),
    }
    for told, own in cases.items():
        ctx = Graded(tmp_path, ["x"] * 4, reference=reference,
                     canned={"model_fingerprint": {"value": FINGERPRINT}, "regenerated_predictions": {"value": own}})
        assert failure(score, ctx) == told
    ctx = Graded(tmp_path, ["London"] * 4, answers=["London"] * 4, reference={"regenerated_predictions": regenerated(
        ["x"] * 4, misfit=["w differs"], shapes={"C": [32, 256]})},
        canned={"model_fingerprint": {"value": FINGERPRINT},
                "regenerated_predictions": regenerated(["London"] * 4, perceiver=False)})
    assert failure(score, ctx, perceiver=True) == ("part (g): initialize_perceiver_model builds a GPT without down and "
                                                   "up blocks: set mconf.perceiver = True")
    ctx.canned["regenerated_predictions"] = regenerated(["London"] * 4, perceiver=True)
    assert score(ctx, perceiver=True).startswith("4 of 4 correct")


def test_the_reference_regenerates_its_own_predictions(tmp_path):
    torch.manual_seed(0)
    vocabulary = facts.PAD_CHAR + facts.MASK_CHAR + " ?ABLWabdehilnorsw"
    size = dict(TINY, block_size=32)
    model, _ = models.build_model(submission, "vanilla", len(vocabulary), size)
    torch.save(model.state_dict(), tmp_path / "v.params")
    questions = ["Where was Ada born?", "Where was Bo born?"]
    found = answers.answered(predictions.regenerated_predictions(
        submission, variant="vanilla", size=size, params_path=str(tmp_path / "v.params"), vocabulary=vocabulary,
        questions=questions, seed=5))
    assert found["misfit"] == [] and found["perceiver"] is False
    assert len(found["predictions"]) == 2 and all(isinstance(p, str) for p in found["predictions"])
    assert found["shapes"]["tok_emb.weight" if "tok_emb.weight" in found["shapes"] else next(iter(found["shapes"]))]
    assert found["fingerprint"] == models.fingerprint(
        models.build_model(submission, "vanilla", len(vocabulary), size)[0], len(vocabulary), 5)


def test_parameters_that_do_not_fit_name_their_first_three_misfits(tmp_path):
    """Kills a misfit told by one tensor only, or by tensors in no fixed order."""
    vocabulary = facts.PAD_CHAR + facts.MASK_CHAR + " ?ABLWabdehilnorsw"
    size = dict(TINY, block_size=32)
    state = models.build_model(submission, "vanilla", len(vocabulary), size)[0].state_dict()
    wrong = sorted(state)[1:5]
    torch.save({name: torch.zeros(3) if name in wrong else tensor for name, tensor in state.items()},
               tmp_path / "v.params")
    found = answers.answered(predictions.regenerated_predictions(
        submission, variant="vanilla", size=size, params_path=str(tmp_path / "v.params"), vocabulary=vocabulary,
        questions=["Where was Ada born?"], seed=5))
    assert found["predictions"] is None
    assert found["misfit"] == [f"{name} is [3] there, {list(state[name].shape)} in the model" for name in wrong[:3]]


# ---- prediction scores at their edges: line ends, line counts, thresholds ------------------------------

def snapshot_of(files):
    """A snapshot of the hand-in's prediction files `files` (name -> text), as read."""
    return types.SimpleNamespace(folder="/hand_in", files=files, params={})


@EDGE
@given(count=st.integers(1, 8), data=st.data())
def test_labels_and_predictions_with_any_line_ends_score_as_written(tmp_path_factory, count, data):
    """Kills a label or prediction misread at a \\r\\n or lone \\r (a right answer scored wrong, or the
    count off by one)."""
    places = [f"P{i}" for i in range(count)]
    correct = data.draw(st.integers(0, count))
    predicted = places[:correct] + ["x"] * (count - correct)
    folder = tmp_path_factory.mktemp("score")
    labels = read_labels(path_of(folder, "birth_dev.tsv", joined([f"Where was {p} born?\t{p}" for p in places],
                                                                    *data.draw(line_ends(count)))))
    files = {STAGE_FILE: joined(predicted, *data.draw(line_ends(count)))}
    summary = judges.score_predictions(scoring_context(snapshot_of(files), labels), STAGE_FILE)
    assert summary == f"{correct} of {count} correct ({100 * correct / count:.1f}%)"


@EDGE
@given(count=st.integers(1, 8), off=st.sampled_from([-1, 1, "empty"]), ends=st.data())
def test_a_file_with_a_line_more_or_fewer_or_none_is_refused_naming_the_stage(count, off, ends):
    """Kills predictions paired with the wrong questions when the file is a line short or long, and an
    empty file scored as all wrong rather than refused."""
    lines = 0 if off == "empty" else count + off
    text = joined(["London"] * lines, *ends.draw(line_ends(lines)))
    ctx = scoring_context(snapshot_of({STAGE_FILE: text}), [(f"Q{i}", "London") for i in range(count)])
    with pytest.raises(Failed, match=f"^{STAGE_FILE} has {lines} predictions for {count} questions in "
                                     "birth_dev.tsv: rerun ./run.sh vanilla_eval_dev_with_pretrain$"):
        judges.score_predictions(ctx, STAGE_FILE)


DENOMINATORS = [1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000]  # k/n is a 3-digit decimal


@st.composite
def at_a_threshold(draw):
    """(n, k, a threshold as a JSON file gives it, the same as a fraction, a count): the threshold is k/n,
    or 0.001 below it, strictly between two counts where n < 1000; the count is k - 1, k or k + 1."""
    n = draw(st.sampled_from(DENOMINATORS))
    k = draw(st.integers(0, n))
    thousandths = k * (1000 // n) - draw(st.integers(0, min(1, k)))
    count = draw(st.sampled_from([c for c in (k - 1, k, k + 1) if 0 <= c <= n]))
    return n, k, float(f"{thousandths}e-3"), Fraction(thousandths, 1000), count


def passes(judge, *args):
    """Whether judge(*args) passes rather than fails the test."""
    try:
        judge(*args)
    except Failed:
        return False
    return True


@EDGE
@given(edge=at_a_threshold())
def test_an_accuracy_at_its_threshold_meets_it_and_one_answer_fewer_does_not(edge):
    """Kills a threshold compared with > (a file exactly at it failed) or with rounding that lets one
    answer too few pass, for min_accuracy and for min_correct."""
    n, k, threshold, exact, correct = edge
    answers = [f"P{i}" for i in range(n)]
    predicted = answers[:correct] + ["x"] * (n - correct)
    assert passes(judges.accuracy_summary, predicted, answers, {"min_accuracy": threshold}, "f") == \
        (Fraction(correct, n) >= exact)
    assert passes(judges.accuracy_summary, predicted, answers, {"min_correct": k}, "f") == (correct >= k)


@EDGE
@given(edge=at_a_threshold())
def test_a_file_agreeing_exactly_at_min_agreement_passes_and_one_answer_less_fails(edge):
    """Kills an agreement check that refuses a file exactly at min_agreement or lets one more differing
    answer through (floating-point rounding of (1 - agreement) * n)."""
    n, _, agreement, exact, agreeing = edge
    answers = [f"P{i}" for i in range(n)]
    file = "".join(f"{a}\n" for a in answers[:agreeing]) + "x\n" * (n - agreeing)
    ctx = scoring_context(snapshot_of({STAGE_FILE: file}), [(f"Q{i}", a) for i, a in enumerate(answers)],
                          mode="regenerate", thresholds={"min_agreement": agreement})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(judges, "regenerate", lambda ctx, stage, vocabulary: (answers, "regenerated"))
        passed = passes(judges.score_predictions, ctx, STAGE_FILE)
    assert passed == (Fraction(agreeing, n) >= exact)


# ---- span corruption examples ------------------------------------------------------------------

def example(text, document, index=0, types=("torch.int64", "torch.int64")):
    """A SpanExample whose x and y hold `text` (y one character on)."""
    itos = dict(enumerate(sorted(set(text + "?"))))
    stoi = {c: i for i, c in itos.items()}
    ids = [stoi[c] for c in text]
    raw = {"index": index, "x": ids[:-1], "y": ids[1:], "types": list(types)}
    return spans.SpanExample(raw, itos, [document])


def test_a_span_example_reads_its_pieces():
    M, P = facts.MASK_CHAR, facts.PAD_CHAR
    e = example(f"Ada {M}born{M}was {M}{P}{P}", "Ada was born in London")
    assert e.text == f"Ada {M}born{M}was {M}{P}{P}" and e.document == "Ada was born in London"
    assert e.pieces() == ("Ada ", "born", "was ") and e.is_corruption() and e.kept() == 12
    assert example(f"Ada {M}born{M}was {P}", "Ada was born").pieces() == ("Ada ", "born", "was ")
    assert e.shown() == repr(f"Ada {M}born{M}was {M}{P}...")
    assert example(f"Ada {M}born{M}was {M}", "Ada was born").shown() == repr(f"Ada {M}born{M}was {M}")
    assert example(f"Ada {M}born{M}was {M}x{P}", "Ada was born").pieces() is None
    assert example(f"Ada {M}born", "Ada born").pieces() is None
    assert not example(f"Ada {M}born{M}is {M}", "Ada was born").is_corruption()
    assert not example(f"Ada {M}born", "Ada born").is_corruption()
    assert example(f"Ada {M}born{M}was {M}", "Ada was born").x == example(f"Ada {M}born{M}was {M}", "x").x


def test_an_id_outside_the_vocabulary_reads_as_one_question_mark():
    raw = {"index": 0, "x": [0, 99, 1], "y": [99, 1, 7], "types": ["torch.int64"] * 2}
    assert spans.SpanExample(raw, {0: "A", 1: "b"}, ["Ab"]).text == "A?b?"


def test_the_reference_span_examples_are_corruptions(tmp_path):
    ctx = InProcess(tmp_path)
    examples = spans.span_examples(ctx, 128)
    assert len(examples) == spans.SPAN_EXAMPLES and all(e.is_corruption() for e in examples)
    assert ctx.calls[0][1] == dict(corpus_path=str(tmp_path / "corpus.txt"), block_size=128, count=3000, seed=224)


def test_the_span_examples_are_drawn_from_the_seeded_corpus_of_240_documents(tmp_path):
    """Kills an unseeded corpus (a grade that changes from run to run) or one of another size."""
    (tmp_path / "run").mkdir()
    canned = {"corruption_examples": {"value": {"itos": [], "examples": []}}}
    assert spans.span_examples(InProcess(tmp_path / "run", canned=canned), 128) == []
    documents = corpora.write_span_corpus(str(tmp_path), count=240, seed=spans.SPAN_SEED)[1]
    assert (tmp_path / "run" / "corpus.txt").read_text(encoding="utf-8") == "\n".join(documents)


def test_a_span_example_that_is_not_a_corruption_fails(tmp_path):
    M = facts.MASK_CHAR
    itos = [[0, "A"], [1, "d"], [2, "a"], [3, M], [4, "x"]]
    document = corpora.write_span_corpus(str(tmp_path), count=240, seed=spans.SPAN_SEED)[1][0]
    raw = {"index": 0, "x": [0, 3, 1, 3, 2], "y": [3, 1, 3, 2, 3], "types": ["torch.int64"] * 2}
    ctx = InProcess(tmp_path, canned={"corruption_examples": {"value": {"itos": itos, "examples": [raw]}}})
    assert document[:3] != "Ada"
    assert failure(spans.span_examples, ctx, 128).startswith("an example is not a span corruption of its own document")
