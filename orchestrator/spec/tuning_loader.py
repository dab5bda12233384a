"""Reads a tuning spec and the job spec it names into a checked pair: the only reader of tuning spec files.

The file is read as the job spec loader reads job specs (a bounded regular UTF-8 file whose YAML event stream
is checked before any tree is built), and every problem of both files is reported at once, each at the line of
the file where it was written, with the field and a fix. `--set` overrides apply to the job spec.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from orchestrator.errors import SpecError
from orchestrator.spec import loader
from orchestrator.spec.loader import InvalidSpec, LoadedSpec, Problem
from orchestrator.spec.tuning import TuningSpec, job_problems, strategy_problems

Loc = tuple[Any, ...]


class InvalidTuningSpec(InvalidSpec):
    """A tuning spec (or its job spec) with one or more problems; nothing was sent anywhere."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        header = f"{count} problem{'s' if count != 1 else ''} in the tuning spec:"
        SpecError.__init__(self, "\n".join([header, *(f"  {problem}" for problem in self.problems)]))


@dataclass(frozen=True)
class LoadedTuning:
    """A valid tuning spec with its loaded job spec."""

    spec: TuningSpec
    job: LoadedSpec
    path: Path | None
    job_overrides: tuple[str, ...] = ()
    """The `--set` overrides applied to the job spec (a local trial applies them again to the same file)."""


def load_tuning(path: str | Path, overrides: Iterable[str] = ()) -> LoadedTuning:
    """Reads and checks a tuning spec and its job spec (`job:`, relative to the tuning spec's folder).

    Args:
        overrides: `key.path=value` for the job spec, as `smtrain plan --set` takes them.

    Raises:
        InvalidTuningSpec: listing every problem of both files, each with its location and a fix.
    """
    path = Path(path)
    text = loader._read_text(path)
    raw, positions = _parse(text, path)
    if not isinstance(raw, dict):
        raise InvalidTuningSpec([Problem(f"{path}:1:1", "", "the tuning spec must be a mapping of keys to values",
                                         "start with `job: my-job.yaml`")])
    try:
        spec = TuningSpec.model_validate(raw)
    except ValidationError as exc:
        problems = [_problem(error, path, positions) for error in exc.errors(include_url=False)]
        raise InvalidTuningSpec(sorted(problems, key=lambda problem: problem.order)) from None
    located = [Problem(_where(path, positions, _loc(field)), field, message, fix)
               for field, message, fix in strategy_problems(spec)]
    if located:
        raise InvalidTuningSpec(located)
    job_path = (path.parent / spec.job).resolve()
    try:
        job = loader.load(job_path, overrides)
    except InvalidSpec as exc:
        raise InvalidTuningSpec([Problem(_where(path, positions, ("job",)), "job",
                                         f"its job spec has problems: {problem}") for problem in exc.problems]) from None
    except SpecError as exc:
        raise InvalidTuningSpec([Problem(_where(path, positions, ("job",)), "job", exc.message,
                                         exc.fix or "give the path of a job spec, relative to this file")]) from None
    problems = [Problem(job.where(field.removeprefix("job:")) if field.startswith("job:")
                        else _where(path, positions, _loc(field)), field.removeprefix("job:"), message, fix)
                for field, message, fix in job_problems(spec, job.spec)]
    if problems:
        raise InvalidTuningSpec(problems)
    return LoadedTuning(spec=spec, job=job, path=path, job_overrides=tuple(overrides))


def _parse(text: str, path: Path) -> tuple[Any, dict[Loc, tuple[int, int]]]:
    import yaml

    try:
        loader._check_shape(text, lambda mark: f"{path}:{mark.line + 1}:{mark.column + 1}")
        node = yaml.compose(text, Loader=loader._yaml_loader_class())
        if node is None:
            raise InvalidTuningSpec([Problem(f"{path}:1:1", "", "the file is empty", "start with `job: my-job.yaml`")])
        positions: dict[Loc, tuple[int, int]] = {(): (1, 1)}
        _collect(node, (), positions, path)
        document = yaml.load(text, Loader=loader._yaml_loader_class())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        message = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InvalidTuningSpec([Problem(where, "", f"YAML: {message}", "check indentation and quoting")]) from None
    return loader._plain(document), positions


