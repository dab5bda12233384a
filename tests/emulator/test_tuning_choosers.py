"""How `smtrain tune local` picks values: Grid and Random exactly as SageMaker describes them, optuna for Bayesian
and Hyperband, and SageMaker's median rule for early stopping."""

from __future__ import annotations

import math
import random

import pytest

from orchestrator.emulator.tuning.choosers import chooser_for, draw
from orchestrator.observing.trials import Trial
from orchestrator.specs.tuning import ContinuousRange, IntegerRange, TuningSpec


def _spec(**fields) -> TuningSpec:
    base = {"job": "job.yaml", "objective": {"metric": "train:loss", "type": "Minimize"},
            "parameters": {"lr": {"type": "continuous", "min": 0.001, "max": 0.1, "scaling": "Logarithmic"},
                           "optimizer": {"type": "categorical", "values": ["sgd", "adam"]}},
            "strategy": "Random", "max_jobs": 8, "random_seed": 3}
    return TuningSpec.model_validate({**base, **fields})


def test_grid_gives_every_combination_once_in_the_listed_order():
    chooser = chooser_for(_spec(strategy="Grid", max_jobs=None, parameters={
        "optimizer": {"type": "categorical", "values": ["sgd", "adam"]},
        "batch-size": {"type": "categorical", "values": [32, 64, 128]}}), None)

    asked = [chooser.ask() for _ in range(6)]

    assert [key for key, _ in asked] == [1, 2, 3, 4, 5, 6]
    assert [tuple(values.values()) for _, values in asked] == [
        ("sgd", "32"), ("sgd", "64"), ("sgd", "128"), ("adam", "32"), ("adam", "64"), ("adam", "128")]


def test_random_is_reproducible_from_its_seed_and_stays_in_range():
    first = [chooser_for(_spec(), None).ask() for _ in range(1)]
    again = [chooser_for(_spec(), None).ask() for _ in range(1)]
    assert first == again
    chooser = chooser_for(_spec(), None)
    values = [chooser.ask()[1] for _ in range(200)]
    assert all(0.001 <= item["lr"] <= 0.1 for item in values)
    assert {item["optimizer"] for item in values} == {"sgd", "adam"}


@pytest.mark.parametrize(("item", "check"), [
    # Logarithmic: as many values in [0.001, 0.01) as in [0.01, 0.1).
    (ContinuousRange(type="continuous", min=0.001, max=0.1, scaling="Logarithmic"),
     lambda values: abs(sum(value < 0.01 for value in values) / len(values) - 0.5) < 0.05),
    # ReverseLogarithmic: 1 - x log-uniform, so as many in [0.9, 0.99) as in [0, 0.9).
    (ContinuousRange(type="continuous", min=0.0, max=0.99, scaling="ReverseLogarithmic"),
     lambda values: abs(sum(value < 0.9 for value in values) / len(values) - 0.5) < 0.05),
    # Linear integers: each value about equally often, the bounds included.
    (IntegerRange(type="integer", min=1, max=4, scaling="Linear"),
     lambda values: set(values) == {1, 2, 3, 4} and all(abs(values.count(v) / len(values) - 0.25) < 0.05
                                                       for v in (1, 2, 3, 4))),
    # Logarithmic integers over [1, 100]: about half below 10 (log-uniform over [1, 101)).
    (IntegerRange(type="integer", min=1, max=100, scaling="Logarithmic"),
     lambda values: abs(sum(value < 10 for value in values) / len(values) - math.log(10) / math.log(101)) < 0.05
     and min(values) >= 1 and max(values) <= 100),
])
def test_random_draws_uniformly_on_each_scale(item, check):
    rng = random.Random(5)

    values = [draw(item, rng) for _ in range(4000)]

    assert check(values)


def test_median_rule_stops_a_trial_worse_than_the_completed_trials_running_averages():
    chooser = chooser_for(_spec(early_stopping="Auto"), None)
    for curve in ([1.0, 0.5], [0.8, 0.4], [0.6, 0.3]):
        key, _ = chooser.ask()
        for epoch, value in enumerate(curve, start=1):
            chooser.should_stop(key, epoch, value)
        chooser.tell(key, curve[-1], "Completed")
    key, _ = chooser.ask()

    # Running averages at epoch 1 are 1.0, 0.8, 0.6 (median 0.8); at epoch 2 0.75, 0.6, 0.45 (median 0.6).
    assert not chooser.should_stop(key, 1, 0.7)
    assert chooser.should_stop(key, 2, 0.65)


