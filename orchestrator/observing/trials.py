"""A search's trials, wherever they ran: ranked by objective, tabled, and drawn.

A cloud tuning job (ListTrainingJobsForHyperParameterTuningJob) and `smtrain tune local` both reduce to a list
of `Trial`, so `smtrain tune status` and `smtrain tune local` print the same table and draw the same figure:
the objective over the trials (with the best so far) and against each tuned parameter. A search's progress is a
`TuningStatus` and a row of a list a `TuningSummary`, in SageMaker's words, wherever it ran: they live here,
below both places, as a job's statuses do (job_status.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from orchestrator.errors import SmtrainError
from orchestrator.observing.metric_charts import _figure_class

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Trial:
    """One training job of a search."""

    name: str
    status: str
    """Completed, Failed, Stopped (stopped early, or with the search) or InProgress."""
    objective: float | None
    """The objective metric's final value: the last value its metric definition read from the job's log."""
    hyperparameters: dict[str, Any]
    """The tuned values this trial got."""
    number: int = 0
    """Its place in the order the search started trials (1-based)."""
    seconds: float | None = None
    started: datetime | None = None
    ended: datetime | None = None
    failure_reason: str | None = None
    run_dir: str | None = None
    """Local trials: the run directory of `smtrain local` (logs, metrics.jsonl, model.tar.gz)."""
    intermediate: dict[int, float] = field(default_factory=dict)
    """Local trials: the objective at the end of each epoch, as early stopping saw it."""

    @property
    def failure_line(self) -> str | None:
        """A failed trial's reason in one line, for a console or a table's foot: its first line, and what the
        script said where that line says only how it ended (`exited with code 1` beside `last line: ...`;
        SageMaker's `AlgorithmError: ExecuteUserScriptError:` before the toolkit's ErrorMessage or ExitCode), or
        every failed trial reads the same; the rest (a traceback, the usage) is in the document and the logs."""
        if self.status != "Failed" or not self.failure_reason or not self.failure_reason.strip():
            return None
        lines = [line.strip() for line in self.failure_reason.strip().splitlines() if line.strip()]
        said = next((line for line in lines[1:2] if line.startswith("last line: ")), None)
        if said is None and lines[0].endswith("ExecuteUserScriptError:"):
            message = self.failure_reason.partition('ErrorMessage "')[2].partition('"\nCommand "')[0]
            said = next((line.strip() for line in reversed(message.rstrip('"').splitlines()) if line.strip()),
                        next((line for line in lines if line.startswith("ExitCode ")), None))
        return f"{lines[0]}{' ' if lines[0].endswith(':') else '; '}{said}" if said else lines[0]

    def to_dict(self) -> dict[str, Any]:
        return {"trial": self.number, "name": self.name, "status": self.status, "objective": self.objective,
                "hyperparameters": self.hyperparameters, "seconds": self.seconds,
                "started": self.started.isoformat() if self.started else None,
                "ended": self.ended.isoformat() if self.ended else None,
                "failure_reason": self.failure_reason, "run_dir": self.run_dir,
                "intermediate": {str(epoch): value for epoch, value in self.intermediate.items()}}

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> Trial:
        """A trial as `to_dict` wrote it (a local search's tuning.json)."""
        started, ended = document.get("started"), document.get("ended")
        return cls(name=document["name"], status=document["status"], objective=document.get("objective"),
                   hyperparameters=document.get("hyperparameters", {}), number=document.get("trial", 0),
                   seconds=document.get("seconds"), started=datetime.fromisoformat(started) if started else None,
                   ended=datetime.fromisoformat(ended) if ended else None,
                   failure_reason=document.get("failure_reason"), run_dir=document.get("run_dir"),
                   intermediate={int(epoch): value for epoch, value in (document.get("intermediate") or {}).items()})


SEARCH_RESULTS_FILE = "tuning.json"
"""What `smtrain tune local` writes into the search's folder when it ends, and what reads that search back."""
TERMINAL = frozenset({"Completed", "Failed", "Stopped"})


@dataclass(frozen=True)
class TuningStatus:
    """A search's progress, reduced to what a person acts on (DescribeHyperParameterTuningJob's words)."""

    name: str
    status: str
    strategy: str
    metric: str
    goal: str
    max_jobs: int | None
    parallel: int
    counts: dict[str, int]
    """Trials Completed, InProgress, Stopped (early or with the search), Failed."""
    best: Trial | None
    created: datetime | None
    ended: datetime | None
    failure_reason: str | None
    place: dict[str, str] = field(default_factory=dict)
    """Where it is, for the JSON document and the notebook: a region and a console link, or a results folder."""
    completion_reason: str | None = None
    """A search ended before max_jobs: the criterion that ended it (a target reached, the best not improving,
    convergence, its max runtime)."""
    trials_not_improving: int | None = None
    """A tuning job's trials that improved the objective by 1% or less (TuningJobCompletionDetails): what
    `completion.max_jobs_not_improving` stops it at."""
    converged: datetime | None = None
    """When SageMaker detected convergence (`completion.complete_on_convergence`), which ends a tuning job."""
    runtime_seconds: int | None = None
    """A tuning job's wall-clock runtime as SageMaker counts it (ConsumedResources), what max_runtime_seconds
    bounds."""

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    def to_dict(self) -> dict[str, Any]:
        return {"tuning_job_name": self.name, **self.place, "status": self.status, "strategy": self.strategy,
                "objective": {"metric": self.metric, "type": self.goal}, "max_jobs": self.max_jobs,
                "parallel_jobs": self.parallel, "trials": self.counts,
                "best": self.best.to_dict() if self.best else None,
                "created": self.created.isoformat() if self.created else None,
                "ended": self.ended.isoformat() if self.ended else None, "failure_reason": self.failure_reason,
                "completion_reason": self.completion_reason, "trials_not_improving": self.trials_not_improving,
                "converged": self.converged.isoformat() if self.converged else None,
                "runtime_seconds": self.runtime_seconds}


@dataclass(frozen=True)
class TuningSummary:
    """One search in a list of recent ones (a row of ListHyperParameterTuningJobs, or a local results folder)."""

    name: str
    status: str
    strategy: str
    counts: dict[str, int]
    created: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {"tuning_job_name": self.name, "status": self.status, "strategy": self.strategy,
                "trials": self.counts, "created": self.created.isoformat() if self.created else None}


class TuningNotFound(SmtrainError):
    """No search of that name there (exit 2, like an unknown job name)."""


def counts_of(trials: Sequence[Trial]) -> dict[str, int]:
    """Trials per status, in the order `TuningStatus.counts` shows them."""
    return {status: sum(trial.status == status for trial in trials)
            for status in ("Completed", "InProgress", "Stopped", "Failed")}


def better(goal: str, candidate: float, incumbent: float) -> bool:
    return candidate < incumbent if goal == "Minimize" else candidate > incumbent


def ranked(trials: Sequence[Trial], goal: str) -> list[Trial]:
    """Best objective first; trials without one (failed, running) last, in the order they started."""
    sign = 1 if goal == "Minimize" else -1
    scored = sorted((trial for trial in trials if trial.objective is not None),
                    key=lambda trial: (sign * trial.objective, trial.number))  # type: ignore[operator]
    return scored + sorted((trial for trial in trials if trial.objective is None), key=lambda trial: trial.number)


def best(trials: Sequence[Trial], goal: str) -> Trial | None:
    """The trial with the best objective among those that completed with one."""
    done = [trial for trial in trials if trial.objective is not None and trial.status == "Completed"]
    return ranked(done, goal)[0] if done else None


def table(trials: Sequence[Trial], goal: str, metric: str) -> str:
    """The trials as a text table sorted by objective, one column per tuned parameter."""
    rows = ranked(trials, goal)
    names = sorted({name for trial in trials for name in trial.hyperparameters})
    header = ["#", "trial", "status", metric, *names]
    body = [[str(trial.number), trial.name, trial.status,
             "-" if trial.objective is None else f"{trial.objective:.6g}",
             *(_shown(trial.hyperparameters.get(name)) for name in names)] for trial in rows]
    widths = [max(len(row[index]) for row in [header, *body]) for index in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
                     for row in [header, *body])


def failures(trials: Sequence[Trial]) -> list[str]:
    """Why each failed trial failed, one line each in the order they started: the table has no room for it."""
    return [f"{trial.name} failed: {trial.failure_line}"
            for trial in sorted(trials, key=lambda trial: trial.number) if trial.failure_line]


def to_frame(trials: Sequence[Trial], goal: str) -> Any:
    """The trials sorted by objective as a pandas DataFrame (a list of dicts where pandas is not installed)."""
    rows = [{"trial": trial.number, "name": trial.name, "status": trial.status, "objective": trial.objective,
             **trial.hyperparameters} for trial in ranked(trials, goal)]
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)


