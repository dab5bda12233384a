"""When `smtrain tune local` ends a search before max_jobs, by SageMaker's completion criteria: a completed trial
at the target objective (inclusive, by the objective's direction), trials that improve on the best by less than
1%, and the spec's max runtime or the --budget, whichever ends first; convergence detection is said not to run."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from orchestrator.emulator.tuning.criteria import (
    completion_reason,
    jobs_not_improving,
    not_emulated,
    time_limit,
)
from orchestrator.observing.trials import Trial
from orchestrator.specs.tuning import TuningSpec

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _spec(**fields) -> TuningSpec:
    base = {"job": "job.yaml", "objective": {"metric": "loss", "type": "Minimize"},
            "parameters": {"lr": {"type": "continuous", "min": 0.001, "max": 0.1}}, "strategy": "Random",
            "max_jobs": 20}
    return TuningSpec.model_validate({**base, **fields})


def _trials(*objectives: float | None, status: str = "Completed") -> list[Trial]:
    """Trials that ended in this order, one second apart."""
    return [Trial(name=f"s-{number:03d}", status=status, objective=value, hyperparameters={}, number=number,
                  ended=START + timedelta(seconds=number)) for number, value in enumerate(objectives, start=1)]


def test_the_target_is_reached_at_or_beyond_it_in_the_objective_direction_by_a_completed_trial():
    minimize = _spec(completion={"target_objective": 0.1})
    maximize = _spec(objective={"metric": "acc", "type": "Maximize"}, completion={"target_objective": 0.9})

    assert completion_reason(minimize, _trials(0.5, 0.2)) is None
    assert completion_reason(minimize, _trials(0.5, 0.1)) == (
        "target objective reached: s-002 has loss = 0.1, at or below 0.1")
    assert completion_reason(maximize, _trials(0.5, 0.95)) == (
        "target objective reached: s-002 has acc = 0.95, at or above 0.9")
    assert completion_reason(maximize, _trials(0.1)) is None
    assert completion_reason(minimize, _trials(0.01, status="Stopped")) is None  # stopped early: not completed


def test_trials_improving_on_the_best_by_less_than_one_percent_count_as_not_improving():
    # 0.5 is the best; 0.499 is better by 0.2% (the new best, not an improvement); 0.6, 0.7 are worse.
    assert jobs_not_improving("Minimize", _trials(0.5, 0.499, 0.6)) == 2
    assert jobs_not_improving("Minimize", _trials(0.5, 0.499, 0.6, 0.4)) == 0  # 0.4 improves by 20%: afresh
    assert jobs_not_improving("Maximize", _trials(0.5, 0.504, 0.4)) == 2
    assert jobs_not_improving("Minimize", _trials(0.5, None, 0.6)) == 1  # no objective: not a trial that counts
    spec = _spec(completion={"max_jobs_not_improving": 3})
    assert completion_reason(spec, _trials(0.5, 0.499, 0.6)) is None
    assert completion_reason(spec, _trials(0.5, 0.499, 0.6, 0.7)) == (
        "best objective not improving: 3 trials in a row improved on the best by less than 1%")


def test_not_improving_counts_in_the_order_trials_ended_not_the_order_a_file_ranks_them():
    ended = _trials(0.5, 0.6, 0.7, 0.2)  # the last one improved: nothing since

    assert jobs_not_improving("Minimize", sorted(ended, key=lambda trial: trial.objective)) == 0


def test_the_time_limit_is_the_max_runtime_or_the_budget_whichever_ends_first():
    assert time_limit(_spec(), None) is None
    assert time_limit(_spec(max_runtime_seconds=600), None).name == "max runtime (600 s)"
    assert time_limit(_spec(max_runtime_seconds=600), 30).name == "budget (30 s)"
    assert time_limit(_spec(max_runtime_seconds=600), 900).seconds == 600


def test_convergence_detection_is_said_not_to_run_here():
    assert not_emulated(_spec(completion={"complete_on_convergence": False})) == []
    assert "complete_on_convergence is not emulated here" in not_emulated(
        _spec(completion={"complete_on_convergence": True}))[0]
