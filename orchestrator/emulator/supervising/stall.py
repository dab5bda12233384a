"""A local run that has stopped moving: noticed, explained with every rank's stack, and stopped.

A rank blocked in a collective that another rank never joins writes nothing and never fails: gloo waits 30
minutes by default, and the job would run to `max_run_seconds`. `smtrain local` counts every line any rank
writes (a progress line is one) as a sign of life; after `--stall-timeout` seconds without one it dumps each
rank's Python stack (stacks.py), names the ranks that wait in a collective and those that do not (usually the
one the others wait for), and stops the run with exit code 4.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.emulator.supervising.stacks import RankStack, dump_stacks, find_py_spy, rank_processes
from orchestrator.observing.metric_series import format_duration

DEFAULT_STALL_TIMEOUT_SECONDS = 300.0
EXIT_HUNG = 4
STACKS_FILE = "stacks.txt"


class StallWatchdog:
    """Measures the time since any rank last wrote a line; `timeout_seconds` None or 0 never stalls."""

    def __init__(self, timeout_seconds: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout_seconds = timeout_seconds or None
        self._clock = clock
        self._last = clock()

    def activity(self) -> None:
        """Called for every line any rank writes (the supervisor's readers call it from their threads)."""
        self._last = self._clock()

    def idle_seconds(self) -> float:
        return self._clock() - self._last

    def stalled(self) -> bool:
        return self.timeout_seconds is not None and self.idle_seconds() >= self.timeout_seconds


@dataclass(frozen=True)
class HangReport:
    """Why the run was stopped: how long nothing moved, and where each rank was."""

    idle_seconds: float
    stacks: tuple[RankStack, ...]

    @property
    def waiting(self) -> list[RankStack]:
        return [stack for stack in self.stacks if stack.collective]

    @property
    def not_waiting(self) -> list[RankStack]:
        return [stack for stack in self.stacks if not stack.collective]

    def summary(self) -> str:
        """`no rank wrote a line for 5 s: waiting in a collective: rank 0 (algo-1) in all_reduce at main
        (train.py:31); not in a collective: rank 1 (algo-2) at load_batch (train.py:20)`."""
        parts = [f"Hung: no rank wrote a line or advanced a step for {format_duration(self.idle_seconds)}"]
        if not self.stacks:
            return parts[0] + "; no training process was left to inspect"
        if self.waiting:
            parts.append("waiting in a collective: " + ", ".join(
                f"{stack.process.name} in {stack.collective} called at {stack.where}" for stack in self.waiting))
        if self.not_waiting:
            label = "not in a collective (the ranks above wait for it)" if self.waiting else "not in a collective"
            parts.append(f"{label}: " + ", ".join(
                f"{stack.process.name} at {stack.where}" for stack in self.not_waiting))
        return "; ".join(parts)

    def text(self) -> str:
        """The summary, then each rank's stack as its dumper printed it."""
        sections = [self.summary()]
        for stack in self.stacks:
            body = stack.text.strip() or "(no stack could be read: py-spy missing or refused, no faulthandler output)"
            sections.append(f"--- {stack.process.name}, pid {stack.process.pid}, stack from {stack.source} ---\n{body}")
        return "\n\n".join(sections) + "\n"


def diagnose(run_id: str, run_dir: Path, logs_dir: Path, idle_seconds: float) -> HangReport:
    """Dumps every rank's stack (py-spy where it is installed and may attach) and writes the report to
    `<run_dir>/stacks.txt`."""
    report = HangReport(idle_seconds, tuple(dump_stacks(rank_processes(run_id), logs_dir, find_py_spy())))
    (run_dir / STACKS_FILE).write_text(report.text())
    return report
