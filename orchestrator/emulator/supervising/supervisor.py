"""Runs a job's processes: streams their output, stops everything when one fails, forwards interruptions, and
leaves no process behind.

smtrain is the reaper of everything a run starts. On Linux it becomes a child subreaper
(`prctl(PR_SET_CHILD_SUBREAPER)`) before launching, so a process whose parent exits (an Open MPI daemon, a
torchrun worker, a script's `setsid` + `env -i` helper) is re-parented to smtrain instead of init, and stays in
smtrain's process tree. Every path (completion, failure, Ctrl-C, SIGTERM, SIGHUP, timeout, hang) ends the same
way: whatever of that tree still runs gets SIGTERM, a bounded grace, then SIGKILL, and is waited for.

A user's interruption gives the training processes at most `INTERRUPT_GRACE_SECONDS` to checkpoint (SageMaker
gives 120 s, but here someone is waiting at the terminal); after a second the console says which processes it is
waiting for, and a second Ctrl-C kills them at once.

Output is read in chunks, so memory stays bounded whatever a process prints: each line goes, with the spec's
secret values masked (a script that prints its arguments prints them), to the host's log file (complete), the
console and the failure tails, a line longer than `MAX_LINE_BYTES` in pieces (said once per host); a private
key printed over several lines goes to none of them, but one line saying it was hidden (redact.PrivateKeyLines),
and a secret an MPI rank wrote across Open MPI 4's pieces is masked in the log file as well (split_secrets.py).
A log that cannot be written (a full disk) fails the run with that reason; the output is still drained, so no
process blocks on a full pipe.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import psutil

from orchestrator.contract import OMPI_VARS, SM_HOSTS, TORCHRUN_VARS
from orchestrator.emulator.instances.hostname import HOSTNAME_VARIABLE
from orchestrator.emulator.launching.launch import Launch
from orchestrator.emulator.supervising.launchers import LAUNCHER_NAMES, MPI_JOB_ROLES, launcher_role
from orchestrator.emulator.supervising.split_secrets import SplitSecrets
from orchestrator.observing.log_lines import character_boundary
from orchestrator.observing.plain_text import plain
from orchestrator.observing.signal_names import signal_name
from orchestrator.redact import PrivateKeyLines
from orchestrator.wording import counted

# Launchers and shells wait for their children; an interruption goes to the training processes, which
# checkpoint and exit, and the launchers then finish on their own. (torchrun's agent, sent SIGTERM, would stop its
# workers itself and SIGKILL those still running 30 s later, mid-step, before they could checkpoint.)
FAILURE_GRACE_SECONDS = 10.0
INTERRUPT_GRACE_SECONDS = 10.0
STRAY_GRACE_SECONDS = 2.0
"""For processes still running when every launcher has exited (SageMaker ends the container at that point)."""
ANNOUNCE_AFTER_SECONDS = 1.0
KILL_WAIT_SECONDS = 5.0
POLL_SECONDS = 0.1
WATCH_SECONDS = 1.0
"""How often the run's process tree is read for the stall check and the smoke census: as often as the stall check
samples CPU times, and a rank's start is seen within a second (each read costs CPU that the job's ranks share)."""
MAX_LINE_BYTES = 64 * 1024
TAIL_LINE_CHARACTERS = 4096
"""A failure reason shows at most 1024 characters: the tails keep no more of each line than that needs."""
_READ_BYTES = 64 * 1024
FAILURE_TAIL_LINES = 2000
"""Lines of each host's output kept for the failure reason's root cause."""
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 1, 36, 37
STOP_WITH_PARENT = "SMTRAIN_STOP_WITH_PARENT"
"""Set by a supervisor of `smtrain local` processes (`tune local`) to its pid: see `stop_with_parent`."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """When an attempt is stopped before its processes end."""

    timeout_seconds: float
    """max_run_seconds left: SIGTERM, then status `timeout`."""
    interrupt_after: float | None
    """A simulated spot interruption after this many seconds (status `interrupted`)."""
    stop_grace_seconds: float
    """How long the processes may take to exit after SIGTERM at max_run_seconds, a simulated spot interruption
    or `stop_after`; a user's interruption gets at most INTERRUPT_GRACE_SECONDS."""
    stop_after: float | None = None
    """Stop the job after this many seconds as StopTrainingJob does (status `stopped`)."""
    stop_when: Callable[[], bool] | None = None
    """Stop it so as soon as this says so (asked every WATCH_SECONDS, after `watch`): `--smoke-steps`."""
    interrupt_when: Callable[[], bool] | None = None
    """A simulated spot interruption as soon as this says so (asked as often as the processes are polled):
    `--simulate-spot-interruption-at-step`."""
    stopping: Callable[[str], None] | None = None
    """Told once, with the status the stop gives, when smtrain stops the job itself and its launchers will report the
    stop: `stopped` (`stop_after`, `stop_when`, `stop()`; after `watch`), `interrupted` (a user's signal, not a
    simulated spot interruption) or `timeout`, before any process gets the signal: the console stops showing the
    job's lines there (reporting/quiet_stop.py)."""


