"""
The hidden bundle (grading/bundle.py): labels (read by the one reader of
question files), thresholds, settings, the vocabulary, the packages and the
test files it holds (a file not in UTF-8 is a bundle error), and a local
check's labels.
"""

import json
import os

import pytest

from assignment.question_files import read_question_file
from grading import bundle
from grading.bundle import BundleError, HiddenBundle, read_labels
from grading.registry import GradedTest

from grading_helpers import write
from question_file_cases import ACCEPTED, REFUSED, reader_refusal, refusal


def test_hidden_labels_lose_the_whitespace_around_each_answer(tmp_path):
    path = tmp_path / "birth_dev.tsv"
    path.write_bytes(b"Where was Ada born?\t London \r\n\nWhere was Kofi born?\tKumasi  \n  \n"
                     b"Where was Frida born?\tCoyoacan")
    assert [answer for _, answer in read_labels(str(path))] == ["London", "Kumasi", "Coyoacan"]

def test_labels_keep_the_question_and_name_a_line_with_a_third_column(tmp_path):
    path = write(tmp_path / "dev.tsv", "Where was Ada born? \tLondon\n\nA\tB\tC\n")
    with pytest.raises(BundleError, match=r"dev.tsv line 3: expected 'question<TAB>place', found 2 tabs: 'A\\tB\\tC'$"):
        read_labels(str(path))
    write(path, "Where was Ada born? \tLondon\nWhere is é?\tÉcole\n")
    assert read_labels(str(path)) == [("Where was Ada born? ", "London"), ("Where is é?", "École")]


def test_a_label_without_an_answer_or_with_a_third_column_is_a_bundle_error(tmp_path):
    path = write(tmp_path / "test.tsv", "Where was Ada born?\tLondon\nWhere was Kofi born?\t \n")
    with pytest.raises(BundleError, match=r"test.tsv line 2: the place is empty$"):
        read_labels(str(path))
    write(path, "Where was Ada born?\tLondon\t\n")
    with pytest.raises(BundleError, match=r"test.tsv line 1: expected 'question<TAB>place', found 2 tabs: "):
        read_labels(str(path))


@pytest.mark.parametrize("case", REFUSED)
def test_labels_are_read_by_the_one_reader_of_question_files(tmp_path, case):
    """Kills labels read by rules of their own (a BOM kept in the first question, a trailing tab, an empty
    question or an empty file taken): the bundle reads the file read_question_file accepts as it reads it,
    and refuses each file it refuses with its message."""
    labels = tmp_path / "birth_dev.tsv"
    labels.write_bytes(ACCEPTED)
    assert bundle.load_bundle(str(tmp_path)).labels == {
        "birth_dev.tsv": [(line.question, line.place) for line in read_question_file(str(labels), labelled=True)]}
    labels.write_bytes(REFUSED[case])
    told = reader_refusal(str(labels))
    assert refusal(bundle.load_bundle, str(tmp_path), error=BundleError) == told
    assert refusal(bundle.local_labels, [str(labels)], error=BundleError) == told


def test_a_label_file_of_questions_alone_is_a_bundle_error(tmp_path):
    """Kills labels read as their first line says: a file of questions alone taken, every answer None."""
    path = write(tmp_path / "test.tsv", "Where was Ada born?\nWhere was Kofi born?\n")
    with pytest.raises(BundleError, match=r"test.tsv line 1: expected 'question<TAB>place', found no tab: "
                                          r"'Where was Ada born\?'$"):
        read_labels(str(path))


def test_labels_are_utf8_whatever_the_locale(tmp_path, ascii_locale):
    path = tmp_path / "dev.tsv"
    path.write_bytes("Where was Émile born?\tOrléans\n".encode("utf-8"))
    assert read_labels(str(path)) == [("Where was Émile born?", "Orléans")]


