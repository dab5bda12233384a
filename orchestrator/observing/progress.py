"""How far a job is and what it has cost so far, from its DescribeTrainingJob and the tail of its logs: a
SageMaker job's, or (through the backends' Job handle) a local run's request and status.

Progress comes from the last progress line in the logs (`epoch=1 step=40/96 ...`): the rate is measured over
the progress lines of the tail, by their CloudWatch timestamps. Cost so far is billable seconds x instance count
x the catalog's on-demand price: SageMaker's BillableTimeInSeconds once it reports it (for managed spot, the spot
discount included: SageMaker bills fewer seconds, and the saving is 1 - BillableTimeInSeconds /
TrainingTimeInSeconds, DescribeTrainingJob's documented formula), before that the time since TrainingStartTime,
which is when billing starts (for spot, an upper bound: it counts interruptions and the full price).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from orchestrator.observing.cause_window import Tails, WindowReader, not_found_in, read_back, screened
from orchestrator.observing.epochs import line_epoch
from orchestrator.observing.log_lines import LogLine
from orchestrator.observing.metric_series import (
    ProgressEstimate,
    compile_definitions,
    epoch_position,
    estimate_progress,
    extract,
    step_mark,
)
from orchestrator.observing.root_cause import (
    FailureCause,
    SourcePaths,
    framework_version_of,
    launcher_of,
    may_hold_own_error,
    on_its_volume,
    own_error,
    printed_by,
    read_cause,
    reported_install_cause,
    reported_script_cause,
    service_cause,
    stopped_at_max_runtime,
)
from orchestrator.specs.catalog import catalog, lookup, on_demand_cost

_HOST = re.compile(r"\balgo-\d+\b")
_ERROR_LINE = re.compile(r"Traceback \(most recent call last\)|\b\w*(Error|Exception)\b")
FAILURE_TAIL_LINES = 20
FAILURE_READ_LINES = 1000
"""Lines of each host read first for a failed job's root cause: one GetLogEvents call per stream either way, and
room for every rank's traceback and torchrun's summary after it; where they hold no error of a rank's own, the
logs are read further back (`cause_window`)."""


@dataclass(frozen=True)
class CostSoFar:
    """Instance time billed (or, while SageMaker has not reported it yet, elapsed) at on-demand prices."""

    billable_seconds: int
    instance_count: int
    price_per_instance_hour: float | None
    currency: str
    estimated: bool
    """True while BillableTimeInSeconds is not reported: the time since TrainingStartTime stands in for it
    (for spot, an upper bound: spot bills less)."""
    price_source: str
    spot: bool = False
    """Managed spot training (EnableManagedSpotTraining): billed seconds are fewer than the seconds trained."""
    training_seconds: int | None = None
    """TrainingTimeInSeconds once reported: what the billable seconds of a spot job are a part of."""

    @property
    def total(self) -> float | None:
        return on_demand_cost(self.price_per_instance_hour, self.instance_count, self.billable_seconds)

    @property
    def upper_bound(self) -> bool:
        """A spot job's estimate: the time since TrainingStartTime at the on-demand price, interruptions
        included, bills at most that."""
        return self.spot and self.estimated

    @property
    def spot_saving(self) -> float | None:
        """1 - billable / training seconds (0.7 for 70% saved), once SageMaker reports both for a spot job."""
        if not self.spot or self.estimated or not self.training_seconds:
            return None
        return max(0.0, 1 - self.billable_seconds / self.training_seconds)

    @property
    def qualifier(self) -> str:
        """`at most ` for a spot job's estimate, `about ` for another estimate, nothing for a reported figure."""
        return "at most " if self.upper_bound else "about " if self.estimated else ""

    @property
    def amount(self) -> str | None:
        """`USD 0.82`, `about USD 0.82` while estimated (`at most` for spot); None with no price on record."""
        total = self.total
        return None if total is None else f"{self.qualifier}{self.currency} {total:,.2f}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "currency": self.currency,
            "billable_seconds": self.billable_seconds,
            "instance_count": self.instance_count,
            "price_per_instance_hour": self.price_per_instance_hour,
            "estimated": self.estimated,
            "price_source": self.price_source,
            "spot": self.spot,
            "upper_bound": self.upper_bound,
            "training_seconds": self.training_seconds,
            "spot_saving": self.spot_saving,
        }