@dataclass(frozen=True)
class Exit:
    host: str
    returncode: int


@dataclass
class Outcome:
    """How one attempt ended."""

    status: str
    """`completed`, `failed`, `interrupted` (SIGTERM, SIGHUP or Ctrl-C, or a simulated spot interruption),
    `timeout`, `stopped` (`stop_after` or `stop()`, as StopTrainingJob) or `hung` (the `hung` check said so)."""
    exits: list[Exit]
    first_failure: Exit | None = None
    tails: dict[str, list[str]] = field(default_factory=dict)
    """The last lines each host printed, for failure reasons."""
    leftover: list[int] = field(default_factory=list)
    """Processes that survived SIGKILL (should always be empty)."""
    sent_sigkill: bool = False
    """smtrain killed some process of the run (after a grace period, or what a launcher left behind): a SIGKILL
    it did not send came from elsewhere, such as the kernel's out-of-memory killer."""
    log_failure: str | None = None
    """Why a host's log could not be written (status `failed`): the run was stopped for it."""
    interrupted_by: str | None = None
    """The signal that interrupted the run (SIGINT, SIGTERM, SIGHUP); None where none came."""


def _shell_report(sig: int) -> str:
    """What the /bin/sh each host's command runs under (dash, which waits for its script rather than exec'ing it)
    prints when the script dies by `sig`: `Terminated`, `Killed`. For smtrain's own stop it read in a CI log as a
    failure of a smoke that passed; a signal smtrain did not send (a script that kills itself, the out-of-memory
    killer) is still shown."""
    return str(signal.strsignal(sig))


def _tell_stopping(limits: Limits, status: str) -> None:
    if limits.stopping is not None:
        limits.stopping(status)


class _HostLog:
    """A host's log file, written line by line; the first write that fails (a full disk) is reported once and
    the rest dropped, so the reader keeps draining the process's output."""

    def __init__(self, path: Path, on_failure: Callable[[Path, OSError], None]) -> None:
        self._path = path
        self._on_failure = on_failure
        self._handle: IO[str] | None = None

    def __enter__(self) -> _HostLog:
        try:
            self._handle = self._path.open("a", encoding="utf-8")
        except OSError as error:
            self._failed(error)
        return self

    def write(self, text: str) -> None:
        if self._handle is None:
            return
        try:
            self._handle.write(text)
            self._handle.flush()
        except OSError as error:
            self._failed(error)

    def _failed(self, error: OSError) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.close()
        self._handle = None
        self._on_failure(self._path, error)

    def __exit__(self, *exc_info: object) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.close()


