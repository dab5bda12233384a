"""A spec field that a command's own option sets, as `--region eu-west-1` sets `region`: it travels with the `--set`
overrides and applies as their text does, but every message and the plan's sources name it as the user typed it.
Before, `--region X` was reported as `--set region="X"`, an option the user never wrote."""

from __future__ import annotations

import json
import shlex


class OptionOverride(str):
    """`--set`'s text for the field (the value quoted, so `--region null` is the text null, never YAML's null),
    which also knows the option and value it was typed as."""

    words: tuple[str, str]

    def __new__(cls, option: str, dotted: str, value: str) -> OptionOverride:
        made = super().__new__(cls, f"{dotted}={json.dumps(value)}")
        made.words = (option, value)
        return made


def override_words(override: str) -> tuple[str, str]:
    """The command-line words that give `override` again: its own option, or `--set` and its text."""
    return override.words if isinstance(override, OptionOverride) else ("--set", override)


def override_shown(override: str, shown_text: str) -> str:
    """Where a message says the override came from: `--region eu-west-1` as typed, or `--set ` and `shown_text`
    (the text with secrets masked)."""
    return shlex.join(override.words) if isinstance(override, OptionOverride) else f"--set {shown_text}"
