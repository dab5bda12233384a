"""Every rank's Python stack, from outside: which rank waits in a collective, and which one it waits for.

`py-spy dump --pid` reads a live process's stack without stopping it. Where py-spy is missing or may not attach
(ptrace restricted for a user who is not root), the ranks' own faulthandler speaks instead: the emulator starts
them with PYTHONFAULTHANDLER=1, so SIGABRT makes each write every thread's stack to its stderr, which is the
host's log, before it dies.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.contract import OMPI_VARS, SM_CURRENT_HOST, SM_HOSTS, TORCHRUN_VARS
from orchestrator.emulator.instances.hostname import HOSTNAME_VARIABLE
from orchestrator.emulator.launching.launch import RUN_ID_VARIABLE
from orchestrator.emulator.supervising.launchers import is_launcher_command

FAULTHANDLER_ENVIRONMENT = {"PYTHONFAULTHANDLER": "1"}
PY_SPY_TIMEOUT_SECONDS = 10.0
FAULTHANDLER_WAIT_SECONDS = 3.0
# Frames of these files mean the rank is inside a collective (or DDP's gradient sync), waiting for the others.
_COLLECTIVE_FILES = ("torch/distributed/", "torch/nn/parallel/distributed.py")
_C10D_API = "distributed_c10d.py"
# Where a thread enters autograd's engine (torch >= 2.1: graph.py's `_engine_run_backward`; before: the engine is
# called from `torch.autograd.backward`/`grad` themselves). An idle thread whose innermost Python frame is one of
# these waits in C++ below it: DDP's reducer runs its gradient all-reduce from a C++ autograd hook, with no
# torch.distributed frame on the stack; a backward that computes uses the CPU and is never idle.
_AUTOGRAD_ENGINE = (("torch/autograd/graph.py", "_engine_run_backward"), ("torch/autograd/__init__.py", "backward"),
                    ("torch/autograd/__init__.py", "grad"))
AUTOGRAD_COLLECTIVE = "backward's gradient all-reduce"
"""The collective named for a rank idle in autograd's engine: DDP's (or another C++ hook's) gradient sync."""
_LIBRARY_PATHS = ("site-packages", "dist-packages", "/lib/python3", "<frozen")
# py-spy shortens an installed package's path to the package (`torch/distributed/...`). smtrain's CPU stand-in for
# CUDA (`gpu_standin/`, on the ranks' PYTHONPATH: `smtrain_gpu_standin/`, and its `smdistributed/`) wraps the
# collectives, so its frames sit between torch's and the script's: library code too, never the script's line.
_LIBRARY_PACKAGES = re.compile(r"(^|/)(torch|mpi4py|numpy|smdistributed|smtrain_gpu_standin|emulator/gpu_standin)/")
# A thread's header: py-spy's `Thread 23312 (idle): "MainThread"`, faulthandler's `Current thread 0x7f29... (most
# recent call first):` or `Thread 0x7f29...`.
_THREAD_HEADER = re.compile(r"^\s*(?:Current thread|Thread) (?:0x[0-9a-fA-F]+|\d+)")
# py-spy: `    all_reduce (torch/distributed/distributed_c10d.py:2834)`
_PY_SPY_FRAME = re.compile(r"^\s+(?P<function>\S+) \((?P<file>[^()]+):(?P<line>\d+)\)")
# faulthandler: `  File "/.../distributed_c10d.py", line 2834 in all_reduce`
_FAULTHANDLER_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)')
# mpirun --tag-output: `[1,3]<stderr>: ...`, or as the toolkit relabels it, `[1,mpirank:3,algo-2]<stderr>: ...`
_MPI_TAG = re.compile(r"^\[\d+,(?:mpirank:)?(?P<rank>\d+)(?:,[^\]]*)?\]<std\w+>:")
_FAULTHANDLER_START = "Fatal Python error"
_DATALOADER_FILE = "torch/utils/data/dataloader.py"
_COMPILE_WORKER = "compile_worker"
"""In the command line of torch.compile's pool of compile processes, which a rank may also have as children."""
_TORCH_RANK, _MPI_RANK = TORCHRUN_VARS[0], OMPI_VARS[0]


@dataclass(frozen=True)
class RankProcess:
    pid: int
    host: str
    rank: int | None

    @property
    def name(self) -> str:
        return f"rank {self.rank} ({self.host})" if self.rank is not None else f"{self.host} (pid {self.pid})"


@dataclass(frozen=True)
class Frame:
    function: str
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.function} ({Path(self.file).name}:{self.line})"

    @property
    def in_library(self) -> bool:
        """Installed packages, and the standard library (py-spy shortens its paths to `subprocess.py`)."""
        shortened = not self.file.startswith("/") and self.file.split("/")[0].removesuffix(".py")
        return (any(part in self.file for part in _LIBRARY_PATHS) or bool(_LIBRARY_PACKAGES.search(self.file))
                or shortened in sys.stdlib_module_names)


