"""Reads a spec file and `--set` overrides into a checked JobSpec, and a tuning spec with the job spec it names
into a checked pair (`load_tuning`): the only reader of spec files.

Every problem is reported against where the user wrote it (file:line:col, or the `--set` that introduced it),
with the field path and a fix; all problems are collected before raising, so one run shows them all.

A spec is untrusted input: it is read as a regular UTF-8 file of bounded size, and its YAML event stream is
checked for depth and alias expansion before any tree is built, so a hostile file gets one message instead of
a segfault, a RecursionError or gigabytes of memory. Values of secret-looking names never appear in a message.
"""

from __future__ import annotations

import codecs
import dataclasses
import difflib
import errno
import glob
import json
import math
import os
import re
import stat
import sys
import types
import typing
import unicodedata
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from orchestrator.errors import CapabilityError, SpecError
from orchestrator.redact import MASK, is_secret_name, mask_text, secret_values
from orchestrator.specs.capabilities import Finding, check
from orchestrator.specs.field_docs import field_description
from orchestrator.specs.model import JobSpec, is_uri, one_line
from orchestrator.specs.option_overrides import (
    KeywordOverride,
    keyword_shown,
    override_origin,
    override_said,
    override_shown,
    said_override,
)
from orchestrator.specs.sdk_names import sdk_name_fix, sdk_shape_fix, sdk_spec_key
from orchestrator.specs.words import SPEC_WORDS, FieldWords
from orchestrator.specs.yaml_characters import CharacterRefusal, bad_unicode_escape, unusual_space
from orchestrator.specs.yaml_readings import (BareEquals, NoSuchDate, SpecLoader, as_written, described,
                                              first_misread_key, mapping_value, misread_key, quoted_key_fix)
from orchestrator.wording import counted, kind_of, special_file_kind

if TYPE_CHECKING:
    from orchestrator.specs.tuning import TuningSpec

Loc = tuple[Any, ...]

# Bounds on what a spec may be. Real specs are a few hundred bytes, 5 levels deep and a few hundred nodes.
MAX_SPEC_BYTES = 1024 * 1024
MAX_NESTING = 32
MAX_NODES = 10_000
"""Nodes once every alias is expanded: what the parsed spec would hold in memory."""
_INT_TAG = "tag:yaml.org,2002:int"
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec, located."""

    where: str
    field: str
    message: str
    fix: str | None = None
    order: tuple[int, int] = (0, 0)
    """(line, column) for sorting; overrides sort after the file."""

    def __str__(self) -> str:
        text = f"{self.where}: {self.field}: {self.message}" if self.field else f"{self.where}: {self.message}"
        return f"{text}\n    fix: {self.fix}" if self.fix else text

    def to_dict(self) -> dict[str, Any]:
        """For `--output json`: the place split into file, line and column (None for an override, which is named in
        `override`: a `--set`'s text, or the option as typed, `--region eu-west-1`), the field, the message and
        the fix."""
        place = re.fullmatch(r"(.*?):(\d+)(?::(\d+))?", self.where)
        override = (self.where.removeprefix("--set ") if self.where.startswith("--set ")
                    else self.where if self.where.startswith("--") else None)
        file = None if override else (place.group(1) if place else self.where)
        return {"file": file, "line": int(place.group(2)) if place and not override else None,
                "column": int(place.group(3)) if place and place.group(3) and not override else None,
                "override": override, "field": self.field or None, "message": self.message, "fix": self.fix}


class InvalidSpec(SpecError):
    """A spec with one or more problems; nothing was sent anywhere."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = [dataclasses.replace(problem, where=one_line(problem.where), field=one_line(problem.field),
                                             message=one_line(problem.message),
                                             fix=one_line(problem.fix) if problem.fix else problem.fix)
                         for problem in problems]
        count = len(self.problems)
        header = f"{counted(count, 'problem')} in the job spec:"
        super().__init__("\n".join([header, *(f"  {problem}" for problem in self.problems)]))


class RefusedSpec(InvalidSpec, CapabilityError):
    """A spec that loads but that plan or submit refuses (a local channel, an unverified combination), said as
    `validate` says it: each finding at its file:line (or --set), field and fix. A CapabilityError with a `fix`,
    as the API has always given these refusals."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__(problems)
        self.fix = "; ".join(dict.fromkeys(problem.fix for problem in self.problems if problem.fix)) or None

    def __str__(self) -> str:
        return self.message  # each problem's fix is on its own line already


@dataclass(frozen=True)
class LoadedSpec:
    """A valid spec with the non-blocking findings about it and where each field came from."""

    spec: JobSpec
    findings: list[Finding]
    path: Path | None
    _positions: dict[Loc, tuple[int, int]] = field(default_factory=dict, repr=False)
    _overrides: dict[Loc, str] = field(default_factory=dict, repr=False)
    """Each field an override wrote, with the override as messages name it: `--set key=value`, `--region X`."""
    built_in_python: bool = False
    """Made by `of` from a JobSpec built in Python: no file, every field the caller's."""
    field_words: FieldWords = SPEC_WORDS
    """How fixes tell the user to give a field (in the spec, or as a function job's keyword)."""
    source_known_as: Path | None = None
    """The folder the user knows the source as, where source_dir is a copy smtrain made (a function job's module,
    shipped from its cache): a failure names the user's file there, not the copy."""

    @classmethod
    def of(cls, spec: JobSpec) -> LoadedSpec:
        """A JobSpec built in Python, checked as a file's spec is (an error finding stops planning, not this):
        the API's edge wraps one so that everything below it takes one input type."""
        return cls(spec=spec, findings=check(spec), path=None, built_in_python=True)

    def in_region(self, region: str) -> LoadedSpec:
        """This spec sent to `region` instead of its own: `--set region=X` for a spec already loaded (the API's
        `region=`), so the region outranks the environment's and the session's as the spec's own does, and the
        plan names the keyword as its origin (`region='eu-west-1'`).

        Raises:
            SpecError: `region` is not a region's name (an empty one would silently mean the environment's).
            InvalidSpec: the spec cannot go there (no training images in it), said as loading it with `--region X`
                says it, at the keyword: `region='mars-1': region: ...`.
        """
        if not isinstance(region, str) or not region.strip():
            raise SpecError(f"region {region!r} is no AWS region's name", fix='give one, e.g. region="eu-west-1"')
        moved = dataclasses.replace(self, spec=self.spec.model_copy(update={"region": region}),
                                    _overrides={**self._overrides, ("region",): keyword_shown("region", region)})
        findings = check(moved.spec, moved.field_words)
        errors = _error_problems(findings, moved.where)
        if errors:
            raise InvalidSpec(errors)
        return dataclasses.replace(moved, findings=findings)

    def in_words(self, words: FieldWords) -> LoadedSpec:
        """This spec as told to a user in another form (the API's, a function job's decorator): its fixes, the
        rules' included, name the field as that user gives it."""
        return dataclasses.replace(self, field_words=words, findings=check(self.spec, words))

    def allowing_unverified(self) -> LoadedSpec:
        """This spec with `allow_unverified: true`, as `--allow-unverified` gives it, to a spec already loaded: the
        API's `allow_unverified=True`, which the plan names as its origin."""
        return dataclasses.replace(self, spec=self.spec.model_copy(update={"allow_unverified": True}),
                                   _overrides={**self._overrides,
                                               ("allow_unverified",): keyword_shown("allow_unverified", True)})

    def where(self, dotted: str) -> str:
        return _where(self.path, self._positions, self._overrides, _loc_of(dotted))

    def refusal(self, findings: Sequence[Finding]) -> CapabilityError:
        """The error refusing this spec for `findings`, each at its place: every command that refuses a spec
        (validate, plan, submit, their tune counterparts) names the file, line and field alike. A spec built in
        Python or from a dict (a function job's keywords) has no line: each finding by its field, the fixes in its
        user's words."""
        if self.path is None:
            return CapabilityError("; ".join(f"{finding.severity}: {finding.field}: {finding.message}"
                                             for finding in findings),
                                   fix="; ".join(dict.fromkeys(finding.fix for finding in findings)))
        return RefusedSpec([Problem(self.where(finding.field), finding.field, f"{finding.severity}: {finding.message}",
                                    finding.fix) for finding in findings])

    def origin(self, dotted: str) -> str | None:
        """The option that wrote the field (or a mapping holding it), "--set" or one such as "--region", or the
        API's keyword ("region="); "spec" when the file does; None when neither did (a default)."""
        if self.built_in_python:
            return "spec"
        loc = _loc_of(dotted)
        written = next((self._overrides[loc[:depth]] for depth in range(len(loc), 0, -1)
                        if loc[:depth] in self._overrides), None)
        if written is not None:
            return override_origin(written)
        return "spec" if loc in self._positions else None