def figure(trials: Sequence[Trial], goal: str, metric: str, log_scaled: Sequence[str] = (),
           title: str | None = None) -> Figure:
    """The objective over the trials (with the best so far), then against each tuned parameter, one panel each.

    Args:
        log_scaled: parameters searched on a logarithmic scale, drawn on one.

    Raises:
        EnvironmentProblem: matplotlib is not installed.
    """
    names = sorted({name for trial in trials for name in trial.hyperparameters})
    drawn = _figure_class()(figsize=(8, 2.6 * (1 + len(names))), layout="constrained")
    axes = drawn.subplots(1 + len(names), 1, squeeze=False)[:, 0]
    scored = sorted((trial for trial in trials if trial.objective is not None), key=lambda trial: trial.number)
    axes[0].scatter([trial.number for trial in scored], [trial.objective for trial in scored], s=18,
                    label="trial")
    running: list[float] = []
    for trial in scored:
        value = trial.objective
        assert value is not None
        running.append(value if not running or better(goal, value, running[-1]) else running[-1])
    axes[0].step([trial.number for trial in scored], running, where="post", color="tab:orange",
                 label="best so far")
    axes[0].set_xlabel("trial")
    axes[0].set_ylabel(metric)
    axes[0].legend(loc="best")
    for axis, name in zip(axes[1:], names, strict=True):
        points = [(trial.hyperparameters[name], trial.objective) for trial in scored if name in trial.hyperparameters]
        numeric = all(isinstance(value, (int, float)) and not isinstance(value, bool) for value, _ in points)
        xs = [value if numeric else str(value) for value, _ in points]
        axis.scatter(xs, [objective for _, objective in points], s=18)
        if numeric and name in log_scaled and all(value > 0 for value, _ in points):
            axis.set_xscale("log")
        axis.set_xlabel(name)
        axis.set_ylabel(metric)
    for axis in axes:
        axis.grid(True, alpha=0.3)
    if title:
        drawn.suptitle(title)
    return drawn


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.4g}"
    return str(value)
