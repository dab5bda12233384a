"""Why a job failed, read from its hosts' output: the same reader for a local run's logs and a SageMaker job's
CloudWatch streams, so both say `algo-2 (rank 5) failed: TypeError: ... at src/train.py:42` and the same fix.

Each host's lines are split by the rank that printed them (torch.distributed's `[rankN]:` prefix, mpirun's
`[1,N]<stderr>:` tag, else the host's own process: mode none's one rank, or what torchrun's summary names). In
each rank's output the first error it reports is found: a traceback's last line, argparse's `error:` line, a C++
`terminate`, a signal or exit code the launcher reports. torchrun's agent is no rank: a traceback through its own
code (a rendezvous that timed out, the signal that stopped it) is named as the agent's, and leads only where no
rank said or reported anything in its tier. The root is chosen by rule, never by timing, so the same
failure gives the same reason on every run and every launcher: an error of the rank's own (tier 0) leads over a
collective timeout or a fatal signal (1), which leads over a rank's exit without a word (2: the peer a lost
connection lost), which leads over what a rank gets because a peer failed first (a closed socket, tier 3), which
leads over a stop signal (4); within a tier the lowest rank leads. A collective timeout names the rank the others
waited for where the logs and the rank table show which (observing/straggler.py).
"""

from __future__ import annotations

import difflib
import json
import posixpath
import re
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from orchestrator.contract import AWS_DEFAULT_REGION, AWS_REGION, FUNCTION_RUNNER, OPT_ML, REQUIREMENTS_FILE
from orchestrator.observing.client_errors import (
    IMAGE_PULL,
    KMS_REFUSED,
    MOUNT_FAILED,
    file_system_mount_fix,
    image_pull_fix,
    kms_key_fix,
)
from orchestrator.observing.crash_lines import DUMP_START, dump_frames, shell_notice
from orchestrator.observing.log_lines import EXCEPTION_LINE, host_order
from orchestrator.observing.numpy_abi import is_numpy_abi_error, numpy_abi_fix
from orchestrator.observing.pip_failure import (
    PIP_FAILURE,
    installs_requirements_txt,
    pip_failure_line,
    pip_fix,
    toolkit_install_failed,
)
from orchestrator.observing.plain_text import plain
from orchestrator.observing.rank_lines import rejoined
from orchestrator.observing.refused_pairs import refused_pairs_fix
from orchestrator.observing.requirement_lines import (
    failed_requirement,
    pip_read_at,
    requirement_line,
    required_by,
)
from orchestrator.observing.signal_names import signal_name
from orchestrator.observing.straggler import CollectiveTimeout, collective_timeout, gloo_timeout, is_gloo_timeout
from orchestrator.specs.catalog import local_nvme_volume, lookup
from orchestrator.specs.image_packages import image_packages
from orchestrator.specs.modes import described_mode

PROCESS, TORCHRUN, MPI = "process", "torchrun", "mpi"
_LAUNCHER_KINDS = {"python": PROCESS, "torchrun": TORCHRUN, "mpirun": MPI}
"""The mode table's launchers (specs/modes.py, `mpirun (SMDDP)` by its first word) as the reader tells them."""

_MPI_TAG = re.compile(r"^\[\d+,(?:mpirank:)?(\d+)(?:,([^\]]*))?\]<(std\w+)>:\s?(.*)$")
_RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:\s?(.*)$")
_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception, another exception occurred:",
            "The above exception was the direct cause of the following exception:")
_RERAISED = "Original Traceback (most recent call last):"
"""torch's ExceptionWrapper.reraise (a DataLoader worker's error): `ValueError: Caught ValueError in DataLoader worker
process 0.`, then this header and the worker's own traceback, whose last line is the error."""
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
_SYNTAX_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)$')
"""The one frame Python prints, without a traceback header, for a syntax error in the script it was asked to run:
the file and line, then the code and carets, then `SyntaxError: ...`."""
_SYNTAX_ERROR = re.compile(r"^(SyntaxError|IndentationError|TabError)\b")
_ARGPARSE_ERROR = re.compile(r"^(\S+): error: (.+)$")
_CPP_TERMINATE = re.compile(r"^terminate called (after throwing an instance of .*|without an active exception)$")
# Lines the launchers and the toolkit print themselves: never a rank's own words.
_LAUNCHER_LINE = re.compile(r"^[IWE]\d{4} \d\d:\d\d:\d\d\.\d+ |^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ |^-{10,}|^={10,}|"
                            r"Sending process \d+ closing signal|sagemaker-training-toolkit|^Invoking script|"
                            r"^Training Env:|^Environment variables:|^smtrain:")
_TOOLKIT_REPORT = re.compile(r"sagemaker-training-toolkit ERROR ")
"""The toolkit's report of the script's exit (`Reporting training FAILURE`, then its `ExitCode`, `ErrorMessage` and
`Command` lines, which carry no prefix): after the script's own last line."""
_NOTE = re.compile(r"^\[?[IW]\d{4} ")
"""A warning or info line of torch's C++ logging (`[W1126 10:41:01.123 ProcessGroupNCCL.cpp:...]`): not an error."""
_LOG_PREFIX = re.compile(r"^\[[EF](?:\d{4} [\d:.]+)?(?: [^\]]*)?\]\s*")
"""An error line's prefix in torch's C++ logging (`[E1126 10:41:01.426415540 ProcessGroupNCCL.cpp:629] `): its time
differs on every run, so the error is shown without it."""
_LAUNCHER_EXCEPTION = re.compile(r"ChildFailedError|ExecuteUserScriptError")
# Frames of torchrun's agent (the console script, `python -m torch.distributed.run`, its launcher API): a
# traceback through them is the agent's own, whatever rank the host's summary names.
_AGENT_FRAME = re.compile(r"(^|/)torchrun$|torch/distributed/run\.py$|torch/distributed/launcher/api\.py$")
TORCHRUN_AGENT = "torchrun agent"
_RUNNER_FRAME = re.compile(rf"(^|/){re.escape(FUNCTION_RUNNER)}$")
"""A function job's runner (function_jobs/runner.py), in the code directory but smtrain's, never the user's."""
_TRACEBACK_FRAME = re.compile(r'^(?P<before>[ \t]*File ")(?P<path>[^"]+)(?P<after>", line \d+)', re.MULTILINE)
_LIBRARY_FRAME = re.compile(r"/(site|dist)-packages/|/lib/python\d+\.\d+/|^<(frozen |string>)")
"""An installed package's or the standard library's frame: never the user's code."""
PIP_INSTALL = "pip install"
"""Who failed where the toolkit's install of requirements.txt (or the source dir's package) failed on a host: pip,
before the host started any rank."""
_STOPPED_BY_SIGNAL = re.compile(r"SignalException: Process \d+ got signal: (\d+)")
_MPI_LAUNCHER = r"(?:mpirun|orterun|prterun)(?:\.real)?"
"""The name Open MPI's launcher gives itself in its notices: mpirun (`mpirun.real` behind the DLCs' wrapper), Open
MPI 4's orterun, and Open MPI 5's prterun, which is what its mpirun runs (`prterun noticed that process rank 1`)."""
# Errors a rank gets because another one failed first: its peer's socket closed, a stop signal.
_CONSEQUENCE = re.compile(r"Connection (reset|closed) by peer|Broken pipe|DistBackendError|DistNetworkError|"
                          r"SignalException|Signals\.SIG(TERM|KILL|INT)|[Rr]ead error|[Ww]rite error|"
                          rf"recvBytes|sendBytes|Socket Timeout|MPI_ERR_|{_MPI_LAUNCHER} noticed")
_PEER_EXITED = re.compile(r"remote process exited|ncclRemoteError|Connection closed by remote peer")
"""NCCL's words for a peer that exited (`NCCL error: remote process exited or there was a network error`): what a
rank gets because another failed first, never a timeout of its own."""
_MPI_PEER_LOST = re.compile(r"\*\*\* An error occurred in (Socket closed)$|"
                            r"mca_btl_tcp_\w+[:\]] (?:readv|recv\(\d+\)) failed: (Connection reset by peer)")
"""Open MPI's TCP layer in a rank whose peer's socket closed because the peer died: Open MPI 5 aborts the rank
(`[algo-1:00000] *** An error occurred in Socket closed`, then mpirun's `process rank 0 ... calling "abort"`),
Open MPI 4 says `mca_btl_tcp_frag_recv: readv failed: Connection reset by peer (104)` (or `recv(36) failed`).
Where it notices before mpirun reports the peer's death, which races it, no line names the peer."""
_LOST_CONNECTION_SAID = "lost its connection to another rank (Open MPI: {}): another rank died first"
_LOST_CONNECTION = re.compile(re.escape(_LOST_CONNECTION_SAID).replace(re.escape("{}"), ".*"))
_COLLECTIVE_TIMEOUT = re.compile(r"Watchdog caught collective operation timeout|NCCL communicator was aborted|"
                                 r"ProcessGroupNCCL.*(timeout|abort)|NCCL (error|timeout)|ncclInternalError|"
                                 r"ncclSystemError|Timed out waiting .*(collective|barrier)|"
                                 r"Timed out waiting \d+ms for (recv|send) operation|"
                                 r"DistStoreError.*[Tt]imed? ?out|"
                                 r"[Cc]ollective operation timeout", re.IGNORECASE)
"""Also gloo's, in a collective a peer never joined (`unbound_buffer.cc:78] Timed out waiting 1800000ms for recv
operation to complete`): the rank that waited is no more the cause than under NCCL's watchdog."""
_NCCL_SYSTEM_ERROR = re.compile(r"unhandled system error|ncclSystemError")
"""NCCL's failed system call (`NCCL error in: ..., unhandled system error`, `ncclSystemError: System call (e.g.
socket, malloc) ... failed`): most often a connection between hosts that was refused or cut, which no timeout
mends; its `Last error:` line names the call."""
_CUDA_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|NCCL.*Cuda failure 'out of "
                       r"memory'")
_DISK_FULL = re.compile(r"No space left on device|\[Errno 28\]|ENOSPC|PytorchStreamWriter failed writing|"
                        r"unexpected pos \d+ vs \d+")
"""A full disk, also as torch.save reports it: its zip writer's `unexpected pos 1641891200 vs 1641891088`."""
_KILLED_BY_SIGKILL = {-9: "killed by SIGKILL (signal 9)",
                      137: "exit 137 is a launcher's or shell's 128 + 9: what it ran was killed by SIGKILL"}
