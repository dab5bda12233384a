"""Is a running SageMaker job moving, slow or hung? Read from CloudWatch, judged by `observing.liveness`.

When it last spoke: each host's stream in `/aws/sagemaker/TrainingJobs` (the time of its last event, read from
the stream's end; DescribeLogStreams' lastEventTimestamp and lastIngestionTime are eventually consistent, up to
an hour late, so they are not trusted), and the latest point of the job's metric definitions' series.
Whether its hosts work: SageMaker's per-host utilization metrics in the same namespace, dimension
`Host` = `<job>/algo-N`: CPUUtilization, GPUUtilization and GPUMemoryUtilization, one value a minute, each summed
over the host's CPUs or GPUs (0 to 100 x their count). All hosts' series come in one GetMetricData call.

Silence counts from the start of the latest `Training` secondary status: downloading data or the image is
silent and fine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from orchestrator.cloud.aws_errors import aws_errors
from orchestrator.cloud.logs import tail
from orchestrator.cloud.metrics import NAMESPACE, defined_metric_names
from orchestrator.errors import AwsError
from orchestrator.observing.liveness import HostActivity, Verdict, judge
from orchestrator.observing.log_lines import LogLine, host_order
from orchestrator.observing.metric_series import format_duration

GPU_UTILIZATION, GPU_MEMORY, CPU_UTILIZATION = "GPUUtilization", "GPUMemoryUtilization", "CPUUtilization"
HOST_METRICS = (GPU_UTILIZATION, GPU_MEMORY, CPU_UTILIZATION)
GPU_BUSY_PERCENT = 10.0
"""A host's GPUs are busy when some minute of the window shows kernels running 10% of the time on one GPU's
worth: a rank that computes keeps its GPU near 100%, one that waits on the host shows 0. GPU memory stays
allocated while a rank waits, so GPUMemoryUtilization is shown but never counts as busy."""
CPU_BUSY_PERCENT = 50.0
"""Half of one core: a rank that computes (or loads data) keeps at least one core full; a process that only
waits (threads polling, a heartbeat) uses a few percent."""
ACTIVITY_WINDOW = timedelta(minutes=5)
"""Utilization is judged over the last 5 minutes: SageMaker publishes a value a minute, a minute or two late."""
PERIOD_SECONDS = 60
LAST_LINES = 10
_QUERIES_PER_CALL = 500


@dataclass(frozen=True)
class HostLiveness:
    """One host: when it last wrote a line, what its devices did over the window, and its last lines."""

    activity: HostActivity
    last_spoke: datetime | None
    utilization: dict[str, float] = field(default_factory=dict)
    """The highest value of each of HOST_METRICS over the window; a metric with no point there is absent."""
    last_lines: tuple[str, ...] = ()

    @property
    def host(self) -> str:
        return self.activity.host

    @property
    def device(self) -> str:
        """`GPUs` on a host that reports GPU utilization, `CPUs` on one without."""
        return "GPUs" if GPU_UTILIZATION in self.utilization else "CPUs"

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            "host": self.host,
            "busy": self.activity.busy,
            "detail": self.activity.detail,
            "last_spoke": self.last_spoke.isoformat() if self.last_spoke else None,
            "silent_seconds": round((now - self.last_spoke).total_seconds()) if self.last_spoke else None,
            "utilization": self.utilization,
            "last_lines": list(self.last_lines),
        }


@dataclass(frozen=True)
class JobLiveness:
    """A job's verdict at `now`, with the evidence a person needs to believe it."""

    job_name: str
    verdict: Verdict
    silent_seconds: float
    stall_timeout: float | None
    now: datetime
    hosts: tuple[HostLiveness, ...]
    last_spoke: datetime | None

    def silent_first(self) -> list[HostLiveness]:
        """Hosts by the time of their last line, oldest first; a host that never wrote one comes first."""
        epoch = datetime.min.replace(tzinfo=timezone.utc)
        return sorted(self.hosts, key=lambda host: (host.last_spoke or epoch, host_order(host.host)))

    def summary(self) -> str:
        """`silent for 14 min, GPUs idle on algo-3; GPUs busy on algo-1, algo-2` or `last line 20 s ago`."""
        if self.silent_seconds < PERIOD_SECONDS:
            return f"last line {format_duration(self.silent_seconds)} ago"
        return f"silent for {_minutes(self.silent_seconds)}, {_activity_words(self.hosts)}"

    def reason(self) -> str:
        """Why the verdict: the silence, every host's activity, and which host went silent first."""
        timeout = f" (stall timeout {_minutes(self.stall_timeout)})" if self.stall_timeout else ""
        head = {
            Verdict.HUNG: f"Hung: no host wrote a line or advanced a metric for {_minutes(self.silent_seconds)}"
                          f"{timeout}, and every host is idle",
            Verdict.SLOW: f"Slow, not hung: no host wrote a line or advanced a metric for "
                          f"{_minutes(self.silent_seconds)}{timeout}, but some host still works",
            Verdict.MOVING: f"Moving: {self.summary()}{timeout}",
        }[self.verdict]
        parts = [head, "; ".join(f"{host.host}: {host.activity.detail}" for host in self.hosts)]
        order = self.silent_first()
        if len(order) > 1 and self.verdict is not Verdict.MOVING:
            parts.append(f"{order[0].host} went silent first ({_spoke_words(order[0])})" + "".join(
                f", then {host.host} ({_spoke_words(host)})" for host in order[1:]))
        return ". ".join(parts)

    def last_lines_text(self) -> str:
        """Each host's last lines under its name: what the job was doing when it went quiet."""
        blocks = []
        for host in self.silent_first():
            lines = "\n".join(f"    {line}" for line in host.last_lines) or "    (no line yet)"
            blocks.append(f"  last lines of {host.host}:\n{lines}")
        return "\n".join(blocks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "reason": self.reason(),
            "summary": self.summary(),
            "silent_seconds": round(self.silent_seconds),
            "stall_timeout_seconds": self.stall_timeout,
            "last_spoke": self.last_spoke.isoformat() if self.last_spoke else None,
            "judged_at": self.now.isoformat(),
            "silent_first": [host.host for host in self.silent_first()],
            "hosts": [host.to_dict(self.now) for host in self.hosts],
        }