def load(path: str | Path, overrides: str | Iterable[str] = (), allow_unverified: bool | None = None,
         hyperparameters: Mapping[str, Any] | None = None) -> LoadedSpec:
    """Reads, validates and capability-checks a spec file.

    Args:
        path: the YAML file; relative `source_dir` and local input paths are resolved against its folder.
        overrides: `key.path=value` strings (values are YAML: `3`, `true`, `[a, b]`, `"2.3.0"`); one string is
            one override (`_override_texts`).
        allow_unverified: when not None, replaces the spec's `allow_unverified`.
        hyperparameters: entries that replace the spec's hyperparameters, names taken verbatim (a tuning trial's
            values: `lr.base` is one name, not `lr: {base: ...}` as `--set` would read it).

    Raises:
        InvalidSpec: listing every problem found, each with its location and a fix.
    """
    path = _file_path(path, "a spec file", "pass its path, e.g. \"job.yaml\"; a spec already in Python (a dict, "
                                          "what load_spec returned) goes to plan, submit, run or run_local as it is")
    raw, places = _parse_yaml(_read_text(path), path)
    overridden = _apply_overrides(raw, _override_texts(overrides))
    if hyperparameters and isinstance(raw, dict):
        if not isinstance(raw.setdefault("hyperparameters", {}), dict):
            raise SpecError(f"{path}: hyperparameters is not a mapping", fix="write `key: value` pairs under it")
        raw["hyperparameters"].update(_plain(hyperparameters))
    if allow_unverified is not None:
        raw["allow_unverified"] = allow_unverified
    _resolve_paths(raw, path.parent)
    return _validate(raw, path, places, overridden)


@dataclass(frozen=True)
class _Reading:
    """Where `load_spec` read a JobSpec: its file, each key's line and column, and the overrides."""

    path: Path | None
    positions: dict[Loc, tuple[int, int]]
    overrides: dict[Loc, str]


_READINGS: dict[int, _Reading] = {}
"""By `id` of each JobSpec `load_spec` returned, while it lives (a finalizer forgets it): the spec keeps no place."""


def load_spec(path: str | Path, overrides: str | Iterable[str] = ()) -> JobSpec:
    """The notebook entry point: a checked JobSpec from a YAML file (see `load`). Where it was read is remembered
    for as long as the spec lives, so that an error about it later (a plan, a submit) names the file, line and
    override as the CLI's do (`as_read`); a copy made with changes is a spec of its own, without them. An error
    about an override names it as given here, `overrides=["instance.count=abc"]`, not as `--set`."""
    loaded = load(path, keyword_overrides(overrides))
    spec = loaded.spec
    _READINGS[id(spec)] = _Reading(loaded.path, loaded._positions, loaded._overrides)
    weakref.finalize(spec, _READINGS.pop, id(spec), None)
    return spec


def as_read(spec: JobSpec) -> LoadedSpec | None:
    """`spec` with the places it was read at, where `load_spec` returned this very object; None otherwise."""
    reading = _READINGS.get(id(spec))
    if reading is None:
        return None
    return LoadedSpec(spec=spec, findings=check(spec), path=reading.path, _positions=reading.positions,
                      _overrides=reading.overrides)


def from_mapping(data: Mapping[str, Any], base_dir: str | Path = ".") -> LoadedSpec:
    """Validates a spec given as a dict (notebooks), resolving relative paths against `base_dir`."""
    _check_mapping_shape(data)
    raw = _plain(data)
    _resolve_paths(raw, Path(base_dir))
    return _validate(raw, None, _Places(), {})


def _check_mapping_shape(data: Any) -> None:
    """Holds a dict built in Python to a file's bounds, walked without recursion, so it is one InvalidSpec and not
    a RecursionError, a ValueError or a UnicodeEncodeError later: nesting deeper than MAX_NESTING (a list that holds
    itself is endless), more than MAX_NODES values (one list placed many times is an alias bomb), an integer longer
    than Python prints, and text UTF-8 cannot carry (a lone surrogate such as "\\ud800", which no request or
    process argument can hold). A key that is no str and a NaN or infinite float, which a file cannot hold
    unnoticed, are refused too rather than sent as the text "1" or "nan"."""
    pending: list[tuple[Any, Loc]] = [(data, ())]
    seen = 0
    while pending:
        value, loc = pending.pop()
        seen += 1
        problem = _mapping_value_problem(value, loc, seen)
        if problem:
            raise InvalidSpec([Problem("<spec>", _shown_loc(loc), *problem)])
        if isinstance(value, Mapping):
            if (key := next((key for key in value if not isinstance(key, str)), _ALL_TEXT)) is not _ALL_TEXT:
                raise InvalidSpec([Problem("<spec>", _shown_loc((*loc, key)), *_key_problem(key))])
            pending += [(key, (*loc, key)) for key in value]
            pending += [(item, (*loc, key)) for key, item in value.items()]
        elif isinstance(value, (list, tuple)):
            pending += [(item, (*loc, index)) for index, item in enumerate(value)]


_ALL_TEXT = object()
"""No key of a mapping is other than a str."""


def _shown_loc(loc: Loc) -> str:
    return ".".join(str(part).encode("utf-8", "backslashreplace").decode() for part in loc)


def _key_problem(key: Any) -> tuple[str, str]:
    """(message, fix) for a dict key that is no str: a file's keys are text, and `{1: 2}` would silently become
    the name "1" (SageMaker's hyperparameters are text)."""
    if isinstance(key, (int, float)) and not isinstance(key, bool):
        return (f"the key {key!r} is {kind_of(key)}, not text; a spec's keys are names",
                f'write the key as text: "{key}"')
    return (f"a key is {kind_of(key)}, not text; a spec's keys are names", "give each key as a str, e.g. \"lr\"")


def _mapping_value_problem(value: Any, loc: Loc, seen: int) -> tuple[str, str] | None:
    """(message, fix) for the first bound of `_check_mapping_shape` that a value breaks, the `seen`-th walked."""
    if seen > MAX_NODES:
        return (f"more than {MAX_NODES} values (one list or dict placed many times?)",
                "give each value once; a job spec has a few hundred")
    if len(loc) > MAX_NESTING:
        return (f"nested more than {MAX_NESTING} levels deep (a list or dict that holds itself?)",
                "a job spec is a few levels deep")
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            str(value)
        except ValueError:
            return f"a number of more than {sys.get_int_max_str_digits()} digits", "give it as a str if it is text"
    if isinstance(value, float) and not math.isfinite(value):
        return (f"{value} is no number a job is meant to get (SageMaker passes hyperparameters as text: the script "
                f"would read {str(value)!r})", "give the number meant; a NaN or infinity comes from a computation "
                "that failed")
    if isinstance(value, str) and any(0xD800 <= ord(char) <= 0xDFFF for char in value):
        return ("holds a lone surrogate (\\ud800-\\udfff), which is no character UTF-8 can carry",
                "decode the text it came from as UTF-8, or remove the character")
    return None


def _file_path(path: Any, what: str, fix: str) -> Path:
    """`path` as a Path; anything else a notebook may pass instead (a dict, a spec already read) is refused here
    rather than as pathlib's TypeError.

    Raises:
        SpecError: `path` is no str or os.PathLike.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise SpecError(f"{what} is read from its path (a str or a pathlib.Path), not from {kind_of(path)}",
                        fix=fix)
    return Path(path)


def _read_text(path: Path, kind: str = "job spec") -> str:
    """The text of the spec (`kind`, as refusals name it): a regular file (not /dev/zero, a FIFO or a folder) of at
    most MAX_SPEC_BYTES, UTF-8 without NULs. Opened once, without blocking, and read from that descriptor only once
    it says it is a regular file: a check of the path before the open would let a FIFO swapped in between hold the
    open forever."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such spec file", fix=_missing_spec_fix(path), file=str(path)) from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror}", fix=_unreadable_spec_fix(path, exc),
                        file=str(path)) from None
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):  # asked before fdopen, which refuses a folder's descriptor with IsADirectoryError
        os.close(descriptor)
        raise SpecError(f"{path}: not a regular file ({special_file_kind(mode) or 'a folder'})",
                        fix="give the path of a YAML spec file", file=str(path))
    with os.fdopen(descriptor, "rb") as handle:
        try:
            data = handle.read(MAX_SPEC_BYTES + 1)
        except OSError as exc:
            raise SpecError(f"{path}: cannot read: {exc.strerror}", fix=_unreadable_spec_fix(path, exc),
                            file=str(path)) from None
    return decode_bounded(data, str(path), kind)


