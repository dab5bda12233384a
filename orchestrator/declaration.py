"""Options declared once (torchx's runopts): a frozen dataclass whose every field is one option, its metadata a
`Declared` saying how every front end shows it. The command line's flags are generated from such a class
(`cli/options.py`), the API's keywords are checked against it (`options_from`), and the code that runs reads the
instance. The local run's options (`emulator/run_options.py`) and how a job is followed (`cloud/hang_watch.py`'s
`WatchOptions`) are declared so.

Standard library only: every `--help` reads it.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from os import PathLike
from typing import Any, Literal

from orchestrator.errors import SpecError

Takes = Literal["text", "int", "number", "flag", "directory", "pairs"]
"""What the flag takes on a command line: a word, an integer, a number, nothing (a switch that turns the
field from its default), a directory, or repeatable NAME=VALUE pairs (a mapping)."""


@dataclass(frozen=True)
class Declared:
    """One option as every front end shows it (kept in its field's metadata; see `declared`)."""

    help: str
    takes: Takes = "text"
    flag: str | None = None
    """The command-line flag; default: the field's name, --with-dashes."""
    metavar: str | None = None
    minimum: float | None = None
    needs: str | None = None
    """The field of another option this one means nothing without."""
    normalize: Callable[[Any], Any] | None = None
    """A given value (the API's keyword or the flag's word) as the field holds it; ValueError when it cannot be."""
    word: Callable[[Any], str] = str
    """The field's value as the flag's word again (for a trial's command line)."""
    hidden: bool = False
    show_default: bool = False


def declared(default: Any, help: str, **details: Any) -> Any:
    """A dataclass field that is an option: `default` (a callable for a mutable default) and its `Declared`."""
    where = {"default_factory": default} if callable(default) else {"default": default}
    return field(**where, metadata={"option": Declared(help=help, **details)})


def declarations(options: type) -> dict[str, Declared]:
    """Each option's name (the field's, the API's keyword) and its declaration, in declaration order."""
    return {item.name: item.metadata["option"] for item in fields(options) if "option" in item.metadata}


def default_of(options: type, name: str) -> Any:
    [item] = [item for item in fields(options) if item.name == name]
    return item.default_factory() if item.default is MISSING else item.default  # type: ignore[misc]


def flag_of(options: type, name: str) -> str:
    return declarations(options)[name].flag or "--" + name.replace("_", "-")


_PYTHON_TYPES: dict[str, tuple[type | tuple[type, ...], str]] = {
    "int": (int, "an integer"), "number": ((int, float), "a number"), "flag": (bool, "True or False"),
    "directory": ((str, PathLike), "a path"), "pairs": (Mapping, "a mapping, e.g. {\"train\": \"./data\"}")}
"""What an API keyword must be, by what its flag takes (a text option's normalize says what it accepts)."""


def not_a_number(value: Any) -> str | None:
    """Why a number option refuses `value`, None when it does not: NaN, which passes every comparison with a
    minimum and then fails deep in what reads it (`time.sleep(nan)` in a follow loop). The API's keyword and the
    CLI's flag refuse it in these words."""
    return f"{value!r} is not a number" if isinstance(value, float) and math.isnan(value) else None


def options_from(options: type, keywords: Mapping[str, Any], owner: str) -> Any:
    """The API's keywords as an instance of `options`, each given value normalized as its flag's would be.

    Raises:
        SpecError: a keyword that is no option of `owner` (naming the nearest), a value of the wrong kind (NaN for a
            number), below its minimum or that cannot be normalized, an option given without the one it needs.
    """
    declared_options = declarations(options)
    unknown = [name for name in keywords if name not in declared_options]
    if unknown:
        near = difflib.get_close_matches(unknown[0], declared_options, n=1)
        raise SpecError(f"{owner} has no option {unknown[0]!r}",
                        fix=f"did you mean `{near[0]}`?" if near else f"use one of: {', '.join(declared_options)}")
    values = {}
    for name, value in keywords.items():
        option = declared_options[name]
        wanted = _PYTHON_TYPES.get(option.takes)
        if wanted and value is not None and (not isinstance(value, wanted[0]) or (
                isinstance(value, bool) and option.takes != "flag")):
            raise SpecError(f"{name}={value!r} is not {wanted[1]}", fix=f"pass {name} as {wanted[1]}")
        if option.takes == "number" and (refusal := not_a_number(value)):
            raise SpecError(f"{name}={refusal}", fix=f"pass {name} as a number")
        if option.minimum is not None and value is not None and value < option.minimum:
            raise SpecError(f"{name}={value!r} is below its minimum {option.minimum:g}",
                            fix=f"pass {name} of at least {option.minimum:g}")
        try:
            values[name] = option.normalize(value) if option.normalize and value is not None else value
        except ValueError as error:
            raise SpecError(f"{name}: {error}", fix=f"pass another {name}") from None
    for name, option in declared_options.items():
        if option.needs and values.get(name) is not None and values.get(option.needs) is None:
            raise SpecError(f"{name} needs {option.needs}", fix=f"pass {option.needs} as well")
    return options(**values)
