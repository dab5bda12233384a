"""What a training job's status is, in SageMaker's words, for both places a job runs.

DescribeTrainingJob's TrainingJobStatus and SecondaryStatus with their transitions: SageMaker answers in them, and a
local run writes them as it goes (`emulator/supervising/status.py`), so `JobStatus.from_description` reads both.
Here, below the emulator and the cloud client, because both backends report in it and the CLI renders it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from orchestrator.errors import SmtrainError
from orchestrator.observing.progress import CostSoFar, cost_so_far
from orchestrator.observing.settings_view import setting_rows

# DescribeTrainingJob's TrainingJobStatus and SecondaryStatus (botocore's sagemaker model, 2026-11).
STATUSES = ("InProgress", "Completed", "Failed", "Stopping", "Stopped")
SECONDARY_STATUSES = (
    "Starting", "LaunchingMLInstances", "PreparingTrainingStack", "Downloading", "DownloadingTrainingImage",
    "Training", "Uploading", "Stopping", "Stopped", "MaxRuntimeExceeded", "Completed", "Failed", "Interrupted",
    "MaxWaitTimeExceeded", "Updating", "Restarting", "Pending",
)
LOCAL_REGION = "local"
"""The region a local run's status reports: this machine."""
TERMINAL_STATUSES = frozenset({"Completed", "Failed", "Stopped"})


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
        """The status of a description whose free text is already shown (sagemaker_text.shown_training_job: the
        cloud's reader and a local run's both give it so)."""
        resources = described.get("ResourceConfig", {})
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
            failure_reason=described.get("FailureReason") or None,
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
    def hosts(self) -> tuple[str, ...]:
        """`algo-1` to `algo-N`, one per instance (every group's, numbered on); none while the count is unknown."""
        return tuple(f"algo-{number}" for number in range(1, (self.instance_count or 0) + 1))

    def __repr__(self) -> str:
        """One line for a notebook cell: `JobStatus('mlp-1', InProgress (Training), 2 x ml.c5.2xlarge, cost so far
        about USD 0.12)`, a failed job's reason cut short and where its cause and fix are (the dataclass's own repr
        ran to every transition and setting; the fields, and `to_dict()`, still hold them)."""
        said = [self.status if self.secondary_status in (None, self.status) else
                f"{self.status} ({self.secondary_status})"]
        if self.instance_count:
            said.append(self.instances)
        if self.cost and self.cost.amount:
            said.append(f"cost so far {self.cost.amount}")
        if self.failure_reason:
            reason = self.failure_reason.splitlines()[0]
            said.append(f"failure {reason if len(reason) <= 100 else reason[:97] + '...'!r}")
        if self.status == "Failed":  # `smtrain status` shows the failing rank's error and the fix: say where they are
            said.append("its cause and fix: job.failure_cause()")
        return f"JobStatus({self.name!r}, {', '.join(said)})"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def console_url(self) -> str:
        return console_url(self.region, self.name)

    def to_dict(self) -> dict[str, Any]:
        """The status as JSON; a local run (region `local`) has no console link."""
        document = {
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
        }
        return document if self.region == LOCAL_REGION else {**document, "console_url": self.console_url}


@dataclass(frozen=True)
class JobSummary:
    """One row of `smtrain list`: of ListTrainingJobs, or a local run (its directory; why it is damaged)."""

    name: str
    status: str
    secondary_status: str | None
    created: datetime | None
    ended: datetime | None
    backend: str = "sagemaker"
    run_dir: str | None = None
    damaged: str | None = None

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "job_name": self.name,
            "status": self.status,
            "secondary_status": self.secondary_status,
            "created": _iso(self.created),
            "ended": _iso(self.ended),
        }
        if self.damaged:
            document["damaged"] = self.damaged
        document["backend"] = self.backend
        if self.run_dir:
            document["run_dir"] = self.run_dir
        return document


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None
