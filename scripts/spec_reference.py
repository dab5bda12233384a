"""Prints the job-spec field reference (Markdown) from the Pydantic models: the README's table comes from here,
and tests/docs/test_docs.py fails when the two disagree."""

from __future__ import annotations

import json
from enum import Enum
from types import UnionType
from typing import Any, Union, get_origin

from pydantic import BaseModel

from orchestrator.specs.field_docs import field_description
from orchestrator.specs.model import Channel, ChannelEntry, JobSpec
from orchestrator.specs.modes import Mode


def _type_name(annotation: Any) -> str:
    args = getattr(annotation, "__args__", ())
    if get_origin(annotation) in (Union, UnionType):
        return " or ".join(_type_name(arg) for arg in args)
    if getattr(annotation, "__metadata__", None) is not None:  # Annotated[str, ...]: the type underneath
        return _type_name(annotation.__origin__)
    if isinstance(annotation, type) and issubclass(annotation, Enum) and annotation is not Mode:
        return "str"
    text = getattr(annotation, "__name__", None) or str(annotation)
    text = text.replace("typing.", "").replace("orchestrator.specs.", "").replace("NoneType", "None")
    return text.replace(" | ", " or ")


def _nested(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model inside an annotation (`Model`, `Model | None`, `list[Model] | None`) and whether it is a list."""
    for arg in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg, False
        inner = getattr(arg, "__args__", ())
        if getattr(arg, "__origin__", None) is list and inner and isinstance(inner[0], type) \
                and issubclass(inner[0], BaseModel):
            return inner[0], True
        if getattr(arg, "__origin__", None) is dict and inner and inner[-1] is ChannelEntry:
            return Channel, False
    return None, False


def _default(field: Any) -> str:
    if field.is_required():
        return "**required**"
    if field.default_factory is not None:
        value = field.default_factory()
        return f"`{json.dumps(value.model_dump(mode='json') if isinstance(value, BaseModel) else value)}`"
    value = field.default
    return f"`{json.dumps(getattr(value, 'value', value))}`"


def rows(model: type[BaseModel], prefix: str = "") -> list[str]:
    lines = []
    for name, field in model.model_fields.items():
        nested, is_list = _nested(field.annotation)
        description = " ".join(field_description(model, name).split()).replace("|", "\\|")
        by_name = nested is Channel
        kind = f"list of {nested.__name__}" if is_list else (
            f"dict of {nested.__name__}" if by_name else nested.__name__ if nested else _type_name(field.annotation))
        default = "see below" if nested and not field.is_required() and field.default is not None else _default(field)
        lines.append(f"| `{prefix}{name}` | {kind} | {default} | {description} |")
        if nested:
            lines += rows(nested, f"{prefix}{name}{'[]' if is_list else '.<name>' if by_name else ''}.")
    return lines


def reference() -> str:
    header = ["| field | type | default | meaning |", "|---|---|---|---|"]
    return "\n".join(header + rows(JobSpec)) + "\n"


if __name__ == "__main__":
    print(reference(), end="")