def cost_so_far(described: Mapping[str, Any], now: datetime | None = None) -> CostSoFar | None:
    """None before the instances start (nothing is billed yet)."""
    resources = described.get("ResourceConfig", {})
    instance_type, count = resources.get("InstanceType"), resources.get("InstanceCount") or 0
    billable = described.get("BillableTimeInSeconds")
    started = described.get("TrainingStartTime")
    if (billable is None and started is None) or not instance_type:
        return None
    if billable is None:
        until = described.get("TrainingEndTime") or now or datetime.now(timezone.utc)
        billable = max(0, int((until - started).total_seconds()))
        estimated = True
    else:
        estimated = False
    prices = catalog()
    return CostSoFar(
        billable_seconds=billable,
        instance_count=count,
        price_per_instance_hour=lookup(instance_type).price_per_hour,
        currency=prices.currency,
        estimated=estimated,
        price_source=prices.price_source,
        spot=bool(described.get("EnableManagedSpotTraining")),
        training_seconds=described.get("TrainingTimeInSeconds"),
    )


@dataclass(frozen=True)
class JobProgress:
    """What the tail of a job's logs says: the position and rate, the latest value of each metric, and for a
    failed job the host that failed first with its last lines."""

    estimate: ProgressEstimate | None
    latest: dict[str, float] = field(default_factory=dict)
    failing_host: str | None = None
    failing_lines: tuple[LogLine, ...] = ()
    failing_rank: int | None = None
    """The rank whose own lines `failing_lines` are (its traceback, under torch.distributed's `[rankN]:`); None
    where they are the host's last lines, no rank's lines being told apart."""
    failure_cause: FailureCause | None = None
    any_lines: bool = True
    """False when the tails held no line at all, so "no step in the last lines" would point at the wrong thing."""
    epoch: int | None = None
    """The epoch the lines state, counted from 1, step or no step: a script that prints `epoch=2 loss=0.31` once
    an epoch and no step still has its epoch shown."""
    epochs: int | None = None
    logs_unread: str | None = None
    """Why the hosts' logs could not be read, in a line (`your credentials were refused logs:GetLogEvents`): then
    only what the job's description says is known (its cause, from the FailureReason)."""
    logs_fix: str | None = None
    """What would let them be read (the permission to allow)."""

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            "progress": self.estimate.to_dict(now) if self.estimate else None,
            "epoch": self.epoch,
            "epochs": self.epochs,
            "latest_metrics": dict(self.latest),
            "failing_host": self.failing_host,
            "failing_host_last_lines": [line.message for line in self.failing_lines],
            "failing_rank": self.failing_rank,
            "failure_cause": self.failure_cause.to_dict() if self.failure_cause else None,
        }


def job_progress(described: Mapping[str, Any], tails: Mapping[str, Sequence[LogLine]],
                 source: SourcePaths = SourcePaths(), recorded: FailureCause | None = None) -> JobProgress:
    """Reads progress and metrics from every host's tail with the job's own metric definitions, and for a job
    that failed (or was stopped by a limit) where it failed and why (observing/root_cause.py): the cause the job
    `recorded` itself when it ended (a local run's, read with every launcher's exit code), else the tails'."""
    definitions = compile_definitions(described.get("AlgorithmSpecification", {}).get("MetricDefinitions", []))
    lines = sorted((line for host_lines in tails.values() for line in host_lines), key=lambda line: line.timestamp_ms)
    marks, latest = [], {}
    for line in lines:
        mark = step_mark(line.message)
        if mark:
            marks.append((datetime.fromtimestamp(line.timestamp_ms / 1000, tz=timezone.utc), mark))
        latest.update(extract(definitions, line.message))
    epochs = _epochs(described.get("HyperParameters", {}))
    stated = [line_epoch(line.message) for line in lines]
    estimate = estimate_progress(marks, epochs, stated)
    epoch, of_epochs = epoch_position(stated, epochs)
    cause = recorded if recorded is not None else failure_cause(described, tails, source)
    if described.get("TrainingJobStatus") != "Failed":
        return JobProgress(estimate, latest, failure_cause=cause, any_lines=bool(lines), epoch=epoch, epochs=of_epochs)
    host = cause.host if cause and cause.host in tails else failing_host(described.get("FailureReason") or "", tails)
    rank, failing = _failing_lines(tails, host, cause)
    return JobProgress(estimate, latest, host, failing, rank, cause, bool(lines), epoch, of_epochs)


def _failing_lines(tails: Mapping[str, Sequence[LogLine]], host: str | None,
                   cause: FailureCause | None) -> tuple[int | None, tuple[LogLine, ...]]:
    """The failing rank and its own last lines where they can be told apart: its traceback, which on a torchrun
    host comes before the agent's `ChildFailedError` report and among the other ranks' lines; under mpirun in the
    master's log, where mpirun prints every rank's. Else None and the failing host's last lines."""
    rank = cause.rank if cause is not None else None
    own = tuple(_own_lines(tails, rank)) if rank is not None else ()
    if own:
        return rank, own[-FAILURE_TAIL_LINES:]
    return None, tuple(tails.get(host, ())[-FAILURE_TAIL_LINES:]) if host else ()