"""A process killed by SIGKILL, as its parent sees it (-9: a rank mpirun or torchrun saw die) and as a launcher or
shell reports it, with its own exit code (the toolkit's `ExitCode 137`)."""
_WORKER_KILLED = re.compile(r"killed by signal: Killed")
"""A DataLoader worker the kernel killed (`DataLoader worker (pid 4567) is killed by signal: Killed.`)."""
_NO_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([^'.]+)[^']*'")
_CANNOT_IMPORT = re.compile(r"ImportError: cannot import name '([^']+)' from '([^'.]+)")
_UNDEFINED_SYMBOL = re.compile(r"ImportError: (?:[^:\s]*/)?(\w+)[^/:\s]*\.so(?:\.\d+)*: undefined symbol")
"""A compiled extension linked against another torch (or library) than the one it is loaded with:
`ImportError: .../flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN3c105Error...`."""
_LAUNCHER_VARIABLE = re.compile(r"environment variable (RANK|WORLD_SIZE|LOCAL_RANK) expected, but not set|"
                                r"KeyError: '(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE)'")
"""A variable torchrun sets and SageMaker does not, read where nothing set it: init_process_group's env://
rendezvous, or the script's own `os.environ["LOCAL_RANK"]`."""
_SAGEMAKER_VARIABLE = re.compile(r"KeyError: '(SM_(?:(CHANNEL|HP)_)?[A-Za-z0-9_-]+)'")
"""An `os.environ["SM_CHANNEL_TEST"]` the job does not set: SageMaker sets one per channel and hyperparameter the
job has, and leaves out the rest."""
_NO_REGION = re.compile(r"NoRegionError: You must specify a region")
"""botocore's refusal of a client without a region: the container sets AWS_REGION, boto3 reads AWS_DEFAULT_REGION."""
_LIGHTNING_WORLD_SIZE = re.compile(r"You set `devices=(\d+)` and `num_nodes=(\d+)` in Lightning, but the product "
                                   r"\(\d+ \* \d+\) does not match the world size \((\d+)\)")
"""Lightning's check of its `Trainer(devices=..., num_nodes=...)` against torchrun's world size: `num_nodes` left at
its default of 1 on a job of several hosts."""
_USAGE_OPTION = re.compile(r"(?:\[|takes |, )(--[A-Za-z0-9][\w-]*)")
"""An option a parser offers: argparse's usage `[--batch-size BATCH_SIZE]`, smtrain's `train.py takes --trainer, --lr`."""
_MESSAGE_LINES = 4
# torchrun's summary: `[0]:` entries with `rank : 5 (local_rank: 1)` and `exitcode : -9 (pid: 123)`.
_TORCHRUN_ENTRY = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)\s*\n\s*exitcode\s*:\s*(-?\d+)")
_TORCHRUN_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+)")
_TORCHRUN_COMMAND = re.compile(r"--nproc[_-]per[_-]node[ =](\d+).*?--node[_-]rank[ =](\d+)")
_MPI_SIGNAL = re.compile(rf"{_MPI_LAUNCHER} noticed that process rank (\d+) with PID \d+ on node (\S+) "
                         r"exited on signal (\d+)".replace(" ", r"\s+"))
"""mpirun's notice of a rank a signal ended: one line in Open MPI 4, broken after `exited on` in Open MPI 5's
help text."""
_MPI_EXIT = re.compile(r"Process name:\s*\[[^\]]*?,(\d+)\]\s*\n\s*Exit code:\s*(-?\d+)")
_MPI_COMMAND = re.compile(r"mpirun .*?(?:-H|--host) (\S+).*? -np (\d+)")
_DAEMON_LOST = re.compile(r"[OP]RTE has lost communication with a remote daemon")
_LOST_DAEMON = re.compile(rf"({_DAEMON_LOST.pattern})\.[\s\S]{{0,400}}?Remote daemon:[^\n]*? on node (\S+)")
"""Open MPI's notice of a host whose daemon died or could not be reached (`PRTE ...`, Open MPI 4's `ORTE ...`):
mpirun ends the job, and the lost host's ranks die with their daemon, without a word of their own."""
_MPI_DAEMON = "Open MPI daemon"
_TOOLKIT_EXIT = re.compile(r"^ExitCode (-?\d+)$")
_CONTAINER_EXIT = re.compile(r"^AlgorithmError: Exit Code: (-?\d+)$")
"""SageMaker's whole FailureReason for a container that exited with that code and left no report of its own (an image
without the training toolkit, or the toolkit's predecessor, sagemaker-containers)."""
_IMAGE_VERSION = re.compile(r":(\d+\.\d+(?:\.\d+)?)-")
_STOP_SIGNALS = {signal.SIGHUP, signal.SIGINT, signal.SIGTERM}
"""Signals a launcher sends to stop the ranks that did not fail: never the root."""

OWN, COLLECTIVE, EXITED, CONSEQUENCE, STOPPED = 0, 1, 2, 3, 4
"""Tiers, strongest first. A rank that exited non-zero without a word (`os._exit(3)`, a C library's `exit(1)`)
leads over a rank that lost its connection: the lost rank reports an error for it, the one that left has none,
and only the one that left can be the peer it lost, whichever launcher's report came first."""


@dataclass(frozen=True)
class Launcher:
    """Who printed a job's lines: the script itself on every host (process), torchrun on every host, or mpirun
    on the first host for every rank; the hosts in algo-N order and the ranks each one runs."""

    kind: str
    hosts: tuple[str, ...]
    per_host: int = 1


@dataclass(frozen=True)
class SourcePaths:
    """Where the hosts' copies of the source dir are (`/opt/ml/code` on SageMaker; each emulated host's code
    directory locally), and how the user's own source dir is shown (`src`); None shows paths relative to it."""

    copies: tuple[str, ...] = (f"{OPT_ML}/code",)
    shown: str | None = None

    @classmethod
    def of(cls, source_dir: str | Path, copies: Sequence[str] = (f"{OPT_ML}/code",)) -> SourcePaths:
        """The source dir as the user wrote it: relative to the working directory when inside it."""
        resolved = Path(source_dir).resolve()
        try:
            shown = str(resolved.relative_to(Path.cwd()))
        except ValueError:
            shown = str(resolved)
        return cls(tuple(copies), shown)

    def user_path(self, path: str) -> str | None:
        """`/opt/ml/code/train.py` -> `src/train.py`; None for a file outside the code (a library's)."""
        rest = self.in_code(path)
        if rest is None:
            return None
        return f"{self.shown.rstrip('/')}/{rest}" if self.shown else rest

    def in_code(self, path: str) -> str | None:
        """`/opt/ml/code/train.py` -> `train.py`, the path inside the source dir; None for a file outside it. A
        relative path (`train.py`: mpirun and mpi4py run the entry point as argv names it) is the code directory's,
        the working directory of every launcher, locally and on SageMaker."""
        if not path.startswith(("/", "<")):
            rest = posixpath.normpath(path)
            return None if rest == ".." or rest.startswith("../") else rest
        for copy in self.copies:
            prefix = copy.rstrip("/") + "/"
            if path.startswith(prefix):
                return path[len(prefix):]
        return None

    @property
    def directory(self) -> Path | None:
        """The user's source dir on this machine, where known: its requirements.txt says which line named a
        requirement pip could not install."""
        return Path(self.shown) if self.shown else None

    def in_text(self, text: str) -> str:
        """`text` with every copy of the code named as the user's source dir."""
        for copy in self.copies:
            text = text.replace(copy.rstrip("/") + "/", f"{self.shown.rstrip('/')}/" if self.shown else "")
        return text

    def in_traceback(self, text: str) -> str:
        """A traceback's text with each frame of a file in the code named as the user's file (a function job's
        `helpers.py` where the user keeps it, not the job's copy); the runner of a function job is smtrain's, no
        file of the user's, and keeps its name."""
        def frame(match: re.Match[str]) -> str:
            path = match["path"]
            user = None if _RUNNER_FRAME.search(path) else self.user_path(path)
            return f'{match["before"]}{user or path}{match["after"]}'

        return _TRACEBACK_FRAME.sub(frame, text)


DISK_FULL = "disk_full"
DATA_DOWNLOAD, ARTIFACT_UPLOAD = "data_download", "artifact_upload"
_NO_DISK_SPACE = re.compile(r"[Dd]isk space|No space left")
"""SageMaker's words for an input download or an artifacts' packing that ran out of disk."""
HUNG = "hung"
"""The category of a local run stopped as hung; `host` and `rank` name the rank the others wait for."""


@dataclass(frozen=True)
class FailureCause:
    """Where a failure started and what to do about it: the same fields for a local run and a SageMaker job."""

    host: str | None
    rank: int | None
    exception: str | None
    """The error as the failing rank printed it (a traceback's last line, argparse's `error:` line, ...)."""
    exit_code: int | None
    location: str | None = None
    """The innermost frame in the user's code, as a path of their source dir: `src/train.py:42`; for an install
    that failed, the line of requirements.txt that names the requirement pip could not install
    (`src/requirements.txt:3`), the file alone where no line names it."""
    category: str = "exit"
    fix: str | None = None
    detail: tuple[str, ...] = ()
    """Lines that belong with the error: argparse's usage, or the last line of a rank that printed no error."""
    launcher: str | None = None
    """Who said it where no rank did: `torchrun agent`."""

    def headline(self) -> str:
        """`algo-2 (rank 1) failed: ValueError: bad shape at src/train.py:42`; `algo-2 (torchrun agent) failed:
        ...` where the agent, not a rank, raised it."""
        if self.category == HUNG and self.exception:
            return self.exception  # a hang's own words (emulator/supervising/stall.py): who waits for whom
        who = f" (rank {self.rank})" if self.rank is not None else f" ({self.launcher})" if self.launcher else ""
        where = (self.host or "the job") + who
        at = f" at {self.location}" if self.location else ""
        if self.exception:
            return f"{where} failed: {self.exception}{at}"
        if (number := _signal_number(self.exit_code)) is not None:
            return f"{where} was killed by signal {number} ({signal_name(number)}){at}"
        return f"{where} exited with code {self.exit_code}{at}"

    def text(self) -> str:
        """The headline, argparse's usage under it, and the fix: what a person reads."""
        lines = [self.headline(), *self.detail]
        if self.fix:
            lines.append(f"fix: {self.fix}")
        return "\n".join(lines)

    def rows(self, reason: str | None = None) -> list[tuple[str, str]]:
        """`status`'s rows: the cause, argparse's usage or the rank's last line, the fix; less those the failure
        reason shown beside them already says (a local run's reason opens with its cause's text), so each is said
        once."""
        rows = [("cause", self.headline())]
        for line in self.detail[:1]:
            key, _, value = line.partition(": ")
            rows.append((key, value))
        rows += [("fix", self.fix)] if self.fix else []
        said = set((reason or "").splitlines())
        return [(key, value) for key, value in rows if value not in said and f"{key}: {value}" not in said]

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> FailureCause:
        """The cause a local run wrote into result.json."""
        return cls(document.get("host"), document.get("rank"), document.get("exception"), document.get("exit_code"),
                   document.get("location"), document.get("category", "exit"), document.get("fix"),
                   tuple(document.get("detail") or ()), document.get("launcher"))

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "rank": self.rank, "exception": self.exception, "exit_code": self.exit_code,
                "location": self.location, "category": self.category, "fix": self.fix, "detail": list(self.detail),
                "launcher": self.launcher, "headline": self.headline()}


