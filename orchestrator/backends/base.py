"""The interface both executors implement, and the one status vocabulary they report in.

A backend takes a `Plan` (TorchX's shape: `schedule(plan(spec))`, the plan inspectable in between) and answers
for the job by its id: a SageMaker job's name, or a local run's directory. `describe` returns
`observing.job_status.JobStatus` for both: SageMaker's TrainingJobStatus and SecondaryStatus with its transitions,
which a local run writes as it goes (`emulator/supervising/status.py`). Every verb of the command line and every
method of `orchestrator.Job` is a call here, so neither ever asks which backend it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from orchestrator.errors import SmtrainError

if TYPE_CHECKING:
    from orchestrator.cloud.job_liveness import JobLiveness
    from orchestrator.observing.job_status import JobStatus, JobSummary
    from orchestrator.observing.progress import JobProgress
    from orchestrator.observing.log_lines import LogLine
    from orchestrator.observing.metric_series import MetricPoint
    from orchestrator.observing.phase_advice import PhaseAdvice
    from orchestrator.observing.root_cause import FailureCause
    from orchestrator.planning.plan import Plan
    from orchestrator.specs.loader import LoadedSpec

BACKENDS = ("local", "sagemaker")


class NewLines(Protocol):
    """Every host's lines not read before, at each call (a follow loop's source of lines), as they are read."""

    def read_new(self) -> Iterable[LogLine]: ...


@dataclass(frozen=True)
class MetricSeries:
    """A job's metric points, where they were read (`local run NAME`, `CloudWatch ..., 60 s averages`) and what
    the reading noticed on the way (skipped lines, TensorBoard files), for the person who asked."""

    points: list[MetricPoint]
    source: str
    notes: list[str] = field(default_factory=list)
    empty: str = "no point has been read yet"
    """Why there is no point, as only its place knows (CloudWatch publishes late; a finished local run's lines
    matched no definition), said when `points` is empty."""


@dataclass(frozen=True)
class StatusReport:
    """What `smtrain status` shows of one job: its status, progress from its logs' last lines, the liveness of a
    training job, and the rows only its place has (billing; the console link or the run directory)."""

    status: JobStatus
    progress: JobProgress | None
    unread: str | None = None
    """Why the logs could not be read (then `progress` holds at most what the job's description says)."""
    liveness: JobLiveness | None = None
    liveness_unknown: str | None = None
    """Why the liveness of a training job could not be judged."""
    billed: bool = False
    place: list[tuple[str, str]] = field(default_factory=list)
    advice: PhaseAdvice | None = None
    """A phase that has lasted far longer than it usually does, judged, with its fix (SageMaker jobs)."""
    fields: dict[str, Any] = field(default_factory=dict)
    """What the JSON document holds besides the status and the progress."""

    def to_dict(self, now: datetime) -> dict[str, Any]:
        progress = self.progress.to_dict(now) if self.progress else {"progress": None}
        unread = {"logs_unreadable": self.unread} if self.unread or not self.progress else {}
        return {**self.status.to_dict(), **progress, **unread, **self.fields}


class Backend(Protocol):
    """Runs planned jobs somewhere and answers for them by id."""

    name: str
    """`local` or `sagemaker`."""
    poll_seconds: float
    """How often `Job.wait` reads the status unless told: a local run's file is cheap to read, SageMaker's
    DescribeTrainingJob is a throttled API call."""

    def plan(self, spec: LoadedSpec | Plan) -> Plan:
        """The plan for this place (a given plan is planned again where its target is another place's)."""
        ...

    def schedule(self, plan: Plan) -> str:
        """Starts the planned job; returns its id at once (the job runs on)."""
        ...

    def describe(self, job_id: str) -> JobStatus: ...

    def status_report(self, job_id: str, stall_timeout: float | None) -> StatusReport:
        """The status, read once, with what `smtrain status` shows beside it."""
        ...

    def progress(self, job_id: str, tail_lines: int = 200) -> JobProgress:
        """How far the job is, from each host's last `tail_lines` lines and the status read last."""
        ...

    def liveness(self, job_id: str, stall_timeout: float, now: datetime) -> JobLiveness | None:
        """Moving, slow or hung, judged from outside; None where the job judges itself (a local run's own stall
        timeout stops it: `emulator/supervising/stall.py`)."""
        ...

    def list_jobs(self, status: str | None, name_contains: str | None, max_results: int) -> list[JobSummary]:
        """The most recent jobs there, newest first."""
        ...

    def listed_from(self) -> str | None:
        """Where `list_jobs` looked, said under a listing (a local backend's folder); None where it goes without
        saying (SageMaker's region is the user's own)."""
        ...

    def log_reader(self, job_id: str) -> NewLines:
        """A reader of every host's lines not read before: what a follow loop reads after each status."""
        ...

    def logs(self, job_id: str, *, follow: bool = False, host: str | None = None, tail: int | None = None,
             poll_seconds: float = 10.0) -> Iterator[LogLine]:
        """Every host's lines (or one host's), the last `tail` per host, and with `follow` until the end."""
        ...

    def metric_series(self, job_id: str, names: list[str] | None = None,
                      period_seconds: int | None = None) -> MetricSeries:
        """The job's metric points (`period_seconds`: SageMaker's seconds per CloudWatch average)."""
        ...

    def stop(self, job_id: str) -> tuple[bool, JobStatus]:
        """Asks the job to stop: whether a stop was requested (not when it was not running, which is not an error),
        and the status it was in."""
        ...

    def submission(self, job_id: str) -> Any | None:
        """What `schedule` sent for a job scheduled here (`cloud.submission.Submission`); None otherwise."""
        ...

    def artifacts(self, job_id: str) -> dict[str, str]:
        """Where the model and output archives are (or will be): `model`, `output`."""
        ...

    def output_files(self, job_id: str, folder: str) -> dict[str, bytes]:
        """The files of the output data folder `folder` (a host's SM_OUTPUT_DATA_DIR/folder), by name: every
        host's locally; what output.tar.gz holds on SageMaker."""
        ...

    def failure_cause(self, job_id: str) -> FailureCause | None:
        """Where a failed job failed and why (observing/root_cause.py); None while it runs or when it completed."""
        ...

    def phase_advice(self, job_id: str, any_lines: bool | None) -> PhaseAdvice | None:
        """A phase the job has stayed in far longer than usual, judged with its fix, from the status last read (no
        call); `any_lines`: whether its logs hold a line (None: not read). None where nothing is judged (a local
        run's phases are this machine's)."""
        ...

    def notices(self, job_id: str) -> list[str]:
        """What the job's start said about how it runs (a local run: the CPU stand-in, the deviations), as
        `smtrain local` prints it; none for SageMaker."""
        ...


def check_host(current: JobStatus, host: str | None) -> None:
    """Refuses a host the job does not have: its lines will never come, so "no lines yet" would mislead."""
    if host is None or not current.hosts or host in current.hosts:
        return
    hosts = current.hosts
    named = ", ".join(hosts) if len(hosts) <= 8 else f"{hosts[0]} to {hosts[-1]}"
    raise SmtrainError(f"{current.name} has no host {host}: its hosts are {named}",
                       fix=f"name one of them (e.g. {hosts[-1]}), or none for every host's lines")


def follow_lines(reader: NewLines, ended: Callable[[], bool], host: str | None, tail: int | None,
                 poll_seconds: float) -> Iterator[LogLine]:
    """The one log-follow loop of both backends: new lines from `reader` until `ended()` (read first, so that the
    read after the end still gets the last lines); one host's (or all), the first read cut to the last `tail`."""
    import time

    first = True
    while True:
        done = ended()
        if first and tail is not None:  # each reader starts at the last lines, read from the end
            yield from last_lines(list(reader.read_new()), host, tail)
        else:  # handed on as they are read: a log of gigabytes is never held whole
            yield from (line for line in reader.read_new() if host in (None, line.host))
        first = False
        if done:
            return
        time.sleep(poll_seconds)


def last_lines(lines: list[LogLine], host: str | None, tail: int | None) -> list[LogLine]:
    """One host's lines (or all), the last `tail` of each host, in the order given."""
    kept = [line for line in lines if host in (None, line.host)]
    if tail is None:
        return kept
    counts: dict[str, int] = {}
    for line in kept:
        counts[line.host] = counts.get(line.host, 0) + 1
    seen: dict[str, int] = {}
    result = []
    for line in kept:
        seen[line.host] = seen.get(line.host, 0) + 1
        if seen[line.host] > counts[line.host] - tail:
            result.append(line)
    return result
