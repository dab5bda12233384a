"""What YAML makes of unquoted text, where a spec means that text as written.

PyYAML follows YAML 1.1: unquoted, `yes`, `no`, `on`, `off`, `true` and `false` are booleans, `null` and `~`
are null, `010` is 8 (octal), `0x1F` is 31, `1_000` is 1000, `1:30` is 90 (base 60), `2.10` is 2.1 and
`2024-01-01` is a date. A key so read would silently rename what the user named (`yes: 1` would reach SageMaker
as the hyperparameter `True`), so the loader refuses it with the quoted key as the fix. A hyperparameter value
(a job's, or a tuned categorical one) reaches the script as text anyway, so it keeps the text the user wrote
wherever YAML's reading would be sent as other text; plain numbers and true/false stay as YAML reads them.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import yaml

_STR_TAG = "tag:yaml.org,2002:str"
_READ_TAGS = frozenset(f"tag:yaml.org,2002:{kind}" for kind in ("bool", "null", "int", "float", "timestamp"))


class NoSuchDate(yaml.constructor.ConstructorError):
    """Unquoted text YAML reads as a date that does not exist (`2024-13-45`): PyYAML raises a bare ValueError."""

    def __init__(self, node: yaml.ScalarNode, reason: str) -> None:
        super().__init__(None, None, f"{node.value} reads as a date, and there is none ({reason})",
                         node.start_mark)
        self.text = node.value


def _date(constructor: Any, node: yaml.ScalarNode) -> Any:
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_timestamp(constructor, node)
    except ValueError as exc:
        raise NoSuchDate(node, str(exc)) from None


class BareEquals(yaml.constructor.ConstructorError):
    """An unquoted `=` as a value: YAML 1.1's "value" indicator, which PyYAML cannot build ("could not determine a
    constructor for the tag 'tag:yaml.org,2002:value'"). As a key, PyYAML keeps it as the text `=`."""

    def __init__(self, node: yaml.ScalarNode) -> None:
        super().__init__(None, None, "an unquoted = is YAML's value indicator, not text", node.start_mark)


def _bare_equals(constructor: Any, node: yaml.ScalarNode) -> Any:
    raise BareEquals(node)


class _Constructor(yaml.constructor.SafeConstructor):
    pass


class SpecLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader (libyaml's where installed), whose refusal of a date that does not exist is a YAML
    error with its place, not a ValueError."""


for _class in (_Constructor, SpecLoader):
    _class.add_constructor("tag:yaml.org,2002:timestamp", _date)
    _class.add_constructor("tag:yaml.org,2002:value", _bare_equals)


def _reading(node: yaml.ScalarNode) -> Any:
    """The value YAML makes of a scalar, built apart from the document's own constructor (which caches by node)."""
    return _Constructor().construct_object(node)


def _is_read_as_other(node: Any) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag in _READ_TAGS and not node.style  # plain: None or ""


def described(value: Any, written: str) -> str:
    """What YAML read, in words: `the boolean true`, `null`, `the integer 8 (octal)`, `the number 2.1`, `the date
    2024-01-01`; `written` (the text YAML read it from) names a notation the user may not know of."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        notation = next((words for test, words in _NOTATIONS if test(written.lstrip("+-"))), "")
        return f"the {'integer' if isinstance(value, int) else 'number'} {value}{notation}"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return f"the date {value.isoformat()}"
    return repr(value)


_NOTATIONS = (
    (lambda text: ":" in text, " (base 60)"),
    (lambda text: text[:2].lower() == "0x", " (hexadecimal)"),
    (lambda text: text[:2].lower() == "0b", " (binary)"),
    (lambda text: len(text) > 1 and text[0] == "0" and text.replace("_", "").isdigit(), " (octal)"),
    (lambda text: "_" in text, " (YAML drops the underscores)"),
)


def misread_key(key_node: Any) -> str | None:
    """`key yes was read by YAML as the boolean true`, or None where the key keeps its text (`1: x` is "1")."""
    if not _is_read_as_other(key_node):
        return None
    value = _reading(key_node)
    if str(value) == key_node.value:
        return None
    return f"key {key_node.value or '(empty)'} was read by YAML as {described(value, key_node.value)}"


def quoted_key_fix(key_node: Any, value_node: Any) -> str:
    """`write the key in quotes: "yes": 1`."""
    value = f" {value_node.value}" if isinstance(value_node, yaml.ScalarNode) and value_node.value else ""
    return f'write the key in quotes: "{key_node.value}":{value}'


def first_misread_key(node: Any) -> tuple[Any, str] | None:
    """The first key at or below `node` that YAML reads as other text, with its message; for a
    `--set` value, whose keys have no place of their own to report."""
    pending = [node]
    while pending:
        current = pending.pop(0)
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                message = misread_key(key_node)
                if message:
                    return key_node, message
                pending.append(value_node)
        elif isinstance(current, yaml.SequenceNode):
            pending.extend(current.value)
    return None


def as_written(node: Any) -> Any:
    """`node` with every unquoted scalar at or below it (keys aside) that YAML reads as a number, boolean or date
    sent as other text than written (`010` as 8, `1:30` as 90, `on` as true, `2.10` as 2.1) made the string it was
    written as. Collections are changed in place; a scalar is returned replaced. Nulls stay null."""
    if isinstance(node, yaml.MappingNode):
        node.value = [(key_node, as_written(value_node)) for key_node, value_node in node.value]
    elif isinstance(node, yaml.SequenceNode):
        node.value = [as_written(item) for item in node.value]
    elif _is_read_as_other(node) and node.tag != "tag:yaml.org,2002:null" and not _sent_as_written(node):
        return yaml.ScalarNode(_STR_TAG, node.value, node.start_mark, node.end_mark, style='"')
    return node


def _sent_as_written(node: yaml.ScalarNode) -> bool:
    """Whether the request's JSON text of what YAML read is the text written (`3`, `0.05`, `true`)."""
    try:
        return json.dumps(_reading(node)) == node.value
    except (TypeError, NoSuchDate):  # a date: JSON has none
        return False


def mapping_value(node: Any, key: str) -> Any:
    """The value node under the key written as `key` in a mapping node, or None."""
    if isinstance(node, yaml.MappingNode):
        return next((value for name, value in node.value if name.tag == _STR_TAG and name.value == key), None)
    return None
