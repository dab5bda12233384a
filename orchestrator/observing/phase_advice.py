"""A SageMaker job that has stayed in one phase far longer than that phase usually takes, judged, with what usually
helps: `Downloading` long past a generous bound (File-mode channels copied whole before the script starts), and
`Training` with no line from any host (the execution role cannot write CloudWatch Logs). `smtrain status` showed
the time alone, which says nothing about whether it is normal or what to do."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from orchestrator.contract import ROLE_LOG_WRITES
from orchestrator.observing.metric_series import format_duration

SLOW_DOWNLOAD_SECONDS = 30 * 60
"""Downloading this long is past what most inputs take: a fixed, generous bound, since the channels' sizes are
not known without listing their prefixes (one ListObjectsV2 per 1000 objects, which status does not make)."""
SILENT_TRAINING_SECONDS = 10 * 60
"""Training this long without one line from any host: the toolkit logs its first lines within seconds."""


@dataclass(frozen=True)
class PhaseAdvice:
    """What a long phase usually means, and what to do."""

    judgement: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return {"judgement": self.judgement, "fix": self.fix}

    def rows(self) -> list[tuple[str, str]]:
        """The rows `smtrain status` and a notebook's job summary show."""
        return list(self.to_dict().items())


def phase_advice(described: Mapping[str, Any], any_lines: bool | None, now: datetime) -> PhaseAdvice | None:
    """The advice for the phase a running job is in, once it has lasted past its bound; None otherwise.

    Args:
        any_lines: whether the hosts' logs hold any line (None: they could not be read, so nothing is judged).
    """
    if described.get("TrainingJobStatus") != "InProgress":
        return None
    phase = described.get("SecondaryStatus")
    lasted = _lasted(described, phase, now)
    if phase == "Downloading" and lasted >= SLOW_DOWNLOAD_SECONDS:
        return _slow_download(described, lasted)
    if phase == "Training" and lasted >= SILENT_TRAINING_SECONDS and any_lines is False:
        return _silent_training(described, lasted)
    return None


def _lasted(described: Mapping[str, Any], phase: str | None, now: datetime) -> float:
    """Seconds since the latest start of `phase` in SecondaryStatusTransitions (0 where none says when)."""
    starts = [item["StartTime"] for item in described.get("SecondaryStatusTransitions", [])
              if item.get("Status") == phase and item.get("StartTime")]
    return (now - starts[-1]).total_seconds() if starts else 0.0


def _slow_download(described: Mapping[str, Any], lasted: float) -> PhaseAdvice | None:
    default = (described.get("AlgorithmSpecification") or {}).get("TrainingInputMode", "File")
    copied = [channel for channel in described.get("InputDataConfig", [])
              if channel.get("InputMode", default) == "File"]
    if not copied:
        return None  # FastFile and Pipe channels are not copied before the script starts
    names = ", ".join(channel["ChannelName"] for channel in copied)
    prefix = next((uri for channel in copied
                   if (uri := channel.get("DataSource", {}).get("S3DataSource", {}).get("S3Uri"))), "s3://...")
    return PhaseAdvice(
        f"Downloading for {format_duration(lasted)}: File mode copies channel {names} whole to every instance "
        "before the script starts, and a large input, or one of many small files, takes this long",
        f"`input_mode: FastFile` on the channel (read from S3 as the script opens each file: training starts at "
        f"once) or `Pipe`; or fewer, larger files (shards of 100 MB or more: S3 copies each object on its own); "
        f"`aws s3 ls --recursive --summarize {prefix}` counts its objects and bytes, and the history's "
        "Downloading line says how long each download took")


def _silent_training(described: Mapping[str, Any], lasted: float) -> PhaseAdvice:
    role = described.get("RoleArn") or "ROLE_ARN"
    named = f"{', '.join(ROLE_LOG_WRITES[:-1])} and {ROLE_LOG_WRITES[-1]}"
    return PhaseAdvice(
        f"Training for {format_duration(lasted)} and no host has written a log line: this usually means the "
        f"execution role cannot write CloudWatch Logs ({named})",
        f"allow the role {named} on the log group /aws/sagemaker/TrainingJobs (the role `smtrain infra "
        "deploy` creates has them: infra/smtrain.yaml, docs/check-and-infra.md); `aws iam simulate-principal-policy "
        f"--policy-source-arn {role} --action-names {' '.join(ROLE_LOG_WRITES)}` checks it, and "
        "`smtrain check SPEC` simulates the role the next submit uses")
