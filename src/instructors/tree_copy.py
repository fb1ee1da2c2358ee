"""
A temporary copy of the repository's tree for mutation testing: the
mutants of `./run.sh mutate` (mutmut's and the plausible ones) are made and
tested there, never in the work tree. Outputs (params, predictions) and
caches are left out.
"""

import os
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COPIED = ('src', 'tests', 'data', 'notebooks', 'docs', 'run.sh', 'pyproject.toml', 'grader.py', 'environment.yml',
          'requirements.txt', 'LICENSE', 'README.md', 'CONTRIBUTING.md')  # what the release and the docs' tests read
NOT_COPIED = shutil.ignore_patterns('__pycache__', '*.pyc', '*.params', '*.predictions')


def tree_copy(root=ROOT, prefix='mutate-'):
    """A new temporary folder holding the parts of the tree at `root` that tests need; its path."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    for name in COPIED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=NOT_COPIED)
        elif source.exists():
            shutil.copy2(source, folder / name)
    return folder


def copy_environment():
    """The environment of a test run in a copy: one thread each, and no PYTHONPATH (the copy's src/
    comes first by its pyproject.toml; no path may lead back to the work tree)."""
    env = dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1')
    env.pop('PYTHONPATH', None)
    return env
