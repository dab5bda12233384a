"""A search, wherever it ran: one interface (`TuningBackend`), two places, one handle (`Tuning`), one resolver.

A SageMaker tuning job is read through `cloud.tuning.TuningClient`; a search `smtrain tune local` ran is read
from its results folder (`tuning.json`, which the search rewrites after each trial and when it ends; a stop is
the folder's stop request, as for a run). Both answer in `observing.trials`' words (`TuningStatus`, `Trial`,
`TuningSummary`), and each hands a trial on as the backend of single jobs it ran on, so `Tuning.best_job()` is
an `orchestrator.Job` either way. `smtrain tune status | list | stop` and `orchestrator.Tuning.attach` resolve a
tuning id here, by `backends.resolve`'s rules: `local:<folder or name under runs/>` (or the tuning spec's name:
the newest search named after it), `sagemaker:<tuning job name>`, `--backend`, or a bare name (a results folder of
that name, else SageMaker's).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from orchestrator.backends.job import Job
from orchestrator.backends.resolve import place_of, split_job_id
from orchestrator.backends.runs import (
    RUNS_ROOT,
    find_run,
    listed_runs,
    local_runs,
    looked_in,
    near_runs,
    relative_to_cwd,
)
from orchestrator.cloud.hang_watch import refuse_unless_watch_option
from orchestrator.errors import SmtrainError
from orchestrator.observing import trials as trial_tables
from orchestrator.observing.trials import SEARCH_RESULTS_FILE as RESULT_FILE
from orchestrator.observing.trials import Trial, TuningNotFound, TuningStatus, TuningSummary, counts_of

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from orchestrator.cloud.tuning import TuningClient
    from orchestrator.planning.tuning import TuningPlan

class TuningBackend(Protocol):
    """Answers for searches by id: a SageMaker tuning job's name, or a local search's results folder."""

    name: str
    """`local` or `sagemaker`."""

    def status(self, tuning_id: str) -> TuningStatus: ...

    def trials(self, tuning_id: str) -> list[Trial]:
        """Every trial, in the order the search started them."""
        ...

    def log_scaled(self, tuning_id: str) -> tuple[str, ...]:
        """The parameters searched on a logarithmic scale (drawn on one)."""
        ...

    def stop(self, tuning_id: str) -> tuple[bool, TuningStatus]:
        """Whether a stop was requested (not when the search was not running, which is no error), and its status."""
        ...

    def list_tunings(self, status: str | None, name_contains: str | None, max_results: int) -> list[TuningSummary]:
        """The most recent searches there, newest first."""
        ...

    def listed_from(self) -> str | None:
        """Where `list_tunings` looked, said under a listing (a local folder); None where it goes without saying."""
        ...

    def trial_job(self, trial: Trial) -> Job:
        """The trial as the single job it is, on the backend it ran on."""
        ...


class SageMakerTuning:
    """Tuning jobs on SageMaker, through `cloud.tuning`."""

    name = "sagemaker"

    def __init__(self, boto: Any | None = None, region: str | None = None) -> None:
        from orchestrator.cloud.sdk import boto_session

        self.boto = boto or boto_session(region)
        self._clients: dict[str, TuningClient] = {}

    def _client(self, tuning_id: str) -> TuningClient:
        """One client per tuning job: what its status read (the secrets its trials' failure reasons are masked
        for) serves its trials' read after it."""
        from orchestrator.cloud.tuning import TuningClient

        if tuning_id not in self._clients:
            self._clients[tuning_id] = TuningClient(tuning_id, self.boto)
        return self._clients[tuning_id]

    def status(self, tuning_id: str) -> TuningStatus:
        return self._client(tuning_id).status()

    def trials(self, tuning_id: str) -> list[Trial]:
        return self._client(tuning_id).trials()

    def log_scaled(self, tuning_id: str) -> tuple[str, ...]:
        return self._client(tuning_id).log_scaled()

    def stop(self, tuning_id: str) -> tuple[bool, TuningStatus]:
        return self._client(tuning_id).stop()

    def list_tunings(self, status: str | None, name_contains: str | None, max_results: int) -> list[TuningSummary]:
        from orchestrator.cloud.tuning import list_tunings

        return list_tunings(boto=self.boto, status=status, name_contains=name_contains, max_results=max_results)

    def listed_from(self) -> None:
        return None

    def trial_job(self, trial: Trial) -> Job:
        from orchestrator.backends.sagemaker import SageMakerBackend

        return Job(SageMakerBackend(self.boto), trial.name)