@dataclass(frozen=True)
class _Candidate:
    tier: int
    host: str
    rank: int | None
    exception: str | None
    exit_code: int | None
    frames: tuple[tuple[str, int], ...] = ()
    detail: tuple[str, ...] = ()
    tagged: bool = False
    """Printed under the rank's own tag, not among a launcher's lines."""
    launcher: str | None = None
    """The launcher's own error (torchrun's agent), not a rank's."""
    chained: tuple[str, ...] = ()
    """The exceptions the error was raised while handling, or from, oldest first."""
    more: tuple[str, ...] = ()
    """The lines its message goes on over."""

    def order(self, hosts: Sequence[str]) -> tuple[int, bool, bool, int, int, bool]:
        """A rank leads over a launcher, an error over a rank's last words (`detail` only), then the lower rank,
        host and a tagged one."""
        rank = self.rank if self.rank is not None else 1 << 30
        place = hosts.index(self.host) if self.host in hosts else len(hosts)
        return self.tier, self.launcher is not None, self.exception is None, rank, place, not self.tagged


def read_cause(logs: Mapping[str, Sequence[str]], launcher: Launcher, *, exit_codes: Mapping[str, int] | None = None,
               rank_exits: Mapping[tuple[str, int], int] | None = None, source: SourcePaths = SourcePaths(),
               framework_version: str | None = None) -> FailureCause | None:
    """The root cause of a failed job from each host's lines (oldest first), or None where nothing failed.

    Args:
        exit_codes: each host's launcher's exit code, where known (a local run knows them; CloudWatch only has
            what the toolkit logged).
        rank_exits: each rank's exit code (negative: its signal) by host and rank, where recorded (a local MPI
            run's): read as mpirun's notice of the rank is, which a peer's own abort may keep from being printed.
        framework_version: the image's PyTorch version, to name its packages when an import fails.
    """
    logs = {host: rejoined(plain(line) for line in lines) for host, lines in logs.items()}
    hosts = tuple(sorted(logs, key=host_order)) or launcher.hosts
    recorded = rank_exits or {}
    candidates: list[_Candidate] = []
    for host in hosts:
        candidates += _host_candidates(host, list(logs.get(host, ())), launcher, (exit_codes or {}).get(host),
                                       recorded)
    named = {(item.host, item.rank) for item in candidates}
    candidates += [_Candidate(_exit_tier(code), host, rank, None, code) for (host, rank), code in recorded.items()
                   if code != 0 and (host, rank) not in named]
    for host, code in (exit_codes or {}).items():
        if code != 0 and not any(item.host == host for item in candidates):
            candidates.append(_Candidate(_exit_tier(code), host, _host_rank(host, launcher), None, code))
    if not candidates:
        return None
    best = min(candidates, key=lambda item: item.order(launcher.hosts or hosts))
    best, waited_fix = _waited_for(best, candidates, logs, launcher)
    location = (install_location(logs.get(best.host, ()), source) if best.launcher == PIP_INSTALL
                else _location(best.frames, source))
    all_lines = [line for host in hosts for line in logs.get(host, ())]
    category, fix = classify(best.exception, best.exit_code, all_lines, framework_version)
    detail = best.detail
    if best.more:  # a message over several lines: NCCL's `Last error: Cuda failure 'out of memory'` decides
        whole = classify(" ".join((best.exception or "", *best.more)), best.exit_code, all_lines, framework_version)
        if whole[0] != category:
            (category, fix), detail = whole, (*detail, f"message: {' '.join(best.more)}")
    if category == "exception" and (refused := _refused_pairs(best, source)):
        category, fix = "argument_rejected", refused
    if category == "exception" and (earlier := _classified_by_chain(best.chained, all_lines, framework_version,
                                                                    source)):
        category, fix, caused_by = earlier
        detail = (*detail, caused_by)
    exception = source.in_text(best.exception) if best.exception else None
    return FailureCause(best.host, best.rank, exception, best.exit_code, location, category, waited_fix or fix,
                        detail, best.launcher)


def _classified_by_chain(chained: Sequence[str], lines: Sequence[str], framework_version: str | None,
                         source: SourcePaths = SourcePaths()) -> tuple[str, str | None, str] | None:
    """A chain's final exception leads: it is what the script died of, raised through the user's own frames, and
    what a library meant to be read (transformers' `OSError: Can't load config for 'x'`, raised while handling its
    own bare `OSError`), so the streams and the FailureReason both name it. Where it says nothing classifiable (a
    wrapper: a DataLoader's `exited unexpectedly`), the exceptions it was raised while handling or from, nearest
    first, classify it: their category, fix and `caused by:` line, or None where none does."""
    for earlier in reversed(chained):
        category, fix = classify(earlier, None, lines, framework_version)
        if category != "exception":
            return category, fix, f"caused by: {source.in_text(earlier)}"
    return None


def _refused_pairs(best: _Candidate, source: SourcePaths) -> str | None:
    """The fix of a `--key=value`-only script's refusal of SageMaker's pairs (refused_pairs.py), raised in the
    innermost frame of the source dir."""
    inside = next(((rest, line) for path, line in reversed(best.frames) if (rest := source.in_code(path))), None)
    return refused_pairs_fix(best.exception, *inside, source.directory) if inside else None


def _location(frames: Sequence[tuple[str, int]], source: SourcePaths) -> str | None:
    """The innermost frame of the user's code, as `src/train.py:42`: a file of their source dir, never a function
    job's runner; below the runner, also code that travelled by value, named as the notebook named it (its cell:
    `<ipython-input-3-...>:7`, `/tmp/ipykernel_1/123.py:7`), which is no file of the code directory."""
    runner = next((index for index, (path, _) in enumerate(frames) if _RUNNER_FRAME.search(path)), None)
    for index in range(len(frames) - 1, -1, -1):
        path, line = frames[index]
        if _RUNNER_FRAME.search(path):
            continue
        user = source.user_path(path)
        if user is None and runner is not None and index > runner and not _LIBRARY_FRAME.search(path):
            user = path
        if user is not None:
            return f"{user}:{line}"
    return None


def _waited_for(best: _Candidate, candidates: Sequence[_Candidate], logs: Mapping[str, Sequence[str]],
                launcher: Launcher) -> tuple[_Candidate, str | None]:
    """A collective timeout (NCCL's watchdog, gloo's) leads with the rank the others waited for
    (observing/straggler.py), with the fix for it: every rank that entered the collective reports the timeout, the
    lowest of them is no cause. A rank that died by a signal of its own (the OOM killer's SIGKILL) stays the cause,
    the timeout under it."""
    if best.tier != COLLECTIVE or not best.exception:
        return best, None
    lines = [line for host in sorted(logs, key=host_order) for line in logs[host]]
    printed = _printing_ranks(logs, launcher)
    seen = {item.rank: item.host for item in candidates if item.rank is not None and item.launcher is None}
    ran = {*seen, *printed, *_ranks_of_read_hosts(launcher, logs, lines)}
    timeout = collective_timeout(best.exception, lines, ran) or _gloo_timeout(best.exception, candidates, ran)
    if timeout is None:
        return best, None
    if not timeout.missing:
        return replace(best, exception=timeout.said()), None
    rank = timeout.missing[0]
    own = next((item for item in candidates if item.rank == rank and item.launcher is None), None)
    if (own is not None and own.exception is None and own.exit_code is not None
            and _exit_tier(own.exit_code) == COLLECTIVE):  # a signal of its own: the OOM killer's SIGKILL
        return replace(own, detail=(*own.detail, f"then: {timeout.said()}")), None
    host = seen.get(rank) or printed.get(rank) or _rank_host(rank, launcher, best.host, lines)
    return _Candidate(COLLECTIVE, host, rank, timeout.said(), own.exit_code if own else None), timeout.fix()


def _gloo_timeout(exception: str, candidates: Sequence[_Candidate], ran: set[int]) -> CollectiveTimeout | None:
    """gloo's timeout, waited in by each rank whose own error it is, for the ranks that `ran` (as for NCCL's
    watchdog: those the logs show and the rank table's on the hosts whose log was read) that reported none."""
    waiting = {item.rank for item in candidates if item.rank is not None and item.launcher is None
               and item.exception and is_gloo_timeout(item.exception)}
    return gloo_timeout(exception, waiting, ran)


def _printing_ranks(logs: Mapping[str, Sequence[str]], launcher: Launcher) -> dict[int, str]:
    """The host of each rank that printed a line under its own prefix (`[rank3]:`, mpirun's `[1,3]<stdout>:`)."""
    printed: dict[int, str] = {}
    for host, lines in logs.items():
        for line in lines:
            if prefixed := _RANK_PREFIX.match(line):
                printed.setdefault(int(prefixed[1]), host)
            elif tagged := _MPI_TAG.match(line):
                rank = int(tagged[1])
                printed.setdefault(rank, tagged[2].split(",")[0] if tagged[2] else _rank_host(rank, launcher, host,
                                                                                              lines))
    return printed