class Supervisor:
    """Starts the launches of one attempt and sees them, and everything they start, to their end."""

    def __init__(self, launches: list[Launch], run_id: str, logs_dir: Path,
                 on_line: Callable[[str, str], None], on_notice: Callable[[str], None] | None = None,
                 mask: Callable[[str], str] = str) -> None:
        """`on_line`: each line of output, its progress bar states (carriage returns) on lines of one text, but
        a host shell's report of the signal smtrain's own stop sent (`_shell_report`), which goes to the log only.
        `mask`: the spec's secret values out of a line, before it is written or handed on."""
        self._launches = launches
        self._run_id = run_id
        self._logs_dir = logs_dir
        self._on_line = on_line
        self._on_notice = on_notice or _log.warning
        self._mask = mask
        self._log_failure: str | None = None
        self._interrupt = threading.Event()
        self._stop_requested = threading.Event()
        self._kill_now = threading.Event()
        self._finished = threading.Event()
        self._tails: dict[str, list[str]] = {launch.host: [] for launch in launches}
        self._lock = threading.Lock()
        self._sent_sigkill = False
        self._interrupted_by: str | None = None
        self._own_stop_reports: set[str] = set()

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    @property
    def interrupted_by(self) -> str | None:
        """The signal that interrupted the run (SIGINT, SIGTERM, SIGHUP); None until one came."""
        return self._interrupted_by

    def interrupt(self, signum: int = signal.SIGINT) -> None:
        """Called from a signal handler with the signal that came (Ctrl-C, SIGTERM, SIGHUP), which the result
        names: the first call stops the run gracefully, the next one kills what is left at once."""
        if self._interrupt.is_set():
            self._kill_now.set()
        else:
            self._interrupted_by = signal_name(signum)
        self._interrupt.set()

    def stop(self) -> None:
        """StopTrainingJob (`smtrain stop RUN_DIR`, `Job.stop()`): SIGTERM to every training process, the stop
        grace to checkpoint, then status `stopped`. Safe from any thread."""
        self._stop_requested.set()

    def run(self, limits: Limits, hung: Callable[[list[psutil.Process]], bool] | None = None,
            watch: Callable[[list[psutil.Process]], None] | None = None) -> Outcome:
        """Starts the launches and waits for their end, and for the end of every process they started.

        Args:
            hung: shown the run's live processes every WATCH_SECONDS (after `watch`); True stops the run at once
                with SIGKILL (ranks blocked in a collective cannot act on SIGTERM), after it has taken what it
                needs from the processes (their stacks).
            watch: shown the run's live processes every WATCH_SECONDS, and once more right before a stop.
        """
        tree = _ProcessTree()
        try:
            return self._run(tree, limits, hung, watch)
        except BaseException:  # a notebook's KeyboardInterrupt, or a bug: still, nothing outlives the run
            self._kill(tree, tree.alive())
            raise
        finally:
            tree.close()
            self._finished.set()

    def _run(self, tree: _ProcessTree, limits: Limits, hung: Callable[[list[psutil.Process]], bool] | None,
             watch: Callable[[list[psutil.Process]], None] | None) -> Outcome:
        timeout_seconds, interrupt_after, stop_grace_seconds, stop_after = (
            limits.timeout_seconds, limits.interrupt_after, limits.stop_grace_seconds, limits.stop_after)
        processes = [self._start(launch) for launch in self._launches]
        tree.own(processes)
        readers = [threading.Thread(target=self._pump, args=(launch.host, process.stdout), daemon=True)
                   for launch, process in zip(self._launches, processes, strict=True)]
        for reader in readers:
            reader.start()
        started = time.monotonic()
        status, first_failure = "completed", None
        watched_at = started
        while True:
            alive: list[psutil.Process] | None = None
            if (watch is not None or hung is not None) and time.monotonic() - watched_at >= WATCH_SECONDS:
                watched_at = time.monotonic()
                alive = tree.alive()
                if watch is not None:
                    watch(alive)
            codes = [process.poll() for process in processes]
            failed = [Exit(launch.host, code) for launch, code in zip(self._launches, codes, strict=True)
                      if code not in (None, 0)]
            elapsed = time.monotonic() - started
            if self._log_failure is not None:
                status = "failed"
                self._stop(tree, signal.SIGTERM, FAILURE_GRACE_SECONDS, workers_only=False,
                           why="a log could not be written")
                break
            if failed:
                status, first_failure = "failed", failed[0]
                self._stop(tree, signal.SIGTERM, FAILURE_GRACE_SECONDS, workers_only=False,
                           why=f"{failed[0].host} failed")
                break
            if all(code == 0 for code in codes):
                if tree.alive():
                    self._stop(tree, signal.SIGTERM, STRAY_GRACE_SECONDS, workers_only=False,
                               why="the job ended with processes still running")
                break
            if self._interrupt.is_set():
                status = "interrupted"
                _tell_stopping(limits, status)
                self._stop(tree, signal.SIGTERM, min(stop_grace_seconds, INTERRUPT_GRACE_SECONDS),
                           workers_only=True, why=f"interrupted ({self._interrupted_by})",
                           hint="; Ctrl-C again kills them now")
                break
            if (interrupt_after is not None and elapsed >= interrupt_after) or (
                    limits.interrupt_when is not None and limits.interrupt_when()):
                status = "interrupted"
                self._stop(tree, signal.SIGTERM, stop_grace_seconds, workers_only=True,
                           why="simulated spot interruption")
                break
            if self._stop_requested.is_set() or (
                    stop_after is not None and elapsed >= stop_after and elapsed < timeout_seconds) or (
                    limits.stop_when is not None and limits.stop_when()):
                if watch is not None:
                    watch(tree.alive())
                status = "stopped"
                _tell_stopping(limits, status)
                self._stop(tree, signal.SIGTERM, stop_grace_seconds, workers_only=True, why="StopTrainingJob")
                break
            if elapsed >= timeout_seconds:
                status = "timeout"
                _tell_stopping(limits, status)
                self._stop(tree, signal.SIGTERM, stop_grace_seconds, workers_only=True, why="max_run_seconds")
                break
            if hung is not None and alive is not None and hung(alive):
                status = "hung"
                self._stop(tree, signal.SIGKILL, FAILURE_GRACE_SECONDS, workers_only=False, why="hung")
                break
            time.sleep(POLL_SECONDS)
        self._kill_all(tree, tree.alive())  # whatever a launcher left behind while it exited
        for launch, reader in zip(self._launches, readers, strict=True):
            # Every writer of the pipe is gone now, so the reader is at its end of file unless a process outside
            # this tree (another user's, say) holds the pipe.
            reader.join(timeout=30)
            if reader.is_alive():
                self._notice(f"{launch.host}'s output is still open after its processes ended: its log may be "
                             "incomplete")
        exits = [Exit(launch.host, process.wait()) for launch, process in zip(self._launches, processes, strict=True)]
        if self._log_failure is not None and status == "completed":
            status = "failed"  # the last lines could not be written: the log is not the job's whole output
        tree.reap()
        return Outcome(status=status, exits=exits, first_failure=first_failure, tails=dict(self._tails),
                       leftover=[process.pid for process in tree.alive()], sent_sigkill=self._sent_sigkill,
                       log_failure=self._log_failure, interrupted_by=self._interrupted_by)

    def _start(self, launch: Launch) -> subprocess.Popen[bytes]:
        with _HostLog(self._logs_dir / f"{launch.host}.log", self._log_failed) as log:
            log.write(f"Invoking script with the following command:\n\n{launch.shown}\n\n")
        return subprocess.Popen([*launch.enter, "/bin/sh", "-c", launch.command], cwd=launch.cwd, env=launch.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def _pump(self, host: str, stream: IO[bytes] | None) -> None:
        """Writes a host's output to its log file line by line, masked, and hands each line on; a line longer
        than MAX_LINE_BYTES goes in pieces, so memory stays bounded whatever the process prints. A private key
        printed over several lines reaches neither, but one line saying it was hidden (`PrivateKeyLines`). A log
        line holding a piece of an MPI rank's unended line waits for it, at most `split_secrets.HOLD_SECONDS`, so
        that a secret the rank wrote across pieces is masked in the file too (`SplitSecrets`)."""
        assert stream is not None
        pending = b""
        split_said = False
        keys = PrivateKeyLines(self._mask)
        held = SplitSecrets(self._mask)
        with _HostLog(self._logs_dir / f"{host}.log", self._log_failed) as log:
            while True:
                if not _readable(stream, held.wait(time.monotonic())):
                    log.write(held.due(time.monotonic()))
                    continue
                chunk = stream.read1(_READ_BYTES)  # type: ignore[attr-defined]
                if not chunk:
                    break
                pending += chunk
                start = 0
                while True:
                    newline = pending.find(b"\n", start, start + MAX_LINE_BYTES + 1)
                    if newline >= 0:
                        log.write(held.add(self._hand_on_lines(host, keys, pending[start:newline]), "\n",
                                           time.monotonic()))
                        start = newline + 1
                    elif len(pending) - start > MAX_LINE_BYTES:
                        end = character_boundary(pending, start + MAX_LINE_BYTES)
                        if not split_said:
                            split_said = True
                            self._notice(f"{host} printed a line longer than {MAX_LINE_BYTES // 1024} KiB: it is "
                                         f"shown in pieces; {self._logs_dir / (host + '.log')} has it whole")
                        log.write(held.add(self._hand_on_lines(host, keys, pending[start:end]), "",
                                           time.monotonic()))
                        start = end
                    else:
                        break
                pending = pending[start:]
            if pending:
                log.write(held.add(self._hand_on_lines(host, keys, pending), "", time.monotonic()))
            for marker in keys.end():
                log.write(held.add(self._hand_on(host, [marker]), "\n", time.monotonic()))
            log.write(held.end())

    def _log_failed(self, path: Path, error: OSError) -> None:
        reason = "the disk is full (ENOSPC)" if error.errno == errno.ENOSPC else (error.strerror or str(error))
        self._log_failure = f"LogError: writing {path} failed: {reason}; the run was stopped"
        self._notice(self._log_failure)

    def _hand_on_lines(self, host: str, keys: PrivateKeyLines, raw: bytes) -> list[str]:
        """Hands on one line of output as plain text, masked: a progress bar's carriage returns are line breaks
        there, and its states go on together, as the one line SageMaker reads metrics from. Returns those lines,
        for the log."""
        shown = [line for line in map(keys.line, _text(raw).split("\n")) if line is not None]
        return self._hand_on(host, shown)

    def _hand_on(self, host: str, lines: list[str]) -> list[str]:
        """Hands the lines of one line of output to the failure tails and, together, to the console; returns
        them, for the log. No lines (those of a private key being hidden) go nowhere."""
        if not lines:
            return []
        with self._lock:
            tail = self._tails[host]
            tail.extend(line[:TAIL_LINE_CHARACTERS] for line in lines)
            del tail[:-FAILURE_TAIL_LINES]
        if len(lines) == 1 and lines[0] in self._own_stop_reports:
            return lines
        try:
            self._on_line(host, "\n".join(lines))
        except OSError:  # the terminal is gone (SIGHUP): keep reading, the log file still gets every byte
            pass
        return lines

    def _notice(self, text: str) -> None:
        try:
            self._on_notice(text)
        except OSError:
            pass

    def _stop(self, tree: _ProcessTree, sig: int, grace_seconds: float, workers_only: bool, why: str,
              hint: str = "") -> None:
        """Signals the run's processes (only the training processes when `workers_only`: their launchers then
        exit on their own, except those with no process to wait for, such as a torchrun agent still waiting for
        its rendezvous; an Open MPI job's are always left to its mpirun), waits up to `grace_seconds` for all of
        them to end, says what it waits for after a second, then kills what is left. A second interruption cuts
        the wait short.

        With `workers_only`, a training process that starts during the wait gets the signal too: a stop can come
        while a host's launcher is still starting its script (the namespace's first process, which as a PID
        namespace's init drops a SIGTERM, forks it a moment later), and the script would otherwise train to its
        end. What a signalled training process starts for its own exit (an upload, a shell) is left alone, and so
        is a launcher once left to end with its workers: a torchrun agent signalled after its workers had ended,
        while it reported them, printed a `SignalException` traceback or died by the signal (`Terminated`)."""
        handled: set[tuple[int, str]] = set()
        if workers_only:  # smtrain's own stop, which the shell waiting for a host's script reports
            self._own_stop_reports.add(_shell_report(sig))
        self._signal(tree.alive(), sig, workers_only, handled)
        deadline = time.monotonic() + grace_seconds
        announce_at = time.monotonic() + ANNOUNCE_AFTER_SECONDS
        while time.monotonic() < deadline and not self._kill_now.is_set():
            tree.reap()
            waiting = tree.alive()
            if not waiting:
                return
            if workers_only:
                self._signal(waiting, sig, workers_only, handled, started_later=True)
            if announce_at is not None and time.monotonic() >= announce_at and sig != signal.SIGKILL and (
                    described := _described(waiting)):
                announce_at = None
                self._notice(f"{why}: waiting up to {grace_seconds:g} s for {described} to exit after "
                             f"{signal_name(sig)}{hint}")
            time.sleep(POLL_SECONDS)
        waiting = tree.alive()
        if waiting and sig != signal.SIGKILL and (described := _described(waiting)):
            # The cause first: after a list cut short (`..., and 2 more`) it read as what happens to those 2.
            cause = "on a second interruption" if self._kill_now.is_set() else f"after {grace_seconds:g} s"
            self._notice(f"{cause}: killing {described}")
        if workers_only and waiting:
            self._own_stop_reports.add(_shell_report(signal.SIGKILL))
        self._kill_all(tree, waiting)

    def _signal(self, processes: list[psutil.Process], sig: int, workers_only: bool,
                handled: set[tuple[int, str]], started_later: bool = False) -> None:
        """Sends `sig` to each of `processes` not `handled` yet (a process is known by its pid and name, so one
        that exec'd its script is new), skipping launchers that have started their children when `workers_only`
        (handled then too: never signalled later, once their workers are gone), and, of those `started_later`,
        the ones a signalled training process started."""
        for process in processes:
            key = (process.pid, _name(process))
            if key in handled:
                continue
            if workers_only and _ends_with_its_workers(process):
                handled.add(key)
                continue
            if started_later and _started_by_signalled_worker(process, handled):
                continue
            _send(process, sig)
            handled.add(key)
            self._sent_sigkill = self._sent_sigkill or sig == signal.SIGKILL

    def _kill_all(self, tree: _ProcessTree, processes: list[psutil.Process]) -> None:
        self._sent_sigkill = self._sent_sigkill or bool(processes)
        self._kill(tree, processes)

    @staticmethod
    def _kill(tree: _ProcessTree, processes: list[psutil.Process]) -> None:
        for process in processes:
            _send(process, signal.SIGKILL)
        deadline = time.monotonic() + KILL_WAIT_SECONDS
        while tree.alive() and time.monotonic() < deadline:
            tree.reap()
            time.sleep(POLL_SECONDS)
        tree.reap()  # the last to die: a notebook's kernel that Ctrl-C'd a run lives on, and would keep them as zombies


class _RunsHere:
    """The runs this process supervises at once (a notebook may start several) and the launchers each started: a
    child of this process that another run launched is never one of this run's, so that run's end or stop
    leaves it alone. The first run in notes whether this process was a child subreaper already; the last out
    puts that back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._launched: dict[int, set[int]] = {}  # by id of the tree: the pids of its launchers
        self._was_subreaper = False

    def enter(self, tree: object) -> None:
        with self._lock:
            if not self._launched:
                self._was_subreaper = _child_subreaper()
                _set_child_subreaper(True)
            self._launched[id(tree)] = set()

    def launched(self, tree: object, pids: Iterable[int]) -> None:
        with self._lock:
            self._launched[id(tree)].update(pids)

    def by_another(self, tree: object) -> set[int]:
        """The launchers of every other run in this process."""
        with self._lock:
            return {pid for key, pids in self._launched.items() if key != id(tree) for pid in pids}

    def leave(self, tree: object) -> None:
        with self._lock:
            self._launched.pop(id(tree), None)
            if not self._launched and not self._was_subreaper:
                _set_child_subreaper(False)


_RUNS_HERE = _RunsHere()


class _ProcessTree:
    """Every process a run started: the descendants of smtrain's process that it did not have before the run,
    with the orphans re-parented to it as a child subreaper; never those of another run in the same process."""

    def __init__(self) -> None:
        self._me = psutil.Process()
        self._before = {_identity(child) for child in self._me.children()}
        self._owned: dict[int, subprocess.Popen[bytes]] = {}
        _RUNS_HERE.enter(self)

    def own(self, processes: Iterable[subprocess.Popen[bytes]]) -> None:
        """Processes whose exit status their Popen reads: reaped through it, which keeps that status."""
        processes = list(processes)
        self._owned.update((process.pid, process) for process in processes)
        _RUNS_HERE.launched(self, (process.pid for process in processes))

    def alive(self) -> list[psutil.Process]:
        """The run's live processes: every descendant of smtrain's process under a child the run started,
        zombies left out. Read from the kernel's lists of each thread's children where it keeps them; else
        psutil reads the parent of every process on the machine (hundreds of files on a busy one), once here for
        the whole tree rather than once more for each host."""
        descendants = _descendants(self._me.pid)
        if descendants is None:
            try:
                descendants = self._me.children(recursive=True)
            except psutil.NoSuchProcess:
                return []
        parents: dict[int, int] = {}
        live: list[psutil.Process] = []
        for process in descendants:
            try:
                with process.oneshot():  # one read of /proc/<pid>/stat for both
                    parents[process.pid] = process.ppid()
                    if process.status() != psutil.STATUS_ZOMBIE:
                        live.append(process)
            except psutil.NoSuchProcess:
                continue
        others = _RUNS_HERE.by_another(self)
        started = {process.pid for process in descendants
                   if parents.get(process.pid) == self._me.pid and process.pid not in others
                   and _started_by_run(process, self._before)}
        return [process for process in live if _top_ancestor(process.pid, parents, self._me.pid) in started]

    def reap(self) -> None:
        """Waits for the run's processes that have exited, orphans and launchers, so none stays a zombie of
        smtrain's."""
        for process in self._owned.values():
            process.poll()
        for child in self._new_children():
            if child.pid not in self._owned:
                try:
                    os.waitpid(child.pid, os.WNOHANG)
                except ChildProcessError:
                    continue

    def close(self) -> None:
        _RUNS_HERE.leave(self)

    def _new_children(self) -> list[psutil.Process]:
        others = _RUNS_HERE.by_another(self)
        return [child for child in self._me.children()
                if child.pid not in others and _started_by_run(child, self._before)]


_CHILDREN_LISTS = Path(f"/proc/{os.getpid()}/task/{threading.get_native_id()}/children").exists()
"""Whether the kernel lists each thread's children (/proc/PID/task/TID/children, CONFIG_PROC_CHILDREN)."""


def _descendants(root: int) -> list[psutil.Process] | None:
    """Every descendant of `root`, from the kernel's lists of each thread's children: a read per thread of the
    tree, not one per process of the machine; None where the kernel keeps no such lists or will not show one
    (then psutil reads the process table). A process forked or ended while the lists are read may be missed: the
    next look finds it, as with any reading of /proc."""
    if not _CHILDREN_LISTS:
        return None
    found: list[psutil.Process] = []
    pending = [root]
    while pending:
        pid = pending.pop()
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except (FileNotFoundError, ProcessLookupError):  # it has ended
            continue
        except OSError:
            return None
        for thread in threads:
            try:
                with open(f"/proc/{pid}/task/{thread}/children", "rb") as listing:
                    children = [int(child) for child in listing.read().split()]
            except (FileNotFoundError, ProcessLookupError):  # the thread has ended
                continue
            except OSError:
                return None
            for child in children:
                try:
                    found.append(psutil.Process(child))
                except psutil.Error:
                    continue
                pending.append(child)
    return found


def _started_by_run(child: psutil.Process, before: set[tuple[int, float]]) -> bool:
    try:
        return _identity(child) not in before
    except psutil.NoSuchProcess:
        return False


def _top_ancestor(pid: int, parents: dict[int, int], root: int) -> int | None:
    """The child of `root` that `pid` descends from (itself, for a child); None when the chain is broken (a
    parent that exited between the reads: the next look finds it, re-parented to smtrain, the subreaper)."""
    for _ in range(len(parents)):  # bounded: reads made at different moments cannot loop it
        if pid not in parents:
            return None
        if parents[pid] == root:
            return pid
        pid = parents[pid]
    return None


def _identity(process: psutil.Process) -> tuple[int, float]:
    return process.pid, process.create_time()


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]