class LocalTuning:
    """Searches `smtrain tune local` ran here, each read from its folder's `tuning.json`."""

    name = "local"

    def __init__(self, runs_root: Path = RUNS_ROOT) -> None:
        self.runs_root = runs_root

    def _document(self, tuning_id: str) -> dict[str, Any]:
        path = Path(tuning_id) / RESULT_FILE
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TuningNotFound(f"{tuning_id} holds no search results ({RESULT_FILE})",
                                 fix="a search writes them as it starts; point at the folder `smtrain tune local` "
                                     "named (its --run-dir, default runs/<tuning-name>/)") from None
        except (OSError, ValueError) as error:
            raise TuningNotFound(f"{path} cannot be read as a search's results: {error}",
                                 fix="run the search again into another --run-dir") from None
        return document

    def status(self, tuning_id: str) -> TuningStatus:
        """What the search's tuning.json says (rewritten after each trial); a search that says InProgress but whose
        process no longer holds its folder was killed before it could say how it ended: Failed."""
        document = self._document(tuning_id)
        trials = _trials_of(document)
        objective = document.get("objective", {})
        status, failure = document.get("status", "Completed"), document.get("failure_reason")
        if status == "InProgress" and not _running(tuning_id):
            status, failure = "Failed", "the search's process ended without writing how the search ended"
        ended = None if status == "InProgress" else datetime.fromtimestamp(
            (Path(tuning_id) / RESULT_FILE).stat().st_mtime).astimezone()
        return TuningStatus(
            name=document["tuning_job_name"], status=status,
            strategy=document["strategy"], metric=objective.get("metric", ""),
            goal=objective.get("type", "Minimize"), max_jobs=document.get("max_jobs"),
            parallel=document["parallel"], counts=counts_of(trials),
            best=trial_tables.best(trials, objective.get("type", "Minimize")),
            created=_created(document, trials), ended=ended,
            failure_reason=failure, place={"run_dir": str(Path(tuning_id))},
            completion_reason=document.get("completion_reason"))

    def trials(self, tuning_id: str) -> list[Trial]:
        return _trials_of(self._document(tuning_id))

    def log_scaled(self, tuning_id: str) -> tuple[str, ...]:
        return tuple(self._document(tuning_id).get("log_scaled", ()))

    def stop(self, tuning_id: str) -> tuple[bool, TuningStatus]:
        """Writes the search's stop request (the one a run reads): no trial starts after it, the running ones stop."""
        current = self.status(tuning_id)
        if current.status != "InProgress":
            return False, current
        from orchestrator.emulator.supervising.status import request_stop

        request_stop(Path(tuning_id))
        return True, current

    def list_tunings(self, status: str | None, name_contains: str | None, max_results: int) -> list[TuningSummary]:
        rows = []
        for folder in listed_runs(self.runs_root, RESULT_FILE):
            try:
                found = self.status(str(folder))
            except (TuningNotFound, KeyError):  # a folder whose tuning.json is not a search's: not listed
                continue
            if (status is None or found.status == status) and (not name_contains or name_contains in found.name):
                rows.append(TuningSummary(found.name, found.status, found.strategy, found.counts, found.created))
        # Newest first by creation, as ListHyperParameterTuningJobs sorts (not by the last write of tuning.json,
        # which a search makes as each trial ends); one that says no creation time last.
        rows.sort(key=lambda row: row.created or datetime.min.replace(tzinfo=timezone.utc), reverse=True)
        return rows[:max_results]

    def listed_from(self) -> str:
        return looked_in(self.runs_root, "searches")

    def trial_job(self, trial: Trial) -> Job:
        from orchestrator.backends.local import LocalBackend

        if trial.run_dir is None:
            raise SmtrainError(f"trial {trial.name} has no run directory on record",
                               fix="run the search again with smtrain tune local")
        return Job(LocalBackend(), trial.run_dir)


def _running(folder: str) -> bool:
    from orchestrator.emulator.preparing.layout import is_held

    return is_held(Path(folder))


