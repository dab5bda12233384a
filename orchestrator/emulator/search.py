"""`smtrain tune local`: a tuning spec's search run on this machine, each trial a real emulated job.

Every trial is `smtrain local` of the job spec with the trial's values (and `_tuning_objective_metric`, which
SageMaker adds to each trial's hyperparameters and the toolkit drops), in its own run directory under the
search's. The objective is read as SageMaker reads it: the job's metric definitions applied to every log line,
the final value the trial's objective. At most `parallel` trials run at once (default: the spec's
max_parallel_jobs, within this machine's cores); the chooser (choosers.py) picks values and says when to stop a
trial early. A bounded `budget_seconds` starts no trial after it and stops running ones at it, as
StopHyperParameterTuningJob would; results go to `tuning.json` in the search's directory.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from orchestrator.emulator.choosers import Chooser, chooser_for
from orchestrator.emulator.runner import LocalRun, Options, run_local
from orchestrator.planning.metric_series import compile_definitions, extract, step_mark
from orchestrator.planning.request import metric_definitions
from orchestrator.planning.trials import Trial, best, ranked
from orchestrator.planning.tuning import hyperband_max_resource, tuning_job_name
from orchestrator.spec.catalog import lookup
from orchestrator.spec.loader import LoadedSpec
from orchestrator.spec.topology import topology
from orchestrator.spec.tuning import ContinuousRange, IntegerRange, Scaling
from orchestrator.spec.tuning_loader import LoadedTuning

RESULT_FILE = "tuning.json"
TUNING_OBJECTIVE_KEY = "_tuning_objective_metric"


@dataclass(frozen=True)
class SearchOptions:
    parallel: int | None = None
    """Trials at once; default: the spec's max_parallel_jobs, at most cores / processes per trial."""
    max_jobs: int | None = None
    """Run at most this many trials (fewer than the spec's, for a smaller search)."""
    budget_seconds: float | None = None
    """Start no trial after this long, and stop the running ones then."""
    run_dir: Path | None = None
    """The search's directory (default runs/<tuning-name>/); each trial's run directory is inside it."""
    stall_timeout_seconds: float | None = 300.0


@dataclass
class SearchResult:
    """What `smtrain tune local` found, also written to <run_dir>/tuning.json."""

    name: str
    run_dir: Path
    strategy: str
    metric: str
    goal: str
    parallel: int
    seconds: float
    trials: list[Trial] = field(default_factory=list)
    log_scaled: tuple[str, ...] = ()

    @property
    def best(self) -> Trial | None:
        return best(self.trials, self.goal)

    def figure(self) -> Any:
        from orchestrator.planning.trials import figure

        return figure(self.trials, self.goal, self.metric, self.log_scaled, title=self.name)

    def to_dict(self) -> dict[str, Any]:
        winner = self.best
        return {"tuning_job_name": self.name, "run_dir": str(self.run_dir), "strategy": self.strategy,
                "objective": {"metric": self.metric, "type": self.goal}, "parallel": self.parallel,
                "seconds": round(self.seconds, 2), "best": winner.to_dict() if winner else None,
                "trials": [trial.to_dict() for trial in ranked(self.trials, self.goal)]}