def stop_with_parent() -> None:
    """In a `smtrain local` started by another supervisor (a trial of `tune local`, which names itself in
    STOP_WITH_PARENT): the kernel sends this process SIGTERM when that supervisor dies, even by SIGKILL, so the
    run stops as for any SIGTERM and nothing outlives the search."""
    parent = os.environ.pop(STOP_WITH_PARENT, "")
    prctl = _prctl()
    if not parent.isdigit() or prctl is None:
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != int(parent):  # it died before the request was made
        os.kill(os.getpid(), signal.SIGTERM)


def _child_subreaper() -> bool:
    prctl = _prctl()
    if prctl is None:
        return False
    flag = ctypes.c_int(0)
    return prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value != 0


def _set_child_subreaper(on: bool) -> None:
    """Where the kernel has no subreapers (not Linux), orphans go to init and only attached descendants are
    found: a documented limit of the emulator there."""
    prctl = _prctl()
    if prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        _log.warning("cannot become a child subreaper: %s", os.strerror(ctypes.get_errno()))


def is_launcher(process: psutil.Process) -> bool:
    """A shell, Open MPI's mpirun or daemon, or torchrun's agent: it waits for the processes it started."""
    return _launcher_role(process) is not None


def _launcher_role(process: psutil.Process) -> str | None:
    """What the launcher `process` is (`torchrun agent`, `namespace holder`, ...); None for a rank, or where its
    command line cannot be read."""
    name = _name(process)
    if name in LAUNCHER_NAMES:
        return launcher_role(name, ())
    try:
        return launcher_role(name, process.cmdline())
    except psutil.Error:
        return None


