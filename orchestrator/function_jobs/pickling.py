"""The function and the arguments of a function job pickled with cloudpickle into their files, or a SpecError
saying which of them cannot travel and why (not picklable, or too large for the code tarball they travel in, alone
or together). A pickle streams to its file and is measured as it comes, so a large argument is never copied in
memory (a 200 MB mask of zeros costs megabytes of buffers here, not another 200 MB).

A pickling failure comes from deep inside cloudpickle (`cannot pickle '_thread.lock' object`) and names no
argument and no variable; the arguments, and the values a by-value function takes along (its globals, closure
values, defaults and attributes, and those of the by-value functions among them), are pickled again one by one
to find the first that fails, so the message can name it and the function that holds it (`lock`, a global of
`helper`).
An open text file is refused too, where cloudpickle would take along what it reads here as an in-memory copy
in place of the file: the job would read a snapshot of a file it has not got, and write nowhere.

cloudpickle writes "<dynamic-code>" for the file of code it pickles by value (a notebook cell's function, its
helpers), so the job's traceback would name no file. The pickler here keeps each code object's own file name
and notes the lines that code spans; those lines travel too (`shipped_lines`), since a notebook cell is no file
where the job runs, and the runner gives them to linecache: the traceback shows the cell, the line and its code.
Only the code that travels gets its name back; the other lines of its file travel empty. Each by-value function
met while pickling is checked for names the job would lack (missing_names) before its globals are pickled.
"""

from __future__ import annotations

import contextlib
import dis
import functools
import inspect
import io
import json
import linecache
import operator
import os
import pickle
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import SpecError
from orchestrator.function_jobs.missing_names import MissingInTheJob, check_names
from orchestrator.planning.packaging import DEFAULT_MAX_BYTES, gzip_compressor

_CHUNK = 1 << 20  # what is compressed or read back at once: the memory measuring a pickle costs
_NO_FILE = "<dynamic-code>"  # cloudpickle's file name for code it pickles by value
_PASS_AS_INPUT = ('pass large data as an input, e.g. remote(inputs={"data": "s3://bucket/prefix"}, local_inputs='
                  '{"data": "a/local/folder"}), and read it in the function from the folder '
                  'os.environ["SM_CHANNEL_DATA"] names (backend="local" uses local_inputs, or a local folder given '
                  "as the input itself)")


@dataclass(frozen=True)
class Pickled:
    """What a pickle written to its file refers to: the lines of each file its by-value code comes from, and the
    modules it refers to by name (those of the functions and classes pickled by reference, the modules themselves,
    and the names by-value code uses, `import helpers` in its body included): the job must be able to import them.
    `imported` are those its by-value code's import statements name: certainly modules, where another name may be
    an attribute's."""

    code_lines: Mapping[str, frozenset[int]]
    modules: frozenset[str]
    imported: frozenset[str] = frozenset()


def pickled_function(function: Callable[..., Any], name: str, into: Path) -> Pickled:
    """Pickles the function into the file `into`; `name` is how the user knows it (a functools.partial has no name
    of its own).

    Raises:
        SpecError: a global or closure value a by-value function takes along cannot be pickled, or they pickle to
            more than a code tarball may hold (the function travels in it, as its arguments do).
    """
    try:
        with _Sink(limit=DEFAULT_MAX_BYTES, into=into) as sink:
            pickled = _dump(function, sink)
    except MissingInTheJob as error:
        raise SpecError(f"the function {name} cannot travel to the job: {error}", fix=error.fix) from None
    except Exception as error:  # noqa: BLE001 (whatever pickling raises, the function cannot travel)
        culprit = _unpicklable_taken_along(function, set())
        raise SpecError(
            f"the function {name} cannot travel to the job: {culprit.message if culprit else _why(error)}",
            fix=culprit.fix if culprit else _function_fix("such an object", "the function"),
        ) from None
    if sink.over_limit:
        raise SpecError(
            f"the function {name} is {sink.size / 1e6:.1f} MB pickled with the globals and closure values it takes "
            f"along{_largest_taken_along(function)}, and gzips to more than the {DEFAULT_MAX_BYTES / 1e6:.0f} MB a "
            "job's code tarball may hold (it travels in it)",
            fix='load large data inside the function, from an input: remote(inputs={"data": "s3://bucket/prefix"}, '
                'local_inputs={"data": "a/local/folder"}), and read it there from the folder '
                'os.environ["SM_CHANNEL_DATA"] names',
        )
    return pickled


