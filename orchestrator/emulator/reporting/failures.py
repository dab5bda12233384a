"""Why a local run failed: first where it started, then what SageMaker's toolkit would report.

The root cause leads: the host and rank of the process that failed first, and its exception as the last line of
its traceback says it (`algo-2 (rank 1) failed: ValueError: bad shape`), however long the traceback and whatever
the other ranks printed while they were stopped. Each host's failure file then holds the toolkit's own message
(`process.check_error`, `errors._CalledProcessError`): `ExecuteUserScriptError:`, `ExitCode`, `ErrorMessage`
(the output from the first line naming a known error), `ExtraInfo` for a process killed with SIGKILL (137), and
`Command`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# sagemaker_training/__init__.py (5.1.4) _PYTHON_ERRORS_ + _MPI_ERRORS_, plus the error classes the runners add
# (ExecuteUserScriptError when neither smdebug nor TensorFlow is installed): a line containing any of them
# starts the ErrorMessage.
TOOLKIT_ERROR_NAMES = (
    "BaseException", "Exception", "ArithmeticError", "AssertionError", "AttributeError", "BlockingIOError",
    "BrokenPipeError", "BufferError", "ChildProcessError", "ConnectionAbortedError", "ConnectionError",
    "ConnectionRefusedError", "ConnectionResetError", "EOFError", "EnvironmentError", "FileExistsError",
    "FileNotFoundError", "FloatingPointError", "IOError", "ImportError", "IndentationError", "IndexError",
    "InterruptedError", "IsADirectoryError", "KeyError", "LookupError", "MemoryError", "ModuleNotFoundError",
    "NameError", "NotADirectoryError", "NotImplementedError", "OSError", "OverflowError", "PermissionError",
    "ProcessLookupError", "RecursionError", "ReferenceError", "RuntimeError", "SyntaxError", "SystemError",
    "TabError", "TimeoutError", "TypeError", "UnboundLocalError", "UnicodeDecodeError", "UnicodeEncodeError",
    "UnicodeError", "UnicodeTranslateError", "ValueError", "ZeroDivisionError", "Invalid requirement",
    "ResourceExhaustedError", "OutOfRangeError", "InvalidArgumentError", "mpirun.real", "ORTE",
    "ExecuteUserScriptError",
)
OUT_OF_MEMORY = "OutOfMemory: Process killed by SIGKILL (signal 9)"
FAILURE_REASON_LIMIT = 1024

_RELABELLED = re.compile(r"\[(\d),mpirank:(\d+),[^\]]*\]<(std\w+)>")
_MPI_TAG = re.compile(r"^\[\d,(?:mpirank:)?(\d+)(?:,[^\]]*)?\]<(std\w+)>:\s?(.*)$")
_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception, another exception occurred:",
            "The above exception was the direct cause of the following exception:")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning|Failure)\b.*$")
# A C++ std::terminate: an exception nothing caught (its what() on the next line), or a thread ended while joinable,
# as when gloo's worker threads meet interpreter finalization. The process aborts without a Python traceback.
_CPP_TERMINATE = re.compile(r"^terminate called (after throwing an instance of .*|without an active exception)$")
# torch.distributed prefixes a worker's uncaught exception with its rank (`[rank1]: ValueError: ...`).
_RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:\s?(.*)$")
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
# Errors a rank gets because another one failed first: its peer's socket closed, a collective gave up, a stop signal.
_CONSEQUENCE = re.compile(r"Connection (reset|closed) by peer|Broken pipe|DistBackendError|DistNetworkError|"
                          r"SignalException|Signals\.SIG(TERM|KILL)|ChildFailedError|[Rr]ead error|[Ww]rite error|"
                          r"recvBytes|sendBytes|Socket Timeout|MPI_ERR_|mpirun(\.real)? noticed")
_TORCHRUN_ROOT = re.compile(r"Root Cause \(first observed failure\):.*?rank\s*:\s*(\d+)", re.DOTALL)
_TORCHRUN_RANK = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*\d+\)")
_MPI_RANK = (re.compile(r"Process name:\s*\[[^\],]*,(\d+)\]"), re.compile(r"process rank (\d+)"))


@dataclass(frozen=True)
class RootCause:
    host: str
    rank: int | None
    exception: str | None
    """The last line of the failing process's traceback (or the error line it printed), if it printed one."""
    exit_code: int
    frames: tuple[tuple[str, int], ...] = ()
    """The (file, line) frames of the exception's traceback, outermost first, as the process printed them."""

    def headline(self, location: str | None = None) -> str:
        """`algo-2 (rank 1) failed: ValueError: ...`, with `location` (src/train.py:42) after it when given."""
        where = self.host + (f" (rank {self.rank})" if self.rank is not None else "")
        at = f" at {location}" if location else ""
        if self.exception:
            return f"{where} failed: {self.exception}{at}"
        return f"{where} exited with code {self.exit_code}{at}"

    @property
    def is_consequence(self) -> bool:
        """The error is what a rank gets when another failed first (a peer's closed socket, a stop signal)."""
        return self.exception is None or _CONSEQUENCE.search(self.exception) is not None


