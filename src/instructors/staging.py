"""
Outputs made in a staging folder and moved into their out folder all or
none, for the release (instructors/release) and the copy report
(instructors/copies): a run that fails at any point, Ctrl-C included,
leaves the out folder as it was, and removes the folders it made for it
(OUT, and those above it that were missing) while they are empty. Both
refuse an OUT that holds what they read (`holds`).
"""

import contextlib
import os
import shutil
import tempfile


def holds(folder, path):
    """Whether `path` is `folder` or lies below it, read as written ('/' holds every path)."""
    return (path + os.sep).startswith(os.path.join(folder, ''))


def folders_to_make(path):
    """`path` and the folders above it that do not exist yet, deepest first: what os.makedirs(path) makes."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        path = os.path.dirname(path)
    return missing


def remove_while_empty(folders):
    """Remove `folders`, deepest first, up to the first that is not empty."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            return


@contextlib.contextmanager
def staged(out, prefix, beside):
    """
    A new staging folder for outputs bound for the folder `out` (made if
    need be): beside `out`, in its real parent so that moving into place is
    a rename, or inside it. The staging folder is removed at the end; after
    a failure, so are the folders made for `out` that are still empty.
    """
    made, staging = folders_to_make(out), None
    try:
        os.makedirs(out, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=prefix, dir=os.path.dirname(os.path.realpath(out)) if beside else out)
        yield staging
        made = []
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        remove_while_empty(made)


def move_into_place(staging, out, names):
    """
    Move staging/NAME to out/NAME for each of `names`, all or none: an
    earlier out/NAME waits in the staging folder until every new one is in
    place, and goes back (the new ones out again) if one cannot be moved in.
    """
    earlier = os.path.join(staging, ".earlier")
    os.mkdir(earlier)
    aside, moved = [], []
    try:
        for name in names:
            if os.path.lexists(os.path.join(out, name)):
                os.replace(os.path.join(out, name), os.path.join(earlier, name))
                aside.append(name)
            os.replace(os.path.join(staging, name), os.path.join(out, name))
            moved.append(name)
    except BaseException:
        for name in moved:
            os.replace(os.path.join(out, name), os.path.join(staging, name))
        for name in aside:
            os.replace(os.path.join(earlier, name), os.path.join(out, name))
        raise
