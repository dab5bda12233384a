"""The handle on one job, wherever it runs: what `orchestrator.run`, `orchestrator.submit` and `attach` return.

The same methods for a local run and a SageMaker job (status, wait, follow, logs, metrics, plot, stop, artifacts),
each a call on the backend; it holds nothing that could go stale but what its last calls read, for `repr` and the
notebook's summary. `follow` is the one loop that follows a job to its end (`wait`, `smtrain watch`,
`submit --wait`), judging a SageMaker job's liveness on the way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.backends.base import Backend
from orchestrator.cloud.hang_watch import WatchOptions, WatchOutcome, refuse_unless_watch_option
from orchestrator.cloud.job_liveness import JobLiveness, is_judged
from orchestrator.cloud.notebook import LiveSummary, Summary, cloudwatch_logs_url
from orchestrator.errors import AwsError, Interrupted, SpecError, naming_keywords
from orchestrator.observing.liveness import Verdict
from orchestrator.observing.metric_series import loss_metrics
from orchestrator.observing.root_cause import FailureCause, SourcePaths

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from orchestrator.observing.job_status import JobStatus
    from orchestrator.observing.log_lines import LogLine
    from orchestrator.observing.metric_series import MetricPoint
    from orchestrator.observing.progress import JobProgress
    from orchestrator.planning.plan import Plan


class Job:
    """One job on one backend. `orchestrator.run(spec, backend=...)` returns one; `attach(...)` finds one."""

    def __init__(self, backend: Backend, job_id: str, plan: Plan | None = None) -> None:
        self.backend = backend
        self.id = job_id
        """A SageMaker job's name, or a local run's directory: the backend's own id (`full_id` names both)."""
        self.plan = plan
        """What `run` or `submit` planned; None for a job `attach` found (it knows the job, not its spec)."""
        self.last_status: JobStatus | None = None
        self._latest: dict[str, float] = {}
        self._progress: JobProgress | None = None
        self._cause: FailureCause | None = None
        self._live = LiveSummary()

    @property
    def submission(self) -> Any | None:
        """What `orchestrator.submit` sent (`cloud.submission.Submission`); None for other jobs."""
        return self.backend.submission(self.id)

    @classmethod
    def attach(cls, name_or_run_dir: str | Path, *, region: str | None = None, boto: Any | None = None,
               backend: str | None = None) -> Job:
        """The job a user names: `local:RUN`, `sagemaker:NAME`, or a bare name (`backends.resolve`); `backend`:
        "local" or "sagemaker", as the prefix says (`orchestrator.attach`)."""
        return attach(name_or_run_dir, region=region, boto=boto, backend=backend)

    @property
    def full_id(self) -> str:
        """`local:<run directory>` or `sagemaker:<job name>`: what `attach` and every CLI verb take back."""
        return f"{self.backend.name}:{self.id}"

    @property
    def name(self) -> str:
        if self.plan is not None:
            return self.plan.job_name
        return self.last_status.name if self.last_status else Path(self.id).name

    def status(self) -> JobStatus:
        self.last_status = self.backend.describe(self.id)
        self._live.update(self.summary())
        return self.last_status

    def wait(self, poll_seconds: float | None = None, on_status: Callable[[JobStatus], None] | None = None,
             on_log: Callable[[LogLine], None] | None = None) -> JobStatus:
        """Polls until Completed, Failed or Stopped; returns that final status (`follow` without a stall timeout).

        Args:
            poll_seconds: the pause between reads; by default the backend's (a local run 1 s, SageMaker 30 s).
            on_status: called with the status whenever its status or secondary status changes.
            on_log: called with every host's new lines after each poll; every line has been shown when `wait`
                returns.

        Raises:
            SpecError: `poll_seconds` is no number of 0 or more, as `--poll-seconds` refuses it.
            Interrupted: Ctrl-C (a notebook's interrupt) ended the wait, not the job; its one line says where the
                job is (read once more) and how to stop it. A KeyboardInterrupt, shown without a traceback.
        """
        refuse_unless_watch_option("poll_seconds", poll_seconds, "Job.wait")
        pause = self.backend.poll_seconds if poll_seconds is None else poll_seconds
        try:
            final = self.follow(WatchOptions(stall_timeout=None, poll_seconds=pause), on_status, on_log).status
        except KeyboardInterrupt:  # only the wait ends, as on SageMaker: a local run goes on in this process
            raise Interrupted(f"interrupted the wait; {self._state_after_interrupt()}") from None
        self._read_cause_if_ended(final)
        return final

    def _read_cause_if_ended(self, final: JobStatus) -> None:
        """A job that failed (or was stopped) by itself: its cause and fix read once, as `smtrain submit --wait` and
        `watch` print them at its end, for the handle's repr and summary. Logs that cannot be read leave it unread
        (the repr then says `job.failure_cause()`, which raises why): the final status still stands."""
        if final.status in ("Failed", "Stopped"):
            try:
                self.failure_cause()
            except AwsError:
                pass

    def _state_after_interrupt(self) -> str:
        """Where the job is once a wait was interrupted, in the API's words."""
        current, why = self.status_read_again()
        if current is None:
            return f"job {self.name} may still run (its status could not be read: {why}): job.stop() stops it if it does"
        if current.is_terminal:
            why = "; job.failure_cause() says why" if current.status == "Failed" else ""
            return f"job {self.name} had already ended: {current.status}{why}"
        if current.status == "Stopping":
            return f"job {self.name} is stopping already"
        return f"job {self.name} still runs ({current.secondary_status or current.status}): job.stop() stops it"

    def status_read_again(self) -> tuple[JobStatus | None, str | None]:
        """The status read once more after a wait was interrupted (the job may have ended in the same moment, and
        "still runs" would then be false): (status, None), or (None, why) when the read failed. Never raises, so
        the interrupt being handled goes on."""
        try:
            return self.status(), None
        except Exception as exc:  # noqa: BLE001 (whatever the read raises must not replace the KeyboardInterrupt)
            return None, getattr(exc, "message", None) or repr(exc)  # a SmtrainError's message, without its fix

    def follow(self, options: WatchOptions, on_status: Callable[[JobStatus], None] | None = None,
               on_log: Callable[[LogLine], None] | None = None,
               on_verdict: Callable[[JobLiveness], None] | None = None) -> WatchOutcome:
        """Follows the job until it ends, or until it is judged hung (then stops it, unless `options.stop` is
        False). Status first, new lines second, each poll: the read after a terminal status gets the last lines.

        Args:
            on_verdict: called whenever the verdict changes (slow, hung, moving again); the first `moving` is not.
        """
        reader = self.backend.log_reader(self.id) if on_log else None
        seen: tuple[str, str | None] | None = None
        reported = Verdict.MOVING
        judged_at: datetime | None = None
        while True:
            current = self.status()
            if self._live.shown:  # shown in a notebook: its summary follows the steps and the loss too
                self.progress()
            if on_status and (current.status, current.secondary_status) != seen:
                seen = (current.status, current.secondary_status)
                on_status(current)
            if reader and on_log:
                for line in reader.read_new():
                    on_log(line)
            if current.is_terminal:
                return WatchOutcome(current)
            now = options.clock()
            due = judged_at is None or (now - judged_at).total_seconds() >= options.liveness_seconds
            if options.stall_timeout and is_judged(current.status, current.secondary_status) and due:
                judged_at = now
                liveness = self.backend.liveness(self.id, options.stall_timeout, now)
                if liveness is not None and liveness.verdict is not reported:
                    reported = liveness.verdict
                    if on_verdict:
                        on_verdict(liveness)
                if liveness is not None and liveness.verdict is Verdict.HUNG:
                    requested = self.stop() if options.stop else False
                    return WatchOutcome(self.last_status or current, liveness, requested)
            options.sleep(options.poll_seconds)

    def logs(self, follow: bool = False, host: str | None = None, tail: int | None = None,
             poll_seconds: float = 10.0) -> Iterator[LogLine]:
        """Every host's lines (only `host`'s, e.g. "algo-2"; the last `tail` of each host); with `follow`, new
        lines until the job has ended.

        Raises:
            SpecError: `tail` is no count of 1 or more, as `smtrain logs --tail` refuses it (before, 0 gave no line
                of a local run and the last lines of a SageMaker job); `poll_seconds` no number of 0 or more.
            SmtrainError: `host` is not one of the job's hosts (naming them), when the lines are first asked for.
        """
        _refuse_unless_count("tail", tail, "lines",
                             fix="pass how many of each host's last lines, 1 or more, or leave tail out for all")
        refuse_unless_watch_option("poll_seconds", poll_seconds, "Job.logs")
        return self.backend.logs(self.id, follow=follow, host=host, tail=tail, poll_seconds=poll_seconds)

    def progress(self, tail_lines: int = 200) -> JobProgress:
        """How far the job is, from the progress lines among each host's last `tail_lines` lines (and the status
        read last), and the latest value of each metric there (a local run's lines carry no time each: no rate)."""
        self._progress = self.backend.progress(self.id, tail_lines)
        self._latest.update(self._progress.latest)
        self._live.update(self.summary())
        return self._progress

    def liveness(self, stall_timeout: float) -> JobLiveness | None:
        """Moving, slow or hung now, judged from outside (SageMaker: silence and utilization); None for a local run,
        whose own stall timeout judges it. A `stall_timeout` that is no number of 0 or more is refused (SpecError),
        as `--stall-timeout` refuses it."""
        refuse_unless_watch_option("stall_timeout", stall_timeout, "Job.liveness")
        return self.backend.liveness(self.id, stall_timeout, datetime.now(timezone.utc))

    @naming_keywords
    def metric_points(self, names: str | list[str] | None = None,
                      period_seconds: int | None = None) -> list[MetricPoint]:
        """The metric series as points (SageMaker: CloudWatch averages over `period_seconds`, default 60); `names`
        one metric's name or a list of them (`smtrain metrics --metric`), every metric when left out.

        Raises:
            SpecError: `period_seconds` is no whole number of 1 or more, or `names` holds something other than a
                name, as `smtrain metrics` refuses them (before, 0 or less was sent to CloudWatch, a name was read
                a character at a time and a number failed with a TypeError).
            SmtrainError: a name the job neither defines nor has points of (naming its metrics).
        """
        _refuse_unless_count("period_seconds", period_seconds, "seconds",
                             fix="pass the seconds per CloudWatch datapoint, a whole number of 1 or more (each "
                                 "datapoint is the average of the values logged in its period), or leave "
                                 "period_seconds out for 60")
        points = self.backend.metric_series(self.id, _metric_names(names), period_seconds).points
        self._latest.update((point.metric, point.value) for point in points)
        self._live.update(self.summary())
        return points

    def metrics(self, names: str | list[str] | None = None, period_seconds: int | None = None) -> Any:
        """The metric series as a pandas DataFrame (metric, value, timestamp, step, host), or a list of dicts; takes
        and refuses its keywords as `metric_points`."""
        from orchestrator.observing.metric_series import to_frame

        return to_frame(self.metric_points(names, period_seconds))

    def plot(self, names: str | list[str] | None = None, period_seconds: int | None = None) -> Figure:
        """A matplotlib figure of the job's metrics, one panel each (needs matplotlib: `smtrain[plot]`); takes and
        refuses its keywords as `metric_points`."""
        from orchestrator.observing.metric_charts import figure

        return figure(self.metric_points(names, period_seconds), _metric_names(names), title=self.name)

    def stop(self) -> bool:
        """Stops the job as StopTrainingJob does; False when it was not running."""
        requested, self.last_status = self.backend.stop(self.id)
        return requested

    def artifacts(self) -> dict[str, str]:
        """Where the model and output archives are: `model`, `output` (an s3:// URI, or a local path)."""
        return self.backend.artifacts(self.id)

    def results(self) -> list[Any]:
        """What a function job (`orchestrator.function_jobs`) returned on every rank, in rank order; waits for its end.

        Raises:
            the function's own exception, from the lowest rank that raised, with the remote traceback as its
            cause and the rank and host in its notes; JobFailed when the job failed before any rank returned, or
            when a rank's function exited with a status other than 0 or was interrupted (the remote traceback its
            cause), where SystemExit or KeyboardInterrupt raised again would end the caller.
        """
        from orchestrator.backends.function_results import RESULTS_FOLDER, first_error, outcomes

        final = self.wait()
        kept = outcomes(self.backend.output_files(self.id, RESULTS_FOLDER))
        source = SourcePaths.of(self.plan.source_shown) if self.plan else SourcePaths()
        error = first_error(kept, final, self.name, source)
        if error is not None:  # raised here, not deeper: the fewest of smtrain's frames under the function's own
            raise error
        return [outcome["value"] for outcome in kept]

    def result(self) -> Any:
        """Rank 0's return value of a function job (`orchestrator.function_jobs`); waits, and raises as `results`."""
        return self.results()[0]

    def failure_cause(self) -> FailureCause | None:
        """Where a failed job failed and why: host, rank, the error, the user's file:line, a category and a fix,
        the same for a local run and a SageMaker job; None while it runs or when it completed."""
        self._cause = self.backend.failure_cause(self.id)
        self._live.update(self.summary())
        return self._cause

    def __repr__(self) -> str:
        """`Job(name, region=... | backend='local', status=..., progress=..., <loss>=...)` from what was read; for a
        failed job its cause and fix, as `smtrain status` shows them, or where to read them."""
        status = self.last_status.status if self.last_status else "not read yet"
        region = getattr(getattr(self.backend, "boto", None), "region_name", None)
        where = f"region={region!r}" if region else f"backend={self.backend.name!r}"
        known = "".join(f", {key}={value!r}" for key, value in [*self._known_progress(), *self._known_cause()])
        return f"Job({self.name!r}, {where}, status={status!r}{known})"

    def _known_cause(self) -> list[tuple[str, str]]:
        """A failed job's cause and fix as far as calls made earlier have read them (`wait`, `progress`,
        `failure_cause`), else the call that reads them."""
        cause = self._cause_read()
        if cause is not None:
            return [("cause", cause.headline()), *([("fix", cause.fix)] if cause.fix else [])]
        if self.last_status is not None and self.last_status.status == "Failed":
            return [("next", "job.failure_cause(): where it failed and the fix")]
        return []

    def _cause_read(self) -> FailureCause | None:
        return self._cause or (self._progress.failure_cause if self._progress else None)

    def _known_progress(self) -> list[tuple[str, str]]:
        """Progress and the latest loss, as far as calls made earlier have read them."""
        rows = []
        estimate = self._progress.estimate if self._progress else None
        if estimate:
            as_of = estimate.at.astimezone(timezone.utc).strftime("%H:%M:%S UTC")
            rows.append(("progress", estimate.describe(as_of=as_of)))
        for name in loss_metrics(list(self._latest)):
            rows.append((name, f"{self._latest[name]:.6g}"))
        return rows

    def summary(self) -> Summary:
        """What the notebook shows, from what earlier calls read (no call)."""
        current = self.last_status
        rows = [("backend", self.backend.name)]
        if current:
            rows.append(("instances", current.instances))
            if current.cost and current.cost.amount is not None:
                rows.append(("cost so far", current.cost.amount))
            logged = self._progress.any_lines if self._progress and not self._progress.logs_unread else None
            advice = self.backend.phase_advice(self.id, logged)
            rows += advice.rows() if advice else []
            if current.failure_reason:
                rows.append(("failure", current.failure_reason))
            if self._progress and self._progress.logs_unread:
                rows.append(("logs", f"not read: {self._progress.logs_unread}"))
                rows += [("fix", self._progress.logs_fix)] if self._progress.logs_fix else []
            cause = self._cause_read()
            rows += cause.rows(current.failure_reason) if cause else []
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


