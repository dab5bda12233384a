"""The interface both executors implement, and the one status vocabulary they report in.

A backend takes a `Plan` (TorchX's shape: `schedule(plan(spec))`, the plan inspectable in between) and answers
for the job by its id: a SageMaker job's name, or a local run's directory. `describe` returns
`cloud.jobs.JobStatus` for both: SageMaker's TrainingJobStatus and SecondaryStatus with its transitions, which a
local run writes as it goes (`emulator/supervising/status.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from orchestrator.cloud.jobs import JobStatus
    from orchestrator.observing.log_lines import LogLine
    from orchestrator.observing.metric_series import MetricPoint
    from orchestrator.observing.root_cause import FailureCause
    from orchestrator.planning.plan import Plan
    from orchestrator.spec.loader import LoadedSpec
    from orchestrator.spec.model import JobSpec

# DescribeTrainingJob's TrainingJobStatus and SecondaryStatus (botocore's sagemaker model, 2026-11).
STATUSES = ("InProgress", "Completed", "Failed", "Stopping", "Stopped")
SECONDARY_STATUSES = (
    "Starting", "LaunchingMLInstances", "PreparingTrainingStack", "Downloading", "DownloadingTrainingImage",
    "Training", "Uploading", "Stopping", "Stopped", "MaxRuntimeExceeded", "Completed", "Failed", "Interrupted",
    "MaxWaitTimeExceeded", "Updating", "Restarting", "Pending",
)
BACKENDS = ("local", "sagemaker")


class Backend(Protocol):
    """Runs planned jobs somewhere and answers for them by id."""

    name: str
    """`local` or `sagemaker`."""

    def plan(self, spec: LoadedSpec | JobSpec | Plan) -> Plan:
        """The plan for this place (a given plan is planned again where its target is another place's)."""
        ...

    def schedule(self, plan: Plan) -> str:
        """Starts the planned job; returns its id at once (the job runs on)."""
        ...

    def describe(self, job_id: str) -> JobStatus: ...

    def logs(self, job_id: str, *, follow: bool = False, host: str | None = None, tail: int | None = None,
             poll_seconds: float = 10.0) -> Iterator[LogLine]:
        """Every host's lines (or one host's), the last `tail` per host, and with `follow` until the end."""
        ...

    def metric_points(self, job_id: str, names: list[str] | None = None) -> list[MetricPoint]: ...

    def stop(self, job_id: str) -> bool:
        """Asks the job to stop; False when it was not running (which is not an error)."""
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

    def notices(self, job_id: str) -> list[str]:
        """What the job's start said about how it runs (a local run: the CPU stand-in, the deviations), as
        `smtrain local` prints it; none for SageMaker."""
        ...


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
