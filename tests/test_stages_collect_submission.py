"""
collect_submission (src/stages/collect_submission.py), its main() in this
process and once run as the student runs it: the 18 deliverables zipped flat, every missing one named with the
stage that makes it and the old zip kept, parameters of another
configuration and the predictions made from them refused, and a zip as
readable as the user's files.
"""

import os
import stat
import subprocess
import sys
import zipfile

from stages import collect_submission

from release_helpers import REPO, write_params


def fill_submission(folder, configuration=""):
    """Every deliverable as a small distinct file (params: tiny stamped models); returns {name: bytes}."""
    folder.mkdir(exist_ok=True)
    for name in collect_submission.DELIVERABLES:
        if name.endswith(".params"):
            write_params(folder / name, configuration, perceiver=name.startswith("perceiver"))
        else:
            (folder / name).write_bytes(f"content of {name}\n".encode())
    return {name: (folder / name).read_bytes() for name in collect_submission.DELIVERABLES}


def collected(capsys, folder, out):
    """collect_submission's main() on `folder` into `out`: (exit status, its stderr)."""
    status = collect_submission.main(["--submission-dir", str(folder), "--out", str(out)])
    return status, capsys.readouterr().err


def test_collect_submission_zips_the_18_deliverables_flat(tmp_path, capsys):
    contents = fill_submission(tmp_path / "submission")
    (tmp_path / "submission" / "notes.txt").write_text("not a deliverable")
    out = tmp_path / "submission.zip"
    status, stderr = collected(capsys, tmp_path / "submission", out)
    assert status == 0, stderr
    with zipfile.ZipFile(out) as archive:
        assert {name: archive.read(name) for name in archive.namelist()} == contents
    assert len(contents) == 18


def test_collect_submission_names_every_missing_deliverable_and_keeps_the_old_zip(tmp_path, capsys):
    fill_submission(tmp_path / "submission")
    missing = ["helper.py", "vanilla.pretrain.params", "perceiver.pretrain.test.predictions"]
    for name in missing:
        (tmp_path / "submission" / name).unlink()
    out = tmp_path / "submission.zip"
    out.write_bytes(b"an earlier zip")
    status, stderr = collected(capsys, tmp_path / "submission", out)
    assert status != 0
    assert stderr.strip().count("\n") == 0 and "3 of 18" in stderr
    for name in missing:
        assert name in stderr
    assert "./run.sh vanilla_pretrain" in stderr
    assert out.read_bytes() == b"an earlier zip"


def test_collect_submission_refuses_smoke_params_and_their_predictions(tmp_path, capsys):
    """Params of another configuration (by their stamp, or unstamped and of another size) and the
    predictions made from them are named with the stage to rerun, on one line; no zip is written."""
    fill_submission(tmp_path / "submission")
    write_params(tmp_path / "submission" / "vanilla.finetune.params", "n_layer=2 n_head=2 n_embd=32 max_epochs=1")
    write_params(tmp_path / "submission" / "perceiver.pretrain.params", None, perceiver=True)
    out = tmp_path / "submission.zip"
    status, stderr = collected(capsys, tmp_path / "submission", out)
    assert status == 1 and stderr.strip().count("\n") == 0 and not out.exists()
    assert "4 files are not for grading" in stderr
    assert ("vanilla.finetune.params is from a run of another configuration (n_layer=2 n_head=2 n_embd=32 "
            "max_epochs=1): rerun ./run.sh vanilla_finetune_with_pretrain") in stderr
    assert "perceiver.pretrain.params is from a model of another size (n_layer 2, n_embd 8)" in stderr
    for predictions, stage in (("vanilla.pretrain.dev.predictions", "vanilla_eval_dev_with_pretrain"),
                               ("vanilla.pretrain.test.predictions", "vanilla_eval_test_with_pretrain")):
        assert f"{predictions} was made from vanilla.finetune.params" in stderr
        assert f"rerun ./run.sh {stage}" in stderr


def test_the_zip_is_as_readable_as_the_users_files(tmp_path):
    """The command as the student runs it, under a umask that lets others read."""
    fill_submission(tmp_path / "submission")
    out = tmp_path / "submission.zip"
    done = subprocess.run(["bash", "-c", f"umask 022 && {sys.executable} -m stages.collect_submission --submission-dir "
                           f"{tmp_path / 'submission'} --out {out}"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
