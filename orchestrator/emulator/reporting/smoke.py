"""`smtrain local --smoke SECONDS`: the real-sized job for a bounded time, then stopped as StopTrainingJob stops it.

The verdict needs to know that every rank the launchers were asked for really started, which their output cannot
say (most scripts print on rank 0 only). `RankCensus` looks at the run's process tree while it runs, as `ps`
would: a rank has started once a process of its host runs it, that is, for torchrun a worker with its `RANK`, for
mpirun a process with its `OMPI_COMM_WORLD_RANK` (set by the rank's own host daemon), for the toolkit's one
process per host a process of that host running the entry point. A launcher that exited 0 ran all its ranks, and a
rank the run's output shows (its own prefixed line, its error, its exit as its launcher reported or the MPI hooks
recorded it) ran too: a script that fails at import ends before a process list is read.

The step reached is the last one this run showed: a checkpoint restored from the prefix at the start (a rerun in
the same run directory) is no step the ranks reached.

What ends after the deadline ends as a stopped job's does (SIGTERM, exits, SageMaker's status Stopped), with one
exception: a training process killed by a SIGKILL that smtrain did not send during the grace period (the kernel's
out-of-memory killer) kept no checkpoint, so the smoke fails. That is seen only where the launcher is the training
process (one process per host); torchrun and mpirun kill their own workers that outlast their graces, so a SIGKILL
under them says nothing.

Once a smoke that passed is stopped, the console stops showing the job's lines (quiet_stop.py); a failing smoke's
lines are what says why, and stay.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

from orchestrator.contract import OMPI_VARS, TORCHRUN_VARS
from orchestrator.emulator.instances.hostname import HOSTNAME_VARIABLE
from orchestrator.emulator.launching.launch import HostProcess
from orchestrator.emulator.launching.toolkit_launchers import RunnerType
from orchestrator.emulator.preparing.layout import RunLayout, checkpoint_dirs
from orchestrator.emulator.supervising.supervisor import Outcome
from orchestrator.observing.metric_series import STEP_FORMATS

_RANK, _OMPI_RANK = TORCHRUN_VARS[0], OMPI_VARS[0]


@dataclass(frozen=True)
class SmokeReport:
    """How a smoke run went, in result.json and on the console."""

    deadline_seconds: float
    ranks_expected: int
    ranks_started: int
    missing: list[str]
    """`rank 9 (algo-2)` for each rank no process was seen for."""
    steps_reached: int | None
    """The last step any rank reached: the highest of a progress line's `step=N/M`, a `step` in a host's
    metrics.jsonl (the shared entrypoints record every checkpoint there) and a checkpoint file's step number
    (`ckpt-3.pt`); None when none of them shows one."""
    last_loss: float | None
    killed_after_deadline: list[str]
    """Hosts whose training process the out-of-memory killer ended during the grace period."""
    step_source: str | None = None
    """Where steps_reached was read: "progress line", "metrics.jsonl" or "checkpoint"."""
    steps_wanted: int | None = None
    """`--smoke-steps`: the smoke ends once every rank started and a progress line shows this step, and fails
    when the deadline comes first."""

    def failure(self) -> str | None:
        """Why the smoke failed although no rank failed before the deadline, or None."""
        reasons = []
        if self.missing:
            reasons.append(f"smoke: {', '.join(self.missing)} never started within {self.deadline_seconds:g} s "
                           f"({self.ranks_started} of {self.ranks_expected} ranks started)")
        if self.killed_after_deadline:
            reasons.append(f"smoke: {', '.join(self.killed_after_deadline)}: killed by SIGKILL after the deadline, "
                           "during StopTrainingJob's grace period, and not by smtrain: OutOfMemory (this machine's "
                           "memory also holds what the instance keeps in GPU memory); no checkpoint was saved")
        if self.steps_wanted is not None and (self.steps_reached or 0) < self.steps_wanted:
            reached = ("no line showed a step; smtrain reads " + ", ".join(STEP_FORMATS) if self.steps_reached is None
                       else f"step {self.steps_reached} reached")
            reasons.append(f"smoke: step {self.steps_wanted} (--smoke-steps) not reached within "
                           f"{self.deadline_seconds:g} s ({reached})")
        return "\n".join(reasons) or None

    @classmethod
    def never_started(cls, deadline_seconds: float, world_size: int, group_hosts: list[str],
                      steps_wanted: int | None) -> SmokeReport:
        """A run that failed before any launcher started (requirements.txt did not install): every rank is
        missing, so a CI step reading the `smoke` key sees 0 of N started rather than no report at all."""
        per_host = max(1, world_size // max(1, len(group_hosts)))
        missing = [f"rank {rank} ({group_hosts[min(rank // per_host, len(group_hosts) - 1)]})"
                   for rank in range(world_size)] if group_hosts else []
        return cls(deadline_seconds=deadline_seconds, ranks_expected=world_size, ranks_started=0, missing=missing,
                   steps_reached=None, last_loss=None, killed_after_deadline=[], steps_wanted=steps_wanted)


class RankCensus:
    """Which of the ranks a run's launchers start have been seen running."""

    def __init__(self, processes: list[HostProcess], group_hosts: list[str], entry_point: str) -> None:
        self._commands = [item for item in processes if item.toolkit is not None]
        first = self._commands[0].toolkit if self._commands else None
        self._runner = first.runner if first else RunnerType.process
        self._entry_point = entry_point
        self._module = entry_point.removesuffix(".py")
        self._expected: dict[int, str] = {}
        if self._runner is RunnerType.process:
            hosts = [item.host.name for item in processes]
            self._expected = {hosts.index(item.host.name): item.host.name for item in self._commands}
        elif first is not None:
            per_host = first.processes_per_host
            count = (_mpi_process_count(first.argv) if self._runner is not RunnerType.torch_distributed
                     else per_host * len(self._commands))
            self._expected = {rank: group_hosts[min(rank // per_host, len(group_hosts) - 1)] for rank in range(count)}
        self._seen: set[int] = set()

    @property
    def expected(self) -> int:
        return len(self._expected)

    @property
    def started(self) -> int:
        return len(self._seen & self._expected.keys())

    def observe(self, processes: Iterable[psutil.Process]) -> None:
        """Counts the ranks among `processes` (the run's live process tree)."""
        for process in processes:
            rank = self._rank_of(process)
            if rank is not None:
                self._seen.add(rank)

    def launcher_succeeded(self, host: str) -> None:
        """A launcher that exited 0 ran all of its ranks, however briefly each lived."""
        if self._runner in (RunnerType.mpi, RunnerType.smdataparallel):
            self._seen.update(self._expected)
        else:
            self._seen.update(rank for rank, where in self._expected.items() if where == host)

    def heard_from(self, ranks: Iterable[int]) -> None:
        """Counts the ranks the run's output shows ran (`root_cause.ranks_heard_from`), however briefly each lived."""
        self._seen.update(ranks)

    def missing(self) -> list[str]:
        return [f"rank {rank} ({host})" for rank, host in sorted(self._expected.items()) if rank not in self._seen]

    def _rank_of(self, process: psutil.Process) -> int | None:
        try:
            env = process.environ()
            host = env.get(HOSTNAME_VARIABLE)
            if not host:
                return None
            if self._runner is RunnerType.torch_distributed:
                return _number(env.get(_RANK))
            if self._runner is not RunnerType.process:
                return _number(env.get(_OMPI_RANK))
            command = " ".join(process.cmdline())
        except (psutil.Error, OSError):
            return None
        if self._entry_point not in command and f"-m {self._module}" not in command:
            return None
        return next((rank for rank, name in self._expected.items() if name == host), None)


def passing(census: RankCensus, steps_reached: int, steps_wanted: int | None) -> bool:
    """Whether a smoke has passed so far: every rank started and, under `--smoke-steps`, a line showed the step."""
    return not census.missing() and (steps_wanted is None or steps_reached >= steps_wanted)


_CHECKPOINT_STEP = re.compile(r"^(?:ckpt|checkpoint|step)[-_]?0*(\d+)(?:\.\w+)?$", re.IGNORECASE)


def checkpoint_entries(layout: RunLayout) -> frozenset[tuple[Path, int | None]]:
    """Each entry of the hosts' checkpoint folders with its modification time (ns): read before the ranks start,
    what the restore put there."""
    found = set()
    for folder in _checkpoint_folders(layout):
        with contextlib.suppress(OSError):
            found.update((entry, _modified(entry)) for entry in folder.iterdir())
    return frozenset(found)


def last_step(layout: RunLayout, progress_steps: Iterable[int],
              restored: frozenset[tuple[Path, int | None]]) -> tuple[int | None, str | None]:
    """The last step any rank reached and where it was read. Progress lines come every log_every steps (50 by
    default), so a short smoke can end before the first: the metrics each host wrote and the checkpoints it saved
    (on SIGTERM too) say how far it got; a checkpoint still as it was `restored` (`checkpoint_entries`) was saved
    by an earlier run."""
    found: list[tuple[int, str]] = [(step, "progress line") for step in progress_steps]
    for host in layout.hosts:
        metrics = host.output_dir / "data" / "metrics.jsonl"
        with contextlib.suppress(OSError):
            for line in metrics.read_text(errors="replace").splitlines():
                with contextlib.suppress(ValueError, AttributeError):
                    step = json.loads(line).get("step")
                    if isinstance(step, int) and not isinstance(step, bool):
                        found.append((step, "metrics.jsonl"))
    for folder in _checkpoint_folders(layout):
        with contextlib.suppress(OSError):
            for entry in folder.iterdir():
                match = _CHECKPOINT_STEP.search(entry.name)
                if match and (entry, _modified(entry)) not in restored:
                    found.append((int(match.group(1)), "checkpoint"))
    if not found:
        return None, None
    step, source = max(found, key=lambda item: item[0])
    return step, source


def _checkpoint_folders(layout: RunLayout) -> set[Path]:
    return {*checkpoint_dirs(layout), *(host.checkpoint_dir for host in layout.hosts)}


def _modified(entry: Path) -> int | None:
    """An entry's modification time (ns); None once it is gone."""
    try:
        return entry.lstat().st_mtime_ns
    except OSError:
        return None


def killed_in_grace(outcome: Outcome, processes: list[HostProcess]) -> list[str]:
    """The hosts whose training process, its own launcher, died by a SIGKILL smtrain did not send."""
    if outcome.sent_sigkill:
        return []
    own = {item.host.name for item in processes if item.toolkit and item.toolkit.runner is RunnerType.process}
    return [item.host for item in outcome.exits if item.host in own and item.returncode in (-9, 128 + 9)]


def _number(value: str | None) -> int | None:
    with contextlib.suppress(TypeError, ValueError):
        return int(value)  # type: ignore[arg-type]
    return None


def _mpi_process_count(argv: list[str]) -> int:
    """mpirun's `-np N`."""
    return int(argv[argv.index("-np") + 1])