def tune_local(loaded: LoadedTuning, options: SearchOptions = SearchOptions(),
               on_event: Callable[[str], None] | None = None) -> SearchResult:
    """Runs the search here and returns every trial, the best first in `result.best`.

    Raises:
        SpecError, CapabilityError, EnvironmentProblem: before any trial starts (e.g. optuna missing).
    """
    spec, job = loaded.spec, loaded.job.spec
    say = on_event or (lambda text: None)
    name = tuning_job_name(spec.name or job.name)
    root = (options.run_dir or Path("runs") / name).resolve()
    root.mkdir(parents=True, exist_ok=True)
    total = min(spec.total_jobs(), options.max_jobs or spec.total_jobs())
    parallel = options.parallel or default_parallel(spec.max_parallel_jobs, loaded.job)
    search = _Search(loaded, root, name, options, say)
    started = time.monotonic()
    say(f"tuning {name}: {total} trials of {job.name}, {parallel} at a time ({spec.strategy.value}); "
        f"trials in {root}")
    try:
        with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="trial") as pool:
            for _ in range(parallel):
                pool.submit(search.worker, total, started)
    except KeyboardInterrupt:
        search.stop_all()
        raise
    log_scaled = tuple(name for name, item in spec.parameters.items()
                       if isinstance(item, (ContinuousRange, IntegerRange)) and item.scaling is Scaling.Logarithmic)
    result = SearchResult(name=name, run_dir=root, strategy=spec.strategy.value, metric=spec.objective.metric,
                          goal=spec.objective.type, parallel=parallel, seconds=time.monotonic() - started,
                          trials=sorted(search.trials, key=lambda trial: trial.number), log_scaled=log_scaled)
    (root / RESULT_FILE).write_text(json.dumps(result.to_dict(), indent=2, default=str) + "\n", encoding="utf-8")
    if search.errors:
        raise search.errors[0]
    return result


