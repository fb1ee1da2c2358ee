"""
A probe run as another user (`grader.py --user`) gets a copy of the package
made readable to that user (src/grading/runner.py). Symbolic links are left
out of it: copied as files, a link to a file only root may read (planted in
a folder given to the grader, not an upload, which run_autograder filters
already) would hand its content to the submission.
"""

import os
import types

from grading.runner import ProbeRunner


def package_with_links(root):
    """A package with a module, a link to a root-only file and a link to a folder, both outside it."""
    package = root / "package"
    package.mkdir()
    (package / "__init__.py").write_text("NAME = 'pkg'\n")
    secret = root / "secret.txt"
    secret.write_text("only root may read this\n")
    os.chmod(secret, 0o600)
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "notes.py").write_text("x = 1\n")
    os.symlink(secret, package / "answers.py")
    os.symlink(root / "elsewhere", package / "linked")
    return package


def test_a_copy_for_another_user_leaves_symbolic_links_out(tmp_path):
    package = package_with_links(tmp_path)
    (tmp_path / "work").mkdir()
    nobody = types.SimpleNamespace(pw_uid=65534, pw_gid=65534)
    layout = ProbeRunner(str(tmp_path / "work"), "t", user=nobody, fork=False).prepare(str(package))
    assert os.listdir(layout["copy"]) == ["__init__.py"]
    ours = ProbeRunner(str(tmp_path / "work"), "t", fork=False).prepare(str(package))
    assert sorted(os.listdir(ours["package"])) == ["__init__.py", "answers.py", "linked"]