def _unreadable_spec_fix(path: Path, error: OSError) -> str:
    """What to do about a spec file that is there but cannot be opened or read."""
    if error.errno == errno.ELOOP:
        return f"point the symbolic link at the spec file itself (`ls -l {path}` shows where it leads)"
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"let this user read it (chmod u+r {path}), or give a copy you can read"
    return "give the path of a YAML spec file you can read"


def _missing_spec_fix(path: Path) -> str:
    """`did you mean job.yaml?` for a mistyped name (`job.yml`, `jbo.yaml`): the YAML files beside it, closest
    first; for a pattern no shell expanded (`"specs/*.yaml"` quoted in a CI step), what it matches; else where the
    examples are."""
    if any(char in str(path) for char in "*?["):
        matched = sorted(glob.glob(str(path)))
        if not matched:
            return "no file matches this pattern; check the folder and the extension (.yaml or .yml)"
        return (f"the shell did not expand this pattern (it was quoted): write it unquoted, and the shell passes the "
                f"{len(matched)} file{'s' if len(matched) > 1 else ''} it matches ({matched[0]}"
                f"{', ...' if len(matched) > 1 else ''})")
    try:
        beside = sorted(entry.name for entry in path.parent.iterdir() if entry.suffix in (".yaml", ".yml"))
    except OSError:
        beside = []
    close = difflib.get_close_matches(path.name, beside, n=1, cutoff=0.6)
    if close:
        return f"did you mean {path.parent / close[0] if path.parent != Path() else close[0]}?"
    return "check the path (job_specs/ holds the examples)"


def decode_bounded(data: bytes, where: str, kind: str = "job spec") -> str:
    """Untrusted YAML bytes as text: at most MAX_SPEC_BYTES (read MAX_SPEC_BYTES + 1 to know), UTF-8, no NUL.

    Args:
        where: the file or URI named in a refusal.
        kind: what the file should be, for the refusal's words ("job spec", "SageMaker SDK defaults file").

    Raises:
        SpecError: one line naming `where`, the problem and the fix; `where` is its `file` (and the line its
            `line`, where the refusal has one), as `--output json` gives them.
    """
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(f"{where}: larger than {MAX_SPEC_BYTES // 1024} KiB, which no {kind} is",
                        fix="check the path; keep data and long lists out of it", file=where)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise SpecError(f"{where}: UTF-16 (or UTF-32) text; a {kind} is read as UTF-8", fix="save the file as UTF-8",
                        file=where)
    if b"\0" in data:
        offset = data.index(0)
        line = data.count(b"\n", 0, offset) + 1
        raise SpecError(f"{where}:{line}: NUL byte at offset {offset}: not a text file",
                        fix=f"give the path of a {kind} saved as UTF-8", file=where, line=line)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpecError(f"{where}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                        fix="save the file as UTF-8", file=where, line=line) from None


def load_untrusted_yaml(data: bytes, where: str, kind: str) -> Any:
    """A YAML document other than a spec (an SDK defaults file), read with the spec's guards: size, encoding,
    nesting depth and alias expansion are checked before any tree is built.

    Raises:
        SpecError: one line naming `where` (and the line and column), the problem and the fix.
        yaml.YAMLError: the text is not YAML.
    """
    import yaml

    text = decode_bounded(data, where, kind)
    try:
        _check_shape(text, lambda mark: f"{where}:{mark.line + 1}:{mark.column + 1}")
    except InvalidSpec as exc:
        refusal = exc.problems[0]
        raise SpecError(f"{refusal.where}: {refusal.message}", fix=refusal.fix) from None
    return yaml.load(text, Loader=_yaml_loader_class())


def _validate(raw: Any, path: Path | None, places: _Places, overrides: dict[Loc, str]) -> LoadedSpec:
    positions = places.positions
    if not isinstance(raw, dict):
        raise InvalidSpec([Problem(_where(path, positions, overrides, ()), "",
                                   "the spec must be a mapping of keys to values", "start with `name: my-job`")])
    secrets = _spec_secrets(raw)
    try:
        spec = JobSpec.model_validate(_without_extension_keys(raw))
    except ValidationError as exc:
        problems = [_problem_from_pydantic(error, path, places, overrides)
                    for error in _without_misspelled_required(exc.errors(include_url=False), _error_loc, _key_meant)]
        raise InvalidSpec([_masked(problem, secrets)
                           for problem in sorted(problems, key=lambda problem: problem.order)]) from None
    problems = _missing_files(spec, path, positions, overrides)
    findings = check(spec)
    problems += _error_problems(findings, lambda dotted: _where(path, positions, overrides, _loc_of(dotted)))
    if problems:
        raise InvalidSpec([_masked(problem, secrets) for problem in problems])
    return LoadedSpec(spec=spec, findings=findings, path=path, _positions=positions, _overrides=overrides)


def _error_problems(findings: Sequence[Finding], where: Callable[[str], str]) -> list[Problem]:
    """The findings that refuse a spec, each as a problem at the place `where` gives its field."""
    return [Problem(where(finding.field), finding.field, finding.message, finding.fix)
            for finding in findings if finding.severity == "error"]


EXTENSION_PREFIX = "x-"
"""Top-level keys starting with it are the user's own (anchors to reuse, notes), left out of the spec, as
docker-compose leaves out its `x-` extension fields."""


def _without_extension_keys(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in raw.items() if not key.startswith(EXTENSION_PREFIX)}


def _spec_secrets(raw: Mapping[str, Any]) -> frozenset[str]:
    """The values no message may show: those under secret-looking names in the maps users fill."""
    return secret_values(*(raw[name] for name in ("environment", "hyperparameters", "tags")
                           if isinstance(raw.get(name), dict)))


def _masked(problem: Problem, secrets: frozenset[str]) -> Problem:
    return dataclasses.replace(problem, where=mask_text(problem.where, secrets),
                               message=mask_text(problem.message, secrets),
                               fix=mask_text(problem.fix, secrets) if problem.fix else problem.fix)


def _yaml_loader_class() -> Any:
    return SpecLoader


@dataclass
class _Places:
    """Where each key path is written (1-based line, column) and the text of each scalar as written: a fix
    quotes `2.10`, not the float 2.1 YAML made of it."""

    positions: dict[Loc, tuple[int, int]] = field(default_factory=dict)
    texts: dict[Loc, str] = field(default_factory=dict)
    misread_keys: list[Problem] = field(default_factory=list)
    """Keys YAML reads as other text than written (`yes` as true), each refused at its line."""
    anchor_holders: set[str] = field(default_factory=set)
    """Top-level keys whose value defines an anchor (`common: &c {...}`): an unknown one is told where anchors go."""


def _parse_yaml(text: str, path: Path) -> tuple[Any, _Places]:
    """Parses with PyYAML's libyaml composer, whose nodes carry the line and column of every key. Hyperparameter
    values keep the text written where YAML would read it as other text (`seed: 010` is "010", not 8); a key YAML
    reads as other text (`yes:`, `null:`, `010:`) is refused."""
    import yaml

    loader = _yaml_loader_class()(text)
    try:
        _check_shape(text, lambda mark: f"{path}:{mark.line + 1}:{mark.column + 1}")
        node = loader.get_single_node()
        if node is None:
            raise InvalidSpec([Problem(f"{path}:1:1", "", "the file is empty", "start with `name: my-job`")])
        places = _Places(positions={(): (1, 1)}, anchor_holders=_anchor_holders(node, text))
        _collect_positions(node, (), places, path)
        as_written(mapping_value(node, "hyperparameters"))
        document = _plain(loader.construct_document(node))
    except yaml.YAMLError as exc:
        raise InvalidSpec([Problem(_yaml_error_place(exc, path, text), "", *_yaml_refusal(exc, text))]) from None
    finally:
        loader.dispose()
    if places.misread_keys:
        secrets = _spec_secrets(document) if isinstance(document, dict) else frozenset()
        raise InvalidSpec([_masked(problem, secrets) for problem in places.misread_keys])
    return document, places


def _anchor_holders(node: Any, text: str) -> set[str]:
    """The top-level keys whose value is written with an anchor right there (`common: &c {...}`), not an alias to
    one written earlier (the composer gives an alias the anchored node itself)."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return set()
    return {key.value for key, value in node.value if value.start_mark.index > key.end_mark.index
            and text[value.start_mark.index:value.start_mark.index + 1] == "&"}


_SIMPLE_KEY_CHARACTERS = 1024
"""PyYAML's simple key limit: a key not written as `? key` must end within this many characters of its start."""


def _over_long_key(line: str, column: int) -> int | None:
    """The length of the key that ends at the `:` at `column` of `line`, when it is longer than PyYAML reads as a
    key (the parser then says "did not find expected ','" or "mapping values are not allowed here")."""
    if line[column:column + 1] != ":":
        return None
    start = max(line.rfind(opening, 0, column) for opening in "{[,") + 1
    length = len(line[start:column].strip().removeprefix("- ").strip())
    return length if length > _SIMPLE_KEY_CHARACTERS else None


_UNKNOWN_TAG = "could not determine a constructor for the tag"
"""PyYAML's words for a tag its safe loader has no constructor for (`!Ref`, `!!python/object`)."""


_INVALID_ESCAPE = "found invalid Unicode character escape code"
_UNKNOWN_ESCAPES = ("found unknown escape character", "did not find expected hexdecimal number")
"""The parser's words for a backslash in double quotes that starts no escape (`"C:\\data"`, `"\\xZZ"`)."""


def _unusual_space(exc: Exception, text: str) -> CharacterRefusal | None:
    """A no-break space (or another that looks like a space) where YAML wants a plain one, when the parser
    stopped on a line at or after it."""
    import yaml

    if not isinstance(exc, (yaml.scanner.ScannerError, yaml.parser.ParserError)) or not exc.problem_mark:
        return None
    return unusual_space(text, exc.problem_mark.line)


def _yaml_refusal(exc: Exception, text: str) -> tuple[str, str]:
    """The message and fix for text that is not one YAML document. A tab in the indentation and a second
    document (`---`) are named as such: the parser's own words for them ("found character that cannot start any
    token", "but found another document") do not say what to change."""
    import yaml

    problem = (exc.problem or exc.context) if isinstance(exc, yaml.MarkedYAMLError) else None
    mark = exc.problem_mark if isinstance(exc, yaml.MarkedYAMLError) else None
    lines = text.splitlines()
    if mark and mark.line < len(lines) and lines[mark.line][mark.column:mark.column + 1] == "\t":
        return ("YAML: a tab character; YAML indents with spaces only",
                f"replace the tab on line {mark.line + 1} with spaces (your editor can insert spaces for the Tab key)")
    over_long = _over_long_key(lines[mark.line], mark.column) if mark and mark.line < len(lines) else None
    if over_long:
        return (f"YAML: a key of {over_long} characters, longer than the {_SIMPLE_KEY_CHARACTERS} PyYAML reads as a key "
                "(its simple key limit), so the parser sees no key here",
                "shorten the key: no name SageMaker takes is this long (a hyperparameter's is at most 256 characters)")
    if (mark and mark.line < len(lines) and problem == _INVALID_ESCAPE
            and (escape_fix := bad_unicode_escape(lines[mark.line]))):
        return f"YAML: {problem}", escape_fix
    if mark and problem in _UNKNOWN_ESCAPES:
        return (f"YAML: {problem}", "in double quotes a backslash starts an escape (\\n, \\t, \\uXXXX): write a "
                "backslash as \\\\, or put the text in single quotes, which keep it as written")
    if space := _unusual_space(exc, text):
        return space.message, space.fix
    if isinstance(exc, NoSuchDate):
        return f"YAML: {problem}", f'write it in quotes if it is text: "{exc.text}"'
    if isinstance(exc, BareEquals):
        return f"YAML: {problem}", 'write it in quotes: "="'
    if isinstance(exc, yaml.constructor.ConstructorError) and problem and problem.startswith(_UNKNOWN_TAG):
        tag = problem.removeprefix(_UNKNOWN_TAG).strip(" '").replace("tag:yaml.org,2002:", "!!")
        return (f"YAML: a value tagged {tag}, which smtrain does not build: a spec holds plain values "
                "(CloudFormation's !Ref, !Sub and !GetAtt are not resolved, and no Python object is made)",
                f"write the value itself in place of {tag} (quote it if it is text starting with !)")
    if isinstance(exc, yaml.composer.ComposerError) and problem == "but found another document":
        return ("YAML: a second document starts here (`---`); a spec file holds one",
                "remove this `---` and what follows it, or put the other document in a file of its own")
    return f"YAML: {problem or str(exc).splitlines()[0]}", "check indentation and quoting"


def _yaml_error_place(exc: Exception, path: Path, text: str) -> str:
    import yaml

    if space := _unusual_space(exc, text):
        return f"{path}:{space.line}:{space.column}"
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        return f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
    if isinstance(exc, yaml.reader.ReaderError):  # a control character, with a character offset and no mark
        line = text.count("\n", 0, exc.position) + 1
        return f"{path}:{line}:{exc.position - (text.rfind(chr(10), 0, exc.position) + 1) + 1}"
    return str(path)


@dataclass
class _OpenCollection:
    anchor: str | None
    nodes: int = 1
    height: int = 1


def _check_shape(text: str, place: Any) -> None:
    """Walks the YAML event stream (no tree, no recursion) and refuses, before anything is built, what would
    exhaust the stack or memory: nesting deeper than MAX_NESTING, more than MAX_NODES once aliases are expanded
    (an alias bomb), an alias inside its own anchor (`&a {x: *a}`), an integer longer than Python reads.

    Args:
        place: mark -> the location to report (`file:line:col`, or the `--set` it came from).
    """
    import yaml

    int_digits = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    resolver = yaml.resolver.Resolver()
    open_collections: list[_OpenCollection] = []
    anchors: dict[str, tuple[int, int]] = {}
    total = 0

    def refuse(event: Any, message: str, fix: str) -> None:
        raise InvalidSpec([Problem(place(event.start_mark), "", message, fix)])

    for event in yaml.parse(text, Loader=_yaml_loader_class()):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_collections) >= MAX_NESTING:
                refuse(event, f"nested more than {MAX_NESTING} levels deep", "a job spec or SDK defaults file is a few levels deep")
            open_collections.append(_OpenCollection(event.anchor))
            total += 1
            size = height = 0
        elif isinstance(event, yaml.CollectionEndEvent):
            closed = open_collections.pop()
            if closed.anchor:
                anchors[closed.anchor] = (closed.nodes, closed.height)
            size, height = closed.nodes, closed.height
        elif isinstance(event, yaml.ScalarEvent):
            size, height = 1, 0
            total += 1
            if event.anchor:
                anchors[event.anchor] = (size, height)
            if int_digits and len(event.value) > int_digits and (
                    event.tag == _INT_TAG or (event.implicit[0] and event.tag is None
                                              and resolver.resolve(yaml.ScalarNode, event.value, (True, False))
                                              == _INT_TAG)):
                refuse(event, f"a number with more than {int_digits} digits", "write it in quotes if it is text")
        elif isinstance(event, yaml.AliasEvent):
            if any(collection.anchor == event.anchor for collection in open_collections):
                refuse(event, f"alias *{event.anchor} is inside its own anchor &{event.anchor} (a recursive "
                              "structure)", "write the value out instead of the alias")
            size, height = anchors.get(event.anchor, (1, 0))  # an undefined alias: the composer reports it
            total += size
            if len(open_collections) + height > MAX_NESTING:
                refuse(event, f"alias *{event.anchor} nests the spec more than {MAX_NESTING} levels deep",
                       "write the value out instead of the alias")
        else:
            continue
        if total > MAX_NODES:
            refuse(event, f"more than {MAX_NODES} values once aliases are expanded (an alias bomb?)",
                   "write the values out; a job spec or SDK defaults file has a few hundred")
        if open_collections and size:
            parent = open_collections[-1]
            parent.nodes += size
            parent.height = max(parent.height, height + 1)


