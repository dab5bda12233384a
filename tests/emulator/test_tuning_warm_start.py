"""Warm start of a local search: its parents are the searches under runs/ of those names, their ended trials the
prior observations of optuna's study; a parent it cannot use (not a local search, another objective) is said, and
Random and Grid, which look at no result, are said to learn nothing from them."""

from __future__ import annotations

import json

from orchestrator.emulator.tuning.warm_start import parent_trials
from orchestrator.specs.tuning import TuningSpec


def _spec(strategy: str, parents: list[str]) -> TuningSpec:
    return TuningSpec.model_validate({
        "job": "job.yaml", "objective": {"metric": "loss", "type": "Minimize"}, "strategy": strategy,
        "parameters": {"lr": {"type": "continuous", "min": 0.001, "max": 0.1}}, "max_jobs": 4,
        "warm_start": {"type": "TransferLearning", "parents": parents}})


def _search(folder, metric: str, statuses: list[str]) -> None:
    folder.mkdir(parents=True)
    trials = [{"trial": number, "name": f"{folder.name}-{number:03d}", "status": status, "objective": 0.1 * number,
               "hyperparameters": {"lr": 0.01}} for number, status in enumerate(statuses, start=1)]
    (folder / "tuning.json").write_text(json.dumps({"objective": {"metric": metric, "type": "Minimize"},
                                                    "trials": trials}))


def test_the_ended_trials_of_local_parents_with_the_same_objective_are_the_prior(tmp_path):
    _search(tmp_path / "coarse", "loss", ["Completed", "Stopped", "InProgress"])
    _search(tmp_path / "other", "accuracy", ["Completed"])

    trials, lines = parent_trials(_spec("Bayesian", ["coarse", "other", "gone"]), tmp_path)

    assert [trial.name for trial in trials] == ["coarse-001", "coarse-002"]  # the running one has not ended
    assert lines[0].startswith("warm start: the 2 ended trials of coarse are prior observations")
    assert lines[1].startswith("warm start: parent other optimised Minimize accuracy, not Minimize loss")
    assert lines[2].startswith(f"warm start: parent gone is no local search (no readable {tmp_path / 'gone'}")


def test_random_learns_nothing_from_its_parents_and_says_so(tmp_path):
    _search(tmp_path / "coarse", "loss", ["Completed"])

    trials, lines = parent_trials(_spec("Random", ["coarse"]), tmp_path)

    assert trials == []
    assert lines == ["warm start: Random chooses without looking at results, so the trials of coarse inform nothing "
                     "here"]
