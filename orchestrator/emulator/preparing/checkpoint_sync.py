"""The checkpoint prefix kept in step with the hosts' checkpoint paths, as SageMaker syncs them: at (re)start every
host receives the whole prefix; a file new or changed on a host is uploaded; a file a host deleted is deleted from
the prefix (a rotating script's old checkpoints must not come back at the next restart).

A deletion is read from a host's directory only when that directory is known to hold what the host received: the
restore writes a record into the run directory (never into the folder the job sees) of the files it copied, and
adds each host once its copy is whole. A host the record does not name (a run killed or failed before its restore
finished, a run directory from before the record) and a host whose folder is gone only upload what is new.
Files are compared by size and modification time (a restored copy keeps the prefix's), never read.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from orchestrator.emulator.instances import run_files

RECORD_FILE = ".smtrain-checkpoints-received.json"

Stamp = tuple[int, int]
"""A file's size and modification time (ns)."""


@dataclass(frozen=True)
class Received:
    """What the hosts received at the attempt's start: the prefix's files, and the hosts whose copy is whole."""

    local_path: str
    files: dict[str, Stamp]
    restored: frozenset[str]


@dataclass(frozen=True)
class Upload:
    """What an upload does to the prefix: each file to copy with the host it comes from, and the files to delete."""

    files: dict[str, str]
    deletions: frozenset[str]


@dataclass(frozen=True)
class PrefixSync:
    """A run's checkpoint prefix and the hosts' checkpoint folders it syncs with."""

    prefix: Path
    record: Path
    local_path: str
    hosts: tuple[str, ...]
    directory: Callable[[str], Path]
    """Where a host's checkpoint path lies here."""
    follow: Callable[[str, str], str]
    """Where an absolute link a host (the first argument) made (`latest -> /opt/ml/checkpoints/step-10`) points here."""


def plan_upload(received: Received | None, hosts: dict[str, dict[str, Stamp]]) -> Upload:
    """The set logic of an upload: `hosts` are the hosts whose folder is there, in order (a later host's copy of a
    clash wins; a host whose folder is gone deletes nothing).

    A host uploads what it has that it did not receive, and, when its restore was whole, what it changed; its
    missing files are deletions only then. A file changed on one host and deleted on another is kept (uploaded):
    the emulator cannot tell which came last, and keeping a checkpoint costs room where losing one costs the run.
    """
    given = received.files if received else {}
    files: dict[str, str] = {}
    deleted: set[str] = set()
    for name, found in hosts.items():
        whole = received is not None and name in received.restored
        files.update({path: name for path, stamp in found.items()
                      if path not in given or (whole and stamp != given[path])})
        if whole:
            deleted |= given.keys() - found.keys()
    return Upload(files, frozenset(deleted - files.keys()))


def restore(sync: PrefixSync) -> None:
    """Every host receives the whole prefix; the record names each host once its copy is whole."""
    received = Received(sync.local_path, _prefix_files(sync.prefix), frozenset())
    _write_record(sync.record, received)
    for name in sync.hosts:
        directory = sync.directory(name)
        directory.mkdir(parents=True, exist_ok=True)
        if sync.prefix.is_dir():
            shutil.copytree(sync.prefix, directory, dirs_exist_ok=True)
        received = Received(received.local_path, received.files, received.restored | {name})
        _write_record(sync.record, received)


def upload(sync: PrefixSync) -> None:
    """Deletes from the prefix what the hosts deleted (while the prefix still holds what they received), then
    copies what they added or changed; the hosts the record names are read too (a rerun may have fewer)."""
    received = _read_record(sync)
    names = [*sync.hosts, *sorted((received.restored if received else set()) - set(sync.hosts))]
    found = {name: files for name in names
             if (files := host_files(sync.directory(name), partial(sync.follow, name))) is not None}
    plan = plan_upload(received, {name: {path: stamp for path, (_, stamp) in files.items()}
                                  for name, files in found.items()})
    given = received.files if received else {}
    for path in sorted(plan.deletions):
        target = sync.prefix / path
        if _stamp(target) == given[path]:
            target.unlink()
            _remove_empty_parents(target.parent, sync.prefix)
    for path, name in plan.files.items():
        target = sync.prefix / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(found[name][path][0], target)


def forget(record: Path) -> None:
    """The hosts' folders are about to be cleared: no record may say they hold what they received."""
    record.unlink(missing_ok=True)


def host_files(directory: Path, follow: Callable[[str], str]) -> dict[str, tuple[Path, Stamp]] | None:
    """The files of a host's checkpoint folder as the host sees them (links followed, an absolute one through the
    host's `follow`; a link to nothing, or back up the tree, skipped); None when the folder is gone."""
    if not directory.is_dir():
        return None
    found: dict[str, tuple[Path, Stamp]] = {}
    _walk(directory, "", follow, found, frozenset())
    return found


def _walk(directory: Path, relative: str, follow: Callable[[str], str], found: dict[str, tuple[Path, Stamp]],
          above: frozenset[tuple[int, int]]) -> None:
    here = os.stat(directory)
    above = above | {(here.st_dev, here.st_ino)}
    for entry in os.scandir(directory):
        source = entry.path
        if entry.is_symlink() and os.path.isabs(named := os.readlink(source)):
            source = follow(named)
        try:
            status = os.stat(source)
        except OSError:
            continue
        if stat.S_ISDIR(status.st_mode) and (status.st_dev, status.st_ino) not in above:
            _walk(Path(source), f"{relative}{entry.name}/", follow, found, above)
        elif stat.S_ISREG(status.st_mode):
            found[f"{relative}{entry.name}"] = (Path(source), (status.st_size, status.st_mtime_ns))


def _prefix_files(prefix: Path) -> dict[str, Stamp]:
    found: dict[str, Stamp] = {}
    for directory, _, names in os.walk(prefix):
        for name in names:
            path = Path(directory, name)
            if (stamp := _stamp(path)) is not None:
                found[path.relative_to(prefix).as_posix()] = stamp
    return found


def _stamp(path: Path) -> Stamp | None:
    try:
        status = path.lstat()
    except OSError:
        return None
    return (status.st_size, status.st_mtime_ns)


def _remove_empty_parents(directory: Path, prefix: Path) -> None:
    """S3 holds no folders: one emptied by deletions goes too (a restored empty `checkpoint-500/` would be taken
    for a checkpoint by a script that resumes from the newest folder)."""
    while directory != prefix and directory.is_relative_to(prefix) and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def _write_record(record: Path, received: Received) -> None:
    """Whole or not at all, before the job starts: a killed smtrain's upload reads it at the next reuse (no fsync: it
    would flush the copied checkpoints with it, and a record lost to a power cut only means nothing is deleted)."""
    document = {"local_path": received.local_path, "files": received.files, "restored": sorted(received.restored)}
    partial = record.with_name(f".{record.name}.partial")
    run_files.write_text(partial, json.dumps(document))
    os.replace(partial, record)


def _read_record(sync: PrefixSync) -> Received | None:
    """The record of this checkpoint path; None when there is none (or it cannot be read: then nothing is deleted)."""
    try:
        document = json.loads(sync.record.read_text())
        received = Received(document["local_path"], {path: (int(size), int(mtime))
                                                     for path, (size, mtime) in document["files"].items()},
                            frozenset(document["restored"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return received if received.local_path == sync.local_path else None
