"""
The copy report's command (src/instructors/copies/__main__.py) in-process on a tiny class of prediction
files: the arguments it refuses in one line (--jobs under 1, an OUT inside a hand-ins' folder, --known
ones included, or holding one) and those it takes (an OUT beside a folder whose name starts as its
does), the line it ends with, a bundle of labels only (answers compared as submitted, saying why, and
judged by the labels), and a folder and a zip of one name told apart. tests/test_staging.py has its all-or-none moves; tests/test_copies.py a
whole class trained here.
"""

import csv
import os
import zipfile

import pytest

from assignment.facts import DEV_QUESTIONS
from instructors.copies import __main__ as copies_main

FILE = "vanilla.pretrain.dev.predictions"


@pytest.fixture
def folders(tmp_path):
    """class/ of three hand-ins (ann and eve hand in the same answers) and known/ of one."""
    for folder, name, shift in (("class", "ann", 1), ("class", "ben", 2), ("class", "eve", 1), ("known", "pub", 3)):
        (tmp_path / folder / name).mkdir(parents=True)
        (tmp_path / folder / name / FILE).write_text("".join(f"Place {i * shift % 7}\n" for i in range(60)))
    return tmp_path


def checked(folders, out, *options):
    args = copies_main.parse_args(["--submissions", str(folders / "class"), "--known", str(folders / "known"),
                                   "--out", str(out), *options])
    return copies_main.check_arguments(args)


@pytest.mark.parametrize("out, said", [
    ("known/pub/report", "--out {out} and the hand-ins' folder {folders}/known must not hold one another"),
    ("class", "--out {out} and the hand-ins' folder {folders}/class must not hold one another"),
    ("", "--out {out} and the hand-ins' folder {folders}/class must not hold one another"),
    ("/", "--out / and the hand-ins' folder {folders}/class must not hold one another"),
])
def test_an_out_inside_or_around_any_hand_ins_folder_is_refused(folders, out, said):
    """Kills the --known folders left out of the check (the report would be written among their hand-ins),
    and the root taken as OUT (`--out $OUT/` with $OUT empty)."""
    with pytest.raises(copies_main.CopiesError) as refused:
        checked(folders, folders / out, "--force")
    assert str(refused.value) == said.format(out=folders / out, folders=folders)


def test_an_out_beside_a_hand_ins_folder_whose_name_starts_as_its_does_is_taken(folders):
    """Kills folders compared as string prefixes: class-report is not inside class."""
    assert checked(folders, folders / "class-report") == str(folders / "class-report")
    assert checked(folders, folders / "known2") == str(folders / "known2")


@pytest.mark.parametrize("jobs, taken", [("0", False), ("-1", False), ("1", True)])
def test_jobs_must_be_at_least_one(folders, jobs, taken):
    if taken:
        assert checked(folders, folders / "out", "--jobs", jobs) == str(folders / "out")
        return
    with pytest.raises(copies_main.CopiesError, match=rf"^--jobs {jobs}: give at least 1$"):
        checked(folders, folders / "out", "--jobs", jobs)


def test_a_bundle_of_labels_only_judges_the_answers_as_submitted_saying_why(folders, capsys):
    bundle = folders / "bundle"
    bundle.mkdir()
    (bundle / DEV_QUESTIONS).write_text("".join(f"Where was P{i} born?\tNowhere {i}\n" for i in range(60)))
    out = folders / "out"
    assert copies_main.main(["--submissions", str(folders / "class"), "--known", str(folders / "known"),
                             "--hidden", str(bundle), "--out", str(out)]) == 0
    wrote = ", ".join(str(out / name) for name in copies_main.OUTPUTS_WRITTEN)
    assert capsys.readouterr().out == f"copies: 6 pairs compared, 1 flagged; wrote {wrote}\n"
    text = (out / "report.md").read_text(encoding="utf-8")
    assert ("Answers were compared as submitted (the hidden bundle has no reference/, runtime/, vocabulary.json). "
            "With the bundle's labels, the answers' evidence is the wrong answers two hand-ins share.") in text
    assert "### 1. copy: ann and eve" in text and sorted(os.listdir(out)) == sorted(copies_main.OUTPUTS_WRITTEN)


def test_a_folder_and_a_zip_of_one_name_are_told_apart_in_the_report(folders, capsys):
    with zipfile.ZipFile(folders / "class" / "ann.zip", "w") as archive:
        archive.writestr(FILE, "".join(f"Elsewhere {i}\n" for i in range(60)))
    out = folders / "out"
    assert copies_main.main(["--submissions", str(folders / "class"), "--out", str(out)]) == 0
    with open(out / "pairs.csv", newline="", encoding="utf-8") as f:
        pairs = {(row["a"], row["b"]) for row in csv.DictReader(f)}
    assert ("ann", "ann [2]") in pairs and len(pairs) == 6
    assert "1. ann [2]: `" in (out / "report.md").read_text(encoding="utf-8")


def test_regenerations_default_to_one_a_cpu_each_within_ten_minutes(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    args = copies_main.parse_args(["--submissions", "class", "--out", "out"])
    assert (args.jobs, args.timeout, args.known, args.hidden, args.force) == (3, 600, [], None, False)


def test_a_hidden_bundle_that_is_not_one_is_one_line_and_writes_nothing(folders, capsys):
    (folders / "bundle").mkdir()
    (folders / "bundle" / "vocabulary.json").write_text('"ab"')
    status = copies_main.main(["--submissions", str(folders / "class"), "--hidden", str(folders / "bundle"),
                               "--out", str(folders / "out")])
    err = capsys.readouterr().err
    assert status == 1 and err.startswith(f"copies: {folders / 'bundle' / 'vocabulary.json'} must hold one JSON ")
    assert err.count("\n") == 1 and not (folders / "out").exists()