@dataclass(frozen=True)
class RankStack:
    """One rank's stack as a dumper printed it, innermost frame first."""

    process: RankProcess
    text: str
    source: str
    """`py-spy`, `faulthandler`, or `none` when neither could read it."""
    py_spy_refusal: str | None = None
    """What py-spy said when it could not read this rank (`Permission Denied: ...`), so faulthandler did."""
    workers: tuple[RankStack, ...] = ()
    """The stacks of its DataLoader workers, when it waits for its next batch: a worker holds the line that
    blocks (a read that never returns), which the rank's own stack does not show."""

    @property
    def frames(self) -> list[Frame]:
        """Every thread's frames, each thread's innermost first."""
        return [frame for thread in self.threads for frame in thread]

    @property
    def threads(self) -> list[list[Frame]]:
        """Each thread's frames, innermost first (frames before any thread header count as one thread)."""
        threads: list[list[Frame]] = [[]]
        for line in self.text.splitlines():
            if _THREAD_HEADER.match(line):
                threads.append([])
                continue
            match = _PY_SPY_FRAME.match(line) or _FAULTHANDLER_FRAME.search(line)
            if match:
                threads[-1].append(Frame(match["function"], match["file"], int(match["line"])))
        return [thread for thread in threads if thread]

    @property
    def collective(self) -> str | None:
        """The torch.distributed call it waits in (`all_reduce`), when it waits in one.

        Read from a stack taken while the rank was idle (the hang check dumps stacks only once every host's work
        is idle): a thread idle in autograd's engine with no Python frame below it waits in a gradient all-reduce
        that DDP's reducer runs from C++ (AUTOGRAD_COLLECTIVE), since a backward that computes is not idle.
        """
        frames = [frame for frame in self.frames if any(part in frame.file for part in _COLLECTIVE_FILES)]
        if frames:
            api = [frame for frame in frames if frame.file.endswith(_C10D_API)]
            # Innermost first: the last torch.distributed frame is the call the script made.
            return (api or frames)[-1].function
        if any(thread[0].file.endswith(file) and thread[0].function == function
               for thread in self.threads for file, function in _AUTOGRAD_ENGINE):
            return AUTOGRAD_COLLECTIVE
        return None

    @property
    def where(self) -> str:
        """The innermost frame of the script itself (not of a library), else the innermost frame."""
        frames = self.frames
        own = [frame for frame in frames if not frame.in_library]
        return str((own or frames)[0]) if frames else "no Python frame could be read"

    @property
    def waits_for_data(self) -> bool:
        """Whether it is inside a DataLoader's iteration, waiting for a batch its workers make."""
        return any(_DATALOADER_FILE in frame.file for frame in self.frames)

    @property
    def place(self) -> str:
        """`rank 0 (algo-1) at main (train.py:17)`, with where its DataLoader workers are (`waiting_for`)."""
        return f"{self.process.name} at {self.where}{self.waiting_for}"

    @property
    def waiting_for(self) -> str:
        """`, waiting for its DataLoader worker (pid 812) at __getitem__ (train.py:12)`, or nothing."""
        workers = "; ".join(f"(pid {worker.process.pid}) at {worker.where}" for worker in self.workers)
        plural = "s" if len(self.workers) > 1 else ""
        return f", waiting for its DataLoader worker{plural} {workers}" if workers else ""


def rank_processes(run_id: str) -> list[RankProcess]:
    """The training processes of a run: tagged with its id, Python, neither a launcher (torchrun) nor the child
    of another rank (DataLoader workers)."""
    import psutil

    candidates: dict[int, tuple[int, Mapping[str, str]]] = {}
    for process in psutil.process_iter(["pid", "ppid", "cmdline", "environ"]):
        env = process.info["environ"] or {}
        command = process.info["cmdline"] or []
        if env.get(RUN_ID_VARIABLE) != run_id or not command:
            continue
        if not Path(command[0]).name.startswith("python") or is_launcher_command(Path(command[0]).name, command):
            continue
        candidates[process.info["pid"]] = (process.info["ppid"], env)
    return sorted(
        (RankProcess(pid, host_of(env), rank_of(env)) for pid, (parent, env) in candidates.items()
         if parent not in candidates),
        key=lambda item: (item.rank if item.rank is not None else 1 << 30, item.host, item.pid),
    )


def find_py_spy() -> str | None:
    """py-spy next to this interpreter (installed into the venv), else on PATH."""
    sibling = Path(sys.executable).parent / "py-spy"
    return str(sibling) if sibling.exists() else shutil.which("py-spy")


def dump_stacks(processes: Sequence[RankProcess], logs_dir: Path, py_spy: str | None) -> list[RankStack]:
    """Each rank's stack: py-spy for every rank it can read, faulthandler (which ends the rank) for the rest."""
    stacks: dict[int, RankStack] = {}
    refusals: dict[int, str] = {}
    if py_spy:
        with ThreadPoolExecutor(max_workers=max(1, min(8, len(processes)))) as pool:
            dumps = pool.map(lambda process: py_spy_read(py_spy, process.pid), processes)
            for process, (text, refusal) in zip(processes, dumps, strict=True):
                if text:
                    stacks[process.pid] = RankStack(process, text, "py-spy")
                elif refusal:
                    refusals[process.pid] = refusal
    unread = [process for process in processes if process.pid not in stacks]
    if unread:
        for process, text in _faulthandler_dumps(unread, logs_dir).items():
            stacks[process.pid] = RankStack(process, text, "faulthandler" if text else "none",
                                            refusals.get(process.pid))
    return [stacks[process.pid] for process in processes]


