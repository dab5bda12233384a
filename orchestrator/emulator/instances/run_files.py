"""Files smtrain itself writes in a run directory, never through a link someone planted there.

A run directory may be reused or shared: a symlink named `.smtrain-lock`, `status.tmp` or `.result.json.partial`
would turn smtrain's write into a write to whatever file it points at. Every such file is opened with
O_NOFOLLOW (a link there fails the write with ELOOP instead), and a reused directory holding links at its top level
or in the checkpoint prefix is refused before anything is written (`planted_links`).
"""

from __future__ import annotations

import os
from pathlib import Path

_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
KEPT_TREES = ("checkpoints-s3",)
"""Folders of a run directory kept from one run to the next (the checkpoint prefix), whose links a rerun would
follow: searched whole."""


def open_for_writing(path: Path, mode: int = 0o644, *, truncate: bool = True) -> int:
    """A descriptor for writing `path`, created if missing; a symlink at `path` fails with ELOOP.

    Raises:
        OSError: ELOOP for a link, or why it cannot be opened.
    """
    flags = os.O_WRONLY | os.O_CREAT | _NO_FOLLOW | (os.O_TRUNC if truncate else 0)
    return os.open(path, flags, mode)


def write_text(path: Path, text: str, mode: int = 0o644) -> None:
    """`path.write_text(text)`, never through a link."""
    with os.fdopen(open_for_writing(path, mode), "w", encoding="utf-8") as handle:
        handle.write(text)


def planted_links(root: Path) -> list[Path]:
    """The links a rerun would write or read through: the run directory's own entries and everything under the
    folders it keeps. smtrain makes no link in either (a job's links live inside its host's folder, which a
    rerun deletes without following)."""
    found = [entry for entry in root.iterdir() if entry.is_symlink()]
    for name in KEPT_TREES:
        kept = root / name
        if kept.is_dir() and not kept.is_symlink():
            for directory, names, files in os.walk(kept):
                found += [Path(directory, item) for item in [*names, *files] if Path(directory, item).is_symlink()]
    return sorted(found)