def ranks_heard_from(logs: Mapping[str, Sequence[str]], launcher: Launcher, *,
                     exit_codes: Mapping[str, int] | None = None,
                     rank_exits: Mapping[tuple[str, int], int] | None = None) -> set[int]:
    """The ranks the lines show ran, however briefly: each that printed under its own prefix, whose own error or
    last words the reader finds, whose exit its launcher reported (torchrun's summary, mpirun's notice) or the MPI
    hooks recorded. A smoke counts them as started: a script that fails at import lives too short a time for a
    process list to show it. torchrun's agent is no rank."""
    logs = {host: rejoined(plain(line) for line in lines) for host, lines in logs.items()}
    recorded = rank_exits or {}
    heard = {*_printing_ranks(logs, launcher), *(rank for _, rank in recorded)}
    for host in sorted({*logs, *(exit_codes or {})}, key=host_order):
        candidates = _host_candidates(host, list(logs.get(host, ())), launcher, (exit_codes or {}).get(host), recorded)
        heard |= {item.rank for item in candidates if item.rank is not None and item.launcher is None}
    return heard


def own_error(cause: FailureCause | None) -> bool:
    """Whether a cause is an error of a rank's own (step 1: a traceback, argparse, CUDA out of memory, a failed
    install), not what may have followed one (a peer's lost connection, a timeout, a signal, a bare exit code):
    where the last lines hold no such error, the one that started the failure may lie before them."""
    if cause is None or cause.exception is None or cause.launcher == TORCHRUN_AGENT:
        return False
    return cause.category == "cuda_out_of_memory" or _tier(cause.exception) == OWN


_ERROR_MARKS = re.compile(r"Error|error|ERROR|Exception|Exit|Interrupt|Failure|Traceback|terminate called|"
                          r"out of memory|Socket closed|Connection reset|NCCL|[Tt]imed? ?out|abort")
"""Something every line that starts an error of a rank's own holds (an exception's last line, argparse's `error:`,
a C++ terminate, CUDA's and NCCL's out of memory, pip's `ERROR:`), and more: a screen, not a reader."""


def may_hold_own_error(lines: Sequence[str]) -> bool:
    """Whether an error of a rank's own could be among these lines: one search at C speed over them all, so that a
    cause window grown by a flood of warnings is not read line by line (`cause_window.screened`)."""
    return _ERROR_MARKS.search("\n".join(lines)) is not None


def printed_by(line: str, rank: int) -> bool:
    """Whether `rank` printed `line` under its own prefix: torch.distributed's `[rankN]:` (put before each line of
    an error that ends a rank, so its traceback), mpirun's `[1,N]<stderr>:`. False for the launcher's lines, the
    other ranks' and the lines no prefix tells apart."""
    tag = _RANK_PREFIX.match(line) or _MPI_TAG.match(line)
    return tag is not None and int(tag[1]) == rank


def classify(exception: str | None, exit_code: int | None, lines: Sequence[str] = (),
             framework_version: str | None = None) -> tuple[str, str | None]:
    """(category, fix) of an error line and exit code: the common causes of a failed training job."""
    text = exception or ""
    if _CUDA_OOM.search(text):
        return "cuda_out_of_memory", ("the GPU ran out of memory: lower the per-device batch size, accumulate "
                                      "gradients over smaller batches, use activation checkpointing or bf16, or an "
                                      "instance type with more GPU memory")
    if _DISK_FULL.search(text):  # before pip's failure: `Could not install packages due to an OSError: [Errno 28]`
        return DISK_FULL, ("a disk of the instance filled up: raise instance.volume_size_gb (the volume under "
                           "/opt/ml: input data, checkpoints, the model), keep fewer checkpoints (the Trainer's "
                           "save_total_limit), and write large files under /opt/ml")
    if _LOST_CONNECTION.search(text):
        return "peer_lost", ("look for the first rank that stopped in the log (`smtrain logs JOB --tail 200`; its "
                             "last lines): its death closed this rank's connection, and Open MPI noticed that "
                             "before mpirun reported it; a rank that stopped without a word was usually killed by the "
                             "kernel's OOM killer: lower the batch size or the DataLoader's num_workers, or pick an "
                             "instance type with more memory")
    if _PEER_EXITED.search(text):
        return "peer_lost", ("this rank lost a peer that exited first (NCCL: remote process exited): the peer's own "
                             "error is the cause; read every host's last lines (`smtrain logs JOB --host algo-N --tail "
                             "50`): a rank that exited without a word was usually killed by the OOM killer")
    if _DAEMON_LOST.search(text):
        return "host_lost", ("mpirun lost this host's Open MPI daemon: the host failed, or the daemon was killed "
                             "with its ranks (on SageMaker usually by the kernel's OOM killer: lower the batch size "
                             "or the DataLoader's num_workers, or pick an instance type with more memory); the "
                             "host's last lines say what it did last")
    if _NCCL_SYSTEM_ERROR.search(text):
        return "nccl_system_error", ("NCCL could not connect the ranks (a system call it made failed: the `Last "
                                     "error:` line under the error names it), which no timeout mends: on a job in "
                                     "a VPC, let the spec's network.security_group_ids allow all inbound and "
                                     "outbound traffic from the security group itself (the hosts talk on any port, "
                                     "EFA's too); set NCCL_DEBUG=INFO under `environment:` in the spec for NCCL to "
                                     "name the interface and peer it tried")
    if _COLLECTIVE_TIMEOUT.search(text):
        return "collective_timeout", ("a collective (all-reduce, barrier) timed out or was aborted: some rank "
                                      "stopped joining it; read the other ranks' last lines for the one that failed "
                                      "or stalled first, and raise the process group's timeout only when a step is "
                                      "legitimately slower (NCCL_DEBUG=INFO names the collective)")
    argparse_error = _ARGPARSE_ERROR.match(text)
    if argparse_error:
        return "argument_rejected", _argparse_fix(argparse_error[2], lines)
    if PIP_FAILURE.search(text):  # before an import error: a package's build may lack a module
        return "requirements_install", pip_fix([text, *lines])
    if extension := _UNDEFINED_SYMBOL.search(text):
        return "import_error", _undefined_symbol_fix(extension[1], framework_version)
    if is_numpy_abi_error(text):
        return "import_error", numpy_abi_fix(lines, framework_version)
    module = _NO_MODULE.search(text) or _CANNOT_IMPORT.search(text)
    if module:
        return "import_error", _import_fix(module, framework_version)
    if unset := _SAGEMAKER_VARIABLE.search(text):
        return "sagemaker_variable", _sagemaker_variable_fix(unset[1], unset[2])
    if variable := _LAUNCHER_VARIABLE.search(text):
        return "launcher_variable", _launcher_variable_fix(variable[1] or variable[2])
    if _NO_REGION.search(text):
        return "no_region", _NO_REGION_FIX
    if mismatch := _LIGHTNING_WORLD_SIZE.search(text):
        return "world_size_mismatch", _lightning_world_size_fix(*(int(number) for number in mismatch.groups()))
    if exit_code in _KILLED_BY_SIGKILL or _WORKER_KILLED.search(text):
        killed = _KILLED_BY_SIGKILL.get(exit_code, "a DataLoader worker was killed by SIGKILL (signal 9)")
        return "oom_killed", (f"{killed}, which on SageMaker is almost always the kernel's OOM killer: lower the "
                              "batch size or the DataLoader's num_workers, or pick an instance type with more memory")
    if (number := _signal_number(exit_code)) is not None and not text:
        return "signal", (f"the process died of {signal_name(number)} without a Python error: "
                          f"{_signal_advice(number)}")
    if text:
        return "exception", None
    return "exit", _exit_fix(exit_code)


def _exit_fix(exit_code: int | None) -> str:
    """What ends a process with a code of its own and no error: a kill reads as a signal (or oom_killed) instead."""
    code = "N" if exit_code is None else str(exit_code)
    return (f"the process ended itself with exit code {code}, without a Python error: `sys.exit({code})` in the "
            f"script (its message, if any, is its last line), `os._exit({code})` in it or in a library it calls "
            "(which skips Python's own error report), or a failing command a shell entry point passed on; the "
            "host's lines before it say what it did last (`smtrain logs JOB --host algo-N --tail 50`)")


def _argparse_fix(message: str, lines: Sequence[str]) -> str:
    unknown = re.match(r"unrecognized arguments: ([^;\n]+)", message)  # a parser may add `; <its usage>`
    if unknown:
        options = unknown[1].split()
        names = [option for option in options if option.startswith("--")]
        shown = ", ".join(names) or unknown[1]
        return (f"the script's argument parser rejects {shown}: name the hyperparameter as the script's option is "
                "spelled (its usage is above; hyphens and underscores differ), add it to the parser, or read it "
                f"with parse_known_args(){_meant_options(names, [message, *lines])}")
    return "the script's argument parser rejects the hyperparameters it was given: compare them with its usage"


def _meant_options(rejected: Sequence[str], lines: Sequence[str]) -> str:
    """`; the script spells --batch_size as --batch-size (hyperparameter batch-size)`, for each rejected option its
    usage (`[--batch-size BATCH_SIZE]`) spells with the other of `-` and `_`, or almost alike."""
    offered = sorted({option for line in lines for option in _USAGE_OPTION.findall(line)})
    meant = []
    for option in rejected:
        alike = [name for name in offered if name.replace("_", "-") == option.replace("_", "-")]
        close = alike or difflib.get_close_matches(option, offered, n=1, cutoff=0.8)
        if close and close[0] != option:
            meant.append(f"{option} as {close[0]} (hyperparameter {close[0][2:]})")
    return f"; the script spells {', '.join(meant)}" if meant else ""


_NO_REGION_FIX = (f"boto3 takes a client's region from {AWS_DEFAULT_REGION} or a profile, never from {AWS_REGION}, "
                  f"and a SageMaker container (and smtrain local) sets only {AWS_REGION}, the job's region: "
                  f"`boto3.client(..., region_name=os.environ[\"{AWS_REGION}\"])`, or set `{AWS_DEFAULT_REGION}: "
                  "<region>` under `environment:` in the spec (docs/sagemaker-contract.md §4)")


