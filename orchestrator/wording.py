"""How a count and a status are written in what smtrain prints: `1 file`, `2 files` (`1 files` and `file(s)` read
as slips), `in progress` (not `inprogress`)."""

from __future__ import annotations

import re


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and its noun in the number it takes; `plural` where adding s or es does not make it."""
    if count == 1:
        return f"1 {noun}"
    return f"{count} {plural or noun + ('es' if noun.endswith(('s', 'x', 'sh', 'ch')) else 's')}"


def status_words(status: str) -> str:
    """A SageMaker status as a person writes it: InProgress is `in progress`, NonRetryableError `non retryable
    error` (lowercasing alone gives `inprogress`)."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", status).lower()
