"""The handle on one job, wherever it runs: what `orchestrator.run`, `orchestrator.submit` and `attach` return.

The same methods for a local run and a SageMaker job (status, wait, logs, metrics, plot, stop, artifacts), each
a call on the backend; like `cloud.jobs.Job`, it holds nothing that could go stale but the last status it read,
for `repr`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.backends.base import Backend
from orchestrator.cloud.notebook import LiveSummary, Summary, cloudwatch_logs_url

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from orchestrator.cloud.jobs import JobStatus
    from orchestrator.observing.log_lines import LogLine
    from orchestrator.observing.metric_series import MetricPoint
    from orchestrator.observing.progress import JobProgress
    from orchestrator.observing.root_cause import FailureCause
    from orchestrator.planning.plan import Plan


class Job:
    """One job on one backend. `orchestrator.run(spec, backend=...)` returns one; `attach(...)` finds one."""

    def __init__(self, backend: Backend, job_id: str, plan: Plan | None = None) -> None:
        self.backend = backend
        self.id = job_id
        """A SageMaker job's name, or a local run's directory."""
        self.plan = plan
        self.last_status: JobStatus | None = None
        self._latest: dict[str, float] = {}
        self._progress: JobProgress | None = None
        self._live = LiveSummary()
        self.submission: Any | None = None
        """What `orchestrator.submit` sent (`cloud.submission.Submission`); None for other jobs."""

    @classmethod
    def attach(cls, name_or_run_dir: str | Path, *, region: str | None = None, boto: Any | None = None) -> Job:
        """The job a user names: a local run (its directory, or its name under runs/), else a SageMaker job."""
        return attach(name_or_run_dir, region=region, boto=boto)

    @property
    def name(self) -> str:
        if self.plan is not None:
            return self.plan.job_name
        return self.last_status.name if self.last_status else Path(self.id).name

    def status(self) -> JobStatus:
        self.last_status = self.backend.describe(self.id)
        self._live.update(self.summary())
        return self.last_status

    def wait(self, poll_seconds: float = 30.0, on_status: Callable[[JobStatus], None] | None = None,
             on_log: Callable[[LogLine], None] | None = None) -> JobStatus:
        """Polls until Completed, Failed or Stopped; returns that final status.

        Args:
            on_status: called with the status whenever its status or secondary status changes.
            on_log: called with every host's lines as they come, from a thread that follows the logs; every
                line has been shown when `wait` returns.
        """
        follower = None
        if on_log is not None:  # a thread follows the logs (to the job's end) while this one polls the status
            lines = self.backend.logs(self.id, follow=True, poll_seconds=poll_seconds)
            follower = threading.Thread(target=lambda: [on_log(line) for line in lines], daemon=True)
            follower.start()
        seen: tuple[str, str | None] | None = None
        while True:
            current = self.status()
            if self._live.shown:  # shown in a notebook: its summary follows the steps and the loss too
                self.progress()
            if on_status and (current.status, current.secondary_status) != seen:
                seen = (current.status, current.secondary_status)
                on_status(current)
            if current.is_terminal:
                break
            time.sleep(poll_seconds)
        if follower is not None:
            follower.join()
        return current

    def logs(self, follow: bool = False, host: str | None = None, tail: int | None = None,
             poll_seconds: float = 10.0) -> Iterator[LogLine]:
        """Every host's lines (only `host`'s, e.g. "algo-2"; the last `tail` of each host); with `follow`, new
        lines until the job has ended."""
        return self.backend.logs(self.id, follow=follow, host=host, tail=tail, poll_seconds=poll_seconds)

    def progress(self, tail_lines: int = 200) -> JobProgress:
        """How far the job is, from the progress lines among each host's last `tail_lines` lines, and the latest
        value of each metric there (a local run's lines carry no time each, so it gets no rate)."""
        from orchestrator.observing.progress import job_progress

        tails: dict[str, list[LogLine]] = {}
        for line in self.logs(tail=tail_lines):
            tails.setdefault(line.host, []).append(line)
        request = self.plan.create_training_job_request if self.plan else {}
        status = self.last_status.status if self.last_status else "InProgress"
        self._progress = job_progress({**request, "TrainingJobStatus": status}, tails)
        self._latest.update(self._progress.latest)
        if self.plan is None:  # attached: no metric definitions here, so the backend's series gives the latest
            self.metric_points()
        self._live.update(self.summary())
        return self._progress

    def metric_points(self, names: list[str] | None = None) -> list[MetricPoint]:
        points = self.backend.metric_points(self.id, names)
        self._latest.update((point.metric, point.value) for point in points)
        self._live.update(self.summary())
        return points

    def metrics(self, names: list[str] | None = None) -> Any:
        """The metric series as a pandas DataFrame (metric, value, timestamp, step, host), or a list of dicts."""
        from orchestrator.observing.metric_series import to_frame

        return to_frame(self.metric_points(names))

    def plot(self, names: list[str] | None = None) -> Figure:
        """A matplotlib figure of the job's metrics, one panel each (needs matplotlib: `smtrain[plot]`)."""
        from orchestrator.observing.metric_charts import figure

        return figure(self.metric_points(names), names, title=self.name)

    def stop(self) -> bool:
        """Stops the job as StopTrainingJob does; False when it was not running."""
        return self.backend.stop(self.id)

    def artifacts(self) -> dict[str, str]:
        """Where the model and output archives are: `model`, `output` (an s3:// URI, or a local path)."""
        return self.backend.artifacts(self.id)

    def results(self) -> list[Any]:
        """What a function job (`orchestrator.function_jobs`) returned on every rank, in rank order; waits for its end.

        Raises:
            the function's own exception, from the lowest rank that raised, with the remote traceback as its
            cause and the rank and host in its notes; JobFailed when the job failed before any rank returned.
        """
        from orchestrator.backends.function_results import RESULTS_FOLDER, outcomes, raise_first_error

        final = self.wait(poll_seconds=1.0 if self.backend.name == "local" else 30.0)
        kept = outcomes(self.backend.output_files(self.id, RESULTS_FOLDER))
        raise_first_error(kept, final, self.name)
        return [outcome["value"] for outcome in kept]

    def result(self) -> Any:
        """Rank 0's return value of a function job (`orchestrator.function_jobs`); waits, and raises as `results`."""
        return self.results()[0]

    def failure_cause(self) -> FailureCause | None:
        """Where a failed job failed and why: host, rank, the error, the user's file:line, a category and a fix,
        the same for a local run and a SageMaker job; None while it runs or when it completed."""
        return self.backend.failure_cause(self.id)

    def __repr__(self) -> str:
        status = self.last_status.status if self.last_status else "not read yet"
        return f"Job({self.name!r}, backend={self.backend.name!r}, status={status!r})"

    def summary(self) -> Summary:
        """What the notebook shows, from what earlier calls read (no call)."""
        current = self.last_status
        rows = [("backend", self.backend.name)]
        if current:
            rows.append(("instances", f"{current.instance_count} x {current.instance_type}"))
            if current.cost and current.cost.total is not None:
                about = "about " if current.cost.estimated else ""
                rows.append(("cost so far", f"{about}{current.cost.currency} {current.cost.total:,.2f}"))
            if current.failure_reason:
                rows.append(("failure", current.failure_reason))
            if self._progress and self._progress.failure_cause:
                rows += self._progress.failure_cause.rows()
            rows += current.settings
        if self.submission is not None:
            rows += self.submission.summary_rows()
        rows += [("notice", text) for text in self.backend.notices(self.id)]
        if self.backend.name == "sagemaker" and current:
            links = [("SageMaker console", current.console_url),
                     ("CloudWatch logs", cloudwatch_logs_url(current.region, current.name))]
        else:
            links = [("run directory", Path(self.id).resolve().as_uri())]
        return Summary(title=f"Training job {self.name}", status=current.status if current else None,
                       secondary_status=current.secondary_status if current else None,
                       progress=self._progress, latest=dict(self._latest), rows=rows, links=links)

    def _repr_html_(self) -> str:
        return self.summary().to_html()

    def _ipython_display_(self) -> None:
        """Shown in a notebook: a summary that later status reads (each poll of `wait`) update in place."""
        self._live.show(self.summary())


def attach(name_or_run_dir: str | Path, *, region: str | None = None, boto: Any | None = None) -> Job:
    """The job a user names: a local run (its directory, or its name under runs/), else a SageMaker job.

    Raises:
        JobNotFound: neither a local run nor a SageMaker job of that name (in `region`).
    """
    from orchestrator.backends.runs import find_run

    run_dir = find_run(name_or_run_dir)
    if run_dir is not None:
        from orchestrator.backends.local import LocalBackend

        job = Job(LocalBackend(), str(run_dir))
    else:
        from orchestrator.backends.sagemaker import SageMakerBackend

        job = Job(SageMakerBackend(boto, region), str(name_or_run_dir))
    job.status()
    return job
