"""
Hand-ins as the copy report reads them. A folder of hand-ins (--submissions,
or a --known folder) holds either

- one folder or zip a hand-in, named after it, with the deliverables flat
  (as collect_submission zips them) or under src/submission/ (both as
  run_autograder takes them); or
- Gradescope's "export submissions": a submission_<id>/ folder (or zip) a
  submission and submission_metadata.yml, which names each submission's
  submitters; a hand-in is then named "<names> (submission_<id>)".

Only the parameters and prediction files the stages write, of any edition, are read:
from a folder, regular files reached through no symbolic link; from a zip,
its members that are not symbolic links, which are never extracted except
into a scratch folder when a parameters file must be handed to the
regeneration. Anything else is ignored; what cannot be read, or is a link,
is one line of the report's list of inputs not compared.
"""

import os
import stat
import zipfile
import zlib
from dataclasses import dataclass, field

import yaml

from assignment.facts import STAGES
from grading.context import MAX_PARAMS_BYTES, MAX_PREDICTIONS_BYTES

COMPARED = tuple(stage.writes for stage in STAGES)  # every edition's outputs: a class hands in its own edition's
SUBFOLDER = 'src/submission'
METADATA = 'submission_metadata.yml'
MAX_BYTES = {'.params': MAX_PARAMS_BYTES, '.predictions': MAX_PREDICTIONS_BYTES}  # the grader's limits


class Unreadable(Exception):
    """A deliverable that was listed but cannot be read; the message is the report's line."""


@dataclass
class HandIn:
    """One hand-in: its name in the report, where it is, the --known folder it comes from (None
    for the class), and where each of its compared deliverables is (a path, or a zip member)."""
    name: str
    path: str
    known: str = None
    files: dict = field(default_factory=dict)

    def read(self, name):
        """The bytes of deliverable `name` (Unreadable when they cannot be had)."""
        try:
            if os.path.isdir(self.path):
                with open(self.files[name], 'rb') as f:
                    return f.read()
            with zipfile.ZipFile(self.path) as archive:
                return archive.read(self.files[name])
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as error:
            raise Unreadable(f"{self.name}: {name} cannot be read ({type(error).__name__}: {error}): "
                             f"not compared") from None

    def on_disk(self, name, copy_path):
        """A path on disk of deliverable `name`: its own in a folder; from a zip, `copy_path`, written."""
        if os.path.isdir(self.path):
            return self.files[name]
        data = self.read(name)  # before the copy is made: an unreadable member leaves no file behind
        with open(copy_path, 'wb') as f:
            f.write(data)
        return copy_path


def too_large(name, size):
    return size > MAX_BYTES[os.path.splitext(name)[1]]


def folder_files(path, problems, label):
    """{deliverable: file path} of a hand-in folder."""
    files, top = {}, os.path.realpath(path)
    for name in COMPARED:
        for relative in (name, f"{SUBFOLDER}/{name}"):
            candidate = os.path.join(path, relative)
            if not os.path.lexists(candidate):
                continue
            if os.path.realpath(candidate) != os.path.join(top, relative) or not os.path.isfile(candidate):
                problems.append(f"{label}: {relative} is a symbolic link or not a file: not read")
            elif too_large(name, os.path.getsize(candidate)):
                problems.append(f"{label}: {relative} is too large to be a {os.path.splitext(name)[1][1:]} file: "
                                f"not read")
            else:
                files[name] = candidate
            break
    return files


def is_link(info):
    """Whether zip member `info` is a symbolic link (by the Unix mode bits it carries): its data is then
    the path it leads to, not a deliverable."""
    return stat.S_ISLNK(info.external_attr >> 16)


def zip_files(path, problems, label):
    """{deliverable: member name} of a hand-in zip (None when the zip cannot be read)."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info for info in archive.infolist() if not info.is_dir()}
    except (zipfile.BadZipFile, OSError) as error:
        problems.append(f"{label}: not a readable zip ({error}): not compared")
        return None
    files = {}
    for name in COMPARED:
        member = next((m for m in (name, f"{SUBFOLDER}/{name}") if m in members), None)
        if member is None:
            continue
        if is_link(members[member]):
            problems.append(f"{label}: {member} is a symbolic link: not read")
        elif too_large(name, members[member].file_size):
            problems.append(f"{label}: {member} is too large to be a {os.path.splitext(name)[1][1:]} file: not read")
        else:
            files[name] = member
    return files


class MetadataLoader(yaml.SafeLoader):
    """YAML as Gradescope writes submission_metadata.yml (Ruby's Psych): safe, with Ruby's own tags
    (`!ruby/object:BigDecimal` and the like) read as the plain values they tag."""


def untagged(loader, tag_suffix, node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


MetadataLoader.add_multi_constructor('!', untagged)


def submitters(path, problems, label):
    """{submission folder name: its submitters' names} from Gradescope's submission_metadata.yml."""
    try:
        with open(path, encoding='utf-8') as f:
            metadata = yaml.load(f, Loader=MetadataLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        problems.append(f"{label}/{METADATA}: {' '.join(str(error).split())}: hand-ins are named by their folders")
        return {}
    names = {}
    for key, entry in (metadata.items() if isinstance(metadata, dict) else ()):
        people = entry.get(':submitters') if isinstance(entry, dict) else None
        found = [person.get(':name') for person in people or () if isinstance(person, dict)]
        if any(found):
            names[key] = ' & '.join(name for name in found if name)
    return names


def read_hand_ins(folder, known=None):
    """(hand-ins, problems) of a folder of hand-ins; `known` names the folder for a --known one."""
    label = os.path.basename(os.path.normpath(folder))
    problems, hand_ins = [], []
    metadata = os.path.join(folder, METADATA)
    names = submitters(metadata, problems, label) if os.path.isfile(metadata) else {}
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if entry == METADATA or entry.startswith('.'):
            continue
        stem = entry[:-4] if entry.endswith('.zip') else entry
        name = f"{names[stem]} ({stem})" if stem in names else stem
        name = f"{label}/{name}" if known else name
        if os.path.isdir(path):
            files = folder_files(path, problems, name)
        elif os.path.isfile(path) and entry.endswith('.zip'):
            files = zip_files(path, problems, name)
        else:
            problems.append(f"{name}: neither a folder nor a zip: not a hand-in")
            continue
        if files == {}:
            problems.append(f"{name}: no parameters or prediction files (the deliverables, flat or under "
                            f"{SUBFOLDER}/): not compared")
        elif files:
            hand_ins.append(HandIn(name, path, known, files))
    return hand_ins, problems


def named_apart(hand_ins):
    """The hand-ins, each name made unique by a ' [k]' suffix where two would share one."""
    taken = set()
    for hand_in in hand_ins:
        name, count = hand_in.name, 1
        while name in taken:  # a name taken before, as given or as made here ('bo [2]')
            count += 1
            name = f"{hand_in.name} [{count}]"
        hand_in.name = name
        taken.add(name)
    return hand_ins