def pickled_arguments(args: tuple[Any, ...], kwargs: dict[str, Any], into: Path) -> Pickled:
    """Pickles `(args, kwargs)` into the file `into`, measured as it is written as the code tarball carries it
    (gzipped, once over the limit as it is): no copy of the arguments is made in memory, however large.

    Raises:
        SpecError: an argument cannot be pickled (the first such, by position or keyword); the arguments gzip to
            more than a code tarball may hold (DEFAULT_MAX_BYTES: a function job has no --max-source-mb).
    """
    try:
        with _Sink(limit=DEFAULT_MAX_BYTES, into=into) as sink:
            pickled = _dump((args, kwargs), sink)
    except Exception as error:  # noqa: BLE001 (whatever pickling raises, the arguments cannot travel)
        where, why = _first_unpicklable(args, kwargs) or ("the arguments", _why(error))
        raise SpecError(
            f"{where} cannot travel to the job: {why}",
            fix=error.fix if isinstance(error, MissingInTheJob) else
            "create such an object (a lock, a generator, an open file, a client) inside the function from what can "
            "travel (numbers, strings, lists, dicts, arrays), or pass a path or an S3 input (`inputs=`) and open "
            "it there",
        ) from None
    if sink.over_limit:
        raise SpecError(
            f"the arguments are {sink.size / 1e6:.1f} MB pickled and gzip to more than the "
            f"{DEFAULT_MAX_BYTES / 1e6:.0f} MB a job's code tarball may hold (they travel in it)",
            fix=_PASS_AS_INPUT,
        )
    return pickled


def check_fits_together(parts: Mapping[str, Sequence[Path]]) -> None:
    """Refuses what travels in the code tarball (each part by what it is -> its files) when each part fits
    alone and, gzipped as uploaded, their sum does not: packing would refuse it with a source_dir's fixes
    (`.smtrainignore`, `--max-source-mb`), which a function job has neither of.

    Raises:
        SpecError: the parts together gzip to more than DEFAULT_MAX_BYTES, naming the largest.
    """
    if sum(path.stat().st_size for files in parts.values() for path in files) <= DEFAULT_MAX_BYTES:
        return  # gzip makes nothing notably larger: only parts over the limit as they are need compressing
    sizes = {part: _gzipped_size(files) for part, files in parts.items()}
    total = sum(sizes.values())
    if total <= DEFAULT_MAX_BYTES:
        return
    largest = max(sizes, key=sizes.__getitem__)
    raise SpecError(
        f"what travels in the job's code tarball ({', '.join(sizes)}) gzips to {total / 1e6:.1f} MB together, "
        f"over the {DEFAULT_MAX_BYTES / 1e6:.0f} MB it may hold; the largest, {largest} "
        f"({sizes[largest] / 1e6:.1f} MB gzipped)",
        fix=_PASS_AS_INPUT,
    )


def _gzipped_size(files: Sequence[Path]) -> int:
    """The bytes `files` gzip to one after another, as the code tarball carries them, read a chunk at a time."""
    compressor = gzip_compressor()
    size = 0
    for path in files:
        with path.open("rb") as file:
            while chunk := file.read(_CHUNK):
                size += len(compressor.compress(chunk))
    return size + len(compressor.flush())


def shipped_lines(*pickles: Pickled) -> bytes:
    """JSON for the runner's linecache: each file of the pickles' by-value code -> its lines, those the code
    spans as linecache has them here (a notebook registers its cells there), every other line empty."""
    spanned: dict[str, set[int]] = {}
    for pickle in pickles:
        for filename, numbers in pickle.code_lines.items():
            spanned.setdefault(filename, set()).update(numbers)
    shipped = {}
    for filename, numbers in spanned.items():
        lines = linecache.getlines(filename)[:max(numbers)]
        if lines:
            shipped[filename] = [line if number in numbers else "\n" for number, line in enumerate(lines, 1)]
    return json.dumps(shipped, sort_keys=True).encode()