def test_labels_keep_every_character_of_an_answer(tmp_path):
    path = write(tmp_path / "dev.tsv", "Where was X born?\tESSEX\nWhere was Y born?\tXX\r\n")
    assert read_labels(str(path)) == [("Where was X born?", "ESSEX"), ("Where was Y born?", "XX")]


def test_json_is_read_as_utf8_whatever_the_locale(tmp_path, ascii_locale):
    path = tmp_path / "vocabulary.json"
    path.write_bytes('"aé□"'.encode("utf-8"))
    assert bundle.read_json(str(path)) == "aé□"


def test_read_json_names_a_file_that_is_not_json(tmp_path):
    assert bundle.read_json(str(write(tmp_path / "a.json", '{"é": 1}'))) == {"é": 1}
    with pytest.raises(BundleError, match=r"a.json is not valid JSON: Expecting"):
        bundle.read_json(str(write(tmp_path / "a.json", "{")))


def test_thresholds_json_gives_its_entries_test_by_test(tmp_path):
    path = tmp_path / "thresholds.json"
    assert bundle.read_thresholds(str(path)) == {}
    write(path, '{"1f-1-hidden": {"min_accuracy": 0.5, "min_agreement": 1}, "1g-2-hidden": {"min_correct": 2}}')
    assert bundle.read_thresholds(str(path)) == {"1f-1-hidden": {"min_accuracy": 0.5, "min_agreement": 1},
                                                 "1g-2-hidden": {"min_correct": 2}}


def test_a_threshold_for_no_test_with_thresholds_is_refused(tmp_path):
    tests = [GradedTest("1f-1-hidden", 5.0, "hidden", 1.0, "d", None, {"min_accuracy": 0.1}),
             GradedTest("1g-1-hidden", 5.0, "hidden", 1.0, "d", None, {"min_accuracy": 0.1}),
             GradedTest("1e-0-basic", 5.0, "basic", 1.0, "d", None)]
    found = HiddenBundle(str(tmp_path), {}, {"1f-1-hidden": {"min_accuracy": 0.2}}, None)
    bundle.check_thresholds(found, tests)
    for key in ("1e-0-basic", "vanilla.pretrain.dev"):
        found.thresholds = {key: {"min_accuracy": 0.2}}
        with pytest.raises(BundleError) as caught:
            bundle.check_thresholds(found, tests)
        assert str(caught.value) == (f"{tmp_path / 'thresholds.json'}: unknown threshold {key!r}; the tests with "
                                     "thresholds are 1f-1-hidden, 1g-1-hidden")


@pytest.mark.parametrize("text, told", [
    ('[1]', "must hold an object of threshold entries"),
    ('{"dev": {}}', "'dev' must map some of"),
    ('{"dev": [1]}', "'dev' must map some of"),
    ('{"dev": {"min_accuracy": 1, "max": 2}}', "'dev' must map some of"),
    ('{"dev": {"min_accuracy": "1"}}', "'dev' must map some of"),
    ('{"dev": {"min_accuracy": true}}', "'dev' must map some of"),
    ('{"dev": {"min_correct": 1, "min_accuracy": null}}', "'dev' must map some of"),
])
def test_a_malformed_threshold_is_refused(tmp_path, text, told):
    path = write(tmp_path / "thresholds.json", text)
    with pytest.raises(BundleError) as caught:
        bundle.read_thresholds(str(path))
    assert str(caught.value).startswith(f"{path}") and told in str(caught.value)


MODEL = {"n_layer": 1, "n_head": 2, "n_embd": 8, "block_size": 16, "bottleneck_dim": 4}


def test_settings_give_the_mode_and_the_model(tmp_path):
    path = tmp_path / "grading.json"
    assert bundle.read_settings(str(path)) == ("regenerate", None)
    write(path, json.dumps({"predictions": "files"}))
    assert bundle.read_settings(str(path)) == ("files", None)
    write(path, json.dumps({"model": MODEL}))
    assert bundle.read_settings(str(path)) == ("regenerate", MODEL)


