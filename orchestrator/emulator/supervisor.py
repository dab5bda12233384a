"""Runs a job's processes: streams their output, stops everything when one fails, forwards interruptions.

Every process of a run carries SMTRAIN_RUN_ID in its environment. Open MPI's daemons start their own sessions
and torchrun its own workers, so process groups do not reach everything; the tag does: on Linux the supervisor
finds the run's processes through /proc, signals them, and checks that none is left when it returns.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from orchestrator.emulator.launch import RUN_ID_VARIABLE, Launch

# Launchers and shells wait for their children; an interruption goes to the training processes, which
# checkpoint and exit, and the launchers then finish on their own.
_LAUNCHER_NAMES = {"sh", "dash", "bash", "mpirun", "prterun", "prted", "orterun", "orted"}
FAILURE_GRACE_SECONDS = 10.0
POLL_SECONDS = 0.1


@dataclass(frozen=True)
class Exit:
    host: str
    returncode: int


@dataclass
class Outcome:
    """How one attempt ended."""

    status: str
    """`completed`, `failed`, `interrupted` (SIGTERM or Ctrl-C, or a simulated spot interruption), `timeout` or
    `hung` (the `hung` check said so)."""
    exits: list[Exit]
    first_failure: Exit | None = None
    tails: dict[str, list[str]] = field(default_factory=dict)
    """The last lines each host printed, for failure reasons."""
    leftover: list[int] = field(default_factory=list)
    """Processes that survived SIGKILL (should always be empty)."""


class Supervisor:
    """Starts the launches of one attempt and sees them to their end."""

    def __init__(self, launches: list[Launch], run_id: str, logs_dir: Path,
                 on_line: Callable[[str, str], None], tail_lines: int = 200) -> None:
        self._launches = launches
        self._run_id = run_id
        self._logs_dir = logs_dir
        self._on_line = on_line
        self._tail_lines = tail_lines
        self._interrupt = threading.Event()
        self._tails: dict[str, list[str]] = {launch.host: [] for launch in launches}
        self._lock = threading.Lock()

    def interrupt(self) -> None:
        """Called from a signal handler (Ctrl-C, SIGTERM) or the spot-interruption timer."""
        self._interrupt.set()

    def run(self, timeout_seconds: float, interrupt_after: float | None, stop_grace_seconds: float,
            hung: Callable[[], bool] | None = None) -> Outcome:
        """Starts the launches and waits for their end.

        Args:
            hung: asked at every poll; True stops the run at once with SIGKILL (ranks blocked in a collective
                cannot act on SIGTERM), after it has taken what it needs from the processes (their stacks).
        """
        processes = [self._start(launch) for launch in self._launches]
        readers = [threading.Thread(target=self._pump, args=(launch.host, process.stdout), daemon=True)
                   for launch, process in zip(self._launches, processes, strict=True)]
        for reader in readers:
            reader.start()
        started = time.monotonic()
        status, first_failure = "completed", None
        while True:
            codes = [process.poll() for process in processes]
            failed = [Exit(launch.host, code) for launch, code in zip(self._launches, codes, strict=True) if code not in (None, 0)]
            elapsed = time.monotonic() - started
            if failed:
                status, first_failure = "failed", failed[0]
                self._stop(processes, signal.SIGTERM, FAILURE_GRACE_SECONDS, workers_only=False)
                break
            if all(code == 0 for code in codes):
                break
            if self._interrupt.is_set() or (interrupt_after is not None and elapsed >= interrupt_after):
                status = "interrupted"
                self._stop(processes, signal.SIGTERM, stop_grace_seconds, workers_only=True)
                break
            if elapsed >= timeout_seconds:
                status = "timeout"
                self._stop(processes, signal.SIGTERM, stop_grace_seconds, workers_only=True)
                break
            if hung is not None and hung():
                status = "hung"
                self._stop(processes, signal.SIGKILL, FAILURE_GRACE_SECONDS, workers_only=False)
                break
            time.sleep(POLL_SECONDS)
        for reader in readers:
            reader.join(timeout=5)
        exits = [Exit(launch.host, process.wait()) for launch, process in zip(self._launches, processes, strict=True)]
        return Outcome(status=status, exits=exits, first_failure=first_failure, tails=dict(self._tails),
                       leftover=self.run_processes())

    def _start(self, launch: Launch) -> subprocess.Popen[bytes]:
        with (self._logs_dir / f"{launch.host}.log").open("a", encoding="utf-8") as log:
            log.write(f"Invoking script with the following command:\n\n{launch.command}\n\n")
        return subprocess.Popen(["/bin/sh", "-c", launch.command], cwd=launch.cwd, env=launch.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def _pump(self, host: str, stream: IO[bytes] | None) -> None:
        """Copies a host's output to its log file and the console callback, line by line."""
        assert stream is not None
        with (self._logs_dir / f"{host}.log").open("a", encoding="utf-8") as log:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                log.write(line + "\n")
                log.flush()
                with self._lock:
                    tail = self._tails[host]
                    tail.append(line)
                    del tail[:-self._tail_lines]
                self._on_line(host, line)

    def run_processes(self) -> list[int]:
        """Every live process tagged with this run's id (Linux /proc; elsewhere, an empty list)."""
        marker = f"{RUN_ID_VARIABLE}={self._run_id}".encode() + b"\0"
        found = []
        try:
            entries = os.listdir("/proc")
        except OSError:
            return []
        for entry in entries:
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if marker in handle.read():
                        found.append(int(entry))
            except OSError:
                continue
        return found

    def _signal(self, processes: list[subprocess.Popen[bytes]], sig: int, workers_only: bool) -> None:
        for pid in self.run_processes():
            if workers_only and _process_name(pid) in _LAUNCHER_NAMES:
                continue
            _send(pid, sig)
        if not workers_only:
            for process in processes:
                _send_group(process.pid, sig)

    def _stop(self, processes: list[subprocess.Popen[bytes]], sig: int, grace_seconds: float,
              workers_only: bool) -> None:
        """Signals the run, waits up to `grace_seconds` for it to end, then kills what is left."""
        self._signal(processes, sig, workers_only)
        deadline = time.monotonic() + grace_seconds
        while time.monotonic() < deadline:
            if all(process.poll() is not None for process in processes) and not self.run_processes():
                return
            time.sleep(POLL_SECONDS)
        for process in processes:
            _send_group(process.pid, signal.SIGKILL)
        for pid in self.run_processes():
            _send(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while self.run_processes() and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)


def _process_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _send(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _send_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
