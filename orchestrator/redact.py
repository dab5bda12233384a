"""Keeps secrets out of everything smtrain prints: plans, logs, errors."""

from __future__ import annotations

import re
from typing import Any

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE", re.IGNORECASE)
MASK = "****"


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def redact_mapping(values: dict[str, Any]) -> dict[str, Any]:
    """The mapping with the values of secret-looking names masked."""
    return {key: (MASK if is_secret_name(key) else value) for key, value in values.items()}


def redact(document: Any) -> Any:
    """A copy of a plan or request with secret-looking entries masked wherever a name/value mapping appears.

    Covers `environment`/`Environment` and `hyperparameters`/`HyperParameters` dicts, and any other dict keyed
    by secret-looking names.
    """
    if isinstance(document, dict):
        return {key: (MASK if is_secret_name(str(key)) and isinstance(value, (str, int, float)) else redact(value))
                for key, value in document.items()}
    if isinstance(document, list):
        return [redact(item) for item in document]
    return document
