"""A spec field that a command's own option sets, as `--region eu-west-1` sets `region` and `--allow-unverified`
sets `allow_unverified`: it travels with the `--set` overrides and applies as their text does, but every message and
the plan's sources name it as the user typed it. So does a keyword of the Python API (`region="eu-west-1"`). Before,
`--region X` was reported as `--set region="X"`, `--allow-unverified` and `allow_unverified=True` as `--set
allow_unverified=true`: options the user never wrote."""

from __future__ import annotations

import ast
import json
import shlex
from typing import Any


class OptionOverride(str):
    """`--set`'s text for the field (the value quoted, so `--region null` is the text null, never YAML's null),
    which also knows the option and value it was typed as."""

    words: tuple[str, ...]

    def __new__(cls, option: str, dotted: str, value: str) -> OptionOverride:
        return cls._made(f"{dotted}={json.dumps(value)}", (option, value))

    @classmethod
    def flag(cls, option: str, text: str) -> OptionOverride:
        """A flag that takes no value and stands for `text` (`--allow-unverified`: `allow_unverified=true`)."""
        return cls._made(text, (option,))

    @classmethod
    def _made(cls, text: str, words: tuple[str, ...]) -> OptionOverride:
        made = str.__new__(cls, text)
        made.words = words
        return made


class KeywordOverride(str):
    """An override given to the Python API's `overrides=` (`load_spec`, `plan_tuning`, `load_tuning`): messages
    name it as given there, `overrides=["instance.count=2"]`, where the command line's is `--set instance.count=2`.
    A trial of a local search still runs it with `--set` (`override_words`): that is a command line."""


def override_said(override: str, text: str, quoted: bool = False) -> str:
    """`text` (the override's `key=value`, masked or mended for a fix) as its user gives an override:
    `overrides=["text"]` from Python, `--set text` on the command line, `--set 'text'` where the shell would
    strip the quotes `text` holds."""
    if isinstance(override, KeywordOverride):
        literal = repr(text) if '"' in text else json.dumps(text)  # double quotes, as the API's examples, if it can
        return f"overrides=[{literal}]"
    return f"--set '{text}'" if quoted else f"--set {text}"


def said_override(shown: str) -> str | None:
    """The override that `override_said` showed, its `key=value` as shown (a KeywordOverride where it came from
    Python), for a fix to give it again in its user's words; None for an option's (`--region X`)."""
    if shown.startswith("--set "):
        return shown.removeprefix("--set ")
    if shown.startswith("overrides=[") and shown.endswith("]"):
        return KeywordOverride(ast.literal_eval(shown.removeprefix("overrides=[").removesuffix("]")))
    return None


def override_words(override: str) -> tuple[str, ...]:
    """The command-line words that give `override` again: its own option, or `--set` and its text."""
    return override.words if isinstance(override, OptionOverride) else ("--set", override)


def override_shown(override: str, shown_text: str) -> str:
    """Where a message says the override came from: `--region eu-west-1` as typed, or `--set ` and `shown_text`
    (the text with secrets masked), or from Python `overrides=["shown_text"]`."""
    return shlex.join(override.words) if isinstance(override, OptionOverride) else override_said(override, shown_text)


def keyword_shown(keyword: str, value: Any) -> str:
    """Where a message says a Python API keyword set the field: `region='eu-west-1'`, as the call wrote it."""
    return f"{keyword}={value!r}"


def override_origin(shown: str) -> str:
    """The option or keyword an override was shown as coming from (`--region eu-west-1`: `--region`; `--set
    a=b`: `--set`; `region='eu-west-1'`: `region=`), for the plan's sources."""
    return shown.split(" ", 1)[0] if shown.startswith("--") else f"{shown.partition('=')[0]}="