def default_parallel(max_parallel: int, job: LoadedSpec) -> int:
    """The spec's max_parallel_jobs, but no more trials than this machine's cores can run side by side."""
    processes = topology(job.spec, lookup(job.spec.instance.type)).world_size
    return max(1, min(max_parallel, (os.cpu_count() or 1) // max(1, processes)))


class _Search:
    """The trials of one search, started by worker threads until the count or the budget is reached."""

    def __init__(self, loaded: LoadedTuning, root: Path, name: str, options: SearchOptions,
                 say: Callable[[str], None]) -> None:
        self._loaded, self._root, self._name, self._options, self._say = loaded, root, name, options, say
        self._max_resource = hyperband_max_resource(loaded.spec, loaded.job.spec.hyperparameters)
        self._chooser: Chooser = chooser_for(loaded.spec, self._max_resource)
        self._lock = threading.Lock()
        self._started = 0
        self._supervisors: dict[int, Any] = {}
        self._stopping = False
        self.trials: list[Trial] = []
        self.errors: list[BaseException] = []

    def worker(self, total: int, began: float) -> None:
        budget = self._options.budget_seconds
        while True:
            with self._lock:
                out_of_time = budget is not None and time.monotonic() - began >= budget
                if self._stopping or self._started >= total or out_of_time or self.errors:
                    return
                self._started += 1
                key, values = self._chooser.ask()
            try:
                self._run_trial(key, values, None if budget is None else budget - (time.monotonic() - began))
            except BaseException as error:  # a trial that could not start (bad values): the search reports it
                with self._lock:
                    self.errors.append(error)
                return

    def stop_all(self) -> None:
        with self._lock:
            self._stopping = True
            for supervisor in self._supervisors.values():
                supervisor.interrupt()

    def _run_trial(self, key: int, values: dict[str, Any], time_left: float | None) -> None:
        spec, loaded_job = self._loaded.spec, self._loaded.job
        trial_name = f"{self._name}-{key:03d}"
        job = loaded_job.spec
        hyperparameters = {**job.hyperparameters, **values, TUNING_OBJECTIVE_KEY: spec.objective.metric}
        trial_spec = job.model_copy(update={"hyperparameters": hyperparameters})
        watch = _ObjectiveWatch(self._chooser, key, spec.objective.metric, metric_definitions(job))
        run_dir = self._root / trial_name
        self._say(f"trial {key} started: {_values_text(values)}")
        timer: threading.Timer | None = None

        def hook(supervisor: Any) -> None:
            nonlocal timer
            watch.supervisor = supervisor
            with self._lock:
                self._supervisors[key] = supervisor
                if self._stopping:
                    supervisor.interrupt()
            if time_left is not None:
                timer = threading.Timer(max(time_left, 0.0), watch.stop_for_budget)
                timer.daemon = True
                timer.start()

        loaded = LoadedSpec(spec=trial_spec, findings=loaded_job.findings, path=loaded_job.path)
        began, started_at = time.monotonic(), datetime.now(timezone.utc)
        try:
            run = run_local(loaded, Options(run_dir=run_dir, stall_timeout_seconds=self._options.stall_timeout_seconds),
                            watch, supervisor_hook=hook)
        finally:
            if timer is not None:
                timer.cancel()
            with self._lock:
                self._supervisors.pop(key, None)
        watch.finish()
        trial = dataclasses.replace(self._trial(key, trial_name, values, run, watch, time.monotonic() - began),
                                    started=started_at, ended=datetime.now(timezone.utc))
        self._chooser.tell(key, trial.objective, trial.status)
        with self._lock:
            self.trials.append(trial)
        shown = "-" if trial.objective is None else f"{trial.objective:.6g}"
        self._say(f"trial {key} {trial.status.lower()}: {spec.objective.metric} = {shown} "
                  f"({trial.seconds:.1f} s){' - ' + watch.why if watch.why else ''}")

    def _trial(self, key: int, name: str, values: dict[str, Any], run: LocalRun, watch: _ObjectiveWatch,
               seconds: float) -> Trial:
        status = {"Completed": "Completed", "Interrupted": "Stopped"}.get(run.status, "Failed")
        if run.status == "Stopped" and run.exit_code == 3:
            status = "Stopped"  # max_run_seconds
        if status == "Stopped" and watch.reached_max_resource(self._max_resource):
            status = "Completed"  # Hyperband stops a trial at max_resource; it has completed its budget
        return Trial(name=name, status=status, objective=watch.final, hyperparameters=dict(values), number=key,
                     seconds=round(seconds, 2), failure_reason=run.failure_reason, run_dir=str(run.run_dir),
                     intermediate=dict(watch.per_epoch))


class _ObjectiveWatch:
    """A trial's observer: reads the objective from every line with the job's metric definitions, and after
    each epoch asks the chooser whether to stop the trial."""

    def __init__(self, chooser: Chooser, key: int, metric: str, definitions: list[dict[str, str]]) -> None:
        self._chooser, self._key, self._metric = chooser, key, metric
        self._definitions = compile_definitions(definitions)
        self.supervisor: Any = None
        self.final: float | None = None
        self.per_epoch: dict[int, float] = {}
        self.why = ""
        self._epoch: int | None = None
        self._lock = threading.Lock()

    def stop_for_budget(self) -> None:
        self.why = "stopped at the search's budget"
        if self.supervisor is not None:
            self.supervisor.interrupt()

    def reached_max_resource(self, max_resource: int | None) -> bool:
        return max_resource is not None and bool(self.per_epoch) and max(self.per_epoch) >= max_resource

    def line(self, host: str, text: str) -> None:
        with self._lock:
            mark = step_mark(text)
            if mark is not None and mark.epoch is not None:
                if self._epoch is not None and mark.epoch > self._epoch and self.final is not None:
                    self._epoch_ended(self._epoch, self.final)
                self._epoch = mark.epoch
            value = extract(self._definitions, text).get(self._metric)
            if value is not None:
                self.final = value

    def finish(self) -> None:
        """The trial's last epoch ended with the run: its value completes the trial's curve."""
        with self._lock:
            if self._epoch is not None and self.final is not None and self._epoch not in self.per_epoch:
                self._epoch_ended(self._epoch, self.final)

    def _epoch_ended(self, epoch: int, value: float) -> None:
        self.per_epoch[epoch] = value
        if not self.why and self._chooser.should_stop(self._key, epoch, value):
            self.why = f"stopped early after epoch {epoch}"
            if self.supervisor is not None:
                self.supervisor.interrupt()

    def notice(self, text: str) -> None:
        pass

    def started(self, job_name: str, run_dir: Path, world_size: int, hosts: int) -> None:
        pass

    def progress(self, step: int, total: int, metrics: dict[str, float]) -> None:
        pass

    def attempt(self, number: int, reason: str) -> None:
        pass


def _values_text(values: dict[str, Any]) -> str:
    return ", ".join(f"{name}={value:.4g}" if isinstance(value, float) else f"{name}={value}"
                     for name, value in values.items())

