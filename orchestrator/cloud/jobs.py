"""Training jobs on SageMaker, by name: status, logs, wait, stop, and the list of recent jobs.

`Job` is what `submit` returns and what `Job.attach(name)` rebuilds later (another process, a restarted
notebook). It holds a name and a boto3 session, nothing else that could go stale: each method asks SageMaker
or CloudWatch. What the latest calls read (status, progress, metric values) is remembered only for `repr`,
which never makes a call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

from orchestrator.cloud.aws_errors import aws_errors, is_not_found
from orchestrator.cloud.job_liveness import Clients, JobLiveness, read_liveness
from orchestrator.cloud.logs import LogReader, tail
from orchestrator.cloud.metrics import DEFAULT_PERIOD_SECONDS, cloudwatch_points
from orchestrator.cloud.notebook import LiveSummary, Summary, cloudwatch_logs_url
from orchestrator.cloud.settings_view import setting_rows
from orchestrator.errors import SmtrainError
from orchestrator.observing.log_lines import LogLine
from orchestrator.observing.metric_series import MetricPoint, loss_metrics, to_frame
from orchestrator.observing.progress import (
    FAILURE_READ_LINES,
    CostSoFar,
    JobProgress,
    cost_so_far,
    failure_cause,
    job_progress,
)
from orchestrator.observing.root_cause import FailureCause, SourcePaths
from orchestrator.redact import mask_text, secret_values

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from orchestrator.planning.plan import Plan


class SubmissionSummary(Protocol):
    """What a job created by this process remembers of its submit (cloud.submission.Submission)."""

    plan: Plan

    def summary_rows(self) -> list[tuple[str, str]]: ...

TERMINAL_STATUSES = frozenset({"Completed", "Failed", "Stopped"})
STATUSES = ("InProgress", "Completed", "Failed", "Stopping", "Stopped")


class JobNotFound(SmtrainError):
    """No training job of that name in the region: the name given is wrong, so exit 2 like other bad input."""


def console_url(region: str, job_name: str) -> str:
    return f"https://{region}.console.aws.amazon.com/sagemaker/home?region={region}#/jobs/{job_name}"


@dataclass(frozen=True)
class Transition:
    """One entry of SecondaryStatusTransitions: Starting, Downloading, Training, Uploading, ..."""

    status: str
    message: str
    start: datetime | None
    end: datetime | None


@dataclass(frozen=True)
class JobStatus:
    """What DescribeTrainingJob says about a job, reduced to what a person or a script acts on."""

    name: str
    region: str
    status: str
    secondary_status: str | None
    transitions: tuple[Transition, ...]
    instance_type: str | None
    instance_count: int | None
    billable_seconds: int | None
    failure_reason: str | None
    model_artifact: str | None
    created: datetime | None
    ended: datetime | None
    started: datetime | None = None
    """TrainingStartTime: when the instances were ready and billing began."""
    cost: CostSoFar | None = None
    """Billed so far at on-demand prices, as of this read."""
    settings: tuple[tuple[str, str], ...] = ()
    """What the job's further settings produced (settings_view.setting_rows): selected type, groups, retries, ..."""

    @classmethod
    def from_description(cls, described: dict[str, Any], region: str) -> JobStatus:
        resources = described.get("ResourceConfig", {})
        secrets = secret_values(described.get("Environment", {}), described.get("HyperParameters", {}))
        reason = described.get("FailureReason")
        return cls(
            name=described["TrainingJobName"],
            region=region,
            status=described["TrainingJobStatus"],
            secondary_status=described.get("SecondaryStatus"),
            transitions=tuple(
                Transition(
                    item["Status"], item.get("StatusMessage", ""), item.get("StartTime"), item.get("EndTime")
                )
                for item in described.get("SecondaryStatusTransitions", [])
            ),
            instance_type=resources.get("InstanceType") or resources.get("SelectedInstanceType"),
            instance_count=(resources.get("InstanceCount") or resources.get("SelectedInstanceCount")
                            or sum(group["InstanceCount"] for group in resources.get("InstanceGroups", [])) or None),
            billable_seconds=described.get("BillableTimeInSeconds"),
            failure_reason=mask_text(reason, secrets) if reason else None,
            model_artifact=described.get("ModelArtifacts", {}).get("S3ModelArtifacts"),
            created=described.get("CreationTime"),
            ended=described.get("TrainingEndTime"),
            started=described.get("TrainingStartTime"),
            cost=cost_so_far(described),
            settings=tuple(setting_rows(described, region)),
        )

    @property
    def instances(self) -> str:
        """`2 x ml.g5.12xlarge`, the selected preference's, or `3 in instance groups` (the groups' row lists them)."""
        if self.instance_type is None and self.instance_count:
            return f"{self.instance_count} in instance groups"
        return f"{self.instance_count} x {self.instance_type}"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def console_url(self) -> str:
        return console_url(self.region, self.name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_name": self.name,
            "region": self.region,
            "status": self.status,
            "secondary_status": self.secondary_status,
            "history": [
                {
                    "status": item.status,
                    "message": item.message,
                    "start": _iso(item.start),
                    "end": _iso(item.end),
                }
                for item in self.transitions
            ],
            "instance_type": self.instance_type,
            "instance_count": self.instance_count,
            "billable_seconds": self.billable_seconds,
            "failure_reason": self.failure_reason,
            "model_artifact": self.model_artifact,
            "created": _iso(self.created),
            "started": _iso(self.started),
            "ended": _iso(self.ended),
            "cost_so_far": self.cost.to_dict() if self.cost else None,
            "settings": dict(self.settings),
            "console_url": self.console_url,
        }


