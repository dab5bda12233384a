"""How `smtrain tune local` picks each trial's values, and when it stops a trial early, per SageMaker strategy.

* Grid: every combination of the categorical values, once, in the order they are listed: exactly what SageMaker
  runs (in some order).
* Random: each value drawn independently from its range on its scale (Linear, Logarithmic, ReverseLogarithmic;
  Auto as Linear), from `random_seed`: exactly SageMaker's method, not its random numbers.
* Bayesian: optuna's TPE sampler. SageMaker's Bayesian search fits a Gaussian-process regression; TPE is
  optuna's default model-based sampler, needs nothing beyond numpy (optuna's GP sampler needs torch and scipy in
  this process), and, like SageMaker, starts from random trials and then proposes values where its model expects
  improvement. The trials it picks are not SageMaker's; the search is of the same kind.
* Hyperband: optuna's HyperbandPruner over TPE, with SageMaker's min and max resource in epochs; a trial that
  reaches max_resource epochs is stopped there, as SageMaker stops it.
* Early stopping `Auto` (Random, Bayesian): SageMaker's documented median rule, exactly: after each epoch a
  trial whose objective is worse than the median of the completed trials' running averages up to that epoch
  is stopped (once two trials have completed: with fewer the median says little).

A search continued in its folder hands each chooser its earlier trials: Grid skips the combinations they ran,
Random draws on past their values, optuna's study and the median rule learn their results (the sampler
seeded anew, so that its random start does not draw the earlier trials' values again), and new trials are
numbered after them. A warm-started search hands optuna's study its parents' trials too (warm_start.py).

optuna is imported only here, and only for Bayesian and Hyperband (smtrain's `tune` extra).
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from orchestrator.errors import EnvironmentProblem, install_extra
from orchestrator.observing.trials import Trial, better
from orchestrator.specs.tuning import CategoricalRange, ContinuousRange, IntegerRange, Scaling, Strategy, TuningSpec

MEDIAN_RULE_MIN_COMPLETED = 2


class Chooser(Protocol):
    """Picks values for each new trial, hears its objective after each epoch, and learns its result."""

    def ask(self) -> tuple[int, dict[str, Any]]:
        """A new trial's key and its values."""
        ...

    def should_stop(self, key: int, epoch: int, value: float) -> bool:
        """After epoch `epoch` the trial's objective is `value`: stop it now?"""
        ...

    def tell(self, key: int, objective: float | None, status: str) -> None:
        """The trial ended (Completed, Stopped or Failed) with this final objective."""
        ...


def chooser_for(spec: TuningSpec, max_resource: int | None, earlier: Sequence[Trial] = (),
                prior: Sequence[Trial] = ()) -> Chooser:
    """The chooser standing in for the spec's strategy.

    Args:
        max_resource: Hyperband's max resource in epochs (the spec's, else the job's epochs).
        earlier: the trials of the search this one continues (its folder's tuning.json).
        prior: the warm-start parents' trials (warm_start.py): optuna's study learns them as trials it ran; Grid and
            Random look at no result, so they take none.
    """
    if spec.strategy is Strategy.Grid:
        return _GridChooser(spec, earlier)
    if spec.strategy is Strategy.Random:
        return _RandomChooser(spec, earlier)
    return _OptunaChooser(spec, max_resource, earlier, prior)


class _MedianRule:
    """SageMaker's early stopping (`Auto`): stop a trial worse than the median of the completed trials' running
    averages of the objective up to the same epoch."""

    def __init__(self, goal: str, enabled: bool) -> None:
        self._goal, self._enabled = goal, enabled
        self._curves: dict[int, dict[int, float]] = {}
        self._completed: list[int] = []

    def record(self, key: int, epoch: int, value: float) -> bool:
        self._curves.setdefault(key, {})[epoch] = value
        if not self._enabled or len(self._completed) < MEDIAN_RULE_MIN_COMPLETED:
            return False
        averages = []
        for other in self._completed:
            curve = self._curves.get(other, {})
            upto = [curve[index] for index in sorted(curve) if index <= epoch]
            if upto and max(curve) >= epoch:
                averages.append(sum(upto) / len(upto))
        return len(averages) >= MEDIAN_RULE_MIN_COMPLETED and better(self._goal, statistics.median(averages), value)

    def completed(self, key: int) -> None:
        self._completed.append(key)

    def learn(self, earlier: Sequence[Trial]) -> None:
        """The completed trials of the search continued, with their curves, as if they had just ended."""
        for trial in earlier:
            if trial.status == "Completed":
                self._curves[trial.number] = dict(trial.intermediate)
                self.completed(trial.number)