def _collect_positions(node: Any, loc: Loc, places: _Places, path: Path) -> None:
    """Maps every key path to the 1-based line and column where its key (or list item) is written, and every
    scalar to its text as written.

    Also rejects duplicate keys, which YAML parsers otherwise resolve silently to the last one.
    """
    import yaml

    positions = places.positions
    if isinstance(node, yaml.ScalarNode):
        places.texts[loc] = node.value
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, tuple[int, int]] = {}
        merged: list[Any] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merged.append(value_node)
                continue
            where = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if not isinstance(key_node, yaml.ScalarNode):
                place = f"{path}:{where[0]}:{where[1]}"
                raise InvalidSpec([_collection_key(key_node, ".".join(map(str, loc)), place)])
            key = key_node.value
            if misread := misread_key(key_node):
                places.misread_keys.append(Problem(f"{path}:{where[0]}:{where[1]}", ".".join(map(str, (*loc, key))),
                                                   misread, quoted_key_fix(key_node, value_node), order=where))
            if key in seen:
                raise InvalidSpec([Problem(f"{path}:{where[0]}:{where[1]}", ".".join(map(str, (*loc, key))),
                                           f"duplicate key (first written at line {seen[key][0]})",
                                           "remove or rename one of the two")])
            seen[key] = where
            positions[(*loc, key)] = where
            _collect_positions(value_node, (*loc, key), places, path)
        _collect_merged_positions(merged, loc, set(seen), places, path)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            positions[(*loc, index)] = (item.start_mark.line + 1, item.start_mark.column + 1)
            _collect_positions(item, (*loc, index), places, path)