@dataclass(frozen=True)
class JobSummary:
    """One row of ListTrainingJobs."""

    name: str
    status: str
    secondary_status: str | None
    created: datetime | None
    ended: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_name": self.name,
            "status": self.status,
            "secondary_status": self.secondary_status,
            "created": _iso(self.created),
            "ended": _iso(self.ended),
        }


class Job:
    """A handle on one training job. `orchestrator.submit(...)` returns one; `Job.attach(name)` finds one."""

    def __init__(self, name: str, boto: Any, submission: SubmissionSummary | None = None) -> None:
        from orchestrator.cloud.sdk import client

        self.name = name
        self.submission = submission
        self._boto = boto
        with aws_errors(f"connecting to SageMaker for job {name}"):
            self._sagemaker = client(boto, "sagemaker")
        self._last_status: JobStatus | None = None
        self._last_progress: JobProgress | None = None
        self._latest_metrics: dict[str, float] = {}
        self._described: dict[str, Any] | None = None
        self._live = LiveSummary()

    @classmethod
    def attach(cls, name: str, *, region: str | None = None, boto: Any | None = None) -> Job:
        """The job called `name` in `region` (default: boto3's chain).

        Raises:
            JobNotFound: there is no such job there.
        """
        from orchestrator.cloud.sdk import boto_session

        job = cls(name, boto or boto_session(region))
        job.status()
        return job

    @property
    def last_status(self) -> JobStatus | None:
        """The status read by the latest call that read one; None before any. Makes no call."""
        return self._last_status

    @property
    def session(self) -> Any:
        """The boto3 session this job is read through."""
        return self._boto

    @property
    def region(self) -> str:
        return self._boto.region_name

    @property
    def console_url(self) -> str:
        return console_url(self.region, self.name)

    def describe(self) -> dict[str, Any]:
        """The raw DescribeTrainingJob response.

        Raises:
            JobNotFound: no job of this name in this region.
        """
        from botocore.exceptions import ClientError

        with aws_errors(f"reading job {self.name}"):
            try:
                return self._sagemaker.describe_training_job(TrainingJobName=self.name)
            except ClientError as exc:
                if is_not_found(exc):
                    raise JobNotFound(
                        f"no training job named {self.name} in {self.region}",
                        fix="check the name with `smtrain list`, and the region (--region or AWS_REGION)",
                    ) from None
                raise

    def status(self) -> JobStatus:
        self._described = self.describe()
        self._last_status = JobStatus.from_description(self._described, self.region)
        self._live.update(self.summary())
        return self._last_status

    def progress(self, tail_lines: int = 200, refresh_status: bool = True) -> JobProgress:
        """Position, rate and ETA from the progress lines in the last `tail_lines` lines of each host's log,
        the latest value of each metric there, and for a failed job the failing host's last lines.

        Args:
            refresh_status: read the status first (metric definitions, hyperparameters, failure); False reuses
                the one read last, when the caller has just read it.
        """
        described = self._read_status_description() if refresh_status or not self._described else self._described
        if described.get("TrainingJobStatus") == "Failed":  # room for every rank's traceback: still one call each
            tail_lines = max(tail_lines, FAILURE_READ_LINES)
        self._last_progress = job_progress(described, self._tails(described, tail_lines), self._source_paths())
        self._latest_metrics.update(self._last_progress.latest)
        self._live.update(self.summary())
        return self._last_progress

    def failure_cause(self) -> FailureCause | None:
        """Where the job failed and why, as a local run says it: the host, the rank, its error, the user's
        file:line and a fix; None while it runs or when it completed. Reads the status (unless a call just read
        it) and the last lines of each host's stream: one DescribeLogStreams page per 50 streams and one
        GetLogEvents call per stream."""
        described = self._described or self._read_status_description()
        if described.get("TrainingJobStatus") != "Failed":  # a limit SageMaker reports: no log read needed
            return failure_cause(described, {})
        return self.progress(refresh_status=False).failure_cause

    def _source_paths(self) -> SourcePaths:
        """The user's source dir when this process submitted the job; else paths relative to it."""
        return SourcePaths.of(self.submission.plan.source.directory) if self.submission else SourcePaths()

    def metric_points(
        self, names: list[str] | None = None, period_seconds: int = DEFAULT_PERIOD_SECONDS
    ) -> list[MetricPoint]:
        """The job's metric series from CloudWatch (`/aws/sagemaker/TrainingJobs`), one average per period.

        Args:
            names: only these metrics; default: the job's metric definitions and whatever else CloudWatch has.
        """
        from orchestrator.cloud.sdk import client

        described = self._read_status_description()
        with aws_errors("connecting to CloudWatch"):
            cloudwatch = client(self._boto, "cloudwatch")
        points = cloudwatch_points(cloudwatch, described, names, period_seconds)
        self._latest_metrics.update((point.metric, point.value) for point in points)
        self._live.update(self.summary())
        return points

    def metrics(self, names: list[str] | None = None, period_seconds: int = DEFAULT_PERIOD_SECONDS) -> Any:
        """The series of `metric_points` as a pandas DataFrame (columns metric, value, timestamp, step, host),
        or as a list of dicts where pandas is not installed."""
        return to_frame(self.metric_points(names, period_seconds))

    def plot(self, names: list[str] | None = None, period_seconds: int = DEFAULT_PERIOD_SECONDS) -> Figure:
        """A matplotlib figure of the job's metrics, one panel each (needs matplotlib: `smtrain[plot]`)."""
        from orchestrator.observing.metric_charts import figure

        points = self.metric_points(names, period_seconds)
        return figure(points, names, title=self.name)

    def liveness(self, stall_timeout: float | None, now: datetime | None = None,
                 refresh_status: bool = True) -> JobLiveness:
        """Moving, slow or hung (`cloud.job_liveness`): when each host last wrote a line, whether its CPUs and GPUs
        work, each host's last lines.

        Args:
            stall_timeout: seconds of silence after which an idle job is hung; None judges nothing (moving).
            now: the time to judge at (default: the clock's).
            refresh_status: read the status first; False reuses the one read last.
        """
        from orchestrator.cloud.sdk import client

        described = self._read_status_description() if refresh_status or not self._described else self._described
        secrets = secret_values(described.get("Environment", {}), described.get("HyperParameters", {}))
        with aws_errors("connecting to CloudWatch"):
            clients = Clients(client(self._boto, "logs"), client(self._boto, "cloudwatch"),
                              mask=lambda text: mask_text(text, secrets))
        return read_liveness(described, clients, now or datetime.now(timezone.utc), stall_timeout)

    def _read_status_description(self) -> dict[str, Any]:
        self.status()
        assert self._described is not None
        return self._described

    def wait(
        self,
        poll_seconds: float = 30.0,
        on_status: Callable[[JobStatus], None] | None = None,
        on_log: Callable[[LogLine], None] | None = None,
    ) -> JobStatus:
        """Polls until the job is Completed, Failed or Stopped; returns that final status.

        Args:
            on_status: called with the status whenever its status or secondary status changes.
            on_log: when given, called with every host's new log lines after each poll.
        """
        reader = self.log_reader() if on_log else None
        seen: tuple[str, str | None] | None = None
        while True:
            current = self.status()
            if self._live.shown:  # shown in a notebook: its summary follows the steps and the loss too
                self.progress(refresh_status=False)
            if on_status and (current.status, current.secondary_status) != seen:
                seen = (current.status, current.secondary_status)
                on_status(current)
            if reader and on_log:
                for line in reader.read_new():
                    on_log(line)
            if current.is_terminal:
                return current
            time.sleep(poll_seconds)

    def logs(self, follow: bool = False, poll_seconds: float = 10.0) -> Iterator[LogLine]:
        """Every host's log lines merged in time order, values of secret-looking variables masked.

        With `follow`, keeps polling until the job has ended and its last lines are read.
        """
        reader = self.log_reader()
        while True:
            # Status first, logs second: the read after a terminal status still gets the final lines.
            ended = not follow or self.status().is_terminal
            yield from reader.read_new()
            if ended:
                return
            time.sleep(poll_seconds)

    def stop(self) -> bool:
        """Asks SageMaker to stop the job if it is running.

        Returns:
            True when a stop was requested; False when the job was not InProgress (already stopping, stopped,
            completed or failed), which is not an error.
        """
        from orchestrator.errors import AwsError

        if self.status().status != "InProgress":
            return False
        try:
            with aws_errors(f"stopping job {self.name}"):
                self._sagemaker.stop_training_job(TrainingJobName=self.name)
        except AwsError:
            # SageMaker refuses to stop a job that ended between our DescribeTrainingJob and the stop.
            if self.status().status != "InProgress":
                return False
            raise
        return True

    def tail_lines(self, lines: int) -> list[LogLine]:
        """The last `lines` lines of each host, hosts in algo-N order: one read per stream, from its end."""
        return [line for host_lines in self._tails(self.describe(), lines).values() for line in host_lines]

    def _tails(self, described: dict[str, Any], lines: int) -> dict[str, list[LogLine]]:
        from orchestrator.cloud.sdk import client

        secrets = secret_values(described.get("Environment", {}), described.get("HyperParameters", {}))
        with aws_errors("connecting to CloudWatch Logs"):
            logs_client = client(self._boto, "logs")
        return tail(logs_client, self.name, lines, mask=lambda text: mask_text(text, secrets))

    def log_reader(self) -> LogReader:
        """A reader of every host's lines not read before (values of secret-looking variables masked)."""
        from orchestrator.cloud.sdk import client

        described = self.describe()
        secrets = secret_values(described.get("Environment", {}), described.get("HyperParameters", {}))
        with aws_errors("connecting to CloudWatch Logs"):
            logs_client = client(self._boto, "logs")
        return LogReader(logs_client, self.name, mask=lambda text: mask_text(text, secrets))

    def __repr__(self) -> str:
        status = self._last_status.status if self._last_status else "not read yet"
        known = "".join(f", {key}={value!r}" for key, value in self._known_progress())
        return f"Job({self.name!r}, region={self.region!r}, status={status!r}{known})"

    def _known_progress(self) -> list[tuple[str, str]]:
        """Progress and the latest loss, as far as calls made earlier have read them."""
        rows = []
        estimate = self._last_progress.estimate if self._last_progress else None
        if estimate:
            rows.append(("progress", estimate.describe(as_of=_clock(estimate.at))))
        for name in loss_metrics(list(self._latest_metrics)):
            rows.append((name, f"{self._latest_metrics[name]:.6g}"))
        return rows

    def summary(self) -> Summary:
        """What the notebook shows, from what earlier calls read (no call)."""
        rows = [("region", self.region)]
        current = self._last_status
        if current:
            rows.append(("instances", current.instances))
            if current.cost and current.cost.total is not None:
                about = "about " if current.cost.estimated else ""
                rows.append(("cost so far", f"{about}{current.cost.currency} {current.cost.total:,.2f}"))
            if current.failure_reason:
                rows.append(("failure", current.failure_reason))
            if self._last_progress and self._last_progress.failure_cause:
                rows += self._last_progress.failure_cause.rows()
            rows += current.settings
        if self.submission:
            rows += self.submission.summary_rows()
        return Summary(title=f"Training job {self.name}", status=current.status if current else None,
                       secondary_status=current.secondary_status if current else None,
                       progress=self._last_progress, latest=dict(self._latest_metrics), rows=rows,
                       links=[("SageMaker console", self.console_url),
                              ("CloudWatch logs", cloudwatch_logs_url(self.region, self.name))])

    def _repr_html_(self) -> str:
        return self.summary().to_html()

    def _ipython_display_(self) -> None:
        """Shown in a notebook: a summary that later status reads update in place."""
        self._live.show(self.summary())


def list_jobs(
    *,
    boto: Any | None = None,
    region: str | None = None,
    status: str | None = None,
    name_contains: str | None = None,
    max_results: int = 20,
) -> list[JobSummary]:
    """The most recent training jobs, newest first, filtered by status and a substring of the name."""
    from orchestrator.cloud.sdk import boto_session, client

    filters: dict[str, Any] = {"SortBy": "CreationTime", "SortOrder": "Descending"}
    if status:
        filters["StatusEquals"] = status
    if name_contains:
        filters["NameContains"] = name_contains
    summaries: list[JobSummary] = []
    with aws_errors("listing training jobs"):
        sagemaker = client(boto or boto_session(region), "sagemaker")
        for page in sagemaker.get_paginator("list_training_jobs").paginate(
            **filters, PaginationConfig={"PageSize": min(max_results, 100)}
        ):
            summaries += [
                JobSummary(
                    item["TrainingJobName"],
                    item["TrainingJobStatus"],
                    item.get("SecondaryStatus"),
                    item.get("CreationTime"),
                    item.get("TrainingEndTime"),
                )
                for item in page["TrainingJobSummaries"]
            ]
            if len(summaries) >= max_results:
                break
    return summaries[:max_results]


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _clock(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%H:%M:%S UTC")
