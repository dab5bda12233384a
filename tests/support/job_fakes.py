"""Constants, a stubbed boto3 session and canned responses shared by the job-lifecycle tests."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import yaml
from botocore.stub import Stubber

from orchestrator.cloud.logs import LOG_GROUP, MAX_EVENTS_PER_CALL
from orchestrator.cloud.metrics import NAMESPACE

BUCKET = "smtrain-test"
SECRET = "hunter2-not-for-logs"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
# A minute ago: moto, like CloudWatch, drops events older than 14 days. Stream names end in it, in seconds.
EPOCH = int(time.time()) - 60
T0 = EPOCH * 1000

BASE_SPEC: dict[str, Any] = {
    "name": "tiny",
    "entry_point": "train.py",
    "source_dir": "src",
    "framework_version": "2.3.0",
    "py_version": "py311",
    "role": "arn:aws:iam::123456789012:role/SageMakerExecution",
    "instance": {"type": "ml.c5.2xlarge", "count": 2},
    "hyperparameters": {"epochs": 1, "api-token": SECRET},
    "environment": {"NCCL_DEBUG": "WARN", "WANDB_API_KEY": SECRET},
    "inputs": {"train": f"s3://{BUCKET}/data/train/"},
    "output_path": f"s3://{BUCKET}/outputs/",
    "max_run_seconds": 3600,
}


def write_spec_file(directory: Path, **fields: Any) -> Path:
    """Writes BASE_SPEC updated with `fields`, and its one-file source_dir, into `directory`."""
    source = directory / "src"
    source.mkdir(exist_ok=True)
    (source / "train.py").write_text("print('training')\n")
    document = {**BASE_SPEC, **fields}
    path = directory / f"{document['name']}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def create_jobs(request: dict[str, Any], names: list[str]) -> None:
    """Jobs on moto's server made straight from a planned request: for tests that read jobs, not make them."""
    sagemaker = boto3.client("sagemaker")
    for name in names:
        sagemaker.create_training_job(**{**request, "TrainingJobName": name})


_LOADER = botocore.loaders.create_loader()


def shared_loader_core() -> botocore.session.Session:
    """A botocore session that shares one data loader with every other test session.

    botocore parses its JSON models (endpoints, service shapes) once per loader; a new Session per test would
    parse them again, about a second per test on a busy 2-core machine.
    """
    core = botocore.session.get_session()
    core.register_component("data_loader", _LOADER)
    return core


def shared_loader_session(**kwargs: Any) -> boto3.Session:
    """A boto3 Session on `shared_loader_core`."""
    return boto3.Session(botocore_session=shared_loader_core(), **kwargs)


class StubbedSession(boto3.Session):
    """A real boto3 Session whose sagemaker, s3 and logs clients answer from Stubbers, without network.

    Other clients (the SageMaker SDK makes a runtime and a metrics client it never calls here) are real.
    """

    STUBBED = ("sagemaker", "s3", "logs")

    def __init__(self) -> None:
        super().__init__(
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            botocore_session=shared_loader_core(),
        )
        self.clients = {service: super(StubbedSession, self).client(service) for service in self.STUBBED}
        self.stubbers = {service: Stubber(client) for service, client in self.clients.items()}

    def client(self, service_name: str, *args: Any, **kwargs: Any) -> Any:
        if service_name in self.clients:
            return self.clients[service_name]
        return super().client(service_name, *args, **kwargs)


class SubmittedFrom:
    """What a submit in this process remembers of a job, as a JobClient reads it: the plan, whose spec names
    `source_dir` (the cause reader shows the user's paths against it), and no summary rows."""

    def __init__(self, source_dir: Path) -> None:
        self.plan = SimpleNamespace(source_shown=source_dir)

    def summary_rows(self) -> list[Any]:
        return []


def described(name: str, status: str, secondary: str, **extra: Any) -> dict[str, Any]:
    """A DescribeTrainingJob response with every member botocore requires."""
    return {
        "TrainingJobName": name,
        "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}",
        "ModelArtifacts": {"S3ModelArtifacts": f"s3://{BUCKET}/outputs/{name}/output/model.tar.gz"},
        "TrainingJobStatus": status,
        "SecondaryStatus": secondary,
        "AlgorithmSpecification": {
            "TrainingInputMode": "File",
            "TrainingImage": "pytorch-training:2.3.0-cpu-py311",
        },
        "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "CreationTime": NOW,
        **extra,
    }


def seed_logs(job_name: str, events_by_host: dict[str, list[tuple[int, str]]], base: int | None = None) -> int:
    """Streams as SageMaker names them, `<job>/algo-N-<epoch>`, with (millisecond offset, message) events; the
    offsets count from `base` (seconds since the epoch), by default a minute before this call, not from when this
    module was imported, so that a test's "20 minutes ago" holds however late in the suite it runs. Returns the
    base."""
    base = int(time.time()) - 60 if base is None else base
    logs = boto3.client("logs")
    if not logs.describe_log_groups(logGroupNamePrefix=LOG_GROUP)["logGroups"]:
        logs.create_log_group(logGroupName=LOG_GROUP)
    for host, events in events_by_host.items():
        stream = f"{job_name}/{host}-{EPOCH}"
        logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
        put = [{"timestamp": base * 1000 + offset, "message": text} for offset, text in events]
        for start in range(0, len(put), MAX_EVENTS_PER_CALL):  # in batches, as CloudWatch takes them
            logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream,
                                logEvents=put[start:start + MAX_EVENTS_PER_CALL])
    return base


def seed_lines(job_name: str, lines_by_host: dict[str, list[str]]) -> None:
    """One stream per host, one event per line, a millisecond apart, in the order given (no empty events:
    CloudWatch holds none)."""
    seed_logs(job_name, {host: [(index, line) for index, line in enumerate(lines) if line]
                         for host, lines in lines_by_host.items()})


class SageMakerStubbedSession(StubbedSession):
    """Only the sagemaker client answers from a Stubber (moto creates every job Completed and has no
    StopTrainingJob); logs and cloudwatch clients talk to moto's server, which has CloudWatch Logs and metrics."""

    STUBBED = ("sagemaker",)


GPU_INSTANCE = {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30}


def training(name: str, status: str = "InProgress", secondary: str = "Training", **extra: Any) -> dict[str, Any]:
    """A DescribeTrainingJob response of a 2-host GPU job that entered Training an hour ago."""
    started = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)
    return described(name, status, secondary, ResourceConfig=GPU_INSTANCE, TrainingStartTime=started,
                     SecondaryStatusTransitions=[{"Status": "Training", "StartTime": started,
                                                  "StatusMessage": "Training image download completed."}], **extra)


def seed_host_metrics(job_name: str, values_by_host: dict[str, dict[str, float]], minutes: int = 5) -> None:
    """SageMaker's per-host utilization series (dimension Host = `<job>/algo-N`): one value a minute for the
    last `minutes` minutes, the same each minute."""
    now = dt.datetime.now(dt.timezone.utc)
    boto3.client("cloudwatch").put_metric_data(Namespace=NAMESPACE, MetricData=[
        {"MetricName": metric, "Dimensions": [{"Name": "Host", "Value": f"{job_name}/{host}"}],
         "Timestamp": now - dt.timedelta(minutes=minute), "Value": value, "Unit": "Percent"}
        for host, values in values_by_host.items() for metric, value in values.items() for minute in range(minutes)
    ])
