"""Where each value of a plan came from: the spec, --set (or an option that stands for one, --region), an
environment variable, an SDK defaults file, the infra stack, Studio's metadata, smtrain's or the SDK's default, or
a fallback."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

SPEC = "spec"
SET = "--set"
ENVIRONMENT = "environment"
SDK_DEFAULTS = "sdk-defaults"
INFRA_STACK = "infra-stack"
STUDIO = "studio-metadata"
DEFAULT = "default"
FALLBACK = "fallback"


@dataclass(frozen=True)
class Source:
    """One value's origin. `where`: the file and line, variable, stack or file path; `key`: the SDK defaults
    key; `level`: admin or user (SDK defaults files)."""

    kind: str
    where: str | None = None
    key: str | None = None
    level: str | None = None

    def to_dict(self) -> dict[str, str]:
        shown = {"from": self.kind, "where": self.where, "key": self.key, "level": self.level}
        return {name: value for name, value in shown.items() if value is not None}

    def __str__(self) -> str:
        if self.kind == SDK_DEFAULTS:
            return f"SDK defaults ({self.level}) {self.where}: {self.key}"
        return self.kind if self.where is None else f"{self.kind} {self.where}"


def leaves(document: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every scalar or list in a nested mapping; an empty mapping is one leaf."""
    if isinstance(document, Mapping) and document:
        for key, value in document.items():
            yield from leaves(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, document
