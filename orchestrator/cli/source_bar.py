"""The bar of a large source's packing and upload, on stderr: bytes done of the total, files, rate, time left.

Drawn only where stderr is a terminal that redraws a line in place, and not under `--output json`; it appears once
a stage has run `SHOW_AFTER_SECONDS`, so a small source's submit prints nothing more and never loads rich's
display. Transient: what is left on screen is the command's own summary.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from orchestrator.cli.live_terminal import redraws_in_place
from orchestrator.planning.source_progress import reported_to

SHOW_AFTER_SECONDS = 0.5


@contextmanager
def source_progress(quiet: bool) -> Iterator[None]:
    """Shows the bar for the packing and uploading done inside the block, where it is wanted."""
    if quiet or not redraws_in_place(sys.stderr):
        yield
        return
    with reported_to(SourceBar(SHOW_AFTER_SECONDS)):
        yield


class SourceBar:
    """A `source_progress.Listener` drawing with rich; reports come from the packing thread and from boto3's
    transfer threads, hence the lock."""

    def __init__(self, show_after: float) -> None:
        self._show_after = show_after
        self._lock = threading.Lock()
        self._progress: Any = None
        self._task: Any = None
        self._stage = ("", 0, None)
        self._done = [0, 0]
        self._began = 0.0

    def begin(self, stage: str, total_bytes: int, total_files: int | None) -> None:
        with self._lock:
            self._stage, self._done, self._began = (stage, total_bytes, total_files), [0, 0], time.monotonic()

    def advance(self, done_bytes: int, done_files: int) -> None:
        with self._lock:
            self._done[0] += done_bytes
            self._done[1] += done_files
            if self._progress is None and time.monotonic() - self._began >= self._show_after:
                self._show()
            if self._progress is not None:
                total_files = self._stage[2]
                files = f"{self._done[1]}/{total_files} files" if total_files is not None else ""
                self._progress.update(self._task, completed=self._done[0], files=files)

    def end(self) -> None:
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
                self._progress = None

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        from orchestrator.cli.closed_console import Tolerant

        stage, total_bytes, _ = self._stage
        self._progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                                  TextColumn("{task.fields[files]}"), TransferSpeedColumn(), TimeRemainingColumn(),
                                  console=Console(file=Tolerant(sys.stderr)), transient=True)
        self._task = self._progress.add_task(f"{stage} the source", total=total_bytes, files="")
        self._progress.start()