def _refuse_unless_count(keyword: str, value: Any, counting: str, fix: str) -> None:
    """A keyword whose CLI option takes a whole number of 1 or more (`--tail N`, `--period N`), refused otherwise
    as the option refuses it, naming the keyword: below the API a backend reads 0 or less as "none" or sends it to
    AWS. None leaves the option out."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise SpecError(f"{keyword}={value!r} is no count of {counting}", fix=fix)


def _metric_names(names: str | list[str] | None) -> list[str] | None:
    """The metrics asked for as a list: one name given as a str is that one metric, as `--metric NAME` is.

    Raises:
        SpecError: something other than a name among them.
    """
    if names is None:
        return None
    if isinstance(names, str):
        return [names]
    if isinstance(names, (list, tuple)) and all(isinstance(name, str) for name in names):
        return list(names)
    raise SpecError(f"names={names!r} is no metric name nor a list of them",
                    fix='pass one name, e.g. names="train:loss", a list of them, or leave names out for every metric')


@naming_keywords
def attach(job: str | Path, *, region: str | None = None, boto: Any | None = None,
           backend: str | None = None) -> Job:
    """The job a user names: `local:RUN` (a run directory, or its name under runs/), `sagemaker:NAME`, or a bare
    name, resolved as every CLI verb resolves it (`backends.resolve`); its status read once, and a failed job's
    cause and fix with it, as `smtrain status` shows them.

    Raises:
        JobNotFound: no such local run or SageMaker job (in `region`); AmbiguousJob: a bare name that is both.
    """
    from orchestrator.backends.resolve import resolve_job

    chosen, job_id = resolve_job(str(job), backend, region, boto)
    handle = Job(chosen, job_id)
    handle._read_cause_if_ended(handle.status())  # as `smtrain status` shows a failed job's cause and fix
    return handle
