"""The SageMaker backend: a thin adapter over `cloud.submission` (schedule) and `cloud.jobs.JobClient` (the rest)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

from orchestrator.backends.base import (
    MetricSeries,
    NewLines,
    StatusReport,
    check_host,
    follow_lines,
    last_lines,
)
from orchestrator.cloud.job_liveness import JobLiveness, is_judged
from orchestrator.cloud.jobs import JobClient, list_jobs
from orchestrator.cloud.logs import why_unread
from orchestrator.cloud.metrics import DEFAULT_PERIOD_SECONDS, NAMESPACE, defined_metric_names
from orchestrator.errors import AwsError
from orchestrator.observing.job_status import TERMINAL_STATUSES, JobStatus, JobSummary
from orchestrator.observing.log_lines import LogLine
from orchestrator.observing.metric_series import refuse_unknown_metrics
from orchestrator.observing.phase_advice import PhaseAdvice, phase_advice
from orchestrator.observing.progress import JobProgress
from orchestrator.observing.root_cause import FailureCause
from orchestrator.planning.plan import Plan
from orchestrator.specs.loader import LoadedSpec


class SageMakerBackend:
    """Jobs on SageMaker in one region, through one boto3 session (default: boto3's chain).

    One `JobClient` per job id, kept: the status read last serves the progress, liveness and failure cause read
    right after it (one DescribeTrainingJob for `smtrain status`), and a job submitted here keeps its submission.
    """

    name = "sagemaker"
    poll_seconds = 30.0

    def __init__(self, boto: Any | None = None, region: str | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        """`say`: told what `submit` is about to do beyond creating the job (the SDK's default bucket)."""
        from orchestrator.cloud.sdk import boto_session

        self.boto = boto or boto_session(region)
        self._say = say
        self._clients: dict[str, JobClient] = {}

    def plan(self, spec: LoadedSpec | Plan) -> Plan:
        from orchestrator.cloud.resolve import plan_on_sagemaker

        return plan_on_sagemaker(spec, self.boto)

    def schedule(self, plan: Plan) -> str:
        from orchestrator.cloud.submission import submit

        created = submit(plan, boto=self.boto, say=self._say)
        self._clients[created.name] = created
        return created.name

    def client(self, job_id: str) -> JobClient:
        """The client of job `job_id` (the one `schedule` made for a job submitted here)."""
        if job_id not in self._clients:
            self._clients[job_id] = JobClient(job_id, self.boto)
        return self._clients[job_id]

    def describe(self, job_id: str) -> JobStatus:
        return self.client(job_id).status()

    def status_report(self, job_id: str, stall_timeout: float | None) -> StatusReport:
        job = self.client(job_id)
        current = job.status()
        progress, unread = _progress_or_why_not(job)
        liveness, unknown = None, None
        if is_judged(current.status, current.secondary_status):
            try:
                liveness = job.liveness(stall_timeout or None, refresh_status=False)
            except AwsError as exc:  # e.g. no logs:GetLogEvents permission (unreadable metrics: unknown only)
                unknown = why_unread(exc)[0]
        advice = self.phase_advice(job_id, None if unread else progress.any_lines)
        return StatusReport(current, progress, unread, liveness, unknown, billed=True,
                            place=[("console", current.console_url)], advice=advice,
                            fields={"liveness": liveness.to_dict() if liveness else None,
                                    "phase_advice": advice.to_dict() if advice else None,
                                    **({"logs_fix": progress.logs_fix} if unread else {})})

    def progress(self, job_id: str, tail_lines: int = 200) -> JobProgress:
        """What the logs say; where they cannot be read (no CloudWatch Logs permissions), what the description
        says, with why and the fix, as `failure_cause()` answers: a notebook gets the status, never the error."""
        return _progress_or_why_not(self.client(job_id), tail_lines)[0]

    def liveness(self, job_id: str, stall_timeout: float, now: datetime) -> JobLiveness | None:
        return self.client(job_id).liveness(stall_timeout, now=now, refresh_status=False)

    def list_jobs(self, status: str | None, name_contains: str | None, max_results: int) -> list[JobSummary]:
        return list_jobs(boto=self.boto, status=status, name_contains=name_contains, max_results=max_results)

    def listed_from(self) -> None:
        return None

    def log_reader(self, job_id: str) -> NewLines:
        return self.client(job_id).log_reader()

    def logs(self, job_id: str, *, follow: bool = False, host: str | None = None, tail: int | None = None,
             poll_seconds: float = 10.0) -> Iterator[LogLine]:
        """A host the job does not have is refused (one DescribeTrainingJob) before any line is read; a host it
        has is the only one whose streams are listed and read."""
        job = self.client(job_id)
        if host is not None:
            check_host(job.status(), host)
        if tail is not None and not follow:
            yield from last_lines(job.tail_lines(tail, host), host, tail)
            return
        yield from follow_lines(job.log_reader(tail, host), lambda: not follow or job.status().is_terminal, host,
                                tail, poll_seconds)

    def metric_series(self, job_id: str, names: list[str] | None = None,
                      period_seconds: int | None = None) -> MetricSeries:
        period = period_seconds or DEFAULT_PERIOD_SECONDS
        job = self.client(job_id)
        points = job.metric_points(names, period)
        assert job.described is not None  # metric_points reads the job first
        refuse_unknown_metrics(names, defined_metric_names(job.described), points, job_id)
        return MetricSeries(points, f"CloudWatch {NAMESPACE}, {period} s averages",
                            empty=_why_none_published(job.described["TrainingJobStatus"]))

    def stop(self, job_id: str) -> tuple[bool, JobStatus]:
        job = self.client(job_id)
        requested = job.stop()
        assert job.last_status is not None  # stop reads the status first
        return requested, job.last_status

    def submission(self, job_id: str) -> Any | None:
        return self.client(job_id).submission

    def failure_cause(self, job_id: str) -> FailureCause | None:
        return self.client(job_id).failure_cause()

    def phase_advice(self, job_id: str, any_lines: bool | None) -> PhaseAdvice | None:
        described = self.client(job_id).described
        return phase_advice(described, any_lines, datetime.now(timezone.utc)) if described else None

    def notices(self, job_id: str) -> list[str]:
        return []

    def artifacts(self, job_id: str) -> dict[str, str]:
        model = self.describe(job_id).model_artifact
        if not model:
            return {}
        return {"model": model, "output": model.rsplit("/", 1)[0] + "/output.tar.gz"}

    def output_files(self, job_id: str, folder: str) -> dict[str, bytes]:
        """The members under `folder/` of the job's output.tar.gz, read from S3 in memory."""
        import io
        import tarfile

        output = self.artifacts(job_id).get("output")
        if not output:
            return {}
        bucket, _, key = output.removeprefix("s3://").partition("/")
        try:
            body = self.boto.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
        except self.boto.client("s3").exceptions.NoSuchKey:
            return {}
        files = {}
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as archive:
            for member in archive.getmembers():
                name = member.name.removeprefix("./")
                if member.isfile() and name.startswith(f"{folder}/") and "/" not in name[len(folder) + 1:]:
                    extracted = archive.extractfile(member)
                    if extracted is not None:
                        files[name[len(folder) + 1:]] = extracted.read()
        return files


def _progress_or_why_not(job: JobClient, tail_lines: int = 200) -> tuple[JobProgress, str | None]:
    """The job's progress, and None; or, where its logs cannot be read (e.g. no logs:GetLogEvents permission), the
    cause its FailureReason gives with why the logs were not read (in short, and the fix), and AWS's whole words."""
    try:
        return job.progress(tail_lines, refresh_status=False), None
    except AwsError as exc:
        said, fix = why_unread(exc)
        return JobProgress(None, failure_cause=job.cause_without_logs(exc.message), any_lines=False,
                           logs_unread=said, logs_fix=fix), exc.message


def _why_none_published(status: str) -> str:
    """An ended job's values may still be on their way, but "yet" alone would hide that the job is over."""
    delay = "SageMaker publishes values a few minutes after the lines are logged"
    if status not in TERMINAL_STATUSES:
        return f"none published yet: {delay}"
    return (f"none published: the job ended ({status}); {delay}, so a job that ended minutes ago may still get "
            "them, and one that ended earlier logged no line its metric definitions match")
