"""A local run's host logs (`logs/algo-N.log`) read from their end backwards, by bytes, never beyond a bound: the
last lines of a log of gigabytes cost a few blocks, and a search for a failure's cause at most CAUSE_MOST_BYTES of
each host's log."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from orchestrator.observing.cause_window import Window
from orchestrator.observing.log_lines import LogLine, host_order
from orchestrator.observing.plain_text import plain
from orchestrator.observing.rank_lines import rejoined

BLOCK_BYTES = 64 * 1024
CAUSE_MOST_BYTES = 32 * 1024 * 1024
"""How far back from its end each host's log is searched for the error that started a failure: a run that printed
more than this after it is told that the search stopped there (`cause_window.not_found_in`)."""


def _non_empty_lines(data: bytes) -> int:
    return sum(1 for piece in data.split(b"\n") if piece not in (b"", b"\r"))


def start_of_last_lines(log: BinaryIO, lines: int, most_bytes: int) -> tuple[int, bool]:
    """Where the last `lines` non-empty lines of an open log start, found from its end backwards in blocks that
    grow with what is held (so that counting stays linear), reading at most its last `most_bytes`; and whether
    that bound cut them short, bytes being left before it."""
    size = log.seek(0, 2)
    start, limit, tail = size, max(0, size - most_bytes), b""
    while start > limit:
        step = min(max(BLOCK_BYTES, len(tail)), start - limit)
        start -= step
        log.seek(start)
        tail = log.read(step) + tail
        if _non_empty_lines(tail) > lines:
            break
    position, kept = len(tail), 0
    for piece in reversed(tail.split(b"\n")):
        position -= len(piece)
        if piece not in (b"", b"\r"):
            kept += 1
            if kept == lines:
                break
        position -= 1  # the newline before it
    return start + max(position, 0), kept < lines and start > 0


class HostLogEnds:
    """Each host's log of a run directory, its last lines as a failure's cause window (`cause_window`) wants them,
    as the run's logs show them (plain text, no empty line), within CAUSE_MOST_BYTES of each log's end."""

    def __init__(self, logs_dir: Path, latest_ms: int | None = None) -> None:
        """`latest_ms`: a line's time is its log's time of last write, at most this (an ended run's end, which a
        copy of the run, `cp -r`, would otherwise put after)."""
        self._logs_dir = logs_dir
        self._latest_ms = latest_ms

    def last(self, lines: int) -> Window:
        tails: dict[str, list[LogLine]] = {}
        more, cut = False, []
        for path in sorted(self._logs_dir.glob("algo-*.log"), key=lambda item: host_order(item.stem)):
            stamp = int(path.stat().st_mtime * 1000)
            stamp = stamp if self._latest_ms is None else min(stamp, self._latest_ms)
            with path.open("rb") as log:
                start, bounded = start_of_last_lines(log, lines, CAUSE_MOST_BYTES)
                log.seek(start)
                text = plain(log.read().decode("utf-8", errors="replace"))
            host = path.stem
            tails[host] = [LogLine(host, stamp, line) for line in rejoined(text.split("\n")) if line][-lines:]
            cut += [host] if bounded else []
            more = more or (start > 0 and not bounded)
        bound = f"the last {_size(CAUSE_MOST_BYTES)} of {', '.join(cut)}'s log" if cut else None
        return Window(tails, more, bound)


def _size(count: int) -> str:
    return f"{count // 1024 ** 2} MiB" if count >= 1024 ** 2 else f"{count // 1024} KiB"
