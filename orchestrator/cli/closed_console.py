"""Output to a console that has gone away (its terminal closed: EIO; the reader of its pipe exited: EPIPE) is
dropped: a local run's files already say everything, and a dead terminal must not turn the command's exit code
into 1 or print a traceback nobody can read."""

from __future__ import annotations

import os
from typing import Any, TextIO


class Tolerant:
    """A text stream whose writes never fail: the first write or flush that does points the stream's descriptor
    at /dev/null, so the write, what stays buffered, and the interpreter's last flush at exit succeed there."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError:
            self._forget()
            return self._stream.write(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            self._forget()
            self._stream.flush()

    def _forget(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._stream.fileno())
        finally:
            os.close(null)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