def _created(document: dict[str, Any], trials: list[Trial]) -> datetime | None:
    """When the search started: as it wrote it, else (a search written before it did) its first trial's start."""
    try:
        return datetime.fromisoformat(document["created"])
    except (KeyError, TypeError, ValueError):
        return min((trial.started for trial in trials if trial.started), default=None)


def _trials_of(document: dict[str, Any]) -> list[Trial]:
    return sorted((Trial.from_dict(item) for item in document.get("trials", [])),
                  key=lambda trial: trial.number)


class Tuning:
    """One search on one backend: what `orchestrator.submit_tuning` returns and `Tuning.attach(...)` finds."""

    def __init__(self, backend: TuningBackend, tuning_id: str, plan: TuningPlan | None = None) -> None:
        self.backend = backend
        self.id = tuning_id
        """A SageMaker tuning job's name, or a local search's results folder."""
        self.plan = plan
        self.last_status: TuningStatus | None = None

    @classmethod
    def attach(cls, tuning: str | Path, *, region: str | None = None, boto: Any | None = None,
               backend: str | None = None) -> Tuning:
        """The search a user names (`local:FOLDER`, `sagemaker:NAME` or a bare name), its status read once.

        Raises:
            TuningNotFound: no such search there; AmbiguousJob: a bare name that is both.
        """
        chosen, tuning_id = resolve_tuning(str(tuning), backend, region, boto)
        handle = cls(chosen, tuning_id)
        handle.status()
        return handle

    @property
    def name(self) -> str:
        if self.plan is not None:
            return self.plan.name
        return self.last_status.name if self.last_status else Path(self.id).name

    @property
    def full_id(self) -> str:
        """`local:<folder>` or `sagemaker:<name>`: what `attach` and `smtrain tune status` take back."""
        return f"{self.backend.name}:{self.id}"

    def status(self) -> TuningStatus:
        """Progress (trials completed, running, stopped, failed) and the best trial so far."""
        self.last_status = self.backend.status(self.id)
        return self.last_status

    def trials(self) -> list[Trial]:
        """Every trial with its tuned values, status and final objective, in the order they started."""
        return self.backend.trials(self.id)

    def best_trial(self) -> Trial | None:
        return (self.last_status or self.status()).best

    def best_job(self) -> Job:
        """The best trial so far as the `orchestrator.Job` it is (status, logs, metrics, artifacts, ...)."""
        best = self.status().best
        if best is None:
            raise SmtrainError(f"search {self.name} has no completed trial with an objective yet",
                               fix="wait for a trial to complete (`smtrain tune status`)")
        job = self.backend.trial_job(best)
        job.status()
        return job

    def table(self) -> str:
        current = self.last_status or self.status()
        return trial_tables.table(self.trials(), current.goal, current.metric)

    def results(self) -> Any:
        """All trials sorted by objective, as a pandas DataFrame (a list of dicts without pandas)."""
        return trial_tables.to_frame(self.trials(), (self.last_status or self.status()).goal)

    def plot(self) -> Figure:
        """The objective over the trials and against each tuned parameter (needs matplotlib)."""
        current = self.last_status or self.status()
        return trial_tables.figure(self.trials(), current.goal, current.metric, self.backend.log_scaled(self.id),
                                   title=self.name)

    def stop(self) -> bool:
        """Stops the search and its running trials; False when it was not running."""
        requested, self.last_status = self.backend.stop(self.id)
        return requested

    def wait(self, poll_seconds: float = 60.0,
             on_status: Callable[[TuningStatus], None] | None = None) -> TuningStatus:
        """Reads the status every `poll_seconds` until the search has ended, handing `on_status` each reading
        (`tune submit --wait` prints the changes); returns the final one.

        Raises:
            SpecError: `poll_seconds` is no number of 0 or more, as `tune submit --poll-seconds` refuses it (before,
                a negative one failed inside time.sleep once the search was running).
        """
        refuse_unless_watch_option("poll_seconds", poll_seconds, "Tuning.wait")
        while True:
            current = self.status()
            if on_status is not None:
                on_status(current)
            if current.is_terminal:
                return current
            time.sleep(poll_seconds)

    def __repr__(self) -> str:
        if self.last_status is None:
            return f"Tuning({self.name!r}, backend={self.backend.name!r}, status='not read yet')"
        current = self.last_status
        counts = ", ".join(f"{key.lower()}={value}" for key, value in current.counts.items())
        shown = f", best={current.best.name!r} {current.metric}={current.best.objective!r}" if current.best else ""
        return f"Tuning({self.name!r}, status={current.status!r}, {counts}{shown})"

    def _repr_markdown_(self) -> str:
        rows = [("backend", self.backend.name)]
        current = self.last_status
        if current:
            rows += [(key.replace("_", " "), value) for key, value in current.place.items()]
            rows += [("status", current.status), ("strategy", current.strategy),
                     ("trials", ", ".join(f"{value} {key.lower()}" for key, value in current.counts.items())
                      + (f" of {current.max_jobs}" if current.max_jobs else ""))]
            if current.best:
                rows.append(("best", f"{current.best.name}: {current.metric} = {current.best.objective} "
                                     f"with {current.best.hyperparameters}"))
        else:
            rows.append(("status", "not read yet: `tuning.status()`"))
        body = "\n".join(f"| {key} | {value} |" for key, value in rows)
        return f"**Tuning job `{self.name}`**\n\n| | |\n|---|---|\n{body}\n"