def _collection_key(key_node: Any, parent: str, where: str) -> Problem:
    """A key written as a list or a mapping (`? [a]`, `[a, b]: 1`), which YAML allows and no field of a spec,
    tuning spec or SDK defaults file is: every name there is text."""
    import yaml

    kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
    return Problem(where, parent, f"a key written as a {kind}; every key here is a name",
                   "write the key as plain text, `name: value` (a `?` starts a complex key in YAML)")


def _collect_merged_positions(merged: list[Any], loc: Loc, written: set[str], places: _Places, path: Path) -> None:
    """The keys a merge (`<<: *defaults`, or `<<: [*a, *b]`) brings into the mapping at loc are placed where the
    anchor wrote them, so a typo inside the anchor is reported on its own line; a key written in the mapping
    itself wins over a merged one, and an earlier merged mapping over a later one, as YAML merges them."""
    import yaml

    for source in merged:
        for mapping in source.value if isinstance(source, yaml.SequenceNode) else [source]:
            inherited = _Places()
            _collect_positions(mapping, loc, inherited, path)
            for table, found in ((places.positions, inherited.positions), (places.texts, inherited.texts)):
                for key, value in found.items():
                    if key[len(loc):len(loc) + 1] and key[len(loc)] not in written:
                        table.setdefault(key, value)


def _plain(node: Any) -> Any:
    """Plain Python containers and scalars (keys as strings), so strict validation sees what the user wrote."""
    if isinstance(node, Mapping):
        return {str(key): _plain(value) for key, value in node.items()}
    if isinstance(node, (list, tuple)):
        return [_plain(value) for value in node]
    if isinstance(node, bool):
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return node


def parse_override(text: str) -> tuple[Loc, Any]:
    """`instance.count=3` -> (('instance', 'count'), 3). The value is read as YAML."""
    import yaml

    dotted, sep, value_text = text.partition("=")
    if not sep or not dotted.strip():
        raise SpecError(f"{override_said(text, text, quoted=True)}: expected key.path=value",
                        fix=f"for example {override_said(text, 'instance.count=2')}")
    loc = tuple(dotted.strip().split("."))
    if len(loc) > MAX_NESTING:
        raise SpecError(f"{override_said(text, f'{_shortened(dotted)}=...')}: {len(loc)} levels deep; no spec field "
                        f"is deeper than {MAX_NESTING}", fix="check the key path")
    if not value_text.strip():
        return loc, ""
    shown = override_said(text, f"{dotted}={MASK if is_secret_name(dotted) else _shortened(value_text)}")
    try:
        _check_shape(value_text, lambda mark: shown)
        value = _override_value(text, value_text, shown)
    except BareEquals as exc:
        if value_text.strip() != "=":  # `--set sep==` is the text "="; `[a, =]` would silently be a string
            raise SpecError(f"{shown}: {exc.problem}", fix="write it in quotes" + (
                "" if is_secret_name(dotted)
                else f": {override_said(text, f'{dotted}={_quoted_at(value_text, exc.problem_mark)}', quoted=True)}"))
        value = value_text
    except yaml.YAMLError:
        value = value_text
    return loc, _plain(value)


def _override_value(override: str, text: str, shown: str) -> Any:
    """A `--set` value (`text`, of `override`) read as YAML, as the spec's own are: a key YAML reads as other text
    is refused, and a hyperparameter's value that YAML would send as other text keeps the text written."""
    dotted = override.partition("=")[0]
    loader = _yaml_loader_class()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if misread := first_misread_key(node):
            key, message = misread
            quoted = f'{text[:key.start_mark.index]}"{key.value}"{text[key.end_mark.index:]}'
            secrets = secret_values({dotted: _plain(loader.construct_document(node))})  # `{API_TOKEN: x, yes: 1}`
            raise SpecError(mask_text(f"{shown}: {message}", secrets), fix="write the key in quotes" + (
                "" if is_secret_name(dotted)
                else mask_text(f": {override_said(override, f'{dotted}={quoted}', quoted=True)}", secrets)))
        return loader.construct_document(as_written(node) if dotted.split(".")[0] == "hyperparameters" else node)
    finally:
        loader.dispose()


def _quoted_at(text: str, mark: Any) -> str:
    """`text` with the `=` at `mark` quoted: `{lr: =}` -> `{lr: "="}`."""
    return f'{text[:mark.index]}"="{text[mark.index + 1:]}'


