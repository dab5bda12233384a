"""Whether a local run's work still moves while it writes nothing: per emulated host, the CPU time and the I/O of
its training processes and of everything they start (a JIT compile's ninja, c++ and cc1plus; DataLoader workers),
read from outside with psutil, never by attaching to a process.

A host is busy over a window when its work processes together used at least `BUSY_CORE_FRACTION` of one core,
or a new one of them appeared (a compiler's next step). Each process counts its own CPU time and that of the
children it has waited for (`children_user`/`children_system`), so a compiler step that starts and ends between
two samples still counts, through its parent. The launchers (the shells, mpirun and Open MPI's daemons,
torchrun's agent) are left out once they have started their children: from then on they only poll them, which is
not the job's progress; before (torchrun importing torch), their start-up is.

Why a tenth of a core: a rank blocked in a gloo collective, or sleeping, uses about 0.3% of a core (measured on
a loaded 2-core machine: 0.03-0.04 CPU seconds in 10 s), so even 16 idle ranks on one host stay far below it;
a rank that computes gets a tenth of a core unless more than ten runnable threads share each core. A machine can
carry that much (a CI runner with parallel test workers: a JIT compile's cc1plus got 10% of a core at a load
average of 35 on 2 cores), so a host is also busy when one of its work processes was runnable (the kernel's state
R: computing, or waiting only for a core) in at least half the samples of the window: a blocked or sleeping
process is in state S, however loaded the machine, and a starved one is still R.

A rank can make progress with neither: a download (blocked in recv, waiting for the network), torch.save to a slow
disk (state D), a dataset read from a slow disk or a Pipe mode channel. So a host is also busy when its training
processes (the launchers never: a launcher's counters take in its reaped ranks', and mpirun's are its ranks'
output) read or wrote at least `BUSY_BYTES_PER_SECOND`, by the kernel's accounting (/proc/<pid>/io): every read()
and write() on a file, a pipe or a TLS connection (read_chars, write_chars), and what storage read or wrote for
them, memory maps included (read_bytes, write_bytes). A rank blocked in a gloo collective, sleeping, or waiting
on an idle DataLoader moved 0 to 330 bytes in 10 s (measured), a stuck tqdm bar's redraws 180 bytes in 25 s; a
rank's output that the clock has not seen as a line is under 64 KiB (a longer one is handed on in pieces, which
reset the clock), a tenth of a 10-s window's threshold. recv() and send() on a socket (a plain HTTP body kept in
memory, gloo's receives) the kernel does not account there, so the bytes each TCP socket of a training process has
received and sent (socket_bytes.py) count as well: an idle connection moves none.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import psutil

from orchestrator.emulator.launching.launch import RUN_ID_VARIABLE
from orchestrator.emulator.supervising.socket_bytes import bytes_of, socket_inodes, tcp_bytes_by_inode
from orchestrator.emulator.supervising.stacks import RankProcess, host_of, rank_of
from orchestrator.emulator.supervising.supervisor import is_launcher
from orchestrator.observing.liveness import HostActivity
from orchestrator.wording import counted

BUSY_CORE_FRACTION = 0.1
BUSY_BYTES_PER_SECOND = 64 * 1024
"""The I/O rate of a host's training processes that makes it busy, whatever CPU they used."""
RUNNABLE_SAMPLE_FRACTION = 0.5
"""The share of a window's samples in which a host's work was runnable that makes it busy, whatever CPU it got."""
SAMPLE_SECONDS = 0.5
"""The shortest time between two reads of the processes' CPU times: each offer of the supervisor (every
WATCH_SECONDS, a second) is read, a caller offering them more often is not."""
WINDOW_SECONDS = 10.0
"""The span a host's activity is judged over, shorter where the stall timeout is shorter."""

_Identity = tuple[int, float]  # pid and start time: a pid the kernel reuses is another process


@dataclass(frozen=True)
class _Work:
    """What one process of the run is: its host, the rank it belongs to, and whether its CPU time counts."""

    host: str
    rank: RankProcess | None
    label: str
    launcher: bool


@dataclass
class _Sample:
    at: float
    cpu: dict[_Identity, float] = field(default_factory=dict)
    """Every work process's CPU seconds so far, launchers too (a launcher's start-up counts, its polling not)."""
    counted: set[_Identity] = field(default_factory=set)
    """The processes whose CPU time is the job's work: all but the launchers that have children."""
    runnable: set[_Identity] = field(default_factory=set)
    """The counted processes the kernel had in state R (running, or ready and waiting for a core)."""
    moved: dict[_Identity, int] = field(default_factory=dict)
    """The bytes each training process (no launcher) has read or written so far, where the kernel shows them."""
    sockets: dict[tuple[_Identity, int], int] = field(default_factory=dict)
    """The bytes each TCP socket of a training process has received and sent so far, by process and inode: a socket
    closed since is gone from the count, not taken off it."""