def _ends_with_its_workers(process: psutil.Process) -> bool:
    """A launcher that a stop of the training processes ends by itself: one waiting for its children, and any
    process of an Open MPI job (mpirun, its daemons, and the shells and namespace holders that start a daemon on
    its host), which mpirun ends itself once its ranks have ended. A daemon or its remote shell signalled first
    (its ranks gone, it has no children left) is a host lost to mpirun, which says so in the log: `PRTE has lost
    communication with a remote daemon`, `A daemon failed to report back`."""
    role = _launcher_role(process)
    if role is None:
        return False
    return role in MPI_JOB_ROLES or _has_children(process) or _started_by_mpirun(process)


def _started_by_mpirun(process: psutil.Process) -> bool:
    try:
        ancestors = process.parents()
    except psutil.Error:
        return False
    return any(launcher_role(_name(ancestor), ()) == "mpirun" for ancestor in ancestors)


def _started_by_signalled_worker(process: psutil.Process, signalled: set[tuple[int, str]]) -> bool:
    try:
        parent = process.parent()
    except psutil.Error:
        return False
    return parent is not None and (parent.pid, _name(parent)) in signalled and not is_launcher(parent)


def _has_children(process: psutil.Process) -> bool:
    try:
        return bool(process.children())
    except psutil.Error:
        return False