def _sagemaker_variable_fix(variable: str, kind: str | None) -> str:
    name = variable.split("_", 2)[2] if kind else ""
    if kind == "CHANNEL":
        return (f"{variable} is set only for a channel named {name.lower()}: add `{name.lower()}: s3://...` under "
                f"`inputs:` in the spec, and for smtrain local `local_inputs: {{{name.lower()}: ./data}}` or --input "
                f"{name.lower()}=PATH; or read it with os.environ.get() where the channel is optional")
    if kind == "HP":
        return (f"{variable} is set only for a hyperparameter the job is given: add `{name.lower()}` under "
                "`hyperparameters:` (its dashes are kept in the name), or read it with os.environ.get() and a default")
    return (f"SageMaker's training toolkit does not set {variable} (docs/sagemaker-contract.md §4 lists what it "
            "sets): set it under `environment:` in the spec, or read it with os.environ.get() and a default")


def _launcher_variable_fix(name: str) -> str:
    return (f"{name} is set by torchrun, not by SageMaker: mode none (the script once per host) and mode mpi "
            "(mpirun) set no RANK, WORLD_SIZE or LOCAL_RANK; use `distribution: {mode: torch_distributed}` "
            "(torchrun, on GPU and Trainium instances), or read the mode's own: in mode none the rank is "
            "json.loads(SM_HOSTS).index(SM_CURRENT_HOST) of len(SM_HOSTS) (MASTER_ADDR and MASTER_PORT are set: "
            "init_process_group('gloo', rank=..., world_size=...)), in mode mpi OMPI_COMM_WORLD_RANK, "
            "OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_LOCAL_RANK")


def _lightning_world_size_fix(devices: int, num_nodes: int, world_size: int) -> str:
    return (f"Lightning's devices x num_nodes ({devices} x {num_nodes}) must equal the job's world size "
            f"({world_size}): the spec's instance.count hosts times the processes the launcher starts on each (one "
            "per GPU); pass num_nodes=instance.count, read in the script as len(json.loads(os.environ['SM_HOSTS'])), "
            "and devices='auto' (or int(os.environ['SM_NUM_GPUS']))")


def _import_fix(match: re.Match[str], framework_version: str | None) -> str:
    module = match[1] if match.re is _NO_MODULE else match[2]
    image = image_packages(framework_version) if framework_version else None
    if image is None:
        return (f"`{module}` is not installed in the image: add its distribution to requirements.txt in the source "
                "dir (the toolkit installs it before the script runs)")
    shipped = image.by_module().get(module)
    if shipped is not None:
        pinned = f" {shipped.version}" if shipped.version else ""
        return (f"the PyTorch {image.framework_version} image ships {shipped.distribution}{pinned} as `{module}`: "
                "the script needs another version; pin it in requirements.txt in the source dir")
    names = ", ".join(sorted(package.module for package in image.packages))
    return (f"the PyTorch {image.framework_version} image has no `{module}` (it ships {names}): add its "
            "distribution to requirements.txt in the source dir")


def _undefined_symbol_fix(extension: str, framework_version: str | None) -> str:
    torch = f"the PyTorch {framework_version} image's torch" if framework_version else "the image's torch"
    return (f"`{extension}` is a compiled extension built against another PyTorch (or CUDA) than the one it was "
            f"loaded with: install the build of its package made for {torch} and CUDA (a version whose wheel names "
            "them, pinned in requirements.txt, or built in the job against the installed torch), and check that "
            "requirements.txt does not replace the image's torch (a package requiring another torch reinstalls it: "
            "pip's `Successfully installed ... torch-...` line in the log)")


def _signal_number(exit_code: int | None) -> int | None:
    """The signal that ended a process: Python reports it as -N, a shell (the toolkit's, mode none's launcher) as
    128 + N, so the same crash reads the same under every launcher."""
    if exit_code is None:
        return None
    if exit_code < 0:
        return -exit_code
    return exit_code - 128 if 128 < exit_code < 128 + 65 else None


def _signal_advice(number: int) -> str:
    if number == signal.SIGSEGV:
        return "a crash in native code (a CUDA kernel, a C extension); run it with CUDA_LAUNCH_BLOCKING=1 to find it"
    if number == signal.SIGABRT:
        return "an abort in native code (often a C++ exception nothing caught); the lines before it name it"
    return "look at the host's last lines for what sent it"


def _host_candidates(host: str, lines: list[str], launcher: Launcher, exit_code: int | None,
                     recorded: Mapping[tuple[str, int], int]) -> list[_Candidate]:
    """Every rank's first error in one host's output, and the launcher's own report of its failed ranks (what it
    printed, else what was `recorded` of the rank)."""
    streams: dict[tuple[str, int | None], list[tuple[int, str]]] = {}
    stderr: dict[tuple[str, int | None], list[tuple[int, str]]] = {}
    """A tagged rank's stderr alone: mpirun forwards stdout and stderr apart, so a line the rank printed before
    its traceback may land inside it."""
    for position, line in enumerate(lines):
        tagged = _MPI_TAG.match(line)
        prefixed = _RANK_PREFIX.match(line)
        if tagged:
            rank = int(tagged[1])
            owner = tagged[2].split(",")[0] if tagged[2] else _rank_host(rank, launcher, host, lines)
            said = _untagged(tagged[4])
            streams.setdefault((owner, rank), []).append((position, said))
            if tagged[3] == "stderr":
                stderr.setdefault((owner, rank), []).append((position, said))
        elif prefixed:
            streams.setdefault((host, int(prefixed[1])), []).append((position, prefixed[2]))
        else:
            streams.setdefault((host, None), []).append((position, line))
    if exit_code is None:  # CloudWatch: the toolkit logs its failed launcher's exit code
        codes = [int(match[1]) for line in lines if (match := _TOOLKIT_EXIT.match(line.strip()))]
        exit_code = codes[-1] if codes else None
    text = "\n".join(lines)
    reported = {(owner, rank): code for owner, rank, code in _launcher_reports(host, text, launcher, lines)}
    said = {(owner, rank): code for (owner, rank), code in recorded.items() if (owner, rank) in streams and code != 0}
    reported = {**said, **reported}
    candidates = []
    for (owner, rank), stream in streams.items():
        tagged = rank is not None
        if rank is None:
            rank = _untagged_rank(host, launcher, reported, lines)
        code = reported.get((owner, rank), exit_code if launcher.kind == PROCESS else None)
        # a stream of one rank's own (mode none's host, a tagged rank) may end in a SystemExit message
        found = (_first_error(stderr.get((owner, rank), [])) or _first_error(stream)
                 or (_last_words(stream, code) if tagged or launcher.kind == PROCESS else None))
        if found is not None and found.by_agent:
            candidates.append(_Candidate(_agent_tier(found.exception), owner, None, found.exception, exit_code,
                                         found.frames, launcher=TORCHRUN_AGENT))
        elif found is not None and not tagged and toolkit_install_failed(found.exception, lines):
            candidates.append(_Candidate(OWN, owner, None, found.exception, exit_code, launcher=PIP_INSTALL))
        elif found is not None and found.exception:
            candidates.append(_Candidate(_tier(found.exception, found.more), owner, rank, found.exception, code,
                                         found.frames, found.detail, tagged, chained=found.chained, more=found.more))
        elif found is not None:
            candidates.append(_Candidate(OWN, owner, rank, None, code, found.frames, found.detail, tagged))
    named = {(item.host, item.rank) for item in candidates}
    for (owner, rank), code in reported.items():
        if (owner, rank) not in named:
            candidates.append(_Candidate(_exit_tier(code), owner, rank, None, code))
    for lost in _LOST_DAEMON.finditer(text):
        candidates.append(_Candidate(COLLECTIVE, lost[2], None, lost[1], exit_code, launcher=_MPI_DAEMON))
    if not candidates and exit_code not in (None, 0):
        candidates.append(_Candidate(_exit_tier(exit_code), host, _host_rank(host, launcher), None, exit_code))
    return candidates


def _untagged(text: str) -> str:
    """A line mpirun tagged, without torch.distributed's `[rankN]:` under the tag: torch prefixes each line of an
    uncaught error (and of its C++ log) after init_process_group, whatever launcher started the rank."""
    prefixed = _RANK_PREFIX.match(text)
    return prefixed[2] if prefixed else text


def _last_words(stream: list[tuple[int, str]], exit_code: int | None) -> _Found | None:
    """What a rank that failed without a Python error printed last: `SystemExit("no data in /opt/ml/input")` prints
    its message and exits 1; `os._exit(3)` or a crash in native code leaves only the line before it (not the
    shell's `Killed` nor faulthandler's dump after it, whose frames locate a crash: crash_lines.py). A rank a
    launcher stopped (SIGTERM) has none: what it printed last says nothing of the failure."""
    number = _signal_number(exit_code)
    if exit_code in (None, 0) or number in _STOP_SIGNALS:
        return None
    said = None
    for _, line in stream:
        if (_TORCHRUN_FAILED.search(line) or line.strip() == _TRACEBACK or line.startswith(DUMP_START)
                or _TOOLKIT_REPORT.search(line)):
            break  # torchrun's or the toolkit's report, or faulthandler's dump of a crash, follows the rank's lines
        if line.strip() and not _LAUNCHER_LINE.search(line) and not shell_notice(line, number):
            said = line.strip()
    frames = dump_frames([line for _, line in stream]) if number is not None else ()
    if said is None and not frames:
        return None
    return _Found("", frames, detail=(f"last line: {said}",) if said else ())


def _tier(exception: str, more: Sequence[str] = ()) -> int:
    if _CUDA_OOM.search(" ".join((exception, *more))):
        return OWN  # also where NCCL reports it, its error's last line: `Cuda failure 'out of memory'`
    if _PEER_EXITED.search(exception) or _LOST_CONNECTION.search(exception):
        return CONSEQUENCE
    if _COLLECTIVE_TIMEOUT.search(exception):
        return COLLECTIVE
    if _CONSEQUENCE.search(exception):
        return CONSEQUENCE
    return OWN


def _agent_tier(exception: str) -> int:
    """The agent's own error: a stop signal it was sent is the stop, never the root; the rest as a rank's."""
    stopped = _STOPPED_BY_SIGNAL.search(exception)
    return STOPPED if stopped and int(stopped[1]) in _STOP_SIGNALS else _tier(exception)


def _exit_tier(code: int) -> int:
    """A fatal signal (not a stop) comes before a plain exit, a plain exit before a stop; an exit code above
    128 + 64 names no signal."""
    number = _signal_number(code)
    if number is None:
        return EXITED
    return STOPPED if number in _STOP_SIGNALS else COLLECTIVE


