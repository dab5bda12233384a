"""`smtrain tune local`: a tuning spec's search run on this machine, each trial a real emulated job.

Every trial is `smtrain local` of the job spec with the trial's values (and `_tuning_objective_metric`, which
SageMaker adds to each trial's hyperparameters and the toolkit drops), in its own run directory under the
search's and in its own process: a run owns every process started beside it in its smtrain process, so two runs
must not share one. The objective is read from the trial's metric series (its run's metrics file), which holds what
SageMaker reads from the same log (metric_series.MetricRecorder): its last value is the trial's objective. At most
`parallel` trials run at once (default: the spec's max_parallel_jobs, within this machine's cores); the chooser (choosers.py) picks values and says when to stop a
trial early. A bounded `budget_seconds` or the spec's max_runtime_seconds starts no trial after it and stops
running ones at it, and the spec's completion criteria end the search as SageMaker's end a tuning job
(criteria.py); a warm-started search's chooser learns its parents' trials (warm_start.py). Results go to
`tuning.json` in the search's directory, rewritten after each trial (InProgress) and at the end, where `smtrain tune status local:FOLDER` reads them. `smtrain tune stop
local:FOLDER` writes the folder's stop request, which the search takes as StopHyperParameterTuningJob. The same
spec with the same settings run into a folder holding its earlier search continues that search (as `smtrain
local` resumes a run in its folder): its trials are kept, count toward max_jobs and the best, and inform the
chooser; other settings are refused, as overwriting would lose those trials.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from orchestrator.emulator.launching.launch import usable_cores
from orchestrator.emulator.preparing.layout import hold_directory
from orchestrator.emulator.run_options import TRIAL_OF_SEARCH, command_words
from orchestrator.emulator.supervising.interruption import interruption
from orchestrator.emulator.supervising.status import STOP_FILE, StopWatch
from orchestrator.emulator.supervising.supervisor import STOP_WITH_PARENT
from orchestrator.emulator.tuning.choosers import Chooser, chooser_for
from orchestrator.emulator.tuning.criteria import completion_reason, not_emulated, time_limit
from orchestrator.emulator.tuning.search_options import SearchOptions
from orchestrator.emulator.tuning.warm_start import parent_trials
from orchestrator.errors import SpecError
from orchestrator.observing.metric_series import METRICS_FILE, MetricPoint, recorded_point
from orchestrator.observing.signal_names import signal_name
from orchestrator.observing.trials import SEARCH_RESULTS_FILE, Trial, best, counts_of, ranked
from orchestrator.planning.tuning import hyperband_max_resource, tuning_job_name
from orchestrator.redact import redact_mapping
from orchestrator.specs.catalog import lookup
from orchestrator.specs.loader import LoadedSpec, LoadedTuning
from orchestrator.specs.option_overrides import override_words
from orchestrator.specs.topology import topology
from orchestrator.specs.tuning import ContinuousRange, IntegerRange, Scaling
from orchestrator.specs.words import FieldWords
from orchestrator.wording import counted, status_words

WATCH_SECONDS = 0.5
"""How often a running trial's metric series is read for its objective."""
SIGNAL_POLL_SECONDS = 0.5
"""How often the main thread wakes while trials run, to handle a signal another thread received."""
TUNING_OBJECTIVE_KEY = "_tuning_objective_metric"
ATTEMPTS_WITHOUT_SUCCESS = 5
"""SageMaker fails a tuning job whose first trials all fail ("No training job succeeded after 5 attempts"):
a broken script or job spec costs five trials, not max_jobs."""
SEARCHES_ROOT = Path("runs")
"""Where a search goes by default (runs/<tuning name>/), and where a warm start finds its parents by name."""
SERIES_CHUNK_BYTES = 1 << 20
"""The most of a trial's metrics file read at once: a longer line is skipped (no point is that long), so whatever
the file holds costs the search no more than this."""


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
    search_spec: str | None = None
    """The tuning spec file the search ran: a folder holds one search's results."""
    status: str = "Completed"
    """Stopped when interrupted (Ctrl-C, SIGTERM), Failed when a trial could not run at all or the first
    ATTEMPTS_WITHOUT_SUCCESS trials all failed."""
    max_jobs: int | None = None
    """The trials the search runs at most: `tune status` shows the trials so far out of it."""
    settings: str | None = None
    """A digest of what the trials' objectives depend on (the tuning spec but its job counts, the job spec after
    --set): a search into this folder continues this one only when its digest is the same."""
    created: datetime | None = None
    """When the search started (SageMaker's CreationTime): `tune list` shows the newest first by it."""
    failure_reason: str | None = None
    """Why a Failed search failed, as DescribeHyperParameterTuningJob's FailureReason says it."""
    completion_reason: str | None = None
    """The criterion that ended the search before max_jobs (criteria.py): a target reached, the best not
    improving, its max runtime or budget."""

    @property
    def best(self) -> Trial | None:
        return best(self.trials, self.goal)

    def figure(self) -> Any:
        from orchestrator.observing.trials import figure

        return figure(self.trials, self.goal, self.metric, self.log_scaled, title=self.name)

    def to_dict(self) -> dict[str, Any]:
        winner = self.best
        return {"tuning_job_name": self.name, "search_spec": self.search_spec, "run_dir": str(self.run_dir),
                "status": self.status, "created": self.created.isoformat() if self.created else None,
                "settings": self.settings,
                "strategy": self.strategy, "max_jobs": self.max_jobs,
                "log_scaled": list(self.log_scaled),
                "objective": {"metric": self.metric, "type": self.goal}, "parallel": self.parallel,
                "seconds": round(self.seconds, 2), "failure_reason": self.failure_reason,
                "completion_reason": self.completion_reason,
                "best": winner.to_dict() if winner else None,
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
    root = (options.run_dir or SEARCHES_ROOT / name).resolve()
    search_spec = str(loaded.path.resolve()) if loaded.path else None
    settings = search_settings(loaded)
    words = loaded.job.field_words  # the caller's: `tune local`'s flags, or the API's keywords
    earlier = _claim_folder(root, search_spec, settings, words)
    (root / STOP_FILE).unlink(missing_ok=True)  # a request left by an earlier search into this folder
    total = min(spec.total_jobs(), options.max_jobs or spec.total_jobs())
    # No more at once than the trials to run: `--max-jobs 1` runs one at a time, whatever max_parallel_jobs says.
    to_run = max(0, total - len(earlier.trials)) if earlier else total
    parallel = max(1, min(to_run, options.parallel or default_parallel(spec.max_parallel_jobs, loaded.job)))
    if parallel > 1 and options.trial.cpus is None:  # the trials at once share this machine's cores
        options = dataclasses.replace(options, trial=dataclasses.replace(
            options.trial, cpus=max(1, usable_cores() // parallel)))
    log_scaled = tuple(name for name, item in spec.parameters.items()
                       if isinstance(item, (ContinuousRange, IntegerRange)) and item.scaling is Scaling.Logarithmic)
    started, created = time.monotonic(), datetime.now(timezone.utc)
    if earlier:
        name, created = earlier.name, earlier.created or created

    def results(status: str) -> SearchResult:
        """The search as it stands, its running trials InProgress, written to tuning.json (whole, by a rename: a
        reader never sees half)."""
        trials = sorted([*search.trials, *search.running.values()], key=lambda trial: trial.number)
        result = SearchResult(name=name, run_dir=root, strategy=spec.strategy.value, metric=spec.objective.metric,
                              goal=spec.objective.type, parallel=parallel, seconds=time.monotonic() - started,
                              trials=trials, log_scaled=log_scaled, search_spec=search_spec, status=status,
                              max_jobs=total, created=created, settings=settings,
                              failure_reason=search.failure or (str(search.errors[0]) if search.errors else None),
                              completion_reason=search.completed_by)
        written = root / f".{SEARCH_RESULTS_FILE}.partial"
        written.write_text(json.dumps(result.to_dict(), indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(written, root / SEARCH_RESULTS_FILE)
        return result

    prior, warm_start_lines = parent_trials(spec, SEARCHES_ROOT)
    search = _Search(loaded, _Folder(root, name), options, say, on_trial=lambda: results("InProgress"),
                     known=_Known(earlier=earlier.trials if earlier else [], prior=prior))
    if earlier and search.completed_by:
        say(f"tuning {name}: the search in {root} is complete ({search.completed_by}): nothing more to run")
    elif earlier and not to_run:
        say(f"tuning {name}: the search in {root} has run {counted(len(earlier.trials), 'trial')} of its {total}: "
            f"nothing more to run (a larger {words.option(SearchOptions, 'max_jobs')} or `max_jobs:` continues it)")
    elif earlier:
        say(f"tuning {name}: continuing the search in {root}: its {counted(len(earlier.trials), 'trial')} so far count "
            f"toward its {total} and the best; {to_run} more to run, {parallel} at a time ({spec.strategy.value})")
    else:
        say(f"tuning {name}: {counted(total, 'trial')} of {job.name}, {parallel} at a time ({spec.strategy.value}); "
            f"trials in {root}")
    for line in [*not_emulated(spec), *warm_start_lines]:  # what of the spec runs otherwise here, said once
        say(f"tuning {name}: {line}")
    interrupted: list[int] = []
    asked_to_stop: list[bool] = []

    def stop(signum: int, frame: Any) -> None:
        """SIGTERM or SIGHUP: as Ctrl-C, every trial stops (each `smtrain local` ends its own process tree) and the
        results so far are written before the search exits by the signal."""
        interrupted.append(signum)
        search.stop_all(signum)

    def stop_requested() -> None:
        """`smtrain tune stop local:FOLDER`: as StopHyperParameterTuningJob, no new trial, the running ones stopped."""
        asked_to_stop.append(True)
        say(f"tuning {name}: stop requested; stopping the running trials")
        search.stop_all()

    results("InProgress")
    with (_signals_handled((signal.SIGTERM, signal.SIGHUP), stop), StopWatch(root, stop_requested),
          ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="trial") as pool):
        workers = [pool.submit(search.worker, total, started) for _ in range(parallel)]
        try:
            # A signal sent to the process may land on any of its threads; Python runs the handler in this one
            # only once it wakes, and a wait with no timeout would not wake until the trials end.
            while wait(workers, timeout=SIGNAL_POLL_SECONDS).not_done:
                pass
        except KeyboardInterrupt:
            # Ctrl-C: the running trials stop and are recorded, and the results say Stopped, as on SIGTERM.
            # Waited for on the futures: a thread join that Ctrl-C interrupted returns at once when retried.
            interrupted.append(signal.SIGINT)
            say(f"tuning {name}: interrupted ({signal_name(signal.SIGINT)}); stopping the running trials")
            search.stop_all(signal.SIGINT)
            wait(workers)
    failed = search.errors or search.failure
    result = results("Stopped" if interrupted or asked_to_stop else "Failed" if failed else "Completed")
    if interrupted:
        say(_interrupted_summary(result, words))
        raise interruption(interrupted[0])  # the CLI's exit (130), naming the signal; tuning.json is written
    if search.errors:
        raise search.errors[0]
    return result


def _interrupted_summary(result: SearchResult, words: FieldWords) -> str:
    """What an interrupted search leaves, as the CLI prints no table after Ctrl-C, and how to go on with it: the
    best so far as the finished search's `best:` line names it (values, masked, and run directory), since
    whoever stops a search early often means to take that trial; the default folder is named anew by each run, so
    only the same run directory continues the search (`words`: named as the caller gives it)."""
    counts = ", ".join(f"{count} {status_words(status)}" for status, count in counts_of(result.trials).items() if count)
    winner = result.best
    best_so_far = (f"best so far {winner.name}, {result.metric} = {winner.objective:.6g}, {winner.hyperparameters}, "
                   f"run directory {winner.run_dir}" if winner else "no best trial yet")
    return (f"tuning {result.name}: interrupted after {counted(len(result.trials), 'trial')} of {result.max_jobs} "
            f"({counts or 'none ran'}); {best_so_far}; results in {result.run_dir} (tuning.json, a run directory "
            f"per trial); the same search with {words.option(SearchOptions, 'run_dir', result.run_dir)} continues it")


def search_settings(loaded: LoadedTuning) -> str:
    """What a trial's objective depends on, as a digest: the tuning spec but how many trials run (max_jobs and
    max_parallel_jobs may change between a search and its continuation), and the job spec after --set."""
    settings = {"tuning": loaded.spec.model_dump(mode="json", exclude={"max_jobs", "max_parallel_jobs"}),
                "job": loaded.job.spec.model_dump(mode="json")}
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _claim_folder(root: Path, search_spec: str | None, settings: str, words: FieldWords) -> SearchResult | None:
    """The search's folder, held as a run directory is (a second search into it is refused while this one runs);
    the earlier search it holds, which this one continues when it is of the same spec with the same settings.

    Raises:
        SpecError: the folder is in use, or holds the results of a search this one cannot continue (overwriting
            them would lose them).
    """
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SpecError(f"cannot use {root} for the search: {error.strerror or error}",
                        fix=f"pass a writable {words.option(SearchOptions, 'run_dir')}") from None
    hold_directory(root, words.option(SearchOptions, "run_dir"))
    previous = root / SEARCH_RESULTS_FILE
    if not previous.exists():
        return
    try:
        document = json.loads(previous.read_bytes()[:1 << 24]) if previous.stat().st_size <= 1 << 24 else None
    except (OSError, ValueError):
        document = None
    owner = document.get("search_spec") if isinstance(document, dict) else None
    keep_or_discard = (f"give another {words.option(SearchOptions, 'run_dir')} to keep them beside a new search, "
                       f"or delete {previous} to discard them")
    if owner is None or owner != search_spec:
        raise SpecError(f"{root} already holds another search's results ({previous}"
                        f"{f', of {owner}' if isinstance(owner, str) else ''}); writing this search's would lose them",
                        fix=keep_or_discard)
    assert isinstance(document, dict)
    if document.get("settings") != settings:
        raise SpecError(f"{root} holds an earlier search of {owner} with other settings (its ranges, objective or "
                        f"job spec, {words.overrides} included, differ, or are not on record): this search cannot "
                        "continue it, and writing its results would lose that one's",
                        fix=f"run it with the earlier settings to continue it; or {keep_or_discard}")
    return _earlier_search(document)


def _earlier_search(document: dict[str, Any]) -> SearchResult:
    """The search a folder's tuning.json holds, its trials as they ended: one still InProgress there ran when
    that search's process died, and failed with it."""
    trials = [Trial.from_dict(item) for item in document.get("trials", [])]
    trials = [dataclasses.replace(trial, status="Failed", failure_reason="the search's process ended while it ran")
              if trial.status == "InProgress" else trial for trial in trials]
    created = document.get("created")
    objective = document.get("objective", {})
    return SearchResult(name=document["tuning_job_name"], run_dir=Path(document.get("run_dir", ".")),
                        strategy=document.get("strategy", ""), metric=objective.get("metric", ""),
                        goal=objective.get("type", "Minimize"), parallel=document.get("parallel", 1),
                        seconds=document.get("seconds", 0.0), trials=trials,
                        created=datetime.fromisoformat(created) if isinstance(created, str) else None)


class _signals_handled:
    """Installs `handler` for `signals` while the search runs (from the main thread only: elsewhere Python cannot
    install one), restoring the previous handlers after."""

    def __init__(self, signals: tuple[int, ...], handler: Callable[[int, Any], None]) -> None:
        self._signals, self._handler = signals, handler
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._previous = {signum: signal.signal(signum, self._handler) for signum in self._signals}

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)


def default_parallel(max_parallel: int, job: LoadedSpec) -> int:
    """The spec's max_parallel_jobs, but no more trials than this machine's cores can run side by side."""
    processes = topology(job.spec, lookup(job.spec.instance.type)).world_size
    return max(1, min(max_parallel, usable_cores() // max(1, processes)))


@dataclass(frozen=True)
class _Known:
    """The trials a search starts knowing: its own earlier ones (a continued search) and its warm-start parents'."""

    earlier: list[Trial]
    prior: list[Trial]


@dataclass(frozen=True)
class _Folder:
    """A search's folder and name, which its trials' run directories and names are made of."""

    root: Path
    name: str


class _Search:
    """The trials of one search, started by worker threads until the count or the budget is reached."""

    def __init__(self, loaded: LoadedTuning, folder: _Folder, options: SearchOptions, say: Callable[[str], None],
                 on_trial: Callable[[], object], known: _Known) -> None:
        earlier = known.earlier
        self._loaded, self._options, self._say = loaded, options, say
        self._root, self._name = folder.root, folder.name
        self._on_trial = on_trial
        """Called (under the lock) as each trial starts and ends: the results so far are written."""
        self._max_resource = hyperband_max_resource(loaded.spec, loaded.job.spec.hyperparameters)
        self._chooser: Chooser = chooser_for(loaded.spec, self._max_resource, earlier, known.prior)
        self._limit = time_limit(loaded.spec, options.budget_seconds)
        self._lock = threading.Lock()
        self._started = len(earlier)
        """Trials started, the continued search's earlier ones included: they count toward the total."""
        self.running: dict[int, Trial] = {}
        """The trials started and not ended yet, InProgress, by their number."""
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        self._watches: dict[int, _ObjectiveWatch] = {}
        self._stopping = False
        self._interrupted_by: str | None = None
        """The signal that stopped the search, which the line of each trial it stopped names."""
        self.trials: list[Trial] = list(earlier)
        self.errors: list[BaseException] = []
        self.failure: str | None = None
        """Why the search failed: its first trials all failed (ATTEMPTS_WITHOUT_SUCCESS)."""
        self._ended_here: list[str] = []
        """The statuses of the trials this run ended: a continued search whose script was fixed starts afresh."""
        self.completed_by = completion_reason(loaded.spec, earlier)
        """The criterion that ended the search (criteria.py); a continued search may have met one already."""

    def worker(self, total: int, began: float) -> None:
        limit = self._limit
        while True:
            with self._lock:
                out_of_time = limit is not None and time.monotonic() - began >= limit.seconds
                if out_of_time and not self._stopping and self._started < total:
                    self._out_of_time()
                if self._stopping or self._started >= total or out_of_time or self.errors or self.completed_by:
                    return
                self._started += 1
                key, values = self._chooser.ask()
            try:
                self._run_trial(key, values, None if limit is None else began + limit.seconds)
            except BaseException as error:  # a trial that could not run at all: the search reports it
                with self._lock:
                    self.errors.append(error)
                return

    def _out_of_time(self) -> None:
        """The search's time limit ran out before it ran its trials: that is what ended it (called under the lock)."""
        assert self._limit is not None
        self.completed_by = self.completed_by or f"its {self._limit.name} ran out"

    def _complete(self) -> None:
        """A completion criterion is met: as SageMaker ends the tuning job, no trial starts and the running ones
        are stopped (each asked as StopTrainingJob asks, and again until its run can take the request)."""
        with self._lock:
            self._stopping = True
            for watch in self._watches.values():
                if not watch.why:
                    watch.stop("stopped as the search completed")

    def stop_all(self, signum: int | None = None) -> None:
        """No new trial starts, and every running one stops: on SIGTERM or SIGHUP its `smtrain local` gets the
        signal, on which it stops its job as a spot interruption would and ends every process the job started;
        on Ctrl-C (SIGINT, which the trials got from the terminal too) or `tune stop` (no signal) each is asked to
        stop as StopTrainingJob stops it. The line of each trial a signal stopped names it."""
        with self._lock:
            self._stopping = True
            if signum is not None and self._interrupted_by is None:
                self._interrupted_by = signal_name(signum)
            for key, trial in self.running.items():
                process = self._processes.get(key)
                if signum not in (None, signal.SIGINT) and process is not None and process.poll() is None:
                    process.send_signal(signum)
                else:
                    _request_stop(self._root / trial.name)

    def _run_trial(self, key: int, values: dict[str, Any], deadline: float | None) -> None:
        """One trial: `smtrain local` of the job spec with the trial's values, in a process of its own (a run
        owns every process started beside it, so two runs never share one smtrain process), watched through
        its metric series."""
        spec, job = self._loaded.spec, self._loaded.job
        trial_name = f"{self._name}-{key:03d}"
        run_dir = self._root / trial_name
        # The trial's values go in a file only this user reads, never on a command line (the process list shows
        # those), and as JSON: names with a dot or `=` and every value arrive verbatim.
        values_file = self._root / f"{trial_name}.hyperparameters.json"
        descriptor = os.open(values_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump({**values, TUNING_OBJECTIVE_KEY: spec.objective.metric}, handle, allow_nan=False)
        command = [sys.executable, "-m", "orchestrator", "local", str(job.path), "-q", "-o", "json",
                   *command_words(dataclasses.replace(self._options.trial, run_dir=run_dir)),
                   "--hyperparameters-file", str(values_file),
                   *(item for override in self._loaded.job_overrides for item in override_words(override))]
        watch = _ObjectiveWatch(self._chooser, key, spec.objective.metric, run_dir)
        limit = self._limit
        self._say(f"trial {key} started: {_values_text(values)}")
        began, started_at = time.monotonic(), datetime.now(timezone.utc)
        with self._lock:
            self.running[key] = Trial(name=trial_name, status="InProgress", objective=None,
                                      hyperparameters=redact_mapping(values), number=key, started=started_at,
                                      run_dir=str(run_dir))
            self._watches[key] = watch
            self._on_trial()
        # Files, not pipes: a trial's console (its progress bar) must never block on a pipe nobody reads yet.
        out_file, err_file = self._root / f"{trial_name}.result.json", self._root / f"{trial_name}.console.txt"
        try:
            with out_file.open("w") as out, err_file.open("w") as err:
                with self._lock:
                    if self._stopping:
                        return
                    process = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                               env={**os.environ, STOP_WITH_PARENT: str(os.getpid()),
                                                    TRIAL_OF_SEARCH: self._name})
                    self._processes[key] = process
                while process.poll() is None:
                    watch.read()
                    if limit is not None and deadline is not None and time.monotonic() >= deadline and not watch.why:
                        watch.stop(f"stopped at the search's {limit.name}")
                        with self._lock:
                            self._out_of_time()
                    watch.deliver_stop()
                    time.sleep(WATCH_SECONDS)
        finally:
            with self._lock:
                self.running.pop(key, None)
                self._processes.pop(key, None)
                self._watches.pop(key, None)
        watch.read()
        watch.finish()
        run = _run_result(out_file.read_text(), err_file.read_text(), process.returncode)
        trial = self._trial(key, trial_name, values, run, watch)
        trial = dataclasses.replace(trial, seconds=round(time.monotonic() - began, 2), started=started_at,
                                    ended=datetime.now(timezone.utc), run_dir=str(run_dir))
        self._chooser.tell(key, trial.objective, trial.status)
        with self._lock:
            self.trials.append(trial)
            self._ended_here.append(trial.status)
            hopeless = not self.failure and "Completed" not in self._ended_here and (
                self._ended_here.count("Failed") >= ATTEMPTS_WITHOUT_SUCCESS)
            if hopeless:
                self.failure = (f"No training job succeeded after {ATTEMPTS_WITHOUT_SUCCESS} attempts; see why "
                                "each trial failed")
            complete = None if self.completed_by or hopeless else completion_reason(spec, self.trials)
            self.completed_by = self.completed_by or complete
            self._on_trial()
        shown = "-" if trial.objective is None else f"{trial.objective:.6g}"
        why = watch.why and (f" - {watch.why}" if trial.status != "Completed"
                             else f" - {watch.why.replace('stopped', 'asked to stop')}; it completed first")
        if trial.failure_line:
            why += f" - {trial.failure_line}"
        if trial.status == "Stopped" and not why and self._interrupted_by:
            why = f" - interrupted ({self._interrupted_by})"
        self._say(f"trial {key} {status_words(trial.status)}: {spec.objective.metric} = {shown} ({trial.seconds:.1f} s)"
                  f"{why}")
        if hopeless:
            self._say(f"tuning {self._name}: failed: {self.failure} (as SageMaker fails a tuning job); no more "
                      "trials start, and the running ones are stopped")
            self.stop_all()
        elif complete:
            self._say(f"tuning {self._name}: complete: {complete}; no more trials start, and the running ones are "
                      "stopped")
            self._complete()

    def _trial(self, key: int, name: str, values: dict[str, Any], run: dict[str, Any],
               watch: _ObjectiveWatch) -> Trial:
        status = "Completed" if run.get("status") == "Completed" else "Failed"
        if run.get("status") in ("Stopped", "Interrupted"):
            status = "Stopped"  # early, at the budget, by Ctrl-C, or at max_run_seconds
        if status == "Stopped" and watch.reached_max_resource(self._max_resource):
            status = "Completed"  # Hyperband stops a trial at max_resource; it has completed its budget
        return Trial(name=name, status=status, objective=watch.final, hyperparameters=redact_mapping(values),
                     number=key,
                     failure_reason=run.get("failure_reason"), intermediate=dict(watch.per_epoch))


def _run_result(out: str, err: str, returncode: int) -> dict[str, Any]:
    """What `smtrain local -o json` reported; a trial that could not start says why on stderr (exit 2)."""
    try:
        document = json.loads(out)
    except ValueError:
        document = None
    if isinstance(document, dict) and "status" in document:
        return document
    if isinstance(document, dict) and isinstance(document.get("error"), dict):
        return {"status": "Failed", "failure_reason": str(document["error"].get("message"))}
    reason = next((line for line in reversed(err.splitlines()) if line.strip()), f"exit code {returncode}")
    return {"status": "Failed", "failure_reason": reason}


def _request_stop(run_dir: Path) -> bool:
    """Asks the trial's run to stop; False while its run has not reported a status yet.

    The run directory existing is not enough: `smtrain local` creates it, then clears the files of a previous
    run from it (`stop-requested` among them) before it writes its first `status.json`, so a request written in
    between would be lost and the trial would run to its end (a budget that ends while trials still start)."""
    from orchestrator.emulator.supervising.status import STATUS_FILE, request_stop

    if not (run_dir / STATUS_FILE).is_file():
        return False
    request_stop(run_dir)
    return True


@dataclass
class _HostEpochs:
    """Where one host is: hosts print at their own pace, so an epoch ends on each host on its own."""

    epoch: int | None = None
    """The epoch the host's latest point was logged in, counted from 1 (MetricPoint.epoch)."""
    value: float | None = None
    """The objective the host logged last."""


class _ObjectiveWatch:
    """A trial's metric series, followed as its run records it: the values SageMaker reads from the trial's log
    (a progress bar's line read once, as a line), each with the epoch its host was in. The last value is the
    trial's objective; after each epoch the chooser is asked whether to stop the trial (which is then asked to
    stop as StopTrainingJob stops a job: its run directory's stop request). An epoch ends on a host with the
    host's first point of a later epoch (SageMaker's tuner, too, sees only the points), and ends once, when the
    first host leaves it, with that host's objective."""

    def __init__(self, chooser: Chooser, key: int, metric: str, run_dir: Path) -> None:
        self._chooser, self._key, self._metric, self._run_dir = chooser, key, metric, run_dir
        self._offset, self._skipping = 0, False
        """How far the metrics file was read, and whether that is inside a line too long to read."""
        self.final: float | None = None
        self.per_epoch: dict[int, float] = {}
        self.why = ""
        self._stop_pending = False
        self._hosts: dict[str | None, _HostEpochs] = {}

    def stop(self, why: str) -> None:
        self.why, self._stop_pending = why, True
        self.deliver_stop()

    def deliver_stop(self) -> None:
        """Writes a pending stop request once the trial's run directory exists."""
        if self._stop_pending and _request_stop(self._run_dir):
            self._stop_pending = False

    def reached_max_resource(self, max_resource: int | None) -> bool:
        return max_resource is not None and bool(self.per_epoch) and max(self.per_epoch) >= max_resource

    def read(self) -> None:
        """The points recorded since the last read, SERIES_CHUNK_BYTES at a time; a line longer than that (none
        the run writes) is skipped whole, and a line still being written waits for the next read."""
        try:
            with (self._run_dir / METRICS_FILE).open("rb") as handle:
                while True:
                    handle.seek(self._offset)
                    data = handle.read(SERIES_CHUNK_BYTES)
                    end = data.rfind(b"\n") + 1
                    if not end:
                        if len(data) == SERIES_CHUNK_BYTES:  # inside an over-long line: skip past it
                            self._offset, self._skipping = self._offset + len(data), True
                            continue
                        break
                    lines = data[:end].split(b"\n")[:-1]
                    if self._skipping:
                        lines, self._skipping = lines[1:], False  # the over-long line's end
                    self._offset += end
                    for point in filter(None, map(recorded_point, lines)):
                        self._point(point)
        except OSError:  # not written yet
            pass

    def _point(self, point: MetricPoint) -> None:
        """A point of a later epoch ends the one before on its host, with the objective the host logged last.
        Epochs are counted from 1 as progress shows them (epochs.py), so that trials printing `epoch=0`,
        `Epoch 1/3` or the Trainer's `'epoch': 0.5` are compared with each other, and with max_resource, at the
        same epoch."""
        state = self._hosts.setdefault(point.host, _HostEpochs())
        if point.epoch is not None:
            if state.epoch is not None and point.epoch > state.epoch and state.value is not None:
                self._epoch_ended(state.epoch, state.value)
            state.epoch = point.epoch
        if point.metric == self._metric:
            state.value = self.final = point.value

    def finish(self) -> None:
        """The trial's last epoch ended with the run: its value completes the trial's curve."""
        for state in self._hosts.values():
            if state.epoch is not None and state.value is not None:
                self._epoch_ended(state.epoch, state.value)

    def _epoch_ended(self, epoch: int, value: float) -> None:
        if epoch in self.per_epoch:  # another host left it first
            return
        self.per_epoch[epoch] = value
        if not self.why and self._chooser.should_stop(self._key, epoch, value):
            self.stop(f"stopped early after epoch {epoch}")


def _values_text(values: dict[str, Any]) -> str:
    return ", ".join(f"{name}={value:.4g}" if isinstance(value, float) else f"{name}={value}"
                     for name, value in redact_mapping(values).items())

