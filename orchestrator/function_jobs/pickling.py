"""The function and the arguments of a function job as cloudpickle's bytes, or a SpecError saying which of them
cannot travel and why (not picklable, or too large for the code tarball they travel in), before anything is
written.

A pickling failure comes from deep inside cloudpickle (`cannot pickle '_thread.lock' object`) and names no
argument; the arguments are pickled again one by one to find the first that fails, so the message can name it.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from orchestrator.errors import SpecError
from orchestrator.planning.packaging import DEFAULT_MAX_BYTES


def pickled_function(function: Callable[..., Any]) -> bytes:
    """The function's pickle.

    Raises:
        SpecError: a global or closure value a by-value function takes along cannot be pickled.
    """
    sink = _Sink()
    try:
        _dump(function, sink)
    except Exception as error:  # noqa: BLE001 (whatever pickling raises, the function cannot travel)
        raise SpecError(
            f"the function {function.__qualname__} cannot travel to the job: {_why(error)}",
            fix="a function defined in a notebook takes along the globals and closure values it uses: create "
                "such an object (a lock, a client, an open file) inside the function, or define the function in "
                "a module file so it travels by reference",
        ) from None
    return sink.getvalue()


def pickled_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    """The pickle of `(args, kwargs)`, measured as it is written: arguments larger than a job's code tarball may
    hold are refused without a second copy of them in memory.

    Raises:
        SpecError: an argument cannot be pickled (the first such, by position or keyword); the arguments pickle
            to more than a code tarball may hold (DEFAULT_MAX_BYTES: a function job has no --max-source-mb).
    """
    sink = _Sink(keep_up_to=DEFAULT_MAX_BYTES)
    try:
        _dump((args, kwargs), sink)
    except Exception as error:  # noqa: BLE001 (whatever pickling raises, the arguments cannot travel)
        where, why = _first_unpicklable(args, kwargs) or ("the arguments", _why(error))
        raise SpecError(
            f"{where} cannot travel to the job: {why}",
            fix="create such an object (a lock, a generator, an open file, a client) inside the function from "
                "what can travel (numbers, strings, lists, dicts, arrays), or pass a path or an S3 input "
                "(`inputs=`) and open it there",
        ) from None
    if sink.size > DEFAULT_MAX_BYTES:
        raise SpecError(
            f"the arguments are {sink.size / 1e6:.1f} MB pickled, over the {DEFAULT_MAX_BYTES / 1e6:.0f} MB a "
            "job's code tarball may hold (they travel in it)",
            fix='pass large data as an input, e.g. remote(inputs={"data": "s3://bucket/prefix"}, local_inputs='
                '{"data": "a/local/folder"}), and read it in the function from the folder '
                'os.environ["SM_CHANNEL_DATA"] names (backend="local" uses local_inputs, or a local folder '
                "given as the input itself)",
        )
    return sink.getvalue()


def _first_unpicklable(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str] | None:
    """(which argument, why) for the first argument that cannot be pickled alone; None if each can."""
    named = [(f"positional argument {index} (a {type(value).__name__})", value)
             for index, value in enumerate(args)]
    named += [(f"keyword argument {name!r} (a {type(value).__name__})", value)
              for name, value in kwargs.items()]
    for where, value in named:
        try:
            _dump(value, _Sink(keep_up_to=0))
        except Exception as error:  # noqa: BLE001 (the same failures as the whole call's)
            return where, _why(error)
    return None


def _dump(value: Any, sink: _Sink) -> None:
    import cloudpickle

    cloudpickle.Pickler(sink).dump(value)


class _Sink:
    """A file that keeps what is written up to `keep_up_to` bytes and past that only counts: arguments too large
    to travel, or pickled again only to find the one that fails, are not copied in memory."""

    def __init__(self, keep_up_to: int | None = None) -> None:
        self.size = 0
        self._keep_up_to = keep_up_to
        self._kept = io.BytesIO()

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self._keep_up_to is None or self.size <= self._keep_up_to:
            self._kept.write(data)
        elif self._kept.tell():
            self._kept = io.BytesIO()
        return len(data)

    def getvalue(self) -> bytes:
        return self._kept.getvalue()


def _why(error: Exception) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