def _shortened(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _override_texts(overrides: str | Iterable[str]) -> tuple[str, ...]:
    """`--set`'s texts as a Python caller gives them: a list of `key.path=value` strings, or one such string, which
    is one override as one `--set` takes it (iterated, its characters were each read as an override). It is never
    split: a value is YAML, and `[a, b]` or a sentence holds the commas and spaces a split would cut at."""
    fix = 'pass e.g. ["instance.count=2", "hyperparameters.epochs=1"], or one such string'
    if isinstance(overrides, Mapping) or not isinstance(overrides, (str, Iterable)):
        raise SpecError(f"overrides are `key.path=value` strings, not {type(overrides).__name__} {overrides!r:.60}",
                        fix=fix)
    texts = (overrides,) if isinstance(overrides, str) else tuple(overrides)
    for text in texts:
        if not isinstance(text, str):
            raise SpecError(f"an override is a `key.path=value` string, not {type(text).__name__} {text!r:.60}",
                            fix=fix)
    return texts


def keyword_overrides(overrides: str | Iterable[str]) -> tuple[KeywordOverride, ...]:
    """The Python API's `overrides=` (a list of `key.path=value` strings, or one), each named in messages as given
    there."""
    return tuple(KeywordOverride(text) for text in _override_texts(overrides))


def _apply_overrides(raw: Any, overrides: tuple[str, ...]) -> dict[Loc, str]:
    applied: dict[Loc, str] = {}
    for text in overrides:
        loc, value = parse_override(text)
        target = raw
        for key in loc[:-1]:
            if not isinstance(target, dict):
                break
            target = target.setdefault(key, {})
        if not isinstance(target, dict):
            raise SpecError(f"{override_said(text, _shown_override(text))}: {'.'.join(loc[:-1])} is not a mapping",
                            fix="set a key inside a mapping")
        target[loc[-1]] = value
        applied[loc] = override_shown(text, _shown_override(text))
    return applied


def _shown_override(text: str) -> str:
    """An override as messages quote it: the whole value masked under a secret-looking key at any level."""
    dotted = text.partition("=")[0]
    if any(is_secret_name(part) for part in dotted.split(".")):
        return f"{dotted}={MASK}"
    loc, value = parse_override(text)
    for key in reversed(loc):
        value = {key: value}
    return mask_text(text, secret_values(value))


def _resolve_paths(raw: Any, base: Path) -> None:
    """Relative source_dir and local input paths are relative to the spec file, as users write them."""
    if not isinstance(raw, dict):
        return
    source_dir = raw.get("source_dir", ".")
    if isinstance(source_dir, str) and "://" not in source_dir:
        raw["source_dir"] = resolved(base, source_dir)
    for channels in (raw.get("inputs"), raw.get("local_inputs")):
        if isinstance(channels, dict):
            for name, location in channels.items():
                if isinstance(location, str) and not is_uri(location):
                    channels[name] = resolved(base, location)
                elif (isinstance(location, dict) and isinstance(location.get("uri"), str)
                      and not is_uri(location["uri"])):
                    location["uri"] = resolved(base, location["uri"])


def resolved(base: Path, location: str) -> str:
    """`location` made absolute against `base`, its links followed as far as they lead. Never raises, whatever a
    spec wrote: a link loop, a NUL or a name longer than the file system takes is left as written, for
    `unusable_path` to name at its line (Path.resolve raises RuntimeError on a loop before Python 3.13, and
    realpath ValueError on a NUL)."""
    try:
        return os.path.realpath(base / location)
    except ValueError:
        return str(base / location)


def unusable_path(location: str | Path) -> str | None:
    """Why a local path a spec names cannot even be looked up (a NUL, a link loop, a name longer than the file
    system takes, a folder it may not enter), or None when it can: whether something is there is the caller's to
    say. A traceback otherwise: `Path.is_file` raises for all but a missing path."""
    try:
        os.stat(location)
    except ValueError:
        return "holds a NUL character"
    except OSError as exc:
        return None if exc.errno in (errno.ENOENT, errno.ENOTDIR) else f"cannot be looked up: {exc.strerror}"
    return None


def _missing_files(spec: JobSpec, path: Path | None, positions: dict[Loc, tuple[int, int]],
                   overrides: dict[Loc, str]) -> list[Problem]:
    source_dir = Path(spec.source_dir)
    for field_path, location in _local_paths(spec):
        problem = unusable_path(location)
        if problem:
            return [Problem(_where(path, positions, overrides, _loc_of(field_path)), field_path,
                            f"{_shortened(location, 200)} {problem}", "give a path to a file or folder you can read")]
    if not source_dir.is_dir():
        return [Problem(_where(path, positions, overrides, ("source_dir",)), "source_dir",
                        f"{source_dir} is not a directory", "source_dir is relative to the spec file's folder")]
    problems = []
    entry_point = source_dir / spec.entry_point
    if entry_point.exists() and not entry_point.is_file():  # a folder, a FIFO, a device: it is there, but no script
        problems.append(Problem(_where(path, positions, overrides, ("entry_point",)), "entry_point",
                                f"{spec.entry_point} in {source_dir} is not a regular file "
                                f"({special_file_kind(entry_point.stat().st_mode) or 'a folder'}), so it is no script to run",
                                "point entry_point at your training script (a .py or .sh file)"))
    elif not entry_point.is_file():
        problems.append(Problem(_where(path, positions, overrides, ("entry_point",)), "entry_point",
                                f"{spec.entry_point} is not in {source_dir}", _entry_point_fix(spec, source_dir)))
    elif not entry_point.resolve().is_relative_to(source_dir.resolve()):
        # Only source_dir is packed: the job would start without its script.
        problems.append(Problem(_where(path, positions, overrides, ("entry_point",)), "entry_point",
                                f"{spec.entry_point} leads outside source_dir (to {entry_point.resolve()}), so it "
                                "would not be shipped", "copy the script into source_dir"))
    for name, location in spec.channel_locations().items():
        if "://" not in location and not Path(location).exists():
            problems.append(Problem(_where(path, positions, overrides, ("inputs", name)), f"inputs.{name}",
                                    f"local path {location} does not exist",
                                    "give an s3:// prefix, or a local path relative to the spec file"))
    for name, location in spec.local_inputs.items():
        if not Path(location).is_dir():
            problems.append(Problem(_where(path, positions, overrides, ("local_inputs", name)),
                                    f"local_inputs.{name}", f"{location} is not a directory",
                                    "local_inputs are relative to the spec file"))
    return problems


def _local_paths(spec: JobSpec) -> list[tuple[str, str]]:
    """Every path on this machine a spec names, by its field: the source, the entry point, local channels."""
    paths = [("source_dir", spec.source_dir), ("entry_point", str(Path(spec.source_dir) / spec.entry_point))]
    paths += [(f"inputs.{name}", location) for name, location in spec.channel_locations().items()
              if "://" not in location]
    return paths + [(f"local_inputs.{name}", location) for name, location in spec.local_inputs.items()]


def _entry_point_fix(spec: JobSpec, source_dir: Path) -> str:
    """Did you mean the closest script in source_dir (its top two levels, so a large folder costs nothing)?"""
    scripts = sorted(str(candidate.relative_to(source_dir)) for pattern in ("*.py", "*/*.py", "*.sh")
                     for candidate in source_dir.glob(pattern) if candidate.is_file())
    close = difflib.get_close_matches(spec.entry_point, scripts, n=1, cutoff=0.5)
    if close:
        return f"did you mean `{close[0]}`? (entry_point is relative to source_dir)"
    return "entry_point is relative to source_dir" + (f"; it holds {', '.join(scripts[:5])}" if scripts else "")


def _loc_of(dotted: str) -> Loc:
    return tuple(int(part) if part.isdigit() else part for part in dotted.split(".")) if dotted else ()


def _order(positions: dict[Loc, tuple[int, int]], overrides: dict[Loc, str], loc: Loc) -> tuple[int, int]:
    if any(loc[:depth] in overrides for depth in range(len(loc), 0, -1)) or (
            loc and loc not in positions and any(key[:len(loc)] == loc for key in overrides)):
        return (1 << 30, 0)
    return next((positions[loc[:depth]] for depth in range(len(loc), -1, -1) if loc[:depth] in positions), (0, 0))


def _where(path: Path | None, positions: dict[Loc, tuple[int, int]], overrides: dict[Loc, str], loc: Loc) -> str:
    """The closest place the user wrote: an override of this field or a parent, else the deepest known key."""
    for depth in range(len(loc), 0, -1):
        if loc[:depth] in overrides:
            return overrides[loc[:depth]]
    if loc and loc not in positions:  # a key only a `--set` wrote, e.g. instanse in --set instanse.type=...
        introduced = next((text for key, text in overrides.items() if key[:len(loc)] == loc), None)
        if introduced is not None:
            return introduced
    label = str(path) if path else "<spec>"
    for depth in range(len(loc), -1, -1):
        if loc[:depth] in positions:
            line, col = positions[loc[:depth]]
            return f"{label}:{line}:{col}"
    return label


def _without_misspelled_required(errors: Sequence[Mapping[str, Any]], loc_of: Callable[[Mapping[str, Any]], Loc],
                                 key_meant: Callable[[Loc], str | None]) -> list[Mapping[str, Any]]:
    """A required key written misspelled (`instanse:`) or by its SDK name (`base_job_name:`) is one problem, the
    unknown key's `did you mean`: the required key's own `Field required`, `add name:`, would tell the user to add
    what they did write."""
    meant = {(*loc_of(error)[:-1], suggested) for error in errors if error["type"] == "extra_forbidden"
             for suggested in [key_meant(loc_of(error))] if suggested}
    return [error for error in errors if error["type"] != "missing" or loc_of(error) not in meant]


def _key_meant(loc: Loc) -> str | None:
    """The job spec's key an unknown one at `loc` stands for: an SDK Estimator argument's, else the closest."""
    return sdk_spec_key(loc) or _closest(loc[-1], _fields_at(loc[:-1]))


def _error_loc(error: Mapping[str, Any]) -> Loc:
    """The error's key path as the user wrote it: pydantic's validator and union steps left out."""
    return tuple(part for part in error["loc"] if not str(part).startswith(("function-", "union[", "[key]")))


def _closest(name: Any, known: set[str]) -> str | None:
    """The known key an unknown one is closest to, if any is close; compared in NFKC form, so a key typed with a
    fullwidth keyboard (`ｎａｍｅ`) is close to `name`."""
    close = difflib.get_close_matches(unicodedata.normalize("NFKC", str(name)), sorted(known), n=1, cutoff=0.6)
    return close[0] if close else None


def _did_you_mean(name: Any, suggested: str) -> str:
    """`did you mean `entry_point`?`, naming the characters of `name` that are not ASCII where the key meant is:
    `entry_рoint` with a Cyrillic р looks the same as the suggestion, and the fix must say what differs."""
    foreign = dict.fromkeys(char for char in str(name) if not char.isascii() and char not in suggested)
    if not foreign or not suggested.isascii():
        return f"did you mean `{suggested}`?"
    named = ", ".join(f"{char} U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}" for char in foreign)
    return f"did you mean `{suggested}`? The key you wrote is not plain ASCII, it holds {named}: type it again"


def _problem_from_pydantic(error: Mapping[str, Any], path: Path | None, places: _Places,
                           overrides: dict[Loc, str]) -> Problem:
    loc = _error_loc(error)
    wrong = _wrong_of(error, loc, places, overrides)
    return Problem(_where(path, places.positions, overrides, loc), ".".join(str(part) for part in loc),
                   _said(wrong, error["msg"]), _fix_for(wrong), order=_order(places.positions, overrides, loc))


def _wrong_of(error: Mapping[str, Any], loc: Loc, places: _Places, overrides: dict[Loc, str]) -> _Wrong:
    return _Wrong(error["type"], loc, error.get("input"), error.get("ctx") or {},
                  any(is_secret_name(str(part)) for part in loc),
                  _as_written(loc, error.get("input"), places.texts, overrides),
                  _set_text(overrides, loc),
                  holds_anchor=len(loc) == 1 and loc[0] in places.anchor_holders)


def _said(wrong: _Wrong, message: str) -> str:
    """pydantic's message, or, for text YAML read as a number, boolean or date, what YAML read: a job spec and a
    tuning spec word it alike."""
    if not _is_misread_text(wrong):
        return message.removeprefix("Value error, ")
    read = ("the value as a number, boolean or date" if wrong.secret
            else f"{wrong.written} as {described(wrong.value, wrong.written or '')}")
    return f"YAML read {read}, and this field takes text"


def _is_misread_text(wrong: _Wrong) -> bool:
    """A text field given a number, boolean or date, or a choice YAML read as one (`early_stopping: Off` is
    false)."""
    if isinstance(wrong.value, (str, list, dict, type(None))):
        return False
    return wrong.kind == "string_type" or (wrong.kind in ("literal_error", "enum") and _choice_meant(wrong) is not None)


def _choices(ctx: Mapping[str, Any]) -> list[str]:
    """The allowed values of an enum or literal error (`'Off' or 'Auto'`)."""
    return [choice.strip(" '") for choice in str(ctx.get("expected", "")).replace(" or ", ",").split(",")]


def _choice_fix(value: Any, ctx: Mapping[str, Any]) -> str:
    """`did you mean `Logarithmic`?` for a mistyped choice, else the choices."""
    choices = _choices(ctx)
    close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.5)
    return f"did you mean `{close[0]}`?" if close else f"use one of: {', '.join(choices)}"


