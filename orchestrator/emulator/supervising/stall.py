"""A local run that has stopped moving: told from a slow one, explained with every rank's stack, and stopped.

A rank blocked in a collective that another rank never joins writes nothing and never fails: gloo waits 30
minutes by default, and the job would run to `max_run_seconds`. `smtrain local` counts every line any rank
writes (a progress line is one) as a sign of life. After `--stall-timeout` seconds without one the run is
silent, and observing/liveness.py judges it by what its hosts do (activity.py): while some host's work still
uses the CPU (a long backward pass, a JIT compile) or moves data (a download, a checkpoint written to a slow
disk) it is slow, said once per stall timeout with where the busiest rank is, and runs on; when every host is
idle it is hung: each rank's Python stack is dumped (stacks.py), the ranks that wait in a collective and those
that do not (usually the one the others wait for) are named, and the run is stopped with exit code 4.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import psutil

from orchestrator.emulator.supervising.activity import ActivitySampler
from orchestrator.emulator.supervising.compiling import CompileNotices
from orchestrator.emulator.supervising.stacks import (
    RankStack,
    dump_stacks,
    find_py_spy,
    py_spy_read,
    rank_processes,
    with_data_workers,
)
from orchestrator.observing.liveness import HostActivity, Verdict, busy_hosts, judge
from orchestrator.observing.metric_series import format_duration
from orchestrator.observing.root_cause import HUNG, FailureCause

STACKS_FILE = "stacks.txt"
_BUILD_LOCK_WAIT = "file_baton.py"
"""torch.utils.file_baton: where a rank waits for another process's JIT compile (or a stopped one's lock)."""


class StallWatchdog:
    """Measures the time since any rank last wrote a line; `timeout_seconds` None or 0 never stalls."""

    def __init__(self, timeout_seconds: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout_seconds = timeout_seconds or None
        self._clock = clock
        self._last = clock()
        self.last_step: tuple[int, float] | None = None
        """The last step a progress line showed, and when."""

    def activity(self, step: int | None = None) -> None:
        """Called for every line any rank writes (the supervisor's readers call it from their threads), with the
        step when the line is a progress line."""
        self._last = self._clock()
        if step is not None:
            self.last_step = (step, self._last)

    def now(self) -> float:
        return self._clock()

    def since(self, moment: float) -> float:
        return self._clock() - moment

    def idle_seconds(self) -> float:
        return self._clock() - self._last


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
            parts.append(f"{label}: " + _places(self.not_waiting))
        locked = [stack.process.name for stack in self.stacks
                  if any(frame.file.endswith(_BUILD_LOCK_WAIT) for frame in stack.frames)]
        if locked:
            parts.append(f"{', '.join(locked)} wait{'s' if len(locked) == 1 else ''} for torch's JIT build lock, "
                         "which a compile stopped mid-way leaves: delete the `lock` file in the extension's folder "
                         "under TORCH_EXTENSIONS_DIR, or leave that variable to smtrain, which removes such locks")
        return "; ".join(parts)

    def cause(self, stacks_file: Path) -> FailureCause:
        """The hang as a failure's cause (result.json, `smtrain status`): the rank the others wait for, where
        there is one (the first rank outside a collective while others wait in one), and what to do."""
        stacks = f"every rank's stack is in {stacks_file}"
        waiting = ", ".join(f"{stack.process.name} in {stack.collective} called at {stack.where}"
                            for stack in self.waiting)
        if not self.stacks:
            return _hung(None, "no training process was left to inspect", "read the hosts' logs for how the "
                         "ranks ended")
        if not self.waiting:
            return _hung(None, "no rank is in a collective, and every one is idle: "
                         f"{_places(self.not_waiting)}",
                         "each rank waits outside torch.distributed (a sleep, a lock, a socket, input that "
                         f"never comes); {stacks}")
        if not self.not_waiting:
            return _hung(None, f"every rank waits in a collective: {waiting}",
                         "ranks that call different collectives, or the same ones in another order, wait "
                         "for each other forever: make every rank call the same ones in the same order; "
                         f"{stacks}")
        culprit, *others = self.not_waiting
        also = f"; also not in a collective: {_places(others)}" if others else ""
        name = culprit.process.name
        return _hung(culprit, f"{name} is not in a collective, at {culprit.where}{culprit.waiting_for}; the others "
                     f"wait for it: {waiting}{also}",
                     f"find why {name} never reaches the collective (a branch only some ranks take, a "
                     f"blocking read, a sleep, a lock); {stacks}")

    def text(self) -> str:
        """The summary, why py-spy could not read a rank where it could not, then each rank's stack as its dumper
        printed it."""
        sections = [self.summary()]
        refused = [stack for stack in self.stacks if stack.py_spy_refusal]
        if refused:
            sections.append(
                f"py-spy could not read {', '.join(stack.process.name for stack in refused)} "
                f"({refused[0].py_spy_refusal}): each of them wrote its own stack with faulthandler on SIGABRT, "
                "which ended it (its log's `Fatal Python error: Aborted`). To read stacks without ending the ranks, "
                "let py-spy attach: run smtrain as root, or allow this user ptrace (kernel.yama.ptrace_scope 0; in "
                "a container, --cap-add SYS_PTRACE)")
        for stack in self.stacks:
            body = stack.text.strip() or "(no stack could be read: py-spy missing or refused, no faulthandler output)"
            sections.append(f"--- {stack.process.name}, pid {stack.process.pid}, stack from {stack.source} ---\n{body}")
            sections.extend(f"--- DataLoader worker of {stack.process.name}, pid {worker.process.pid}, stack from "
                            f"{worker.source} ---\n{worker.text.strip()}" for worker in stack.workers)
        return "\n\n".join(sections) + "\n"


def _hung(culprit: RankStack | None, what: str, fix: str) -> FailureCause:
    """A hang's cause: `Hung: <what>`, on the culprit's host and rank where there is one."""
    host, rank = (culprit.process.host, culprit.process.rank) if culprit else (None, None)
    return FailureCause(host, rank, f"Hung: {what}", None, category=HUNG, fix=fix)


def _places(stacks: list[RankStack]) -> str:
    return ", ".join(stack.place for stack in stacks)


@dataclass(frozen=True)
class SlowReport:
    """A silent run whose work still moves: how long it has been silent, what moves, and where."""

    silent_seconds: float
    busy: tuple[HostActivity, ...]
    where: str | None
    """`rank 0 (algo-1) at Trainer._forward_backward (train.py:88)`: the busiest rank's stack, when py-spy reads it."""
    last_step: tuple[int, float] | None
    """The last step seen and how many seconds ago."""
    repeat_seconds: float

    def text(self) -> str:
        """`slow, not hung: no rank wrote a line or advanced a step for 5 min 0 s (last step 3, 6 min 2 s ago),
        but its work moves: algo-1: rank 0 (algo-1) at 97% CPU; rank 0 (algo-1) is at ... ; still running...`."""
        step = (f"last step {self.last_step[0]}, {format_duration(self.last_step[1])} ago" if self.last_step
                else "no step seen yet")
        moving = "; ".join(f"{activity.host}: {activity.detail or 'activity unknown'}" for activity in self.busy)
        where = f"; {self.where}" if self.where else ""
        return (f"slow, not hung: no rank wrote a line or advanced a step for {format_duration(self.silent_seconds)} "
                f"({step}), but its work moves: {moving}{where}; it keeps running (said again after each further "
                f"{format_duration(self.repeat_seconds)} of silence), and is stopped as hung only when every "
                "host's work is idle")


class RunFolders(Protocol):
    """Where a hung run's stacks are written (the run directory) and read from (the hosts' logs)."""

    @property
    def root(self) -> Path: ...

    @property
    def logs_dir(self) -> Path: ...


class StallCheck:
    """The supervisor's `hung` check for one attempt: samples what the run's processes do, says when a rank compiles
    and when a silent run is slow, and dumps the stacks of one that is hung (then True: stop it)."""

    def __init__(self, run_id: str, folders: RunFolders, watchdog: StallWatchdog, notice: Callable[[str], None],
                 mask: Callable[[str], str], compiles: CompileNotices) -> None:
        """`compiles`: what to say of a rank's C++/CUDA compile, from the processes sampled here."""
        self._run_id, self._run_dir, self._logs_dir = run_id, folders.root, folders.logs_dir
        self._mask = mask
        self._watchdog = watchdog
        self._notice = notice
        self._sampler = ActivitySampler(run_id, watchdog.timeout_seconds or 0.0)
        self._compiles = compiles
        self._slow_said_at: float | None = None
        self.hang: HangReport | None = None

    def __call__(self, processes: list[psutil.Process]) -> bool:
        timeout = self._watchdog.timeout_seconds
        if timeout is None:
            return False
        self._sampler.sample(processes)
        if compiling := self._compiles.observe(self._sampler.rank_children(), self._watchdog.now()):
            self._notice(compiling)
        silent = self._watchdog.idle_seconds()
        activities = self._sampler.activities() if silent >= timeout else []
        verdict = judge(silent, timeout, activities)
        if verdict is Verdict.MOVING:
            self._slow_said_at = None
            return False
        if verdict is Verdict.SLOW:
            if self._slow_said_at is None or silent - self._slow_said_at >= timeout:
                self._slow_said_at = silent
                self._notice(self._slow(silent, activities, timeout).text())
            return False
        self._notice(f"no rank wrote a line for {silent:.0f} s and every host's work is idle "
                     f"({'; '.join(f'{item.host}: {item.detail}' for item in activities) or 'no process left'}): "
                     "reading every rank's stack")
        self.hang = diagnose(self._run_id, self._run_dir, self._logs_dir, silent, self._mask)
        return True

    def _slow(self, silent: float, activities: list[HostActivity], timeout: float) -> SlowReport:
        """One py-spy dump of the busiest rank (never faulthandler's, which would end it); where py-spy is refused,
        its error instead, so that the missing place is explained."""
        where = None
        rank, py_spy = self._sampler.busiest_rank(), find_py_spy()
        if rank is not None and py_spy is not None:
            text, refusal = py_spy_read(py_spy, rank.pid)
            if text:
                where = f"{rank.name} is at {RankStack(rank, text, 'py-spy').where}"
            elif refusal:
                where = f"where {rank.name} is, py-spy could not read ({refusal})"
        last = self._watchdog.last_step
        return SlowReport(silent, tuple(busy_hosts(activities)), where,
                          (last[0], self._watchdog.since(last[1])) if last else None, timeout)


def diagnose(run_id: str, run_dir: Path, logs_dir: Path, idle_seconds: float,
             mask: Callable[[str], str]) -> HangReport:
    """Dumps every rank's stack (py-spy where it is installed and may attach) and writes the report to
    `<run_dir>/stacks.txt`, each stack masked as the run's log lines are: py-spy's first line is the rank's command
    line, which holds its hyperparameters."""
    py_spy = find_py_spy()
    stacks = with_data_workers(dump_stacks(rank_processes(run_id), logs_dir, py_spy), py_spy)
    report = HangReport(idle_seconds, tuple(
        replace(stack, text=mask(stack.text), workers=tuple(replace(worker, text=mask(worker.text))
                                                            for worker in stack.workers)) for stack in stacks))
    (run_dir / STACKS_FILE).write_text(report.text())
    return report