def _host_rank(host: str, launcher: Launcher) -> int | None:
    """The rank of a host's one process (mode none); None where a host runs several."""
    if launcher.kind == PROCESS and host in launcher.hosts:
        return launcher.hosts.index(host)
    return None


def _rank_host(rank: int, launcher: Launcher, printer: str, lines: Sequence[str]) -> str:
    """The host a rank runs on: mpirun and torchrun place ranks in slots of `per_host`, host after host (on
    SageMaker, their command lines say how many)."""
    hosts, per_host = _placement(launcher, lines)
    index = rank // per_host
    return hosts[index] if 0 <= index < len(hosts) else printer


def _placement(launcher: Launcher, lines: Sequence[str]) -> tuple[tuple[str, ...], int]:
    """The hosts and the ranks each runs, as mpirun's or torchrun's command line in the logs says, else the
    launcher's (the job's description)."""
    hosts, per_host = launcher.hosts, launcher.per_host
    command = next((match for line in lines if (match := _MPI_COMMAND.search(line))), None)
    torchrun = next((match for line in lines if (match := _TORCHRUN_COMMAND.search(line))), None)
    if command:
        hosts = tuple(item.split(":")[0] for item in command[1].split(","))
        per_host = int(command[2]) // max(1, len(hosts))
    elif torchrun:
        per_host = int(torchrun[1])
    return hosts, max(per_host, 1)


