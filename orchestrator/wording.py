"""How a count, a status and a kind of value are written in what smtrain prints: `1 file`, `2 files` (`1 files` and
`file(s)` read as slips), `in progress` (not `inprogress`), `an int` (not `a int`), `a named pipe (FIFO)` (not
`S_IFIFO`)."""

from __future__ import annotations

import re
import stat
from typing import Any


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and its noun in the number it takes; `plural` where adding s or es does not make it."""
    if count == 1:
        return f"1 {noun}"
    return f"{count} {plural or noun + ('es' if noun.endswith(('s', 'x', 'sh', 'ch')) else 's')}"


def status_words(status: str) -> str:
    """A SageMaker status as a person writes it: InProgress is `in progress`, NonRetryableError `non retryable
    error` (lowercasing alone gives `inprogress`)."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", status).lower()


def kind_of(value: Any) -> str:
    """What a user passed, by its type, for a refusal: `None`, `a dict`, `an int`, `a JobSpec` (not its value, which
    may hold a secret)."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


_SPECIAL_FILES = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                  (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def special_file_kind(mode: int) -> str | None:
    """What a file of this st_mode is when it is neither a regular file nor a folder (`a named pipe (FIFO)`), for a
    refusal; None for a regular file or a folder."""
    return next((kind for is_kind, kind in _SPECIAL_FILES if is_kind(mode)), None)