def _first_unpicklable(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str] | None:
    """(which argument, why) for the first argument that cannot be pickled alone; None if each can."""
    named = [(f"positional argument {index} ({_kind_of(value)})", value) for index, value in enumerate(args)]
    named += [(f"keyword argument {name!r} ({_kind_of(value)})", value) for name, value in kwargs.items()]
    for where, value in named:
        why = _fails(value)
        if why is not None:
            culprit = _unpicklable_taken_along(value, set())
            return where, culprit.message if culprit else why
    return None


def _fails(value: Any) -> str | None:
    """Why `value` alone cannot be pickled, or None when it can."""
    try:
        _dump(value, _Sink())
    except Exception as error:  # noqa: BLE001 (the same failures as the whole pickle's)
        return _why(error)
    return None


@dataclass(frozen=True)
class _Culprit:
    """A value taken along that cannot be pickled: the refusal's words, naming it and what holds it, and the fix
    saying where to create it instead."""

    message: str
    fix: str


_SUCH_OBJECTS = "(a lock, a client, a connection; for an open file, pass its path and open it there)"


def _function_fix(name: str, holder: str) -> str:
    return (f"a function defined in a notebook takes along the globals and closure values it uses: create {name} "
            f"inside {holder} {_SUCH_OBJECTS}, or define the function in a module file so it travels by reference")


def _unpicklable_taken_along(taken: Any, seen: set[int]) -> _Culprit | None:
    """The first value that cannot be pickled among those `taken` takes along: a by-value function's (its globals,
    closure values, defaults, attributes), a functools.partial's (its function's, then the arguments it binds), a
    callable object's (its class's by-value methods', then its attributes). What holds the value is the one to
    change, so the values taken along are looked into before they are named; None when there is none to name.
    `seen` holds what was looked into already: a recursive function takes itself along."""
    if id(taken) in seen:
        return None
    if isinstance(taken, functools.partial):
        seen.add(id(taken))
        return _unpicklable_bound(taken, seen)
    if isinstance(taken, types.FunctionType) and travels_by_value(taken):
        seen.add(id(taken))
        holder = f"`{getattr(taken.__code__, 'co_qualname', taken.__qualname__)}`"  # a functools.wraps wrapper's own
        return _first_culprit(((f"{kind} of {holder}", name, value) for kind, name, value in _taken_along(taken)),
                              lambda name: _function_fix(name, holder), seen)
    if _pickles_its_attributes(taken):
        seen.add(id(taken))
        cls = type(taken).__qualname__
        methods = (_unpicklable_taken_along(method, seen) for method in vars(type(taken)).values()
                   if isinstance(method, types.FunctionType))
        return next(filter(None, methods), None) or _first_culprit(
            ((f"an attribute of a `{cls}` object", name, value) for name, value in vars(taken).items()),
            lambda name: f"an object takes its attributes along: create {name} in `{cls}.__call__`, which runs in "
                         f"the job, rather than before the object travels {_SUCH_OBJECTS}", seen)
    return None


def _unpicklable_bound(partial: functools.partial[Any], seen: set[int]) -> _Culprit | None:
    """The first value that cannot be pickled in what a functools.partial takes along: its function's, then an
    argument it binds (a positional one named by the parameter it fills)."""
    called = getattr(partial.func, "__qualname__", type(partial.func).__qualname__)
    try:
        parameters = [parameter.name for parameter in inspect.signature(partial.func).parameters.values()
                      if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):  # no signature to read (some builtins)
        parameters = []
    positional = [(parameters[index] if index < len(parameters) else f"args[{index}]", value)
                  for index, value in enumerate(partial.args)]
    holder = f"an argument functools.partial binds to `{called}`"
    return _unpicklable_taken_along(partial.func, seen) or _first_culprit(
        ((holder, name, value) for name, value in [*positional, *partial.keywords.items()]),
        lambda name: f"a functools.partial takes the arguments it binds along: create {name} inside `{called}` "
                     f"instead of binding it {_SUCH_OBJECTS}", seen)