def resolve_tuning(tuning: str, backend: str | None = None, region: str | None = None,
                   boto: Any | None = None) -> tuple[TuningBackend, str]:
    """(the backend, its id of the search) for what a user typed, by the rules of every id (`place_of`): a prefix
    or `--backend` says the place; a bare name is a local results folder (the folder, or runs/NAME) where there is
    one, else a SageMaker tuning job; with `region` given, SageMaker is asked too, and a name both have is
    ambiguous.

    Raises:
        TuningNotFound: `local:` names no results folder; AmbiguousJob: a bare name that is both; SpecError:
        `boto` is a session for another region than `region`.
    """
    from orchestrator.cloud.sdk import refuse_other_region

    refuse_other_region(boto, region, named_by="region=")
    runs_root = LocalTuning().runs_root
    chosen, name, folder = place_of(tuning, backend, region, find_local=lambda name: _find_search(name, runs_root),
                                    on_sagemaker=lambda name: _sagemaker_has(name, boto, region),
                                    nouns=("local search", "SageMaker tuning job"))
    if folder is not None:
        return LocalTuning(), str(folder)
    if chosen == "local":
        near = ", ".join(f"local:{relative_to_cwd(path)}" for path in near_runs(name, runs_root, marker=RESULT_FILE))
        raise TuningNotFound(f"{name} is no local search (no {name}/{RESULT_FILE}, nor runs/{name}/{RESULT_FILE}, "
                             f"nor runs/{name}-YYMMDD-HHMMSS-xxxx/)",
                             fix=f"did you mean {near}?" if near
                             else "list the local searches with `smtrain tune list --backend local`")
    return SageMakerTuning(boto, region), name


def _find_search(name: str, runs_root: Path) -> Path | None:
    """The results folder a user means: a folder, runs/NAME, else the newest search `tune local` named after NAME
    (NAME-YYMMDD-HHMMSS-xxxx, its tuning name, under runs/)."""
    found = find_run(name, runs_root, RESULT_FILE)
    if found is not None or "/" in name:
        return found
    from orchestrator.planning.tuning import is_named_after

    named = [folder for folder in local_runs(runs_root, RESULT_FILE) if is_named_after(folder.name, name)]
    return max(named, key=lambda folder: folder.name, default=None)  # the stamp in the name: started last


def tuning_backend_for(name: str | None, region: str | None = None, boto: Any | None = None,
                       runs_root: Path | None = None) -> TuningBackend:
    """The tuning backend called `name`, to list searches there: locally those `runs_root` holds (or the search it
    is; None: runs/); None names SageMaker, unless `runs_root` is given (`tune list --runs DIR`)."""
    chosen, _ = split_job_id("", name)
    if runs_root is not None and chosen == "sagemaker":
        raise SmtrainError("--runs names local searches, but --backend sagemaker lists SageMaker's tuning jobs",
                           fix="drop --runs, or --backend sagemaker")
    if chosen == "local" or runs_root is not None:
        return LocalTuning(runs_root or RUNS_ROOT)
    return SageMakerTuning(boto, region)


def _sagemaker_has(name: str, boto: Any | None, region: str) -> bool:
    try:
        SageMakerTuning(boto, region).status(name)
    except SmtrainError:
        return False
    return True
