"""Reading a file of a spec's source dir while judging the spec (validate, plan, smtrain local's checks): only a
regular file inside the source dir and of a hand-written size, so that a FIFO, a link out of the folder or a huge
file in an untrusted source dir never hangs, leaks into or floods a check (docs/security.md)."""

from __future__ import annotations

import stat
from pathlib import Path

MAX_SOURCE_FILE_BYTES = 1024 * 1024
"""Larger files are not read: no hand-written training script, configurator or requirements.txt is this large."""


def source_file_text(directory: str | Path, relative: str) -> str | None:
    """The text of `relative` in `directory`; None where it is no regular file inside it (a FIFO, a link out of
    it), larger than MAX_SOURCE_FILE_BYTES, or cannot be read."""
    try:
        root = Path(directory).resolve()
        path = (root / relative).resolve()
        if not path.is_relative_to(root) or not stat.S_ISREG(path.stat().st_mode):
            return None
        with path.open("rb") as handle:
            data = handle.read(MAX_SOURCE_FILE_BYTES + 1)
    except (OSError, RuntimeError, ValueError):  # RuntimeError: a link loop before Python 3.13; ValueError: a NUL
        return None
    return data.decode("utf-8", "replace") if len(data) <= MAX_SOURCE_FILE_BYTES else None