def _choice_meant(wrong: _Wrong) -> str | None:
    """The choice whose text the user wrote (`Off`, `off`), spelled as the field takes it."""
    return next((choice for choice in _choices(wrong.ctx) if choice.lower() == (wrong.written or "").lower()), None)


def _value_fix(wrong: _Wrong) -> str | None:
    """The fix for a value YAML read as another type than the field takes, in both spec kinds' words: text quoted
    as written, a choice quoted as the field spells it, a whole number without its decimals, a list of one value
    as the value."""
    if wrong.kind == "string_type":
        return _string_fix(wrong)
    if _is_misread_text(wrong):
        return _string_fix(dataclasses.replace(wrong, written=_choice_meant(wrong)))
    if (wrong.kind in ("int_type", "int_from_float") and isinstance(wrong.value, float)
            and math.isfinite(wrong.value) and wrong.loc):
        return _whole_number_fix(wrong)
    if (item := _the_one_item(wrong.kind, wrong.value)) is not None:
        return f"write the value itself, not a list: {_written_at(wrong.loc, item)}"
    return None


def _whole_number_fix(wrong: _Wrong) -> str:
    """`write it without the decimal point: count: 2`, or for 2.5 the whole numbers either side."""
    value = wrong.value
    numbers = [int(value)] if value.is_integer() else [math.floor(value), math.ceil(value)]
    written = [_set_again(wrong.set_by, number) if wrong.set_by else _written_at(wrong.loc, str(number))
               for number in numbers]
    return ("write it without the decimal point: " if value.is_integer() else "write a whole number: ") + \
        " or ".join(written)


def _as_written(loc: Loc, value: Any, texts: dict[Loc, str], overrides: dict[Loc, str]) -> str:
    """The value as the user wrote it (`2.10` from the file or the `--set`), else as Python prints it: YAML reads
    2.10 as the float 2.1, and quoting that would name another version."""
    if set_text := _set_text(overrides, loc):
        return set_text.partition("=")[2].strip()
    return texts.get(loc, str(value))


def _set_text(overrides: dict[Loc, str], loc: Loc) -> str | None:
    """The `key=value` text of the `--set` or `overrides=` item that wrote `loc` (None: none did, or another option
    did), a KeywordOverride for the latter."""
    return said_override(overrides.get(loc, ""))


def _set_again(override: str, value: Any, quoted: bool = False) -> str:
    """The override that gave a wrong value, given again with `value`, in its user's words."""
    return override_said(override, f"{override.partition('=')[0]}={value}", quoted)


@dataclass(frozen=True)
class _Wrong:
    """One pydantic error, as its fix needs it."""

    kind: str
    loc: Loc
    value: Any
    ctx: Mapping[str, Any]
    secret: bool = False
    """The value is shown masked."""
    written: str | None = None
    """The value's text as the user wrote it."""
    set_by: str | None = None
    """The override (`--set`, or the API's `overrides=`) that gave the value, whose fix is an override too, in the
    same words (the shell would strip quotes written as in the file)."""
    holds_anchor: bool = False
    """A top-level key whose value defines an anchor."""


def _fix_for(wrong: _Wrong) -> str | None:
    """The fix hint for one pydantic error."""
    kind, loc, value, ctx = wrong.kind, wrong.loc, wrong.value, wrong.ctx
    name = str(loc[-1]) if loc else ""
    if "fix" in ctx:  # the model's own errors carry their fix
        return str(ctx["fix"])
    if fix := _value_fix(wrong):
        return fix
    if kind == "extra_forbidden":
        known, suggested = sorted(_fields_at(loc[:-1])), _closest(name, _fields_at(loc[:-1]))
        if sdk_fix := sdk_name_fix(loc, value):
            return sdk_fix
        if suggested:
            return _did_you_mean(name, suggested)
        if wrong.holds_anchor:
            return (f"to keep the anchor, rename the key {EXTENSION_PREFIX}{name} (top-level keys starting with "
                    f"{EXTENSION_PREFIX} are yours, left out of the spec), or define the anchor inside a field the "
                    "spec knows")
        return f"remove it; the keys allowed here are: {', '.join(known)}" if known else "remove it"
    if kind == "missing":
        return f"add `{name}:` ({_describe(loc)})" if _describe(loc) else f"add `{name}:`"
    if kind in ("int_type", "int_parsing") and isinstance(value, str):
        return f"write a whole number without quotes, e.g. {name}: 2"
    if kind == "bool_type":
        return f"use true or false, e.g. {name}: true"
    if kind in ("enum", "literal_error"):
        return _choice_fix(value, ctx)
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()), None)
        words = {"greater_than_equal": "at least", "greater_than": "more than",
                 "less_than_equal": "at most", "less_than": "less than"}
        return f"use a value {words[kind]} {bound}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        if shape_fix := sdk_shape_fix(loc, value):
            return shape_fix
        if _is_list_item(loc):
            return f"each item of {loc[-2]} is a mapping: write `key: value` pairs in it"
        return f"{name} is a mapping: write `key: value` pairs under it"
    if kind == "list_type":
        return f"{name} is a list, e.g. {name}: [a, b]"
    if kind == "string_pattern_mismatch":
        return f"the value must match {ctx.get('pattern')}"
    if kind in ("too_long", "string_too_long"):
        return f"at most {ctx.get('max_length')} entries or characters are allowed"
    return None


def _the_one_item(kind: str, value: Any) -> str | None:
    """`count: [2]` -> "2": a number or boolean field given a list of one such value, written as YAML writes it."""
    takes = {"int_type": (int,), "float_type": (int, float), "bool_type": (bool,)}.get(kind)
    if takes is None or not isinstance(value, list) or len(value) != 1:
        return None
    item = value[0]
    if not isinstance(item, takes) or (isinstance(item, bool) and kind != "bool_type"):
        return None
    return json.dumps(item)


def _string_fix(wrong: _Wrong) -> str:
    """The fix for a string field given another YAML value. A number or a YAML boolean (`true`, `yes`, `on`) is
    quoted as written; an empty value (`KEY:`) gets one; a list or mapping is said to be one value too many."""
    loc, value, example = wrong.loc, wrong.value, '"..."'
    if isinstance(value, (list, dict)):
        return f"give one string, not a {'list' if isinstance(value, list) else 'mapping'}: {_written_at(loc, example)}"
    if value is None:
        return f'give it a value after the colon ("" for an empty one): {_written_at(loc, example)}'
    if loc == ("py_version",) and re.fullmatch(r"3\.\d+", wrong.written or ""):  # `py_version: 3.10` is not py310
        tag = "py" + (wrong.written or "").replace(".", "")
        return "write the image's Python tag: " + (_set_again(wrong.set_by, tag) if wrong.set_by
                                                    else f"py_version: {tag}")
    quoted = f'"{MASK if wrong.secret else (wrong.written or value)}"'
    if wrong.set_by:
        return f"write it in quotes: {_set_again(wrong.set_by, quoted, quoted=True)}"
    return f"write it in quotes: {_written_at(loc, quoted)}"


def _is_list_item(loc: Loc) -> bool:
    return len(loc) > 1 and isinstance(loc[-1], int)


def _written_at(loc: Loc, value: str) -> str:
    """`key: value`, or for a list item (whose key is its index) the value and which item it is."""
    if _is_list_item(loc):
        return f"{value} (item {loc[-1] + 1} of {loc[-2]})"
    return f"{loc[-1] if loc else ''}: {value}"


def _model_at(loc: Loc) -> type[BaseModel] | None:
    """The model whose keys are written at loc, through list items and mapping values too (`metrics.0`,
    `inputs.train`, `instance.groups.0`): a key misspelled there gets its `did you mean`, not `remove it`."""
    annotation: Any = JobSpec
    for part in loc:
        model = _model_in(annotation)
        if model is None:
            annotation = _item_type(annotation)
        elif part in model.model_fields:
            annotation = model.model_fields[part].annotation
        else:
            return None
    return _model_in(annotation)