def _ranks_of_read_hosts(launcher: Launcher, logs: Mapping[str, Sequence[str]], lines: Sequence[str]) -> set[int]:
    """The rank table's ranks on the hosts whose log was read, even where it held no line (a local run's host whose
    one rank stalled silently until it was stopped): a rank there that printed nothing still ran (the one a
    collective timeout, NCCL's or gloo's, waited for says nothing); a host whose stream is not there says nothing
    of its ranks, so none of them is blamed for a log that was not read."""
    hosts, per_host = _placement(launcher, lines)
    return {rank for rank in range(len(hosts) * per_host) if hosts[rank // per_host] in logs}


def _launcher_reports(host: str, text: str, launcher: Launcher, lines: Sequence[str]) -> list[tuple[str, int, int]]:
    """(host, rank, exit code) of each failed rank the launcher names: torchrun's summary, mpirun's notice."""
    found: list[tuple[str, int, int]] = []
    for match in _TORCHRUN_ENTRY.finditer(text):
        found.append((host, int(match[1]), int(match[3])))
    for match in _MPI_SIGNAL.finditer(text):
        found.append((match[2] if match[2] in launcher.hosts else _rank_host(int(match[1]), launcher, host, lines),
                      int(match[1]), -int(match[3])))
    for match in _MPI_EXIT.finditer(text):
        found.append((_rank_host(int(match[1]), launcher, host, lines), int(match[1]), int(match[2])))
    return found


def _untagged_rank(host: str, launcher: Launcher, reported: Mapping[tuple[str, int], int],
                   lines: Sequence[str]) -> int | None:
    """Which rank printed a host's untagged error: mode none's one process; under torchrun, the lowest rank its
    summary names as failed by itself (not stopped by a signal), else the one local rank it says failed."""
    if launcher.kind == PROCESS:
        return _host_rank(host, launcher)
    own = sorted(rank for (owner, rank), code in reported.items() if owner == host and -code not in _STOP_SIGNALS)
    if own:
        return own[0]
    text = "\n".join(lines)
    failed = _TORCHRUN_FAILED.search(text)
    command = _TORCHRUN_COMMAND.search(text)
    if failed and command:
        return int(command[2]) * int(command[1]) + int(failed[2])
    if failed and host in launcher.hosts:
        return launcher.hosts.index(host) * launcher.per_host + int(failed[2])
    return None


@dataclass(frozen=True)
class _Found:
    exception: str
    frames: tuple[tuple[str, int], ...] = ()
    detail: tuple[str, ...] = ()
    by_agent: bool = False
    """Raised through torchrun's agent's own code: the agent's error, not a rank's."""
    chained: tuple[str, ...] = ()
    """The exceptions it was raised while handling, or from (`During handling of the above exception`)."""
    more: tuple[str, ...] = ()
    """The lines its message goes on over, after its first."""


def _first_error(lines: list[tuple[int, str]]) -> _Found | None:
    """The first error one rank's output reports: a traceback's last line (a chained exception's final one),
    argparse's `error:` line with its usage, a C++ terminate, or an error line printed without a traceback
    (`SystemExit("ValueError: ...")`). The launcher's own ChildFailedError is not the rank's error; an error torchrun's
    agent raised is returned (as the agent's) only where no rank's follows."""
    began = False
    frames: list[tuple[str, int]] = []
    usage: list[str] = []
    agent: _Found | None = None
    syntax: tuple[str, int] | None = None
    """The headerless frame of a syntax error in the main script, until its `SyntaxError:` line."""
    chained: list[str] = []
    wrapper: str | None = None
    """The exception that reraised the one a DataLoader worker raised (`Caught ValueError in DataLoader worker`)."""
    for index, (_, line) in enumerate(lines):
        stripped = line.strip()
        frame = _FRAME.match(line)
        if syntax is not None and not began and line and not line[0].isspace():
            if _SYNTAX_ERROR.match(stripped):
                return _Found(stripped, (syntax,))
            syntax = None
        if line.rstrip() == _TRACEBACK:  # indented, it is another process's (a package's build under pip)
            began, frames, syntax = True, [], None
        elif line.startswith(_TRACEBACK) and (glued := _FRAME.match(line[len(_TRACEBACK):])):
            # NumPy 2's refusal of a module built against 1.x prints the import's stack with its first frame on
            # the header's line
            began, frames, syntax = True, [(glued[1], int(glued[2]))], None
        elif not began and (headerless := _SYNTAX_FRAME.match(line.rstrip())):
            syntax = (headerless[1], int(headerless[2]))
        elif syntax is not None:
            continue  # the code and its carets
        elif stripped in _CHAINED or (began and stripped == _RERAISED):
            frames = []
        elif began and frame:
            frames.append((frame[1], int(frame[2])))
        elif began and line and not line[0].isspace():
            following = next((text.strip() for _, text in lines[index + 1:] if text.strip()), "")
            if following in _CHAINED:
                chained.append(stripped)
                continue
            if following == _RERAISED:
                wrapper = stripped
                continue
            began = False
            if _LAUNCHER_EXCEPTION.search(stripped):
                frames, chained = [], []
                continue
            if any(_AGENT_FRAME.search(path) for path, _ in frames):
                agent = agent or _Found(stripped, tuple(frames), by_agent=True)
                frames, chained = [], []
                continue
            return _Found(stripped, tuple(frames), (f"reraised as: {wrapper}",) if wrapper else (),
                          chained=tuple(chained), more=_message_rest(lines, index))
        elif began:
            continue
        elif stripped.startswith("usage: "):
            usage = [stripped]
        elif usage and line.startswith(" ") and not _ARGPARSE_ERROR.match(stripped):
            usage.append(stripped)
        elif _ARGPARSE_ERROR.match(stripped) and not _LAUNCHER_LINE.search(line):
            return _Found(stripped, (), tuple(usage))
        elif PIP_FAILURE.match(stripped):
            return _Found(pip_failure_line([text for _, text in lines]) or stripped)
        elif (_COLLECTIVE_TIMEOUT.search(stripped) or _CUDA_OOM.search(stripped)) and not _NOTE.match(stripped):
            return _Found(_LOG_PREFIX.sub("", stripped))
        elif lost := _MPI_PEER_LOST.search(stripped):
            return _Found(_LOST_CONNECTION_SAID.format(lost[1] or lost[2]))
        elif _CPP_TERMINATE.match(stripped):
            following = lines[index + 1][1].strip() if index + 1 < len(lines) else ""
            if following.startswith("what():"):
                return _Found(f"{stripped} ({' '.join(following.split())})")
            return _Found(stripped)
        elif EXCEPTION_LINE.match(stripped) and not _LAUNCHER_EXCEPTION.search(stripped):
            return _Found(stripped)
    return agent


def _message_rest(lines: list[tuple[int, str]], index: int) -> tuple[str, ...]:
    """The lines an error's message goes on over after its first (at most a few), up to a blank line, a
    traceback or a launcher's line."""
    rest: list[str] = []
    for _, text in lines[index + 1:index + 1 + _MESSAGE_LINES]:
        stripped = text.strip()
        if (not stripped or stripped == _TRACEBACK or stripped in _CHAINED or _FRAME.match(text)
                or _LAUNCHER_LINE.search(text) or _NOTE.match(stripped)):
            break
        rest.append(stripped)
    return tuple(rest)


@dataclass(frozen=True)
class _DescribedDistribution:
    """The distribution settings a description's `sagemaker_*` hyperparameters give, as the mode table reads a
    spec's (specs.modes.DistributionFields)."""

    processes_per_host: int | None
    custom_mpi_options: str = ""
    instance_groups: tuple[str, ...] = ()


def launcher_of(described: Mapping[str, Any]) -> Launcher:
    """The launcher a job's DescribeTrainingJob (or a local run's status.json) says ran it, with the ranks it
    starts per host by the mode table's rule (one per GPU under torchrun and SMDDP: 8 on an ml.p4d.24xlarge), for
    the instance type the hyperparameters name (`sagemaker_instance_type`), else the job's; a local run's
    `--processes-per-host`, which its status.json records, wins (its request still names the instance's count)."""
    hyperparameters = described.get("HyperParameters") or {}
    resources = described.get("ResourceConfig") or {}
    groups = resources.get("InstanceGroups", [])
    count = resources.get("InstanceCount") or sum(group.get("InstanceCount", 0) for group in groups) or 1
    hosts = tuple(f"algo-{number}" for number in range(1, count + 1))
    instance_type = instance_type_of(described)
    given = _json_value(hyperparameters.get("sagemaker_mpi_num_of_processes_per_host"))
    rules = described_mode(hyperparameters).rules
    per_host = (described.get("LocalRun") or {}).get("processes_per_host") or rules.processes_per_host(
        _DescribedDistribution(int(given) if given else None), lookup(instance_type or ""))
    return Launcher(_LAUNCHER_KINDS[rules.launcher.split()[0]], hosts, per_host)


def instance_type_of(described: Mapping[str, Any]) -> str | None:
    """The instance type the hyperparameters name (`sagemaker_instance_type`), else the job's, else its first
    instance group's."""
    resources = described.get("ResourceConfig") or {}
    groups = resources.get("InstanceGroups", [])
    return (_json_value((described.get("HyperParameters") or {}).get("sagemaker_instance_type"))
            or resources.get("InstanceType") or next((group.get("InstanceType") for group in groups), None))


_FIXED_SIZE = ("on its local NVMe instance store, whose size is fixed (instance.volume_size_gb changes nothing "
               "there)")
_FULL_ON_NVME = {
    DISK_FULL: ("a disk of the instance filled up: an {type} keeps /opt/ml " + _FIXED_SIZE + ": keep fewer "
                "checkpoints (the Trainer's save_total_limit; delete old ones from /opt/ml/checkpoints once "
                "uploaded), write large files under /opt/ml (not / or /tmp), or use an instance type with more "
                "instance storage"),
    DATA_DOWNLOAD: ("the inputs do not fit the instance's storage: an {type} keeps /opt/ml/input, where File mode "
                    "copies every channel before the script starts, " + _FIXED_SIZE + ": stream the inputs instead "
                    "(input_mode: FastFile, or Pipe; in the spec's inputs or for the whole job), or use an instance "
                    "type with more instance storage"),
    ARTIFACT_UPLOAD: ("the script completed, but SageMaker could not pack /opt/ml/model and /opt/ml/output into "
                      "model.tar.gz and output.tar.gz: an {type} keeps them " + _FIXED_SIZE + ": save less there "
                      "(checkpoints go to /opt/ml/checkpoints, uploaded as they are written), or use an instance "
                      "type with more instance storage"),
}
"""The fix of each cause a full disk gives, where the disk is an instance store that volume_size_gb cannot grow."""


def on_its_volume(cause: FailureCause | None, described: Mapping[str, Any]) -> FailureCause | None:
    """A full disk's fix for the SageMaker job's instance type (the script's own writes, the input download before
    it, the artifacts' packing after it): where its /opt/ml is the local NVMe instance store, VolumeSizeInGB
    changes nothing, so raising volume_size_gb would fail the same way again."""
    instance_type = instance_type_of(described)
    if (cause is None or cause.category not in _FULL_ON_NVME or described.get("LocalRun") or not instance_type
            or not local_nvme_volume(instance_type)):
        return cause
    if cause.category != DISK_FULL and not _NO_DISK_SPACE.search(described.get("FailureReason") or ""):
        return cause
    return replace(cause, fix=_FULL_ON_NVME[cause.category].format(type=instance_type))


def _json_value(raw: Any) -> Any:
    """A hyperparameter as SageMaker keeps it (the SDK writes each as JSON text), decoded."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def framework_version_of(described: Mapping[str, Any]) -> str | None:
    """`2.3.0` of `...pytorch-training:2.3.0-gpu-py311`."""
    image = (described.get("AlgorithmSpecification") or {}).get("TrainingImage") or ""
    match = _IMAGE_VERSION.search(image)
    return match[1] if match else None


def max_runtime_cause(limit_seconds: int | None, found: FailureCause | None = None) -> FailureCause:
    """The job ran into its MaxRuntimeInSeconds (the spec's max_run_seconds) and was stopped. Where a rank's own
    error is in the logs (`found`), that error is the cause: the other ranks waited for it until the limit, and a
    higher limit would only have them wait longer."""
    limit = f"max_run_seconds={limit_seconds}"
    if found is not None and found.exception and found.launcher is None and not _CONSEQUENCE.search(found.exception):
        waited = f"then: the other ranks waited for it until MaxRuntimeExceeded ({limit}) stopped the job"
        return replace(found, detail=(*found.detail, waited),
                       fix=found.fix or "fix this error: the run-time limit only ended the wait for it")
    return FailureCause(None, None, f"MaxRuntimeExceeded: the job ran longer than {limit}", None,
                        category="max_runtime",
                        fix=("raise max_run_seconds in the spec, or save checkpoints (checkpoint.s3_uri) so a new "
                             "job resumes where this one stopped"))


def service_cause(described: Mapping[str, Any], found: FailureCause | None = None) -> FailureCause | None:
    """A cause SageMaker itself reports, not the hosts' logs: the run-time limit, spot capacity, the failures
    before the script (the image, the input download, capacity, a quota, SageMaker's own error) and the upload of
    the job's artifacts after it.

    Args:
        found: the cause read from the hosts' logs, where read: a rank's error leads over the run-time limit the
            other ranks ran into waiting for it.
    """
    secondary = described.get("SecondaryStatus")
    reason = described.get("FailureReason") or ""
    transitions = " ".join(item.get("StatusMessage", "") for item in described.get("SecondaryStatusTransitions", []))
    limit = (described.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds")
    if stopped_at_max_runtime(described):
        return max_runtime_cause(limit, found)
    capacity = re.search(r"(InsufficientCapacity\w*|CapacityError|[Ii]nsufficient capacity)[^.\n]*", reason)
    spot = described.get("EnableManagedSpotTraining")
    if secondary == "MaxWaitTimeExceeded" or (spot and capacity) or ("spot" in transitions.lower() and capacity):
        said = capacity[0] if capacity else "MaxWaitTimeExceeded: no spot capacity within MaxWaitTimeInSeconds"
        return FailureCause(None, None, said, None, category="spot_capacity",
                            fix=("SageMaker found no spot capacity for this instance type: raise "
                                 "spot.max_wait_seconds, try another instance type or region, or run on demand "
                                 "(spot.enabled: false)"))
    return _before_the_script(described)


_DATA_DOWNLOAD_FAILED = re.compile(r"ClientError: Data download failed")
_ARTIFACT_UPLOAD_FAILED = re.compile(r"ClientError: Artifact upload failed")
"""SageMaker could not pack or upload /opt/ml/model and /opt/ml/output after the script ended (`ClientError: Artifact
upload failed:Insufficient disk space`): the script itself completed."""
_NO_ROUTE_TO_S3 = ("the instances cannot reach S3 from the job's subnets (network.subnets): give the subnets' route "
                   "table an S3 VPC endpoint or a NAT gateway, and let their security groups and network ACL allow "
                   "outbound traffic to S3")
_SERVICE_FAILURES: tuple[tuple[re.Pattern[str], str, str | Callable[[Mapping[str, Any]], str]], ...] = (
    (re.compile(r"unable to assume the role|unable to perform: sts:AssumeRole"), "execution_role",
     ("SageMaker could not assume the job's execution role: give `role` as the role's full ARN, its path included "
      "(a role the console made is `arn:aws:iam::ACCOUNT:role/service-role/NAME`), and let its trust policy allow "
      "sts:AssumeRole to the service principal sagemaker.amazonaws.com; `smtrain check SPEC` checks both")),
    (IMAGE_PULL, "image_pull", image_pull_fix),
    (KMS_REFUSED, "kms_key", kms_key_fix),
    (MOUNT_FAILED, "file_system_mount", file_system_mount_fix),
    (re.compile(r"CapacityError|InsufficientCapacity|[Ii]nsufficient capacity"), "capacity",
     ("SageMaker had no capacity for this instance type in the region when the job started: submit it again "
      "later, list other types in instance.preferences, use another region, or reserve capacity "
      "(instance.training_plan_arn)")),
    (re.compile(r"ResourceLimitExceeded"), "quota",
     ("an account quota of SageMaker is lower than the job needs: request an increase of the quota it names in "
      "Service Quotas, or use fewer or other instances (`smtrain check SPEC` compares a spec with the quotas)")),
    (re.compile(r"^InternalServerError"), "service_error",
     ("SageMaker failed on its side, not in the script: submit the job again; max_retry_attempts in the spec has "
      "SageMaker retry such a failure by itself")),
)
_DOWNLOAD_FIXES = (
    (re.compile(r"(Connect|Read) timeout on endpoint URL|Could not connect to the endpoint URL|"
                r"Unable to execute request to S3"),
     f"SageMaker could not download an input channel: {_NO_ROUTE_TO_S3}"),
    (re.compile(r"NoSuchKey|NoSuchBucket|\(404\)|does not exist|[Nn]o S3 objects"),
     ("no S3 object is under an input channel's URI: check the spec's inputs (`aws s3 ls URI`), and that the "
      "bucket is in the job's region")),
    (re.compile(r"AccessDenied|\(403\)|Forbidden|KMS"),
     ("the execution role cannot read an input channel: allow it s3:GetObject and s3:ListBucket on the inputs' "
      "bucket (and kms:Decrypt on its key, for a KMS-encrypted bucket)")),
    (_NO_DISK_SPACE,
     ("the inputs do not fit the instance's volume: raise instance.volume_size_gb, or stream them (inputs' "
      "input_mode: FastFile)")),
)


_UPLOAD_FIXES = (
    (_NO_DISK_SPACE,
     ("the script completed, but SageMaker could not pack /opt/ml/model and /opt/ml/output into model.tar.gz and "
      "output.tar.gz on the instance's volume: raise instance.volume_size_gb, or save less there (checkpoints go "
      "to /opt/ml/checkpoints, uploaded as they are written)")),
    (re.compile(r"AccessDenied|\(403\)|Error 403|Forbidden|KMS"),
     ("the script completed, but the execution role cannot write the job's output: allow it s3:PutObject on "
      "output_path's bucket and prefix (and kms:GenerateDataKey on output_kms_key, for an encrypted output)")),
    (re.compile(r"route table|VPC endpoint|NAT"),
     f"the script completed, but {_NO_ROUTE_TO_S3}"),
)


_DOUBLED_SLASH = re.compile(r"(?P<key>s3://\S+) has an illegal char sub-sequence '//'")


def _download_fix(reason: str) -> str:
    """What to do about an input SageMaker could not copy; a key with `//` is named with the key meant."""
    if doubled := _DOUBLED_SLASH.search(reason):
        meant = "s3://" + re.sub("/{2,}", "/", doubled["key"].removeprefix("s3://"))
        return (f"SageMaker refuses '//' in an S3 key, and {doubled['key']} has one (a prefix joined to one that "
                f"ends in /): give that input's URI with single slashes, as in {meant} (`smtrain validate` "
                "refuses a spec's S3 URI with '//')")
    return next((fix for pattern, fix in _DOWNLOAD_FIXES if pattern.search(reason)),
                "SageMaker could not copy an input channel to the instances: check the spec's inputs (their URIs, "
                "region and the role's access to them)")


def _before_the_script(described: Mapping[str, Any]) -> FailureCause | None:
    """What SageMaker's FailureReason names where the hosts' logs cannot: the image, a KMS key, a file system's
    mount, the input download, capacity, a quota or SageMaker's own error before (or beside) the script, often
    before any host wrote a line, and the upload of the job's artifacts after it."""
    reason = described.get("FailureReason") or ""
    if not reason.strip() or reason.startswith("AlgorithmError"):  # the script's: its message may say anything
        return None
    said = reason.strip().splitlines()[0]
    if _DATA_DOWNLOAD_FAILED.search(reason):
        return FailureCause(None, None, said, None, category=DATA_DOWNLOAD, fix=_download_fix(reason))
    if _ARTIFACT_UPLOAD_FAILED.search(reason):
        fix = next((fix for pattern, fix in _UPLOAD_FIXES if pattern.search(reason)),
                   "the script completed, but SageMaker could not upload model.tar.gz and output.tar.gz to "
                   "output_path: check that the bucket exists in the job's region and the role may write to it")
        return FailureCause(None, None, said, None, category=ARTIFACT_UPLOAD, fix=fix)
    for pattern, category, fix in _SERVICE_FAILURES:
        if pattern.search(reason):
            return FailureCause(None, None, said, None, category=category,
                                fix=fix(described) if callable(fix) else fix)
    return None


def stopped_at_max_runtime(described: Mapping[str, Any]) -> bool:
    return (described.get("SecondaryStatus") == "MaxRuntimeExceeded"
            or "MaxRuntimeExceeded" in (described.get("FailureReason") or ""))


def reported_install_cause(described: Mapping[str, Any], source: SourcePaths = SourcePaths()) -> FailureCause | None:
    """The toolkit's FailureReason for an install of requirements.txt that failed, when the logs name nothing. pip's
    first line follows the field's name (`ErrorMessage "ERROR: Could not find ... (from toppkg) ...`): it is read
    on a line of its own, as pip printed it."""
    reason = (described.get("FailureReason") or "").replace('ErrorMessage "', 'ErrorMessage "\n', 1)
    for error_class in ("InstallRequirementsError", "InstallModuleError"):
        if error_class in reason:
            return install_cause(error_class, reason.splitlines(), source)
    return None


def reported_script_cause(described: Mapping[str, Any]) -> FailureCause | None:
    """The toolkit's FailureReason for a script that failed (`ExitCode 137`, the error lines of its `ErrorMessage`)
    where no host's stream holds a cause: the streams expired (the log group's retention) or were never written.
    The message keeps torch.distributed's `[rankN]:` prefix and mpirun's tag, which name the rank; where SageMaker cut the reason
    inside the error's line, the cut word is no evidence: the error is classified without it and said to be cut."""
    reason = plain(described.get("FailureReason") or "")
    codes = [int(match[1]) for line in reason.splitlines()
             if (match := _TOOLKIT_EXIT.match(line.strip()) or _CONTAINER_EXIT.match(line.strip()))]
    message, cut = _toolkit_error_message(reason)
    quoted = [_quoted_rank(line.strip()) for line in message.splitlines()]
    lines = [(index, text) for index, (_, text) in enumerate(quoted)]
    found = _first_error(lines)
    exception = found.exception if found and found.exception else None
    if exception is None and not codes:
        return None
    said_at = next((index for index, text in lines if exception and text and exception.startswith(text)), None)
    chained: tuple[str, ...] = ()
    if exception is not None and said_at is not None:
        exception, said_at, chained = _last_of_chain(lines, exception, said_at)
    rank = quoted[said_at][0] if said_at is not None else None
    exit_code = codes[0] if codes else None
    classified, detail = exception, ()
    if cut and exception and said_at == len(lines) - 1:
        classified = exception.rpartition(" ")[0]  # its last word may be a part of one
        exception, detail = f"{exception}…", (f"{_CUT_REASON}, and they end inside this error's line",)
    elif cut and exception is None:
        detail = (f"{_CUT_REASON}, and they end before the script's error",)
    texts, framework_version = [text for _, text in lines], framework_version_of(described)
    category, fix = classify(classified, exit_code, texts, framework_version)
    if category == "exception" and (earlier := _classified_by_chain(chained, texts, framework_version)):
        category, fix, caused_by = earlier
        detail = (*detail, caused_by)
    return FailureCause(None, rank, exception, exit_code, category=category, fix=fix, detail=detail)


_RANK_ALONE = re.compile(r"^(\[rank\d+\]|\[\d+,[^\]]*\]<std\w+>)$")
"""A rank's blank line (`[rank0]:`, mpirun's `[1,mpirank:0,algo-1]<stderr>:`) as the toolkit quotes it, its colon
stripped."""


def _quoted_rank(line: str) -> tuple[int | None, str]:
    """The rank that printed a line the toolkit quotes, by mpirun's tag or torch's `[rankN]:` prefix (or both, the
    prefix under the tag), and the line without them."""
    line = _RANK_ALONE.sub(r"\1:", line)
    if tagged := _MPI_TAG.match(line):
        return int(tagged[1]), _untagged(_RANK_ALONE.sub(r"\1:", tagged[4].strip()))
    if prefixed := _RANK_PREFIX.match(line):
        return int(prefixed[1]), prefixed[2]
    return None, line
_CHAINED_QUOTED = tuple(separator.rstrip(":") for separator in _CHAINED)
"""The chain's separators as the toolkit's ErrorMessage quotes them: it strips each line's colons at its ends."""


def _last_of_chain(lines: list[tuple[int, str]], exception: str, said_at: int) -> tuple[str, int, tuple[str, ...]]:
    """The exception a chain ends in, where the error read first (`exception`, on line `said_at`) begins one: the
    exception raised while handling it or from it, and so on, with the line it is on and the earlier ones, oldest
    first, as the log reader keeps them. A separator the toolkit dropped as a repeat ends the chain there."""
    chained: list[str] = []
    while (after := _after_separator(lines, said_at)) is not None:
        later = _first_error(lines[after:])
        at = next((index for index, text in lines[after:] if later and later.exception
                   and text and later.exception.startswith(text)), None)
        if later is None or at is None:
            break
        chained.append(exception)
        exception, said_at = later.exception, at
    return exception, said_at, tuple(chained)


def _after_separator(lines: list[tuple[int, str]], said_at: int) -> int | None:
    """Where the traceback after a chain's separator starts, when the next line said after line `said_at` is one."""
    following = next((index for index, text in lines[said_at + 1:] if text), None)
    if following is None or lines[following][1] not in (*_CHAINED, *_CHAINED_QUOTED):
        return None
    return following + 1


_CUT_REASON = "cut: SageMaker keeps the first 1024 characters of a FailureReason"
_TOOLKIT_FIELDS = ('ExtraInfo "', 'Command "')
"""The fields the toolkit writes after ErrorMessage, each on a line of its own (sagemaker_training/errors.py)."""


def _toolkit_error_message(reason: str) -> tuple[str, bool]:
    """The toolkit's `ErrorMessage "..."`, and whether SageMaker cut the reason inside it (it keeps 1024
    characters). The next field ends it; where the cut took that field, no quote can: the message quotes the
    script's lines, a frame's `File "/opt/ml/code/train.py"` among them. A script's output often ends without a line
    break, so the closing quote can sit right after the error."""
    after = reason.partition('ErrorMessage "')[2]
    ends = [index for field in _TOOLKIT_FIELDS if (index := after.find(f'"\n{field}')) >= 0]
    if ends:
        return after[:min(ends)], False
    closed, quote, rest = after.rpartition('"\n')
    if quote and any(field.startswith(rest) for field in _TOOLKIT_FIELDS):  # cut inside the next field's name
        return closed, False
    if after.endswith('"'):  # cut right after the closing quote
        return after[:-1], False
    return after, bool(after)


def install_cause(error_class: str, pip_output: Sequence[str], source: SourcePaths = SourcePaths()) -> FailureCause:
    """The toolkit's install of requirements.txt failed, before the script ran, where no one host is named: a
    local run installs once for all its hosts; a SageMaker job's FailureReason names none. Said as a host's
    failed install in its log is (`pip install`, pip's decisive line, the requirements.txt line), without the
    host."""
    said = pip_failure_line(pip_output) or f"{error_class}: pip could not install requirements.txt"
    return FailureCause(None, None, said, None, install_location(pip_output, source), "requirements_install",
                        pip_fix(pip_output), launcher=PIP_INSTALL)


def install_location(pip_lines: Sequence[str], source: SourcePaths) -> str | None:
    """Where a failed install points in the user's files: the line of requirements.txt (or of a file it
    includes) that names the requirement pip could not install (`src/requirements.txt:3`); requirements.txt alone
    where no one says which line; None where no requirements.txt was installed (a setup.py package alone).

    pip's own word (`Collecting x (from -r requirements.txt (line 3))`) wins over the source dir on this machine:
    it is the file pip read when the job ran, which the source dir may no longer be (edited since), and it names
    what the source dir cannot: a dependency's failure at the line that required it, an include at any depth. The
    source dir answers where pip said nothing (pip < 23.1, a requirement pip found no distribution for) or named a
    file outside the source dir (an include by URL). A job this process did not submit has pip's word only."""
    failed = failed_requirement(pip_lines)
    needed_by = required_by(pip_lines, failed)
    read_at = pip_read_at(pip_lines, failed) or (pip_read_at(pip_lines, needed_by[-1]) if needed_by else None)
    shown_by_pip = source.user_path(read_at.file) if read_at else None
    if read_at and shown_by_pip:
        return f"{shown_by_pip}:{read_at.line}"
    directory = source.directory
    if directory is None:
        return REQUIREMENTS_FILE if installs_requirements_txt(pip_lines) else None
    if not (directory / REQUIREMENTS_FILE).is_file():
        return None
    written = requirement_line(directory, needed_by[0] if needed_by else failed)
    shown = source.user_path(written.file)
    return f"{shown}:{written.line}" if written.line else shown
