"""The function and the arguments of a function job as cloudpickle's bytes, or a SpecError saying which of them
cannot travel and why, before anything is written.

A pickling failure comes from deep inside cloudpickle (`cannot pickle '_thread.lock' object`) and names no
argument; the arguments are pickled again one by one to find the first that fails, so the message can name it.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from orchestrator.errors import SpecError


def pickled_function(function: Callable[..., Any]) -> bytes:
    """The function's pickle.

    Raises:
        SpecError: a global or closure value a by-value function takes along cannot be pickled.
    """
    try:
        return _dumps(function)
    except Exception as error:  # noqa: BLE001 (whatever pickling raises, the function cannot travel)
        raise SpecError(
            f"the function {function.__qualname__} cannot travel to the job: {_why(error)}",
            fix="a function defined in a notebook takes along the globals and closure values it uses: create "
                "such an object (a lock, a client, an open file) inside the function, or define the function in "
                "a module file so it travels by reference",
        ) from None


def pickled_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    """The pickle of `(args, kwargs)`.

    Raises:
        SpecError: an argument cannot be pickled (the first such, by position or keyword).
    """
    try:
        return _dumps((args, kwargs))
    except Exception as error:  # noqa: BLE001 (whatever pickling raises, the arguments cannot travel)
        where, why = _first_unpicklable(args, kwargs) or ("the arguments", _why(error))
        raise SpecError(
            f"{where} cannot travel to the job: {why}",
            fix="create such an object (a lock, a generator, an open file, a client) inside the function from "
                "what can travel (numbers, strings, lists, dicts, arrays), or pass a path or an S3 input "
                "(`inputs=`) and open it there",
        ) from None


def _first_unpicklable(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str] | None:
    """(which argument, why) for the first argument that cannot be pickled alone; None if each can."""
    named = [(f"positional argument {index} (a {type(value).__name__})", value)
             for index, value in enumerate(args)]
    named += [(f"keyword argument {name!r} (a {type(value).__name__})", value)
              for name, value in kwargs.items()]
    for where, value in named:
        try:
            _dumps(value, _Discard())
        except Exception as error:  # noqa: BLE001 (the same failures as the whole call's)
            return where, _why(error)
    return None


def _dumps(value: Any, file: Any = None) -> bytes:
    import cloudpickle

    sink = file if file is not None else io.BytesIO()
    cloudpickle.Pickler(sink).dump(value)
    return sink.getvalue()


class _Discard:
    """A file that only takes bytes: pickling an argument again to find the failing one keeps no copy of it."""

    def write(self, data: bytes) -> int:
        return len(data)

    def getvalue(self) -> bytes:
        return b""


def _why(error: Exception) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