@dataclass(frozen=True)
class Clients:
    """The CloudWatch Logs and CloudWatch clients liveness reads with, and the masking of secret values."""

    logs: Any
    cloudwatch: Any
    mask: Callable[[str], str] = str


def read_liveness(described: dict[str, Any], clients: Clients, now: datetime,
                  stall_timeout: float | None) -> JobLiveness:
    """The job's liveness at `now`: one DescribeLogStreams call per 50 streams, one GetLogEvents per stream (its
    last LAST_LINES lines), one GetMetricData call per 500 series (3 per host and 1 per metric definition)."""
    job_name = described["TrainingJobName"]
    tails = tail(clients.logs, job_name, LAST_LINES, mask=clients.mask)
    hosts = sorted({*_declared_hosts(described), *tails}, key=host_order)
    since = training_since(described) or now
    try:
        utilization, metrics_spoke = _read_metrics(clients.cloudwatch, described, hosts, now, stall_timeout)
        unreadable = None
    except AwsError as exc:  # e.g. no cloudwatch:GetMetricData permission: activity unknown, so never hung
        utilization, metrics_spoke, unreadable = {}, [], exc.message
    readings = tuple(_host_liveness(host, tails.get(host, []), utilization.get(host, {}), unreadable)
                     for host in hosts)
    spoken = [reading.last_spoke for reading in readings if reading.last_spoke] + metrics_spoke
    last_spoke = max(spoken) if spoken else None
    silent = max((now - max(last_spoke or since, since)).total_seconds(), 0.0)
    verdict = judge(silent, stall_timeout, [reading.activity for reading in readings])
    return JobLiveness(job_name, verdict, silent, stall_timeout, now, readings, last_spoke)


def is_judged(status: str, secondary_status: str | None) -> bool:
    """Only a job that trains now is judged: before Training it downloads, after it uploads, silently."""
    return status == "InProgress" and secondary_status == "Training"


def training_since(described: dict[str, Any]) -> datetime | None:
    """The start of the latest `Training` secondary status (a restarted spot job trains again), else None."""
    starts = [item["StartTime"] for item in described.get("SecondaryStatusTransitions", [])
              if item.get("Status") == "Training" and item.get("StartTime")]
    return max(starts) if starts else None


def _declared_hosts(described: dict[str, Any]) -> list[str]:
    resources = described.get("ResourceConfig", {})
    count = (resources.get("InstanceCount") or
             sum(group.get("InstanceCount", 0) for group in resources.get("InstanceGroups", [])))
    return [f"algo-{number}" for number in range(1, (count or 0) + 1)]


def _host_liveness(host: str, lines: list[LogLine], utilization: dict[str, float],
                   unreadable: str | None) -> HostLiveness:
    last = datetime.fromtimestamp(lines[-1].timestamp_ms / 1000, timezone.utc) if lines else None
    activity = (HostActivity(host, None, f"utilization unreadable (counted as busy): {unreadable}") if unreadable
                else _activity(host, utilization))
    return HostLiveness(activity, last, utilization, tuple(line.message for line in lines))