def _alternatives(annotation: Any) -> list[Any]:
    """The types an annotation allows: a union's members, an `Annotated`'s type, else itself."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _alternatives(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [kind for member in typing.get_args(annotation) for kind in _alternatives(member)]
    return [annotation]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation names, through unions and `Annotated`; a list or mapping of models is not one."""
    return next((kind for kind in _alternatives(annotation) if typing.get_origin(kind) is None
                 and isinstance(kind, type) and issubclass(kind, BaseModel)), None)


def _item_type(annotation: Any) -> Any:
    """A list's item type or a mapping's value type, if the annotation allows one."""
    return next((typing.get_args(kind)[-1] for kind in _alternatives(annotation)
                 if typing.get_origin(kind) in (list, dict) and typing.get_args(kind)), None)


def _fields_at(loc: Loc) -> set[str]:
    model = _model_at(loc)
    return set(model.model_fields) if model else set()


def _describe(loc: Loc) -> str:
    model = _model_at(loc[:-1])
    if model is None or loc[-1] not in model.model_fields:
        return ""
    description = field_description(model, str(loc[-1]))
    return re.split(r"(?<!e\.g)\.\s", description)[0].rstrip(".")


# Tuning specs: read as job specs are (bounded UTF-8, the YAML event stream checked before any tree is built);
# every problem of both files at once, each at the line of the file where it was written. `--set` overrides
# apply to the job spec.


class InvalidTuningSpec(InvalidSpec):
    """A tuning spec (or its job spec) with one or more problems; nothing was sent anywhere."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        header = f"{counted(count, 'problem')} in the tuning spec:"
        SpecError.__init__(self, "\n".join([header, *(f"  {problem}" for problem in self.problems)]))


@dataclass(frozen=True)
class LoadedTuning:
    """A valid tuning spec with its loaded job spec."""

    spec: TuningSpec
    job: LoadedSpec
    path: Path | None
    job_overrides: tuple[str, ...] = ()
    """The `--set` overrides applied to the job spec (a local trial applies them again to the same file)."""


def load_tuning(path: str | Path, overrides: str | Iterable[str] = ()) -> LoadedTuning:
    """Reads and checks a tuning spec and its job spec (`job:`, relative to the tuning spec's folder).

    Args:
        overrides: `key.path=value` for the job spec, as `smtrain plan --set` takes them (one string: one).

    Raises:
        InvalidTuningSpec: listing every problem of both files, each with its location and a fix.
    """
    from orchestrator.specs.tuning import TuningSpec, job_problems, strategy_problems

    path = _file_path(path, "a tuning spec file", "pass the tuning spec's path, e.g. \"search.yaml\" (its `job:` "
                                                 "names the job spec)")
    overrides = _override_texts(overrides)
    text = _read_text(path, "tuning spec")
    raw, places = _parse_tuning(text, path)
    positions = places.positions
    if not isinstance(raw, dict):
        raise InvalidTuningSpec([Problem(f"{path}:1:1", "", "the tuning spec must be a mapping of keys to values",
                                         "start with `job: my-job.yaml`")])
    try:
        spec = TuningSpec.model_validate(raw)
    except ValidationError as exc:
        problems = [_tuning_problem(error, path, places) for error in
                    _without_misspelled_required(exc.errors(include_url=False), _tuning_error_loc,
                                                 lambda loc: _closest(loc[-1], _tuning_fields_at(loc[:-1])))]
        raise InvalidTuningSpec(sorted(problems, key=lambda problem: problem.order)) from None
    located = [Problem(_tuning_where(path, positions, _tuning_loc(field)), field, message, fix)
               for field, message, fix in strategy_problems(spec)]
    if located:
        raise InvalidTuningSpec(located)
    job_path = Path(resolved(path.parent, spec.job))
    try:
        job = load(job_path, overrides)
    except InvalidSpec as exc:
        raise InvalidTuningSpec([Problem(_tuning_where(path, positions, ("job",)), "job",
                                         f"its job spec has problems: {problem}") for problem in exc.problems]) from None
    except SpecError as exc:
        raise InvalidTuningSpec([Problem(_tuning_where(path, positions, ("job",)), "job", exc.message,
                                         exc.fix or "give the path of a job spec, relative to this file")]) from None
    problems = [Problem(job.where(field.removeprefix("job:")) if field.startswith("job:")
                        else _tuning_where(path, positions, _tuning_loc(field)), field.removeprefix("job:"), message, fix)
                for field, message, fix in job_problems(spec, job.spec)]
    if problems:
        raise InvalidTuningSpec(problems)
    return LoadedTuning(spec=spec, job=job, path=path, job_overrides=overrides)


def _parse_tuning(text: str, path: Path) -> tuple[Any, _Places]:
    """As `_parse_yaml`, with the job spec's collector: a key YAML reads as other text is refused, and a categorical
    value keeps the text written where YAML would read it as other text (`values: [on, off]` are "on" and "off",
    not "True" and "False")."""
    import yaml

    loader = _yaml_loader_class()(text)
    try:
        _check_shape(text, lambda mark: f"{path}:{mark.line + 1}:{mark.column + 1}")
        node = loader.get_single_node()
        if node is None:
            raise InvalidTuningSpec([Problem(f"{path}:1:1", "", "the file is empty", "start with `job: my-job.yaml`")])
        places = _Places(positions={(): (1, 1)})
        _collect_positions(node, (), places, path)
        if places.misread_keys:
            raise InvalidTuningSpec(places.misread_keys)
        parameters = mapping_value(node, "parameters")
        for _, parameter in parameters.value if isinstance(parameters, yaml.MappingNode) else ():
            as_written(mapping_value(parameter, "values"))
        document = loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise InvalidTuningSpec([Problem(_yaml_error_place(exc, path, text), "", *_yaml_refusal(exc, text))]) from None
    except InvalidSpec as exc:  # the job spec's checks of shape and keys, said of the tuning spec
        raise InvalidTuningSpec(exc.problems) from None
    finally:
        loader.dispose()
    return _plain(document), places


def _tuning_loc(dotted: str) -> Loc:
    return tuple(int(part) if part.isdigit() else part for part in dotted.split(".")) if dotted else ()


def _tuning_where(path: Path, positions: dict[Loc, tuple[int, int]], loc: Loc) -> str:
    for depth in range(len(loc), -1, -1):
        if loc[:depth] in positions:
            line, column = positions[loc[:depth]]
            return f"{path}:{line}:{column}"
    return str(path)


def _tuning_error_loc(error: Mapping[str, Any]) -> Loc:
    """pydantic names the union member it tried (`continuous`, `function-after[...]`): not a place the user wrote."""
    return tuple(part for part in error["loc"] if not str(part).startswith(("function-", "union[", "[key]"))
                 and part not in ("continuous", "integer", "categorical", "str", "int", "float", "bool"))


def _tuning_problem(error: Any, path: Path, places: _Places) -> Problem:
    """Worded as a job spec's problem is where both have the same mistake (`_said`, `_value_fix`)."""
    loc, positions = _tuning_error_loc(error), places.positions
    wrong = _wrong_of(error, loc, places, {})
    fix = _value_fix(wrong)
    if fix and wrong.kind != "string_type" and loc[:1] == ("parameters",) and loc[-1:] in (("min",), ("max",)):
        fix += " (or make the range type: continuous)"
    return Problem(_tuning_where(path, positions, loc), ".".join(map(str, loc)), _said(wrong, error["msg"]),
                   fix or _tuning_fix(error, loc),
                   order=next((positions[loc[:depth]] for depth in range(len(loc), -1, -1) if loc[:depth] in positions),
                              (0, 0)))


def _tuning_fix(error: Any, loc: Loc) -> str | None:
    ctx = error.get("ctx") or {}
    if "fix" in ctx:
        return str(ctx["fix"])
    kind, name = error["type"], str(loc[-1]) if loc else ""
    if kind == "extra_forbidden":
        known, suggested = sorted(_tuning_fields_at(loc[:-1])), _closest(name, _tuning_fields_at(loc[:-1]))
        if suggested:
            return _did_you_mean(name, suggested)
        return f"remove it; the keys allowed here are: {', '.join(known)}"
    if kind == "missing":
        return f"add `{name}:`"
    if kind == "union_tag_invalid":
        return "use type: continuous, integer or categorical"
    if kind in ("literal_error", "enum"):
        return _choice_fix(error.get("input"), ctx)
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
        if _is_list_item(loc):
            return f"each item of {loc[-2]} is a mapping: write `key: value` pairs in it"
        return f"{name} is a mapping: write `key: value` pairs under it"
    if kind == "list_type":
        return f"{name} is a list, e.g. {name}: [a, b]"
    return None


def _tuning_fields_at(loc: Loc) -> set[str]:
    """The keys allowed at a place of the tuning spec, for did-you-mean suggestions."""
    from orchestrator.specs.tuning import CategoricalRange, ContinuousRange, TuningSpec

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