class ActivitySampler:
    """The CPU time of one attempt's work processes, per host, over the last window."""

    def __init__(self, run_id: str, window_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._run_id = run_id
        self._window = min(window_seconds, WINDOW_SECONDS)
        self._clock = clock
        self._work: dict[_Identity, tuple[str, _Work | None]] = {}
        """What each process is, by the program it runs (a fork becomes torchrun when it execs it)."""
        self._samples: list[_Sample] = []

    def sample(self, processes: list[psutil.Process]) -> None:
        """Reads the CPU times of the run's live processes, at most every SAMPLE_SECONDS."""
        now = self._clock()
        if self._samples and now - self._samples[-1].at < SAMPLE_SECONDS:
            return
        sample = _Sample(now)
        known: dict[int, _Identity] = {}
        parents = {_parent(process) for process in processes}
        for process in sorted(processes, key=_started):  # a parent before its children
            try:
                identity, name = (process.pid, process.create_time()), process.name()
                if self._work.get(identity, ("", None))[0] != name:
                    if not process.cmdline():  # between fork and exec: what it will run is not known yet
                        continue
                    self._work[identity] = (name, self._classify(process, known))
                known[process.pid] = identity
                work = self._work[identity][1]
                if work is not None:
                    times = process.cpu_times()
                    # A launcher's reaped children are ranks, counted while they lived.
                    reaped = 0.0 if work.launcher else times.children_user + times.children_system
                    sample.cpu[identity] = times.user + times.system + reaped
                    if not (work.launcher and process.pid in parents):
                        sample.counted.add(identity)
                        if process.status() == psutil.STATUS_RUNNING:
                            sample.runnable.add(identity)
                        if not work.launcher:
                            _read_moved(process, identity, sample)
            except psutil.Error:
                continue
        _read_sockets([identity for identity in sample.counted
                       if (work := self._work[identity][1]) is not None and not work.launcher], sample)
        self._samples.append(sample)
        self._work = {identity: self._work[identity] for identity in known.values()}  # what still runs
        baseline = self._baseline(now)
        del self._samples[:self._samples.index(baseline)]

    def activities(self) -> list[HostActivity]:
        """Each host's activity over the window; unknown (None) until two samples span some time."""
        if not self._samples:
            return []
        current, baseline = self._samples[-1], self._baseline(current_time := self._samples[-1].at)
        span = current_time - baseline.at
        hosts = sorted({work.host for identity in current.cpu if (work := self._work[identity][1]) is not None})
        window = self._samples[self._samples.index(baseline) + 1:]
        return [self._host_activity(host, window, baseline, span) for host in hosts]

    def rank_children(self) -> dict[RankProcess, list[str]]:
        """The names of the processes each rank started (and they started) that the last sample found running:
        a compiler, a DataLoader worker."""
        children: dict[RankProcess, list[str]] = {}
        for (pid, _), (name, work) in self._work.items():
            if work is not None and work.rank is not None and pid != work.rank.pid:
                children.setdefault(work.rank, []).append(name)
        return children

    def busiest_rank(self) -> RankProcess | None:
        """The rank whose processes used the most CPU over the window (whose stack a slow report shows)."""
        if not self._samples:
            return None
        current, baseline = self._samples[-1], self._baseline(self._samples[-1].at)
        span = max(current.at - baseline.at, SAMPLE_SECONDS)
        used, moved = _used(current, baseline), _moved(current, baseline)
        per_rank: dict[RankProcess, tuple[float, float]] = {}
        for identity in used:
            work = self._work[identity][1]
            if work is not None and identity in current.counted and work.rank is not None:
                seconds, bytes_moved = per_rank.get(work.rank, (0.0, 0.0))
                per_rank[work.rank] = (seconds + used[identity], bytes_moved + moved.get(identity, 0))

        def busiest_first(rank: RankProcess) -> tuple[bool, bool, float]:
            """A rank that computes first, then one that moves data, then by CPU time."""
            seconds, bytes_moved = per_rank[rank]
            return seconds / span >= BUSY_CORE_FRACTION, bytes_moved / span >= BUSY_BYTES_PER_SECOND, seconds

        return max(per_rank, key=busiest_first) if per_rank else None

    def _host_activity(self, host: str, window: list[_Sample], baseline: _Sample, span: float) -> HostActivity:
        current = window[-1] if window else baseline
        used = {identity: seconds for identity, seconds in _used(current, baseline).items()
                if (work := self._work[identity][1]) is not None and work.host == host and identity in current.counted}
        if span <= 0:
            return HostActivity(host, None, "not sampled long enough yet")
        appeared = [identity for identity in used if identity not in baseline.cpu]
        share = sum(used.values()) / span
        if not used:
            return HostActivity(host, False, "only launchers left, waiting for their children")
        top = max(used, key=lambda identity: used[identity])
        work = self._work[top][1]
        assert work is not None
        detail = f"{work.label} at {used[top] / span:.0%} CPU"
        if appeared:
            detail += f", {counted(len(appeared), 'new process', 'new processes')}"
        runnable = sum(1 for sample in window if any(identity in used for identity in sample.runnable))
        starved = bool(window) and runnable >= RUNNABLE_SAMPLE_FRACTION * len(window)
        if starved and share < BUSY_CORE_FRACTION:
            detail += f", runnable in {runnable} of {len(window)} samples (waiting for a core)"
        moved = {identity: count for identity, count in _moved(current, baseline).items() if identity in used}
        moving = sum(moved.values()) / span >= BUSY_BYTES_PER_SECOND
        if moving:
            mover = self._work[max(moved, key=lambda identity: moved[identity])][1]
            assert mover is not None
            detail += f"; {mover.label} reads or writes {sum(moved.values()) / span / 1024:.0f} KiB/s"
        return HostActivity(host, share >= BUSY_CORE_FRACTION or bool(appeared) or starved or moving, detail)

    def _baseline(self, now: float) -> _Sample:
        """The latest sample at least a window old, else the oldest."""
        older = [sample for sample in self._samples if sample.at <= now - self._window]
        return older[-1] if older else self._samples[0]

    def _classify(self, process: psutil.Process, known: Mapping[int, _Identity]) -> _Work | None:
        """A process tagged with the run's id is a host's (its own environment names the host and rank); an
        untagged one (a helper started with `env -i`) belongs where its parent does; anything else (smtrain's
        own py-spy) is not the run's work."""
        try:
            env = process.environ()
        except psutil.Error:
            env = {}
        parent = self._work.get(known.get(process.ppid(), (-1, 0.0)), ("", None))[1]
        launcher = is_launcher(process)
        if env.get(RUN_ID_VARIABLE) != self._run_id:
            if parent is None:
                return None
            return _Work(parent.host, parent.rank, _under(process, parent), launcher)
        if parent is not None and parent.rank is not None:  # a rank's child: a compiler, a DataLoader worker
            return _Work(parent.host, parent.rank, _under(process, parent), launcher)
        rank = None if launcher else RankProcess(process.pid, host_of(env), rank_of(env))
        label = rank.name if rank is not None else f"{process.name()} (pid {process.pid})"
        return _Work(host_of(env), rank, label, launcher)


def _under(process: psutil.Process, parent: _Work) -> str:
    return f"{process.name()} under {parent.rank.name}" if parent.rank is not None else (
        f"{process.name()} (pid {process.pid})")


def _used(current: _Sample, baseline: _Sample) -> dict[_Identity, float]:
    """CPU seconds each live process used since the baseline (all of them for a process started since)."""
    return {identity: max(seconds - baseline.cpu.get(identity, 0.0), 0.0) for identity, seconds in current.cpu.items()}


def _moved(current: _Sample, baseline: _Sample) -> dict[_Identity, int]:
    """Bytes each process read or wrote since the baseline, its sockets' too (all of a socket opened since); one
    started since is busy for having appeared."""
    moved = {identity: max(count - baseline.moved[identity], 0) for identity, count in current.moved.items()
             if identity in baseline.moved}
    for (identity, inode), count in current.sockets.items():
        if identity in baseline.cpu:
            since = max(count - baseline.sockets.get((identity, inode), 0), 0)
            moved[identity] = moved.get(identity, 0) + since
    return moved


def _read_moved(process: psutil.Process, identity: _Identity, sample: _Sample) -> None:
    """Its I/O so far, where the kernel lets it be read (/proc/<pid>/io needs the right to trace the process); where
    not, the host is judged by its CPU alone."""
    try:
        io = process.io_counters()
    except (psutil.Error, AttributeError):
        return
    sample.moved[identity] = io.read_chars + io.write_chars + io.read_bytes + io.write_bytes


def _read_sockets(training: list[_Identity], sample: _Sample) -> None:
    """The TCP counters of the training processes' sockets: one netlink dump, only where one of them holds a socket."""
    held = {identity: inodes for identity in training if (inodes := socket_inodes(identity[0]))}
    counters = tcp_bytes_by_inode() if held else {}
    for identity, inodes in held.items():
        sample.sockets.update(((identity, inode), count) for inode, count in bytes_of(inodes, counters).items())


def _parent(process: psutil.Process) -> int | None:
    try:
        return process.ppid()
    except psutil.Error:
        return None


def _started(process: psutil.Process) -> float:
    try:
        return process.create_time()
    except psutil.Error:
        return 0.0