def _first_culprit(taken: Iterable[tuple[str, str, Any]], fix: Callable[[str], str],
                   seen: set[int]) -> _Culprit | None:
    """The first of `taken` ((what it is to its holder, its name, the value)) that cannot be pickled, looked into
    first (what it takes along may be what fails), else named with `fix(its name)`."""
    for relation, name, value in taken:
        why = None if id(value) in seen else _fails(value)
        if why is not None:
            return _unpicklable_taken_along(value, seen) or _Culprit(
                f"`{name}` ({_kind_of(value)}), {relation}, cannot be pickled: {why}", fix(f"`{name}`"))
    return None


def _pickles_its_attributes(value: Any) -> bool:
    """A callable object (not a function, class or method) that pickles as its class and its attributes, which
    are then what it takes along: one whose class reduces itself (__reduce__, __getstate__) is left unnamed."""
    cls = type(value)
    return (callable(value) and not isinstance(value, type) and hasattr(value, "__dict__")
            and cls.__reduce_ex__ is object.__reduce_ex__ and cls.__reduce__ is object.__reduce__
            and getattr(cls, "__getstate__", None) is getattr(object, "__getstate__", None))  # Python 3.11 has one


def _taken_along(function: types.FunctionType) -> Iterable[tuple[str, str, Any]]:
    """(what it is to the function, its name, the value) for what cloudpickle takes along with a by-value
    function: its closure values, the globals its code and the code nested in it read, its defaults and its
    attributes (a functools.wraps wrapper's `__wrapped__`)."""
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
        with contextlib.suppress(ValueError):  # a cell not yet assigned holds nothing
            yield "a closure variable", name, cell.cell_contents
    for name in _names_read(function.__code__):
        if name in function.__globals__:
            yield "a global", name, function.__globals__[name]
    for name, value in zip(reversed(function.__code__.co_varnames[:function.__code__.co_argcount]),
                           reversed(function.__defaults__ or ())):
        yield "the default of an argument", name, value
    for name, value in (function.__kwdefaults__ or {}).items():
        yield "the default of an argument", name, value
    for name, value in vars(function).items():
        yield "an attribute", name, value


def _names_read(code: types.CodeType) -> list[str]:
    """The global names `code` and the code nested in it (a comprehension, an inner function) may read."""
    names = list(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names += [name for name in _names_read(constant) if name not in names]
    return names


def _kind_of(value: Any) -> str:
    """`a lock`, `an open file 'data.csv'`: what a value is, as the refusal names it."""
    if isinstance(value, io.IOBase) and isinstance(getattr(value, "name", None), str):
        return f"an open file {value.name!r}"
    return f"a {type(value).__name__}"


def _largest_taken_along(function: Callable[..., Any]) -> str:
    """`: the largest, `rows` (600.0 MB)`: the global or closure value that makes a by-value function too large
    (a notebook's data loaded in another cell), or "" when there is none to name."""
    try:
        taken = inspect.getclosurevars(function)
    except TypeError:  # not a plain function (a callable object): nothing to name
        return ""
    sizes = {}
    for name, value in {**taken.globals, **taken.nonlocals}.items():
        sink = _Sink()
        with contextlib.suppress(Exception):  # one that cannot be measured is not the one to name
            _dump(value, sink)
        sizes[name] = sink.size
    name = max(sizes, key=sizes.__getitem__, default=None)
    return f": the largest, `{name}` ({sizes[name] / 1e6:.1f} MB pickled)" if name else ""


def defined_by(function: Callable[..., Any]) -> Any:
    """What defines a callable, whose module and name are the job's: a functools.partial's function (it has no
    name of its own), a callable object's class, or the function itself."""
    while isinstance(function, functools.partial):
        function = function.func
    return function if hasattr(function, "__qualname__") else type(function)


def travels_by_value(function: Callable[..., Any]) -> bool:
    """True for a function no file defines (a notebook cell, standard input) or one defined inside another."""
    function = defined_by(function)
    module = sys.modules.get(function.__module__ or "")
    path = getattr(module, "__file__", None)
    return (module is None or function.__module__ == "__main__" or path is None or not os.path.isfile(path)
            or "<locals>" in function.__qualname__)


def _dump(value: Any, sink: _Sink) -> Pickled:
    """Pickles `value` into `sink`; returns what its pickle refers to (its data is the sink's to give)."""
    pickler = _file_keeping_pickler()(sink)
    pickler.dump(value)
    return Pickled({filename: frozenset(numbers) for filename, numbers in pickler.code_lines.items()},
                   frozenset(pickler.modules), frozenset(pickler.imported))


@functools.cache
def _file_keeping_pickler() -> type:
    """cloudpickle's Pickler, keeping the file name of the code it pickles by value (defined when first needed:
    cloudpickle is an optional dependency, imported only by a function job)."""
    import cloudpickle

    class FileKeepingPickler(cloudpickle.Pickler):  # type: ignore[misc]
        def __init__(self, file: Any) -> None:
            super().__init__(file)
            self.code_lines: dict[str, set[int]] = {}
            self.modules: set[str] = set()
            self.imported: set[str] = set()

        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, types.ModuleType):
                self.modules.add(obj.__name__)
            elif isinstance(obj, (types.FunctionType, type)):
                self.modules.add(getattr(obj, "__module__", None) or "")
            if isinstance(obj, io.TextIOWrapper) and obj not in (sys.stdout, sys.stderr):
                raise pickle.PicklingError(f"an open file ({obj.name!r}) does not travel: the job would get a copy of "
                                           "what it holds here, not the file")
            if isinstance(obj, types.FunctionType) and travels_by_value(obj):
                check_names(obj)
            elif isinstance(obj, types.CodeType):
                self.modules.update(obj.co_names)
                self.imported.update(instruction.argval for instruction in dis.get_instructions(obj)
                                     if instruction.opname == "IMPORT_NAME")
            if isinstance(obj, types.CodeType) and obj.co_filename != _NO_FILE:
                last = max((line for _, _, line in obj.co_lines() if line is not None), default=obj.co_firstlineno)
                self.code_lines.setdefault(obj.co_filename, set()).update(range(obj.co_firstlineno, last + 1))
                # cloudpickle's own reduction of the code, then its file name put back (CodeType.replace)
                return operator.methodcaller("replace", co_filename=obj.co_filename), \
                    (obj.replace(co_filename=_NO_FILE),)
            return super().reducer_override(obj)

    return FileKeepingPickler


