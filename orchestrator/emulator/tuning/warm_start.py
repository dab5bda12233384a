"""Warm start of a local search: the trials of earlier local searches as prior observations of its chooser.

SageMaker's warm start (WarmStartConfig) hands a tuning job the results of up to five parent tuning jobs, which
inform the values it tries; the parents' trials are not the new job's (they count neither toward its max_jobs
nor toward its BestTrainingJob). Here a parent is a search `smtrain tune local` wrote under runs/ by that name
(`runs/<parent>/tuning.json`, where it writes the search of that tuning name), and its ended trials are told to
optuna's study (Bayesian, Hyperband) as trials it already ran: those whose values fit the new ranges, as optuna
takes them. IdenticalDataAndAlgorithm and TransferLearning are taken alike. Random and Grid choose without
looking at any result, so the parents inform nothing there. A parent that is not a local search (a SageMaker
tuning job), or that optimised another objective (which SageMaker refuses), is left out, saying so.
"""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.observing.trials import SEARCH_RESULTS_FILE, TERMINAL, Trial
from orchestrator.specs.tuning import Strategy, TuningSpec


def parent_trials(spec: TuningSpec, runs_root: Path) -> tuple[list[Trial], list[str]]:
    """The ended trials of the spec's warm-start parents found under `runs_root`, and a line for each parent (what
    is used of it, or why nothing is)."""
    if spec.warm_start is None:
        return [], []
    trials: list[Trial] = []
    lines = []
    learns = spec.strategy in (Strategy.Bayesian, Strategy.Hyperband)
    for parent in spec.warm_start.parents:
        path = runs_root / parent / SEARCH_RESULTS_FILE
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            lines.append(f"warm start: parent {parent} is no local search (no readable {path}); it is left out")
            continue
        objective = document.get("objective", {})
        if (objective.get("metric"), objective.get("type")) != (spec.objective.metric, spec.objective.type):
            lines.append(f"warm start: parent {parent} optimised {objective.get('type')} {objective.get('metric')}, "
                         f"not {spec.objective.type} {spec.objective.metric}; it is left out, as SageMaker refuses it")
            continue
        ended = [trial for trial in map(Trial.from_dict, document.get("trials", [])) if trial.status in TERMINAL]
        if learns:
            trials += ended
        lines.append(f"warm start: the {len(ended)} ended trials of {parent} are prior observations of the search "
                     "(those whose values fit its ranges)" if learns else
                     f"warm start: {spec.strategy.value} chooses without looking at results, so the trials of "
                     f"{parent} inform nothing here")
    return trials, lines
