"""The spec models' field descriptions: the docstring under each field, read when a message or the JSON Schema
needs one rather than when the models are built.

pydantic's `use_attribute_docstrings` finds them at class creation by walking frames and tokenizing each class's
source, which was about half of `orchestrator.specs.model`'s import time and so of every `smtrain validate`. Here
one `ast.parse` of the module, the first time a description is asked for, serves every model in it.
"""

from __future__ import annotations

import ast
import inspect
import sys
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from orchestrator import python_source


@cache
def _module_docstrings(module_name: str) -> dict[str, dict[str, str]]:
    """{class name: {field name: its docstring}} for every class of the module, as pydantic reads them: a string
    statement right after an annotated assignment."""
    tree = python_source.parse(inspect.getsource(sys.modules[module_name]))
    documented: dict[str, dict[str, str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        fields = documented.setdefault(node.name, {})
        for statement, following in zip(node.body, node.body[1:]):
            if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                    and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)):
                fields[statement.target.id] = inspect.cleandoc(following.value.value)
    return documented


def field_description(model: type[BaseModel], field: str) -> str:
    """The field's description (`Field(description=...)`), else its docstring, else ""."""
    info = model.model_fields.get(field)
    if info is not None and info.description:
        return info.description
    for cls in model.__mro__:
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            docstring = _module_docstrings(cls.__module__).get(cls.__name__, {}).get(field)
            if docstring:
                return docstring
    return ""


class _WithFieldDocstrings(GenerateJsonSchema):
    """Adds each field's docstring as its `description`, where pydantic's attribute docstrings would put it."""

    def model_schema(self, schema: Any) -> Any:
        json_schema = super().model_schema(schema)
        model = schema["cls"]
        for name, field_schema in json_schema.get("properties", {}).items():
            description = field_description(model, name)
            if description and "description" not in field_schema:
                field_schema["description"] = description
        return json_schema


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with every field described."""
    return model.model_json_schema(schema_generator=_WithFieldDocstrings)