def _collect(node: Any, loc: Loc, positions: dict[Loc, tuple[int, int]], path: Path) -> None:
    """Every key path's line and column; a duplicate key is an error, as in job specs."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            where = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if key_node.value in seen:
                raise InvalidTuningSpec([Problem(f"{path}:{where[0]}:{where[1]}", key_node.value, "duplicate key",
                                                 "remove or rename one of the two")])
            seen.add(key_node.value)
            positions[(*loc, key_node.value)] = where
            _collect(value_node, (*loc, key_node.value), positions, path)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            positions[(*loc, index)] = (item.start_mark.line + 1, item.start_mark.column + 1)
            _collect(item, (*loc, index), positions, path)


def _loc(dotted: str) -> Loc:
    return tuple(int(part) if part.isdigit() else part for part in dotted.split(".")) if dotted else ()


def _where(path: Path, positions: dict[Loc, tuple[int, int]], loc: Loc) -> str:
    for depth in range(len(loc), -1, -1):
        if loc[:depth] in positions:
            line, column = positions[loc[:depth]]
            return f"{path}:{line}:{column}"
    return str(path)


def _problem(error: Any, path: Path, positions: dict[Loc, tuple[int, int]]) -> Problem:
    # pydantic names the union member it tried (`continuous`, `function-after[...]`): not a place the user wrote.
    loc: Loc = tuple(part for part in error["loc"]
                     if not str(part).startswith(("function-", "union[", "[key]"))
                     and part not in ("continuous", "integer", "categorical", "str", "int", "float", "bool"))
    message = error["msg"].removeprefix("Value error, ")
    return Problem(_where(path, positions, loc), ".".join(map(str, loc)), message, _fix(error, loc),
                   order=next((positions[loc[:depth]] for depth in range(len(loc), -1, -1) if loc[:depth] in positions),
                              (0, 0)))


def _fix(error: Any, loc: Loc) -> str | None:
    ctx = error.get("ctx") or {}
    if "fix" in ctx:
        return str(ctx["fix"])
    kind, name = error["type"], str(loc[-1]) if loc else ""
    if kind == "extra_forbidden":
        known = sorted(_fields_at(loc[:-1]))
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        return f"did you mean `{close[0]}`?" if close else f"remove it; the keys allowed here are: {', '.join(known)}"
    if kind == "missing":
        return f"add `{name}:`"
    if kind == "union_tag_invalid":
        return "use type: continuous, integer or categorical"
    if kind in ("literal_error", "enum"):
        return f"use one of: {ctx.get('expected', '')}"
    words = {"greater_than_equal": "at least", "greater_than": "more than", "less_than_equal": "at most",
             "less_than": "less than"}
    if kind in words:
        return f"use a value {words[kind]} {next(iter(ctx.values()), '')}"
    if kind in ("too_short", "too_long", "string_too_short", "string_too_long"):
        bound = ctx.get("max_length", ctx.get("min_length"))
        return f"{'at most' if 'long' in kind else 'at least'} {bound} entries or characters are allowed here"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"write a whole number without quotes, e.g. {name}: 2"
    if kind in ("float_type", "float_parsing"):
        return f"write a number without quotes, e.g. {name}: 0.01"
    if kind == "bool_type":
        return f"use true or false, e.g. {name}: true"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"{name} is a mapping: write `key: value` pairs under it"
    if kind == "list_type":
        return f"{name} is a list, e.g. {name}: [a, b]"
    return None


def _fields_at(loc: Loc) -> set[str]:
    """The keys allowed at a place of the tuning spec, for did-you-mean suggestions."""
    from orchestrator.spec.tuning import CategoricalRange, ContinuousRange

    if len(loc) == 2 and loc[0] == "parameters":
        return set(ContinuousRange.model_fields) | set(CategoricalRange.model_fields)
    model: type[BaseModel] | None = TuningSpec
    for part in loc:
        field = model.model_fields.get(str(part)) if model else None
        if field is None:
            return set()
        candidates = [field.annotation, *getattr(field.annotation, "__args__", ())]
        model = next((item for item in candidates if isinstance(item, type) and issubclass(item, BaseModel)), None)
    return set(model.model_fields) if model else set()
