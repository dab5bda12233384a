"""When a local search ends before its max_jobs: the tuning spec's completion criteria and its runtime limit, as
SageMaker applies them.

SageMaker's developer guide (`Track and set completion criteria for your tuning job`) lists them with
MaxNumberOfTrainingJobs, and ends the tuning job once any one is met:

* TargetObjectiveMetricValue (`completion.target_objective`): once a training job reaches the value. Here: once a
  completed trial's objective is at or below it (Minimize) or at or above it (Maximize).
* BestObjectiveNotImproving (`completion.max_jobs_not_improving`): after that many training jobs failed to improve
  on the best by 1% or more. Here: completed trials, in the order they ended, since the last one that improved
  on the best so far by 1% of it or more (a better one by less is the new best, and still counts).
* MaxRuntimeInSeconds (`max_runtime_seconds`): the tuning job's wall clock. Here: from the start of this run of
  the search (a search continued in its folder gets it afresh), as `--budget` is.
* ConvergenceDetected (`completion.complete_on_convergence`): SageMaker's own, unpublished algorithm. Not
  emulated: the search says so as it starts, and ends by the other criteria.

A search ended by one starts no trial, stops the running ones (as a tuning job that ends stops its training
jobs) and reads Completed, with the criterion in tuning.json's `completion_reason`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from orchestrator.observing.trials import Trial, better
from orchestrator.specs.tuning import TuningSpec

IMPROVEMENT = 0.01
"""BestObjectiveNotImproving: a trial improves on the best when it is better by this share of it or more."""


@dataclass(frozen=True)
class TimeLimit:
    """The search's wall-clock limit: the spec's max runtime or `--budget`, whichever ends first."""

    seconds: float
    name: str
    """What the limit is, in the line of each trial it stops and in the completion reason."""


def time_limit(spec: TuningSpec, budget_seconds: float | None) -> TimeLimit | None:
    limits = [TimeLimit(float(spec.max_runtime_seconds), f"max runtime ({spec.max_runtime_seconds} s)")
              ] if spec.max_runtime_seconds is not None else []
    if budget_seconds is not None:
        limits.append(TimeLimit(budget_seconds, f"budget ({budget_seconds:g} s)"))
    return min(limits, key=lambda limit: limit.seconds, default=None)


def completion_reason(spec: TuningSpec, trials: Sequence[Trial]) -> str | None:
    """The criterion the search's ended trials meet, in words, or None while none is."""
    criteria, goal = spec.completion, spec.objective.type
    if criteria is None:
        return None
    completed = _completed(trials)
    if criteria.target_objective is not None:
        target = criteria.target_objective
        for reached in completed:
            if reached.objective is not None and not better(goal, target, reached.objective):
                side = "at or below" if goal == "Minimize" else "at or above"
                return (f"target objective reached: {reached.name} has {spec.objective.metric} = "
                        f"{reached.objective:.6g}, {side} {target:g}")
    limit = criteria.max_jobs_not_improving
    if limit is not None and jobs_not_improving(goal, completed) >= limit:
        return f"best objective not improving: {limit} trials in a row improved on the best by less than 1%"
    return None


def jobs_not_improving(goal: str, trials: Sequence[Trial]) -> int:
    """Completed trials since the last that improved on the best by IMPROVEMENT of it or more."""
    best: float | None = None
    count = 0
    for trial in _completed(trials):
        value = trial.objective
        assert value is not None
        if best is None or (better(goal, value, best) and abs(value - best) >= IMPROVEMENT * abs(best)):
            best, count = value, 0
            continue
        count += 1
        if better(goal, value, best):
            best = value
    return count


def not_emulated(spec: TuningSpec) -> list[str]:
    """What of the spec's completion criteria this machine cannot do, said as the search starts."""
    if spec.completion is not None and spec.completion.complete_on_convergence:
        return ["completion.complete_on_convergence is not emulated here: SageMaker detects convergence with an "
                "algorithm of its own, which it does not publish; this search ends by its other criteria"]
    return []


def _completed(trials: Sequence[Trial]) -> list[Trial]:
    """The completed trials with an objective, in the order they ended (a continued search's file ranks them)."""
    earliest = datetime.min.replace(tzinfo=timezone.utc)
    return sorted((trial for trial in trials if trial.status == "Completed" and trial.objective is not None),
                  key=lambda trial: (trial.ended or earliest, trial.number))
