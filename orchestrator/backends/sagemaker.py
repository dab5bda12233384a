"""The SageMaker backend: a thin adapter over `cloud.submission` (schedule) and `cloud.jobs.Job` (the rest)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from orchestrator.backends.base import last_lines
from orchestrator.cloud.jobs import Job as CloudJob
from orchestrator.cloud.jobs import JobStatus
from orchestrator.observing.log_lines import LogLine
from orchestrator.observing.metric_series import MetricPoint
from orchestrator.observing.root_cause import FailureCause
from orchestrator.planning.plan import Plan
from orchestrator.spec.loader import LoadedSpec
from orchestrator.spec.model import JobSpec


class SageMakerBackend:
    """Jobs on SageMaker in one region, through one boto3 session (default: boto3's chain)."""

    name = "sagemaker"

    def __init__(self, boto: Any | None = None, region: str | None = None) -> None:
        from orchestrator.cloud.sdk import boto_session

        self.boto = boto or boto_session(region)

    def plan(self, spec: LoadedSpec | JobSpec | Plan) -> Plan:
        from orchestrator.cloud.resolve import resolve
        from orchestrator.planning.plan import build_plan

        if isinstance(spec, Plan):
            if spec.target.output_path.startswith("s3://"):
                return spec
            completed, target = resolve(spec.spec, self.boto)
            return build_plan(completed, target, job_name=spec.job_name)
        completed, target = resolve(spec, self.boto)
        return build_plan(completed, target)

    def schedule(self, plan: Plan) -> str:
        from orchestrator.cloud.submission import submit

        return submit(plan, boto=self.boto).name

    def job(self, job_id: str) -> CloudJob:
        return CloudJob(job_id, self.boto)

    def describe(self, job_id: str) -> JobStatus:
        return self.job(job_id).status()

    def logs(self, job_id: str, *, follow: bool = False, host: str | None = None, tail: int | None = None,
             poll_seconds: float = 10.0) -> Iterator[LogLine]:
        job = self.job(job_id)
        if tail is not None and not follow:
            yield from last_lines(job.tail_lines(tail), host, tail)
            return
        reader = job.log_reader()
        first = True
        while True:
            # Status first, logs second: the read after a terminal status still gets the final lines.
            ended = not follow or job.status().is_terminal
            lines = reader.read_new()
            yield from last_lines(lines, host, tail) if first else (line for line in lines if host in (None, line.host))
            first = False
            if ended:
                return
            time.sleep(poll_seconds)

    def metric_points(self, job_id: str, names: list[str] | None = None) -> list[MetricPoint]:
        return self.job(job_id).metric_points(names)

    def stop(self, job_id: str) -> bool:
        return self.job(job_id).stop()

    def failure_cause(self, job_id: str) -> FailureCause | None:
        return self.job(job_id).failure_cause()

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

