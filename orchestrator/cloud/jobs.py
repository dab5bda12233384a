"""A SageMaker training job read by name: the client `backends.sagemaker.SageMakerBackend` answers through.

`JobClient` holds a name and a boto3 session, and the description it read last (so that one status read serves
the progress, the failure cause and the liveness read right after it). It reads and stops; waiting, following,
summaries and charts belong to the one job handle, `orchestrator.Job` (backends/job.py).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

from orchestrator.cloud.aws_errors import aws_errors, is_not_found
from orchestrator.cloud.job_liveness import Clients, JobLiveness, read_liveness
from orchestrator.cloud.logs import CAUSE_MOST_CALLS, LogReader, StreamEnds, tail
from orchestrator.cloud.metrics import DEFAULT_PERIOD_SECONDS, cloudwatch_points
from orchestrator.errors import AwsError
from orchestrator.observing.job_status import JobNotFound, JobStatus, JobSummary
from orchestrator.observing.log_lines import LogLine
from orchestrator.observing.metric_series import MetricPoint
from orchestrator.observing.progress import (
    JobProgress,
    cause_in_logs,
    failure_cause,
    job_progress,
    read_back_progress,
)
from orchestrator.observing.root_cause import FailureCause, SourcePaths
from orchestrator.observing.sagemaker_text import shown_training_job, training_job_secrets
from orchestrator.redact import mask_text

if TYPE_CHECKING:
    from orchestrator.planning.plan import Plan


class SubmissionSummary(Protocol):
    """What a job created by this process remembers of its submit (cloud.submission.Submission)."""

    plan: Plan

    def summary_rows(self) -> list[tuple[str, str]]: ...


class JobClient:
    """Reads (and stops) one training job: describe, status, log tails and a reader of new lines, metric points,
    liveness, the failure cause's inputs. `cloud.submission.submit` returns one, with `.submission`."""

    def __init__(self, name: str, boto: Any, submission: SubmissionSummary | None = None) -> None:
        from orchestrator.cloud.sdk import client

        self.name = name
        self.submission = submission
        self._boto = boto
        with aws_errors(f"connecting to SageMaker for job {name}"):
            self._sagemaker = client(boto, "sagemaker")
        self._last_status: JobStatus | None = None
        self._described: dict[str, Any] | None = None

    @property
    def last_status(self) -> JobStatus | None:
        """The status read by the latest call that read one; None before any. Makes no call."""
        return self._last_status

    @property
    def described(self) -> dict[str, Any] | None:
        """The DescribeTrainingJob response read by the latest call that read one; None before any. Makes no call."""
        return self._described

    @property
    def session(self) -> Any:
        """The boto3 session this job is read through."""
        return self._boto

    @property
    def region(self) -> str:
        return self._boto.region_name

    def describe(self) -> dict[str, Any]:
        """The DescribeTrainingJob response, its free text (failure reason, status messages) shown as smtrain
        shows a job's text: plain and masked (observing/sagemaker_text.py), for every reader after it.

        Raises:
            JobNotFound: no job of this name in this region.
        """
        from botocore.exceptions import ClientError

        with aws_errors(f"reading job {self.name}"):
            try:
                return shown_training_job(self._sagemaker.describe_training_job(TrainingJobName=self.name))
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
        return self._last_status

    def progress(self, tail_lines: int = 200, refresh_status: bool = True) -> JobProgress:
        """Position, rate and ETA from the progress lines in the last `tail_lines` lines of each host's log,
        the latest value of each metric there, and for a failed job the failing host's last lines.

        Args:
            refresh_status: read the status first (metric definitions, hyperparameters, failure); False reuses
                the one read last, when the caller has just read it.
        """
        described = self._read_status_description() if refresh_status or not self._described else self._described
        if not cause_in_logs(described):
            return job_progress(described, self._tails(described, tail_lines), self._source_paths())
        return read_back_progress(described, self._stream_ends(described), tail_lines, self._source_paths())

    def failure_cause(self) -> FailureCause | None:
        """Where the job failed and why, as a local run says it: the host, the rank, its error, the user's
        file:line and a fix; None while it runs or when it completed. Reads the status (unless a call just read
        it) and the last lines of each host's stream: one DescribeLogStreams page per 50 streams and one
        GetLogEvents call per stream, more (CAUSE_MOST_CALLS at most) where those hold no error of a rank's own. A cause the status names (no spot capacity, an input download that failed:
        hosts that may never have started) reads no logs; the run-time limit does, for a rank's error the others
        waited for until it."""
        described = self._described or self._read_status_description()
        if not cause_in_logs(described):
            return failure_cause(described, {})
        try:
            return self.progress(refresh_status=False).failure_cause
        except AwsError as exc:  # e.g. no logs:DescribeLogStreams permission: the FailureReason may still say it
            said = self.cause_without_logs(exc.message)
            if said is None:
                raise
            return said

    def cause_without_logs(self, unread: str) -> FailureCause | None:
        """The cause the job's description alone gives (the toolkit's exit code and error lines in the
        FailureReason, the run-time limit, spot capacity), for a job whose logs could not be read (`unread` says
        why, last in its `detail`): a user without CloudWatch Logs permissions still learns what ended the job.
        Reads the status only if no call has read it."""
        described = self._described or self._read_status_description()
        cause = failure_cause(described, {}, self._source_paths())
        return replace(cause, detail=(*cause.detail, f"logs unread: {unread}")) if cause else None

    def _source_paths(self) -> SourcePaths:
        """The user's source dir when this process submitted the job; else paths relative to it."""
        return SourcePaths.of(self.submission.plan.source_shown) if self.submission else SourcePaths()

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
        return cloudwatch_points(cloudwatch, described, names, period_seconds)

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
        secrets = training_job_secrets(described)
        with aws_errors("connecting to CloudWatch"):
            clients = Clients(client(self._boto, "logs"), client(self._boto, "cloudwatch"),
                              mask=lambda text: mask_text(text, secrets))
        return read_liveness(described, clients, now or datetime.now(timezone.utc), stall_timeout)

    def _read_status_description(self) -> dict[str, Any]:
        self.status()
        assert self._described is not None
        return self._described

    def stop(self) -> bool:
        """Asks SageMaker to stop the job if it is running.

        Returns:
            True when a stop was requested; False when the job was not InProgress (already stopping, stopped,
            completed or failed), which is not an error.
        """
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

    def tail_lines(self, lines: int, host: str | None = None) -> list[LogLine]:
        """The last `lines` lines of each host (only `host`'s streams read when given), hosts in algo-N order: one
        read per stream, from its end."""
        return [line for host_lines in self._tails(self.describe(), lines, host).values() for line in host_lines]

    def _tails(self, described: dict[str, Any], lines: int, host: str | None = None) -> dict[str, list[LogLine]]:
        from orchestrator.cloud.sdk import client

        secrets = training_job_secrets(described)
        with aws_errors("connecting to CloudWatch Logs"):
            logs_client = client(self._boto, "logs")
        return tail(logs_client, self.name, lines, mask=lambda text: mask_text(text, secrets), host=host)

    def _stream_ends(self, described: dict[str, Any]) -> StreamEnds:
        """Every host's streams, read backward as far as a search for the failure's cause needs, within
        CAUSE_MOST_CALLS calls each."""
        from orchestrator.cloud.sdk import client

        secrets = training_job_secrets(described)
        with aws_errors("connecting to CloudWatch Logs"):
            logs_client = client(self._boto, "logs")
        return StreamEnds(logs_client, self.name, lambda text: mask_text(text, secrets), CAUSE_MOST_CALLS)

    def log_reader(self, tail: int | None = None, host: str | None = None) -> LogReader:
        """A reader of every host's lines not read before (values of secret-looking variables masked), its
        first read each stream's last `tail` lines if given; only `host`'s streams listed and read when given."""
        from orchestrator.cloud.sdk import client

        described = self.describe()
        secrets = training_job_secrets(described)
        with aws_errors("connecting to CloudWatch Logs"):
            logs_client = client(self._boto, "logs")
        return LogReader(logs_client, self.name, mask=lambda text: mask_text(text, secrets), tail=tail, host=host)



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