@pytest.mark.parametrize("settings, told", [
    ([], "must be an object with 'predictions' and/or 'model'"),
    ({"predictions": "files", "extra": 1}, "must be an object with 'predictions' and/or 'model'"),
    ({"predictions": "all"}, "unknown predictions setting 'all'; use 'regenerate' or 'files'"),
    ({"model": [1]}, "'model' must give each of n_layer, n_head, n_embd, block_size, bottleneck_dim"),
    ({"model": dict(MODEL, extra=1)}, "'model' must give each of"),
    ({"model": dict(MODEL, n_layer=0)}, "as a positive integer"),
    ({"model": dict(MODEL, n_layer=True)}, "as a positive integer"),
    ({"model": dict(MODEL, n_layer=1.0)}, "as a positive integer"),
])
def test_malformed_settings_are_refused(tmp_path, settings, told):
    path = write(tmp_path / "grading.json", json.dumps(settings))
    with pytest.raises(BundleError) as caught:
        bundle.read_settings(str(path))
    assert str(caught.value).startswith(str(path)) and told in str(caught.value)


def test_the_vocabulary_is_a_string_of_distinct_characters(tmp_path):
    path = tmp_path / "vocabulary.json"
    assert bundle.read_vocabulary(str(path)) is None
    write(path, json.dumps("ab□"))
    assert bundle.read_vocabulary(str(path)) == "ab□"
    for wrong in (["a", "b", "c"], "aba", "ab"):
        write(path, json.dumps(wrong))
        with pytest.raises(BundleError, match="must hold one JSON string: the vocabulary's distinct characters"):
            bundle.read_vocabulary(str(path))


def test_a_package_folder_needs_its_init(tmp_path):
    assert bundle.package_folder(str(tmp_path / "none"), "") is None
    write(tmp_path / "runtime" / "decoding" / "__init__.py", "")
    assert bundle.package_folder(str(tmp_path / "runtime"), "decoding") == str(tmp_path / "runtime")
    with pytest.raises(BundleError, match=r"runtime is not a package: it has no other/__init__.py"):
        bundle.package_folder(str(tmp_path / "runtime"), "other")
    write(tmp_path / "runtime" / "other" / "__init__.py", "")
    os.remove(tmp_path / "runtime" / "other" / "__init__.py")
    os.mkdir(tmp_path / "runtime" / "other" / "__init__.py")
    with pytest.raises(BundleError):
        bundle.package_folder(str(tmp_path / "runtime"), "other")


def test_a_bundle_is_read_whole(tmp_path, monkeypatch):
    root = tmp_path / "bundle"
    write(root / "birth_dev.tsv", "Q1\tA1\n")
    write(root / "birth_test.tsv", "Q2\tA2\nQ3\tA3\n")
    write(root / "notes.txt", "not labels\n")
    write(root / "thresholds.json", '{"1f-1-hidden": {"min_accuracy": 0.5}}')
    write(root / "grading.json", json.dumps({"predictions": "files", "model": MODEL}))
    write(root / "vocabulary.json", json.dumps("abc"))
    write(root / "reference" / "__init__.py", "")
    write(root / "runtime" / "decoding" / "__init__.py", "")
    for name in ("b_tests.py", "a_tests.py", "notes.md"):
        write(root / "tests" / name, "")
    monkeypatch.chdir(tmp_path)
    found = bundle.load_bundle("bundle")
    labels = {"birth_dev.tsv": [("Q1", "A1")], "birth_test.tsv": [("Q2", "A2"), ("Q3", "A3")]}
    assert found == HiddenBundle(str(root), labels, {"1f-1-hidden": {"min_accuracy": 0.5}},
                                 reference=str(root / "reference"),
                                 predictions="files", model=MODEL, vocabulary="abc", runtime=str(root),
                                 tests=(str(root / "tests" / "a_tests.py"), str(root / "tests" / "b_tests.py")))
    assert found.answers("birth_test.tsv") == ["A2", "A3"] and found.questions("birth_test.tsv") == ["Q2", "Q3"]
    with pytest.raises(BundleError, match=rf"the hidden bundle {root} has no birth_train.tsv"):
        found.answers("birth_train.tsv")
    bare = tmp_path / "bare"
    bare.mkdir()
    assert bundle.load_bundle(str(bare)) == HiddenBundle(str(bare), {}, {}, None)
    with pytest.raises(BundleError, match=r"hidden bundle .*birth_dev.tsv is not a directory"):
        bundle.load_bundle(str(root / "birth_dev.tsv"))
    write(root / "reference" / "__init__.py", "").unlink()
    with pytest.raises(BundleError, match=r"reference is not a package"):
        bundle.load_bundle(str(root))