class _GridChooser:
    def __init__(self, spec: TuningSpec, earlier: Sequence[Trial] = ()) -> None:
        names = list(spec.parameters)
        values = [spec.parameters[name].values for name in names]  # type: ignore[union-attr]
        ran = [trial.hyperparameters for trial in earlier]
        # Lazily: a grid of millions of combinations costs only the trials that run (--max-jobs 1 builds one).
        combinations = (dict(zip(names, chosen, strict=True)) for chosen in itertools.product(*values))
        self._combinations = (combination for combination in combinations if combination not in ran)
        self._count = _numbers_after(earlier)
        self._lock = threading.Lock()
        self._rule = _MedianRule(spec.objective.type, spec.early_stopping == "Auto")
        self._rule.learn(earlier)

    def ask(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            return next(self._count), next(self._combinations)

    def should_stop(self, key: int, epoch: int, value: float) -> bool:
        with self._lock:
            return self._rule.record(key, epoch, value)

    def tell(self, key: int, objective: float | None, status: str) -> None:
        with self._lock:
            if status == "Completed":
                self._rule.completed(key)


class _RandomChooser(_GridChooser):
    def __init__(self, spec: TuningSpec, earlier: Sequence[Trial] = ()) -> None:
        self._spec = spec
        self._random = random.Random(spec.random_seed)
        self._count = _numbers_after(earlier)
        self._lock = threading.Lock()
        self._rule = _MedianRule(spec.objective.type, spec.early_stopping == "Auto")
        self._rule.learn(earlier)
        for _ in range(max((trial.number for trial in earlier), default=0)):  # the earlier trials' draws, again
            self._draw()

    def ask(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            return next(self._count), self._draw()

    def _draw(self) -> dict[str, Any]:
        return {name: draw(item, self._random) for name, item in self._spec.parameters.items()}


def _numbers_after(earlier: Sequence[Trial]) -> itertools.count[int]:
    """New trials' numbers: 1, 2, ... or, continuing a search, after its earlier trials' (their folders stay)."""
    return itertools.count(max((trial.number for trial in earlier), default=0) + 1)


def _continued_seed(seed: int | None, earlier: Sequence[Trial]) -> int | None:
    """optuna's seed for a search continued after `earlier`: the spec's seed would draw its first trials' values
    again (adding trials to a study does not move its sampler on), so a continuation seeds its own draws, as
    reproducibly as the seed. numpy takes seeds below 2**32."""
    last = max((trial.number for trial in earlier), default=0)
    return seed if seed is None or not last else (seed + last) % 2**32


def draw(item: Any, rng: random.Random) -> Any:
    """One value of a range, uniform on its scale."""
    if isinstance(item, CategoricalRange):
        return rng.choice(item.values)
    if isinstance(item, IntegerRange):
        if item.scaling is Scaling.Logarithmic:  # log-uniform over [min, max + 1), floored: each integer's share
            return min(item.max, math.floor(math.exp(rng.uniform(math.log(item.min), math.log(item.max + 1)))))
        return rng.randint(item.min, item.max)
    assert isinstance(item, ContinuousRange)
    if item.scaling is Scaling.Logarithmic:
        return math.exp(rng.uniform(math.log(item.min), math.log(item.max)))
    if item.scaling is Scaling.ReverseLogarithmic:  # log-uniform in 1 - x: dense near 1
        return within(item, 1 - math.exp(rng.uniform(math.log(1 - item.max), math.log(1 - item.min))))
    share = rng.random()  # min + (max - min) * share overflows to infinity over a range wider than a float holds
    return within(item, item.min * (1 - share) + item.max * share)


def within(item: ContinuousRange, value: float) -> float:
    """`value` inside the range: a draw that rounded out of it (or to infinity) is its nearest bound."""
    return min(max(value, item.min), item.max)


class _OptunaChooser:
    def __init__(self, spec: TuningSpec, max_resource: int | None, earlier: Sequence[Trial] = (),
                 prior: Sequence[Trial] = ()) -> None:
        optuna = _import_optuna()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._spec = spec
        total = spec.total_jobs()
        sampler = optuna.samplers.TPESampler(seed=_continued_seed(spec.random_seed, earlier),
                                             n_startup_trials=max(2, min(10, total // 3)))
        pruner: Any = optuna.pruners.NopPruner()
        self._max_resource = None
        if spec.strategy is Strategy.Hyperband:
            minimum = spec.hyperband.min_resource if spec.hyperband else 1
            self._max_resource = max_resource
            pruner = optuna.pruners.HyperbandPruner(min_resource=minimum, max_resource=max_resource or "auto")
        direction = "minimize" if spec.objective.type == "Minimize" else "maximize"
        self._study = optuna.create_study(direction=direction, sampler=sampler, pruner=pruner)
        self._distributions = {name: _distribution(optuna, item) for name, item in spec.parameters.items()}
        self._trials: dict[int, Any] = {}
        """optuna's trial of each running trial, by the search's number for it."""
        self._count = _numbers_after(earlier)
        self._lock = threading.Lock()
        self._rule = _MedianRule(spec.objective.type, spec.early_stopping == "Auto")
        self._rule.learn(earlier)
        self._optuna = optuna
        for trial in [*prior, *earlier]:
            self._learn(trial)

    def _learn(self, trial: Trial) -> None:
        """An earlier or a parent's trial, told to the study as it ended; one whose values do not fit the ranges
        (masked, or from other ranges) tells it nothing."""
        states = self._optuna.trial.TrialState
        if trial.status == "Completed" and trial.objective is not None:
            state, value = states.COMPLETE, trial.objective
        else:
            state, value = (states.PRUNED if trial.status == "Stopped" else states.FAIL), None
        try:
            params = {name: self._taken_back(name, trial.hyperparameters[name]) for name in self._distributions}
            self._study.add_trial(self._optuna.trial.create_trial(
                params=params, distributions=self._distributions, value=value, state=state,
                intermediate_values=dict(trial.intermediate)))
        except (KeyError, TypeError, ValueError):
            pass

    def ask(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            trial = self._study.ask(self._distributions)
            key = next(self._count)
            self._trials[key] = trial
            return key, {name: self._handed_out(name, value) for name, value in trial.params.items()}

    def _taken_back(self, name: str, value: Any) -> Any:
        """A value as `_handed_out` gave it, as the study sampled it."""
        item = self._spec.parameters[name]
        return 1 - value if isinstance(item, ContinuousRange) and item.scaling is Scaling.ReverseLogarithmic else value

    def _handed_out(self, name: str, value: Any) -> Any:
        """ReverseLogarithmic is sampled as 1 - x; every continuous value is kept inside its (finite) range."""
        item = self._spec.parameters[name]
        if not isinstance(item, ContinuousRange):
            return value
        return within(item, 1 - value if item.scaling is Scaling.ReverseLogarithmic else value)

    def should_stop(self, key: int, epoch: int, value: float) -> bool:
        with self._lock:
            trial = self._trials[key]
            if self._spec.strategy is Strategy.Hyperband:
                trial.report(value, epoch)
                return trial.should_prune() or (self._max_resource is not None and epoch >= self._max_resource)
            return self._rule.record(key, epoch, value)

    def tell(self, key: int, objective: float | None, status: str) -> None:
        states = self._optuna.trial.TrialState
        with self._lock:
            trial = self._trials.pop(key)
            if status == "Completed" and objective is not None:
                self._rule.completed(key)
                self._study.tell(trial, objective)
            elif status == "Stopped":
                self._study.tell(trial, state=states.PRUNED)
            else:
                self._study.tell(trial, state=states.FAIL)


def _distribution(optuna: Any, item: Any) -> Any:
    distributions = optuna.distributions
    if isinstance(item, CategoricalRange):
        return distributions.CategoricalDistribution(list(item.values))
    if isinstance(item, IntegerRange):
        return distributions.IntDistribution(item.min, item.max, log=item.scaling is Scaling.Logarithmic)
    if item.scaling is Scaling.ReverseLogarithmic:  # sampled as 1 - x on a log scale, handed out as x
        return distributions.FloatDistribution(1 - item.max, 1 - item.min, log=True)
    return distributions.FloatDistribution(item.min, item.max, log=item.scaling is Scaling.Logarithmic)


def _import_optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise EnvironmentProblem("strategies Bayesian and Hyperband run here on optuna, which is not installed",
                                 fix=f"{install_extra('tune')} (or optuna); Random and Grid need nothing") from None
    return optuna