def _activity(host: str, utilization: dict[str, float]) -> HostActivity:
    gpu, cpu = utilization.get(GPU_UTILIZATION), utilization.get(CPU_UTILIZATION)
    if gpu is None and cpu is None:
        minutes = int(ACTIVITY_WINDOW.total_seconds() // 60)
        return HostActivity(host, None, f"no utilization metrics in the last {minutes} min (counted as busy)")
    busy = (gpu is not None and gpu >= GPU_BUSY_PERCENT) or (cpu is not None and cpu >= CPU_BUSY_PERCENT)
    shown = [(GPU_UTILIZATION, "GPU"), (GPU_MEMORY, "GPU memory"), (CPU_UTILIZATION, "CPU")]
    values = ", ".join(f"{label} {utilization[name]:.0f}%" for name, label in shown if name in utilization)
    return HostActivity(host, busy, f"{'busy' if busy else 'idle'}: {values} at most over the last "
                                    f"{int(ACTIVITY_WINDOW.total_seconds() // 60)} min")


def _read_metrics(cloudwatch: Any, described: dict[str, Any], hosts: Sequence[str], now: datetime,
                  stall_timeout: float | None) -> tuple[dict[str, dict[str, float]], list[datetime]]:
    """Per host, the highest value of each utilization metric over the window; and the latest time each of the
    job's defined metrics can have been logged (a point stamped t holds values logged in [t, t + 60 s))."""
    job_name = described["TrainingJobName"]
    series: list[tuple[str, str | None, dict[str, Any]]] = [
        (name, host, {"Name": "Host", "Value": f"{job_name}/{host}"}) for host in hosts for name in HOST_METRICS
    ] + [(name, None, {"Name": "TrainingJobName", "Value": job_name}) for name in defined_metric_names(described)]
    lookback = max(ACTIVITY_WINDOW, timedelta(seconds=stall_timeout or 0)) + timedelta(seconds=PERIOD_SECONDS)
    window_start = now - ACTIVITY_WINDOW - timedelta(seconds=PERIOD_SECONDS)
    utilization: dict[str, dict[str, float]] = {}
    spoke: list[datetime] = []
    with aws_errors(f"reading the utilization metrics of {job_name} from CloudWatch"):
        for first in range(0, len(series), _QUERIES_PER_CALL):
            chunk = series[first:first + _QUERIES_PER_CALL]
            queries = [{
                "Id": f"q{index}",
                "MetricStat": {
                    "Metric": {"Namespace": NAMESPACE, "MetricName": name, "Dimensions": [dimension]},
                    "Period": PERIOD_SECONDS,
                    "Stat": "Maximum" if host else "SampleCount",
                },
            } for index, (name, host, dimension) in enumerate(chunk)]
            pages = cloudwatch.get_paginator("get_metric_data").paginate(
                MetricDataQueries=queries, StartTime=now - lookback, EndTime=now + timedelta(seconds=PERIOD_SECONDS),
                ScanBy="TimestampDescending")
            for page in pages:
                for result in page["MetricDataResults"]:
                    name, host, _ = chunk[int(result["Id"][1:])]
                    stamps = [stamp.astimezone(timezone.utc) for stamp in result["Timestamps"]]
                    if host is None:
                        spoke += [min(stamp + timedelta(seconds=PERIOD_SECONDS), now) for stamp in stamps]
                        continue
                    recent = [value for stamp, value in zip(stamps, result["Values"], strict=True)
                              if window_start <= stamp <= now]
                    if recent:
                        values = utilization.setdefault(host, {})
                        values[name] = max(recent + ([values[name]] if name in values else []))
    return utilization, spoke


def _activity_words(hosts: Sequence[HostLiveness]) -> str:
    """`GPUs idle on algo-1, algo-3; GPUs busy on algo-2; utilization unknown on algo-4`."""
    groups: dict[str, list[str]] = {}
    for host in hosts:
        state = {True: "busy", False: "idle", None: "unknown"}[host.activity.busy]
        label = "utilization unknown" if state == "unknown" else f"{host.device} {state}"
        groups.setdefault(label, []).append(host.host)
    if len(groups) == 1 and len(hosts) > 1:
        (label, names), = groups.items()
        return f"{label} on every host ({', '.join(names)})"
    return "; ".join(f"{label} on {', '.join(names)}" for label, names in groups.items())


def _spoke_words(host: HostLiveness) -> str:
    if host.last_spoke is None:
        return "no line yet"
    return f"last line {host.last_spoke.astimezone(timezone.utc):%H:%M:%S} UTC"


def _minutes(seconds: float | None) -> str:
    """`14 min`, `2 h 03 min`, `45 s`: silences are told to the minute."""
    seconds = seconds or 0
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min"
    return format_duration(seconds)