def test_a_local_check_has_only_the_labels_given(tmp_path):
    dev = write(tmp_path / "data" / "birth_dev.tsv", "Q1\tA1\n")
    found = bundle.local_labels([str(dev)])
    assert found == HiddenBundle(f"labels {dev}", {"birth_dev.tsv": [("Q1", "A1")]}, {}, reference=None,
                                 predictions="files", local=True)
    with pytest.raises(BundleError, match=f"^labels {tmp_path / 'none.tsv'} not found$"):
        bundle.local_labels([str(dev), str(tmp_path / "none.tsv")])


def test_a_local_check_of_two_label_files_names_both(tmp_path):
    """Kills another separator between the files that the bundle's description names."""
    dev = write(tmp_path / "birth_dev.tsv", "Q1\tA1\n")
    test = write(tmp_path / "birth_test.tsv", "Q2\tA2\n")
    found = bundle.local_labels([str(dev), str(test)])
    assert found.path == f"labels {dev}, {test}"
    assert found.labels == {"birth_dev.tsv": [("Q1", "A1")], "birth_test.tsv": [("Q2", "A2")]}


def test_a_bundle_file_that_is_not_utf8_is_a_bundle_error(tmp_path):
    """Kills a bundle whose labels or JSON files in another encoding stop the grader with a traceback
    (a UnicodeDecodeError) instead of one line naming the file."""
    labels = tmp_path / "birth_dev.tsv"
    labels.write_bytes("Where was Émile born?\tOrléans\n".encode("latin-1"))
    with pytest.raises(BundleError, match=rf"^{labels} line 1: not UTF-8 text \(byte 10\)$"):
        bundle.load_bundle(str(tmp_path))
    with pytest.raises(BundleError, match=rf"^{labels} line 1: not UTF-8 text \(byte 10\)$"):
        bundle.local_labels([str(labels)])
    labels.unlink()
    for name in ("thresholds.json", "grading.json", "vocabulary.json"):
        (tmp_path / name).write_bytes('"aé□"'.encode("latin-1", errors="replace"))
        with pytest.raises(BundleError, match=rf"^{tmp_path / name} is not valid JSON: "):
            bundle.load_bundle(str(tmp_path))
        (tmp_path / name).unlink()


def test_a_local_check_refuses_a_folder_given_as_labels(tmp_path):
    """Kills labels checked only to exist: a folder given to --labels is told in one line, not read."""
    (tmp_path / "birth_dev.tsv").mkdir()
    with pytest.raises(BundleError, match=rf"^labels {tmp_path / 'birth_dev.tsv'} not found$"):
        bundle.local_labels([str(tmp_path / "birth_dev.tsv")])


def test_a_bundle_runtime_without_its_decoder_is_refused(tmp_path):
    """Kills a runtime/ folder taken as the stages' decoder without runtime/decoding/__init__.py (the
    trusted process would then import the grader's own decoder, or none)."""
    write(tmp_path / "runtime" / "decoding.py", "")
    with pytest.raises(BundleError, match=r"runtime is not a package: it has no decoding/__init__.py$"):
        bundle.load_bundle(str(tmp_path))
    write(tmp_path / "runtime" / "decoding" / "__init__.py", "")
    assert bundle.load_bundle(str(tmp_path)).runtime == str(tmp_path)