def with_data_workers(stacks: Sequence[RankStack], py_spy: str | None) -> list[RankStack]:
    """Each rank that waits for its DataLoader, with its workers' stacks (py-spy only: faulthandler's SIGABRT
    would end the workers, and the rank with them, before they could be read)."""
    if not py_spy:
        return list(stacks)
    read = []
    for stack in stacks:
        workers = []
        for pid in data_workers(stack.process.pid) if stack.waits_for_data else []:
            text, _ = py_spy_read(py_spy, pid)
            if text:
                workers.append(RankStack(RankProcess(pid, stack.process.host, stack.process.rank), text, "py-spy"))
        read.append(replace(stack, workers=tuple(workers)))
    return read


def data_workers(pid: int) -> list[int]:
    """A rank's DataLoader worker processes: its Python children (a forked worker keeps the rank's command line, a
    spawned one runs multiprocessing's), torch.compile's compile workers aside."""
    import psutil

    try:
        children = psutil.Process(pid).children()
    except psutil.Error:
        return []
    workers = []
    for child in children:
        try:
            command = child.cmdline()
        except psutil.Error:
            continue
        if command and Path(command[0]).name.startswith("python") and not any(
                _COMPILE_WORKER in part for part in command):
            workers.append(child.pid)
    return workers


def py_spy_read(py_spy: str, pid: int) -> tuple[str | None, str | None]:
    """One stack of a live process, read without stopping it; else None and py-spy's last error line (where
    ptrace is refused to this user: `Permission Denied: Try running again with elevated permissions ...`)."""
    try:
        done = subprocess.run([py_spy, "dump", "--pid", str(pid)], capture_output=True, text=True,
                              timeout=PY_SPY_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return None, f"py-spy did not answer within {PY_SPY_TIMEOUT_SECONDS:g} s"
    except OSError as error:
        return None, str(error)
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout, None
    said = done.stderr.strip().splitlines()
    return None, said[-1] if said else f"py-spy exited {done.returncode}"


def _faulthandler_dumps(processes: Sequence[RankProcess], logs_dir: Path) -> dict[RankProcess, str]:
    """SIGABRT to each rank, then the stacks their faulthandler appended to the hosts' logs."""
    hosts = sorted({process.host for process in processes})
    sizes = {host: _size(logs_dir / f"{host}.log") for host in hosts}
    for process in processes:
        try:
            os.kill(process.pid, signal.SIGABRT)
        except (ProcessLookupError, PermissionError):
            continue
    deadline = time.monotonic() + FAULTHANDLER_WAIT_SECONDS
    while time.monotonic() < deadline and any(_alive(process.pid) for process in processes):
        time.sleep(0.1)
    time.sleep(0.5)  # the supervisor's readers copy the last lines into the logs
    written = {host: _read_from(logs_dir / f"{host}.log", sizes[host]) for host in hosts}
    return {process: _stack_of(process, written[process.host]) for process in processes}


def _stack_of(process: RankProcess, text: str) -> str:
    """The faulthandler lines of this rank: its own, when mpirun tagged each line with the rank; otherwise
    the host's (one rank per host in modes none; with torchrun the ranks of a host share the text)."""
    own, untagged = [], []
    for line in text.splitlines():
        tag = _MPI_TAG.match(line)
        if tag:
            if int(tag["rank"]) == process.rank:
                own.append(line[tag.end():])
        else:
            untagged.append(line)
    lines = own or untagged
    start = next((index for index, line in enumerate(lines) if _FAULTHANDLER_START in line), None)
    return "\n".join(lines[start:]) if start is not None else ""


def rank_of(env: Mapping[str, str]) -> int | None:
    """A training process's rank: torchrun's RANK, Open MPI's, else (mode none) its host's place in SM_HOSTS."""
    for name in (_TORCH_RANK, _MPI_RANK):
        if env.get(name, "").isdigit():
            return int(env[name])
    try:
        return json.loads(env.get(SM_HOSTS, "[]")).index(env.get(SM_CURRENT_HOST))
    except ValueError:
        return None


def host_of(env: Mapping[str, str]) -> str:
    """The emulated host: the name its gethostname() answers, in every process of the host (SM_CURRENT_HOST is
    the master's on remote MPI ranks, and the job's paths name /opt/ml, not the host's folder)."""
    return env.get(HOSTNAME_VARIABLE) or env.get(SM_CURRENT_HOST, "?")


def _alive(pid: int) -> bool:
    """Running, and not a zombie that merely waits for its parent to reap it."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_from(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