def toolkit_error_message(lines: Sequence[str]) -> str:
    """The toolkit's ErrorMessage: from the first line that names a known error on (`process.watch`), each line
    trimmed of its MPI tag and of ` :`, then duplicate lines dropped (`check_error`)."""
    output: list[str] = []
    started = False
    for line in lines:
        raw = _RELABELLED.sub(r"[\1,\2]<\3>", line)  # the toolkit matches the line as mpirun printed it
        err_line = re.sub(r"\[(\d),(\d)\]<stdout>", "", re.sub(r"\[(\d),(\d)\]<stderr>", "", raw))
        if started:
            if err_line not in output:
                output.append(err_line.strip(" :\n") + "\n")
        elif any(name in err_line for name in TOOLKIT_ERROR_NAMES):
            started = True
            output.append(err_line.strip(" :\n") + "\n")
    joined = " ".join(output)
    return "\n".join(dict.fromkeys(joined.split("\n"))).strip()


def toolkit_failure(return_code: int, command: str, lines: Sequence[str],
                    error_class: str = "ExecuteUserScriptError") -> str:
    """The failure file the toolkit writes when the launcher exits non-zero."""
    message = toolkit_error_message(lines)
    code = 128 - return_code if return_code < 0 else return_code  # a shell reports a signal as 128 + n
    extra = f'\nExtraInfo "{OUT_OF_MEMORY}"' if code == 137 else ""
    return f'{error_class}:\nExitCode {code}\nErrorMessage "{message}"{extra}\nCommand "{command}"'.strip()


@dataclass(frozen=True)
class LauncherOutput:
    """Whose output a failed launcher's lines are, and where its ranks ran."""

    mpi: bool
    """mpirun's: lines tagged with ranks, which run on `group_hosts` in slots of `per_host`."""
    torchrun: bool
    """torchrun's: its summary names the failed rank."""
    host_rank: int | None
    """The rank of the host's one process (mode none)."""
    group_hosts: Sequence[str]
    per_host: int


def root_cause(host: str, exit_code: int, lines: Sequence[str], launcher: LauncherOutput) -> RootCause:
    """Where a failure started, from the output of the launcher that failed on `host`."""
    group_hosts, per_host = launcher.group_hosts, launcher.per_host
    text = "\n".join(lines)
    if launcher.mpi:
        # mpirun forwards each rank's stdout and stderr separately, so lines of one may land inside the other's
        streams: dict[tuple[int, str] | None, list[tuple[int, str]]] = {}
        for position, line in enumerate(lines):
            match = _MPI_TAG.match(line)
            key, content = ((int(match[1]), match[2]), match[3]) if match else (None, line)
            streams.setdefault(key, []).append((position, content))
        found = _first_exception(streams)
        rank = found[0][0] if found and found[0] is not None else _first_match(_MPI_RANK, text)
        if rank is not None and 0 <= rank // max(per_host, 1) < len(group_hosts):
            host = group_hosts[rank // per_host]
        return RootCause(host, rank, found[1] if found else None, exit_code, found[2] if found else ())
    ranked: dict[int | None, list[tuple[int, str]]] = {}
    for position, line in enumerate(lines):
        match = _RANK_PREFIX.match(line)
        key, content = (int(match[1]), match[2]) if match else (None, line)
        ranked.setdefault(key, []).append((position, content))
    found = _first_exception(ranked)
    rank = launcher.host_rank
    if found and found[0] is not None:
        rank = found[0]
    elif launcher.torchrun:
        root = _TORCHRUN_ROOT.search(text) or _TORCHRUN_RANK.search(text)
        rank = int(root[1]) if root else None
    return RootCause(host, rank, found[1] if found else None, exit_code, found[2] if found else ())


def _first_match(patterns: Sequence[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match[1])
    return None


Frames = tuple[tuple[str, int], ...]


def _first_exception(streams: dict[Any, list[tuple[int, str]]]) -> tuple[Any, str, Frames] | None:
    """The stream (a rank's stdout or stderr) that reported an error first, the error (the last line of a
    traceback, a chained exception's final one, or an error line printed without one: `SystemExit("ValueError:
    ...")`) and its traceback's frames. An error that only follows from another rank's (a peer's closed socket)
    yields to one that does not, wherever it began."""
    best: tuple[bool, int, Any, str, Frames] | None = None
    for key, lines in streams.items():
        found = _first_error(lines)
        if found is None:
            continue
        candidate = (_CONSEQUENCE.search(found[1]) is not None, found[0], key, found[1], found[2])
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    return (best[2], best[3], best[4]) if best else None


def _first_error(lines: list[tuple[int, str]]) -> tuple[int, str, Frames] | None:
    """(where it began, text, frames) of the first error one stream reports: ranks are ordered by when they
    began reporting, since a traceback takes many lines and the ranks stopped after it may interleave theirs."""
    began: int | None = None
    frames: list[tuple[str, int]] = []
    for index, (position, line) in enumerate(lines):
        stripped = line.strip()
        frame = _FRAME.match(line)
        if stripped == _TRACEBACK:
            began = position if began is None else began
        elif stripped in _CHAINED:
            frames = []
            continue
        elif began is not None and frame:
            frames.append((frame[1], int(frame[2])))
        elif began is not None and line and not line[0].isspace():
            following = next((text.strip() for _, text in lines[index + 1:] if text.strip()), "")
            if following not in _CHAINED:
                return began, stripped, tuple(frames)
        elif began is None and _EXCEPTION_LINE.match(stripped):
            return position, stripped, ()
        elif began is None and _CPP_TERMINATE.match(stripped):
            following = lines[index + 1][1].strip() if index + 1 < len(lines) else ""
            if following.startswith("what():"):
                return position, f"{stripped} ({' '.join(following.split())})", ()
            return position, stripped, ()
    return None