def _name(process: psutil.Process) -> str:
    try:
        return process.name()
    except psutil.Error:
        return ""


def _send(process: psutil.Process, sig: int) -> None:
    try:
        process.send_signal(sig)
    except psutil.Error:
        pass


def _readable(stream: IO[bytes], timeout: float | None) -> bool:
    """Whether `stream` has output (or has ended) within `timeout` seconds, None: however long it takes. Only
    `read1` reads it, which buffers nothing, so the pipe itself says what there is."""
    return timeout is None or bool(select.select([stream], [], [], timeout)[0])


def _text(raw: bytes) -> str:
    """A line of output as plain text (`plain_text.plain`), before it is masked: no terminal control of the job's
    reaches the console or the log, and none inside a secret keeps it from being masked. NUL bytes go with them:
    Open MPI's tagged output carries one where a rank's stderr closes."""
    return plain(raw.decode("utf-8", errors="replace"))


def _described(processes: list[psutil.Process], shown: int = 6) -> str | None:
    """`2 processes: algo-1 rank 0 (pid 4242 python), (pid 4250 sleep)`, or `algo-1 torchrun agent (pid 4240
    pt_elastic)` for a launcher. Launchers only wait for their children,
    so they are named only when nothing else is left. One that has exited since the list was read is left out
    (its name is gone with it, and nothing waits for it): None when none is left."""
    processes = [process for process in processes if not is_launcher(process)] or processes
    names = [name for name in map(_describe, processes) if name is not None]
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    if not names:
        return None
    return f"{counted(len(names), 'process')}: {', '.join(names[:shown])}{more}"


def _describe(process: psutil.Process) -> str | None:
    """Host from the process's environment where it still has it, then what the launcher is or the rank's number,
    and always its pid and name; None once it has exited."""
    try:
        name = process.name()
    except psutil.NoSuchProcess:
        return None
    except psutil.Error as error:
        name = f"name unreadable: {type(error).__name__}"
    try:
        env = process.environ()
    except psutil.Error:
        env = {}
    host = env.get(HOSTNAME_VARIABLE)
    what = _launcher_role(process) or _rank(env, host)
    where = " ".join(part for part in (host, what) if part)
    return f"{where + ' ' if where else ''}(pid {process.pid} {name})"


def _rank(env: dict[str, str], host: str | None) -> str | None:
    """`rank 3`: RANK or Open MPI's rank, or in mode none (one process per host) the host's place in SM_HOSTS."""
    rank = env.get(TORCHRUN_VARS[0]) or env.get(OMPI_VARS[0])
    if rank is None and host and env.get(SM_HOSTS):
        hosts = json.loads(env[SM_HOSTS])
        rank = str(hosts.index(host)) if host in hosts else None
    return f"rank {rank}" if rank else None