def _own_lines(tails: Mapping[str, Sequence[LogLine]], rank: int) -> Iterator[LogLine]:
    return (line for lines in tails.values() for line in lines if printed_by(line.message, rank))


def read_back_progress(described: Mapping[str, Any], reader: WindowReader, tail_lines: int,
                       source: SourcePaths = SourcePaths(), recorded: FailureCause | None = None) -> JobProgress:
    """A failed job's progress from its hosts' logs read back (`cause_window`) from their last FAILURE_READ_LINES
    lines (`tail_lines` where more) until what `status` shows is among them, so that no output after the error hides
    it: the cause the lines hold, an error of a rank's own (a SageMaker job); where the job `recorded` its cause
    itself when it ended (a local run), that cause's rank's own lines, shown under it."""
    first_lines = max(tail_lines, FAILURE_READ_LINES)  # room for every rank's traceback: one CloudWatch call each
    first = reader.last(first_lines)
    if recorded is not None:  # not found, what is shown is the failing host's last lines: the first window's
        reading = read_back(reader, first, first_lines, _rank_lines_found(recorded))
        return job_progress(described, (reading.window if reading.found else first).tails, source, recorded)
    reading = read_back(reader, first, first_lines,
                        screened(lambda tails: own_error(logs_cause(described, tails, source)), may_hold_own_error))
    progress = job_progress(described, reading.window.tails, source)
    if progress.failure_cause is not None and not reading.found and reading.window.bound:
        return replace(progress, failure_cause=not_found_in(progress.failure_cause, reading.window.bound))
    return progress


def _rank_lines_found(cause: FailureCause) -> Callable[[Tails], bool]:
    """Whether the tails hold lines the cause's rank printed under its own prefix (its traceback); at once for a
    cause with no error of a rank's own to show (a signal, an exit code, a launcher's): the search the job made
    when it ended found none either."""
    rank = cause.rank
    if rank is None or not own_error(cause):
        return lambda tails: True
    return lambda tails: next(_own_lines(tails, rank), None) is not None


def failure_cause(described: Mapping[str, Any], tails: Mapping[str, Sequence[LogLine]],
                  source: SourcePaths = SourcePaths()) -> FailureCause | None:
    """What SageMaker says ended the job (its run-time limit, spot capacity, an install), else the root cause in
    the hosts' lines; None while it runs or when it completed."""
    if described.get("TrainingJobStatus") not in ("Failed", "Stopped"):
        return None
    found = logs_cause(described, tails, source)
    said = service_cause(described, found)
    if said is not None or described.get("TrainingJobStatus") != "Failed":
        return on_its_volume(said, described)
    return on_its_volume(found or reported_install_cause(described, source) or reported_script_cause(described),
                         described)


def logs_cause(described: Mapping[str, Any], tails: Mapping[str, Sequence[LogLine]],
               source: SourcePaths = SourcePaths()) -> FailureCause | None:
    """The root cause the hosts' lines hold, by the launcher and image the job's description names."""
    return read_cause({host: [line.message for line in lines] for host, lines in tails.items()},
                      launcher_of(described), source=source, framework_version=framework_version_of(described))


def cause_in_logs(described: Mapping[str, Any]) -> bool:
    """Whether a job's failure cause is read from its hosts' logs: a failed job's, unless SageMaker names the
    cause (no spot capacity: hosts that may never have started); a job stopped at its run-time limit's too, for the
    rank whose error the others waited for until the limit."""
    if stopped_at_max_runtime(described):
        return True
    return described.get("TrainingJobStatus") == "Failed" and service_cause(described) is None


def failing_host(failure_reason: str, tails: Mapping[str, Sequence[LogLine]]) -> str | None:
    """The host the failure reason names; else the one whose log shows an error first (the others usually
    fail after it, when their collectives lose it); else, with one host, that one."""
    named = _HOST.search(failure_reason)
    if named and named.group(0) in tails:
        return named.group(0)
    first_errors = {
        host: next((line.timestamp_ms for line in lines if _ERROR_LINE.search(line.message)), None)
        for host, lines in tails.items()
    }
    erring = {host: stamp for host, stamp in first_errors.items() if stamp is not None}
    if erring:
        return min(erring, key=lambda host: erring[host])
    return next(iter(tails)) if len(tails) == 1 else None


def _epochs(hyperparameters: Mapping[str, str]) -> int | None:
    """The `epochs` hyperparameter of the shared entrypoints (SageMaker keeps values as JSON strings)."""
    raw = hyperparameters.get("epochs")
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
