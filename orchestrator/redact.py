"""Keeps secrets out of everything smtrain prints: plans, logs, errors. The one masking mechanism.

Documents (plans, requests, specs): only the name/value maps that users fill are masked (environment,
hyperparameters, tags), by the name of each entry: the API's own field names such as `KmsKeyId` or a tag's `Key`
are structure, not secrets. Free text (a failure reason, a command line, an error's fix hint): `mask_text` with
the spec's `secret_values`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE", re.IGNORECASE)
MASK = "****"
MIN_MASKED_LENGTH = 4
_SECRET_WORD = r"[\w.-]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE)[\w.-]*"
# A value given to a secret-looking flag or variable: `--api_key abc`, `--db-password=abc`, `HF_TOKEN=abc`.
# Only flags take a value after a space: prose such as "the key was not found" stays as it is.
_SECRET_ASSIGNMENT = re.compile(
    rf"(?P<name>(?<![\w-])(?:--?{_SECRET_WORD}(?:=|\s+(?!-))|{_SECRET_WORD}=))(?P<value>[^\s\"']+)", re.IGNORECASE)
_USER_MAPS = frozenset({"environment", "Environment", "hyperparameters", "HyperParameters", "tags"})
_TAG_LISTS = frozenset({"Tags", "tags"})


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def secret_values(*mappings: Mapping[str, Any]) -> frozenset[str]:
    """The values of the secret-looking names in these maps (environment, hyperparameters, tags), as text.

    Booleans and nulls are left out: `use_token: true` holds no secret, and masking every "True" would garble
    the text around it. Lists and mappings are given in their JSON form, as the container receives them.
    """
    found = set()
    for mapping in mappings:
        for name, value in mapping.items():
            if not is_secret_name(str(name)) or value is None or isinstance(value, bool):
                continue
            text = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
            if text:
                found.add(text)
    return frozenset(found)


def mask_text(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every secret value in it masked: the known values wherever they occur, and any value given to
    a secret-looking flag or assignment (`--api_key abc`, `--api_key=abc`, `API_KEY=abc`).

    Known values shorter than MIN_MASKED_LENGTH are masked only in those flag positions: masking every "42" in a
    traceback would hide more than it protects.
    """
    for value in sorted((value for value in secrets if len(value) >= MIN_MASKED_LENGTH), key=len, reverse=True):
        text = text.replace(value, MASK)
    return _SECRET_ASSIGNMENT.sub(lambda match: match.group("name") + MASK, text)


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
