"""Progress of the long steps of a large source_dir (packing it, uploading it) for whoever shows it.

The command line sets a listener around its `plan` and `submit` calls (a bar on stderr, only on a terminal);
without one, reporting costs a call that does nothing. A context variable rather than a parameter: these steps
sit under `plan()`, `submit()` and the backends, none of which has any business carrying a display.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

Advance = Callable[[int, int], None]
"""Called with the bytes and files done since the last call (bytes may be negative: an upload retrying a part)."""


class Listener(Protocol):
    def begin(self, stage: str, total_bytes: int, total_files: int | None) -> None: ...

    def advance(self, done_bytes: int, done_files: int) -> None: ...

    def end(self) -> None: ...


_LISTENER: ContextVar[Listener | None] = ContextVar("smtrain_source_progress", default=None)


@contextmanager
def reported_to(listener: Listener) -> Iterator[None]:
    """Every stage begun inside this block is reported to `listener`."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


@contextmanager
def stage(name: str, total_bytes: int, total_files: int | None = None) -> Iterator[Advance]:
    """One step (`packing`, `uploading`): yields the function that reports its advance (safe from any thread)."""
    listener = _LISTENER.get()
    if listener is None:
        yield _unheard
        return
    listener.begin(name, total_bytes, total_files)
    try:
        yield listener.advance
    finally:
        listener.end()


def _unheard(done_bytes: int, done_files: int) -> None:
    """Nobody shows progress (a script, a notebook, -o json, stderr not a terminal)."""