def test_without_early_stopping_nothing_is_stopped():
    chooser = chooser_for(_spec(), None)
    for _ in range(3):
        key, _ = chooser.ask()
        chooser.should_stop(key, 1, 0.1)
        chooser.tell(key, 0.1, "Completed")
    key, _ = chooser.ask()

    assert not chooser.should_stop(key, 1, 99.0)


def test_bayesian_stands_on_optuna_and_learns_from_what_it_is_told():
    chooser = chooser_for(_spec(strategy="Bayesian", max_jobs=12, parameters={
        "lr": {"type": "continuous", "min": 0.0, "max": 0.9, "scaling": "ReverseLogarithmic"}}), None)
    seen = []
    for _ in range(12):
        key, values = chooser.ask()
        assert 0.0 <= values["lr"] <= 0.9
        seen.append(values["lr"])
        chooser.tell(key, (values["lr"] - 0.5) ** 2, "Completed")

    # After its random start, TPE proposes values near the best seen (0.5) more often than chance would.
    late = seen[6:]
    assert sum(abs(value - 0.5) < 0.2 for value in late) >= 3


def test_hyperband_stops_a_trial_at_max_resource():
    chooser = chooser_for(_spec(strategy="Hyperband", hyperband={"min_resource": 1, "max_resource": 3}), 3)
    key, _ = chooser.ask()

    assert chooser.should_stop(key, 3, 0.5)


def test_a_continued_search_skips_what_its_earlier_trials_ran_and_numbers_new_ones_after_them():
    grid = _spec(strategy="Grid", max_jobs=None, parameters={
        "optimizer": {"type": "categorical", "values": ["sgd", "adam"]},
        "batch-size": {"type": "categorical", "values": [32, 64]}})
    ran = [Trial(name="s-001", status="Completed", objective=0.3, number=1,
                 hyperparameters={"optimizer": "sgd", "batch-size": "64"}),
           Trial(name="s-002", status="Failed", objective=None, number=2,
                 hyperparameters={"optimizer": "adam", "batch-size": "32"})]

    continued = chooser_for(grid, None, ran)
    bayesian = chooser_for(_spec(strategy="Bayesian"), None, [
        Trial(name="b-001", status="Completed", objective=0.2, number=1,
              hyperparameters={"lr": 0.01, "optimizer": "adam"})])

    assert [continued.ask() for _ in range(2)] == [(3, {"optimizer": "sgd", "batch-size": "32"}),
                                                    (4, {"optimizer": "adam", "batch-size": "64"})]
    assert bayesian.ask()[0] == 2
    assert [trial.value for trial in bayesian._study.trials if trial.value is not None] == [0.2]  # told, not re-run


def test_a_warm_started_search_tells_optuna_its_parents_trials_but_numbers_its_own_from_one():
    parents = [Trial(name=f"p-{number:03d}", status="Completed", objective=objective, number=number,
                     hyperparameters={"lr": lr, "optimizer": "sgd"})
               for number, (lr, objective) in enumerate([(0.01, 0.4), (0.05, 0.3), (0.09, 0.2)], start=1)]

    bayesian = chooser_for(_spec(strategy="Bayesian"), None, prior=parents)
    random_search = chooser_for(_spec(), None, prior=parents)

    assert bayesian.ask()[0] == 1 and random_search.ask()[0] == 1
    assert sorted(trial.value for trial in bayesian._study.trials if trial.value is not None) == [0.2, 0.3, 0.4]


@pytest.mark.parametrize("strategy", ["Bayesian", "Hyperband"])
def test_a_continued_optuna_search_does_not_draw_its_earlier_trials_values_again(strategy):
    spec = _spec(strategy=strategy, max_jobs=12)
    first = chooser_for(spec, 3)
    ran = []
    for _ in range(2):
        key, values = first.ask()
        first.tell(key, 0.5, "Completed")
        ran.append(Trial(name=f"s-{key:03d}", status="Completed", objective=0.5, number=key, hyperparameters=values))

    key, values = chooser_for(spec, 3, ran).ask()

    assert key == 3 and values not in [trial.hyperparameters for trial in ran]
