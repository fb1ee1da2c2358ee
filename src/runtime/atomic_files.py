"""
Writing outputs whole or not at all: a new file is written under a temporary
name in its folder, then renamed over the old one, so a failure midway
leaves the old file as it was.
"""

import os


def temporary_path_beside(path):
    """A name in the folder of `path` for writing it in full before renaming it to `path`."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.{os.getpid()}.tmp")


def replace_when_done(path, write):
    """Call write(temporary_path), then rename the temporary file to `path`; on failure remove it."""
    temporary = temporary_path_beside(path)
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def write_predictions(path, predictions):
    """One prediction a line; a line break inside a prediction becomes a space, so lines stay aligned."""
    def write(temporary):
        with open(temporary, 'w', encoding='utf-8') as f:
            for place in predictions:
                f.write(place.replace('\r', ' ').replace('\n', ' ') + '\n')
    replace_when_done(path, write)
