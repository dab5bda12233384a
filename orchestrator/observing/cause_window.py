"""A failed job's logs read back from their end until the error that started the failure is among the lines read,
within a bound, so that no amount of output after it pushes it out of view.

After the rank that fails first prints its traceback, a log goes on: the other ranks' teardown errors (NCCL's
`remote process exited`, gloo's `Connection reset by peer`), torchrun's `ChildFailedError` report, a warnings
flood, thousands of lines the script prints while it winds down. A fixed window of last lines then holds only
those, and the cause read from it is a consequence or a bare exit code. So where the first window holds no error
of a rank's own (`root_cause.own_error`), each host's window grows fourfold at a time until one does, every log
has been read whole, or the place's bound is reached (a local log's last bytes, a CloudWatch stream's GetLogEvents
calls: each reader says its own). Found beyond the first window, the window is doubled once more, so that the
error's whole traceback and at least as many lines before it as the first window holds are read: the cause is the
one the same logs give when nothing follows the error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from orchestrator.observing.log_lines import LogLine
from orchestrator.observing.root_cause import FailureCause

Tails = Mapping[str, Sequence[LogLine]]
GROWTH = 4
"""How many times more lines each further window reads than the one before."""


@dataclass(frozen=True)
class Window:
    """Each host's last lines, oldest first, and what lies before them."""

    tails: Tails
    more_before: bool
    """Some host has lines before its window that a larger window would read."""
    bound: str | None = None
    """Where the reader's bound cut a host's window short (`the last 32 MiB of algo-1's log`); None where none did."""


class WindowReader(Protocol):
    """Reads each host's last lines of one job's logs, as many as asked, within the place's bound."""

    def last(self, lines: int) -> Window: ...


@dataclass(frozen=True)
class Reading:
    window: Window
    found: bool
    """Whether what was looked for is in the window; where not, `window.bound` says whether a bound stopped it."""


def read_back(reader: WindowReader, first: Window, first_lines: int, found: Callable[[Tails], bool]) -> Reading:
    """The first window, fourfold larger each time, in which `found` holds (doubled once more where it is not the
    first); else the largest window read: every log whole, or as much as the reader's bound allows."""
    window, lines = first, first_lines
    if found(window.tails):
        return Reading(window, True)
    while window.more_before:
        lines *= GROWTH
        window = reader.last(lines)
        if found(window.tails):
            if window.more_before:  # the error's traceback and the lines before it, whole
                window = reader.last(lines * 2)
            return Reading(window, True)
    return Reading(window, False)


def screened(found: Callable[[Tails], bool], worth_a_look: Callable[[Sequence[str]], bool]) -> Callable[[Tails], bool]:
    """`found`, asked only of a window whose lines new to it (each host's oldest, before the window it grew from)
    pass a cheap screen: a window that adds a megabyte of warnings no error could be among is grown again without
    being read line by line. `worth_a_look` must hold for every set of lines that could make `found` true."""
    before: dict[str, list[str]] = {}

    def check(tails: Tails) -> bool:
        new: list[str] = []
        for host, lines in tails.items():
            messages = [line.message for line in lines if line.message]
            new += _older_than(messages, before.get(host, []))
            before[host] = messages
        return worth_a_look(new) and found(tails)

    return check


def _older_than(messages: list[str], before: list[str]) -> list[str]:
    """The messages before those of the window before, where that window is this one's end; else all of them (two
    readers may give one log's lines apart: a supervisor's tail keeps a line a log file's reader drops)."""
    start = len(messages) - len(before)
    return messages[:start] if start >= 0 and messages[start:] == before else messages


def not_found_in(cause: FailureCause, bound: str) -> FailureCause:
    """The cause read where the bound stopped the search before an error of a rank's own was found, saying so
    first: it may be only what followed the error that started the failure."""
    said = (f"searched: {bound} hold no error of a rank's own (a traceback, argparse's error), and the search stops "
            "there: the failure may have started earlier; read that host's log from further back")
    return replace(cause, detail=(said, *cause.detail))