class _Sink:
    """A file that writes what is pickled to `into` and measures it against `limit` as the code tarball carries
    it, gzipped: a pickle within the limit as it is needs no compressing (gzip makes nothing notably larger); one
    past it is gzipped from then on as packing will (what was written before read back from the file), a chunk at
    a time, and no longer written once that too is past the limit. Nothing is kept in memory, so a large argument
    costs no copy of itself. Without `into` it only counts: a pickle made again to find the one that fails."""

    def __init__(self, limit: int = 0, into: Path | None = None) -> None:
        self.size = 0
        self.over_limit = False
        self._limit = limit
        self._file: Any = into.open("w+b") if into is not None else None
        self._compressor: Any = None
        self._gzipped = 0

    def __enter__(self) -> _Sink:
        return self

    def __exit__(self, *raised: Any) -> None:
        """Ends the gzip stream once the pickle is written whole (over_limit then says it of the whole), and
        closes the file."""
        try:
            if self._compressor is not None and not self.over_limit and raised[0] is None:
                self._gzipped += len(self._compressor.flush())
                self.over_limit = self._gzipped > self._limit
        finally:
            if self._file is not None:
                self._file.close()

    def write(self, data: Any) -> int:
        """`data` is bytes, or for a large buffer (a numpy array's, with pickle protocol 5) a PickleBuffer, which
        has no len(): its size is its memoryview's."""
        view = memoryview(data).cast("B")
        self.size += view.nbytes
        if self._file is None or self.over_limit:
            return view.nbytes
        self._file.write(view)
        if self._compressor is None and self.size > self._limit:
            self._compressor = gzip_compressor()
            self._file.seek(0)
            self._measure(iter(functools.partial(self._file.read, _CHUNK), b""))
        elif self._compressor is not None:
            self._measure(view[start:start + _CHUNK] for start in range(0, view.nbytes, _CHUNK))
        return view.nbytes

    def _measure(self, chunks: Iterable[Any]) -> None:
        """Gzips `chunks` only to count the bytes, stopping once past the limit: nothing more need be known."""
        for chunk in chunks:
            self._gzipped += len(self._compressor.compress(chunk))
            if self._gzipped > self._limit:
                self.over_limit = True
                return


def _why(error: Exception) -> str:
    if isinstance(error, MissingInTheJob):
        return str(error)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
