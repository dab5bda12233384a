"""Keeps secrets out of everything smtrain prints: plans, logs, errors.

Only the name/value maps that users fill are masked (environment, hyperparameters, tags), by the name of each
entry: the API's own field names such as `KmsKeyId` or a tag's `Key` are structure, not secrets.
"""

from __future__ import annotations

import re
from typing import Any

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE", re.IGNORECASE)
MASK = "****"
_USER_MAPS = frozenset({"environment", "Environment", "hyperparameters", "HyperParameters", "tags"})
_TAG_LISTS = frozenset({"Tags", "tags"})


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def redact_mapping(values: dict[str, Any]) -> dict[str, Any]:
    """The mapping with the values of secret-looking names masked."""
    return {key: (MASK if is_secret_name(key) else value) for key, value in values.items()}


def redact(document: Any) -> Any:
    """A copy of a plan, spec or request with the secret-looking entries of its user maps masked."""
    if isinstance(document, dict):
        return {key: _redact_field(key, value) for key, value in document.items()}
    if isinstance(document, list):
        return [redact(item) for item in document]
    return document


def _redact_field(name: str, value: Any) -> Any:
    if name in _USER_MAPS and isinstance(value, dict):
        return redact_mapping(value)
    if name in _TAG_LISTS and isinstance(value, list):
        return [{**tag, "Value": MASK} if isinstance(tag, dict) and is_secret_name(str(tag.get("Key", ""))) else tag
                for tag in value]
    return redact(value)
