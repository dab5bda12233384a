"""How `smtrain status`, `list`, `metrics`, `submit` and the follow of `watch` print a job: the text a person reads.

The verbs in `cli/jobs.py` ask a backend and hand what it answered here; nothing here asks anything.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import click

from orchestrator.cli.options import echo_json
from orchestrator.observing.job_status import console_url
from orchestrator.observing.metric_series import STEP_FORMATS, MetricPoint, format_duration, loss_metrics, summarize
from orchestrator.specs.catalog import hourly_price
from orchestrator.wording import counted

if TYPE_CHECKING:
    from orchestrator.backends.base import StatusReport
    from orchestrator.cloud.job_liveness import JobLiveness
    from orchestrator.cloud.submission import Submission
    from orchestrator.observing.job_status import JobStatus, Transition
    from orchestrator.observing.progress import CostSoFar, JobProgress
    from orchestrator.observing.root_cause import FailureCause


def print_report(report: StatusReport) -> None:
    """`smtrain status`'s text: the status, its progress, a training job's liveness, billing where it is billed,
    and where the job is (the console, or the run directory)."""
    rows = []
    if report.advice is not None:
        rows += report.advice.rows()
    if report.liveness is not None:
        rows.append(("liveness", verdict_words(report.liveness)))
    elif report.liveness_unknown is not None:
        rows.append(("liveness", f"unknown: {report.liveness_unknown}"))
    if report.billed:
        rows += [("billable", _billable_words(report.status)), ("cost", _cost_words(report.status))]
    _print_status(report.status, report.progress, report.unread, rows, report.place)


def verdict_words(liveness: JobLiveness) -> str:
    """`silent for 14 min, GPUs idle on algo-3` and, once past the stall timeout, what that makes the job."""
    from orchestrator.observing.liveness import Verdict

    if liveness.verdict is Verdict.MOVING:
        return liveness.summary()
    return f"{liveness.verdict.value}: {liveness.summary()}"


def _print_status(current: JobStatus, progress: JobProgress | None, unread: str | None,
                  billing: list[tuple[str, str]], place: list[tuple[str, str]]) -> None:
    """`smtrain status`'s text, for a SageMaker job (billing and console rows) or a local run (its directory)."""
    now = datetime.now(timezone.utc)
    click.echo(f"{current.name}: {status_words(current)}")
    rows = [("instances", current.instances)]
    rows += _progress_rows(progress, unread, current, now)
    rows += [
        *billing,
        ("created", time_text(current.created)),
        ("started", time_text(current.started)),
        ("ended", time_text(current.ended)),
        ("failure", current.failure_reason or "-"),
        *(progress.failure_cause.rows(current.failure_reason) if progress and progress.failure_cause else ()),
        ("model", current.model_artifact or "-"),
        *current.settings,
        *place,
    ]
    width = max(10, *(len(key) for key, _ in rows))
    for key, value in rows:
        click.echo(f"  {key:<{width}} " + value.replace("\n", "\n" + " " * (width + 3)))
    if current.transitions:
        click.echo("  history")
        width = max(len(item.status) for item in current.transitions)
        for item in current.transitions:
            click.echo(f"    {time_text(item.start)}  {item.status:<{width}}  {item.message}{_took(item, current, now)}")
    if progress and progress.failing_host:
        from orchestrator.observing.root_cause import HUNG

        hung = progress.failure_cause is not None and progress.failure_cause.category == HUNG
        if progress.failing_rank is not None:
            click.echo(f"  last lines of {progress.failing_host} rank {progress.failing_rank} (the rank that failed "
                       "first, its own lines)")
        else:
            click.echo(f"  last lines of {progress.failing_host} "
                       f"({'the host the others wait for' if hung else 'the host that failed first'})")
        for line in progress.failing_lines:
            click.echo(f"    {line}")


def print_metrics(title: str, points: list[MetricPoint], source: str, names: list[str]) -> None:
    from orchestrator.observing.metric_charts import text_chart

    summaries = summarize(points)
    click.echo(f"{title}: {counted(len(points), 'point')} of {counted(len(summaries), 'metric')} ({source})")
    width = max(6, *(len(item.metric) for item in summaries))
    click.echo(f"  {'metric':<{width}}  {'points':>6}  {'first':>10}  {'min':>10}  {'max':>10}  {'last':>10}")
    for item in summaries:
        click.echo(f"  {item.metric:<{width}}  {item.points:>6}  {item.first:>10.4g}  {item.minimum:>10.4g}  "
                   f"{item.maximum:>10.4g}  {item.last:>10.4g}")
    for name in names or loss_metrics([item.metric for item in summaries]):
        series = [point for point in points if point.metric == name]
        if series:
            click.echo(f"\n{name}")
            click.echo(text_chart(series))


def print_list(rows: list[dict[str, Any]], output: str) -> None:
    if output == "json":
        echo_json(rows)
        return
    if not rows:
        click.echo("no training jobs match", err=True)
        return
    width = max(len(row["job_name"]) for row in rows)
    where = any(row["backend"] == "local" for row in rows)
    click.echo(f"{'NAME':<{width}}  {'STATUS':<10}  CREATED" + ("                  WHERE" if where else ""))
    for row in rows:
        created = datetime.fromisoformat(row["created"]) if row["created"] else None
        place = (f"  local {row['run_dir']}" if row["backend"] == "local" else "  sagemaker") if where else ""
        damage = f"  ({row['damaged']})" if row.get("damaged") else ""
        click.echo(f"{row['job_name']:<{width}}  {row['status']:<10}  {time_text(created):<23}{place}{damage}")


def print_submission(submission: Submission) -> None:
    from rich.filesize import decimal

    job_plan = submission.plan
    topo, cost, source = job_plan.topology, job_plan.cost, job_plan.source
    worst = (
        f"no price on record for {job_plan.spec.instance_type}"
        if cost.max_total is None
        else f"at most {cost.currency} {cost.max_total:,.2f} ({cost.basis})"
    )
    stored = "uploaded to" if submission.source_uploaded else "unchanged since an earlier submit, reused"
    click.echo(f"submitted {job_plan.job_name}")
    rows = [
        ("console", console_url(job_plan.target.region, job_plan.job_name)),
        (
            "world",
            (
                f"{topo.world_size} = {job_plan.spec.host_count} x {job_plan.spec.instance_type} x "
                f"{topo.processes_per_host} per host ({topo.launcher})"
            ),
        ),
        ("cost", worst),
        ("source", f"{decimal(source.size_bytes)}, {stored} {job_plan.source_uri}"),
    ]
    for key, value in rows:
        click.echo(f"  {key:<8} {value}")


def print_final(final: JobStatus, cause: FailureCause | None) -> None:
    line = f"{final.name} {final.status}"
    if final.billable_seconds is not None:
        line += f" after {final.billable_seconds} billable seconds"
    click.echo(line)
    if final.failure_reason:
        click.echo("  failure: " + final.failure_reason.replace("\n", "\n" + " " * 11))
    for key, value in cause.rows(final.failure_reason) if cause else ():
        click.echo(f"  {key + ':':<8} {value}")
    if final.status == "Completed" and final.model_artifact:
        click.echo(f"  model:   {final.model_artifact}")


def _progress_rows(
    progress: JobProgress | None, unread: str | None, current: JobStatus, now: datetime
) -> list[tuple[str, str]]:
    """progress / rate / eta / latest loss rows; nothing where the logs say nothing."""
    if progress is not None and progress.logs_unread is not None:
        fix = [("fix", progress.logs_fix)] if progress.logs_fix else []
        return [("progress", f"unknown: the logs could not be read ({progress.logs_unread})"), *fix]
    if progress is None or unread is not None:
        return [("progress", f"unknown: the logs could not be read ({unread})")]
    estimate = progress.estimate
    if estimate is None:
        if not progress.any_lines:
            return [("progress", "no log lines" + ("" if current.is_terminal else " yet"))]
        return [("progress", _without_a_step(progress, current))] + _loss_rows(progress)
    text = estimate.position()
    if estimate.epoch is not None:
        text += ", " + _epoch_words(estimate.epoch, estimate.epochs)
    rows = [("progress", text + f" at {time_text(estimate.at)}")]
    if estimate.steps_per_second:
        rows.append(("rate", f"{estimate.steps_per_second:.3g} steps/s"))
    finish = estimate.finish_time()
    if not current.is_terminal and finish is not None and estimate.total and estimate.step < estimate.total:
        eta = estimate.eta_seconds(now) or 0.0
        late = " (overdue: no progress line since)" if finish < now else ""
        rows.append(("eta", f"{format_duration(eta)}, about {time_text(finish)}{late}"))
    return rows + _loss_rows(progress)


def _without_a_step(progress: JobProgress, current: JobStatus) -> str:
    """The epoch a script printing only `epoch=2 loss=0.31` is in, then that no line gave a step; a running or
    completed job's row says which step formats would (a failed job's failure is the news, not the formats)."""
    epoch = "" if progress.epoch is None else _epoch_words(progress.epoch, progress.epochs) + "; "
    if current.status == "Failed":
        return f"{epoch}no step in the logs' last lines"
    when = "" if current.is_terminal else " yet"
    return f"{epoch}no step in the logs' last lines{when}; smtrain reads {', '.join(STEP_FORMATS)}"


def _epoch_words(epoch: int, epochs: int | None) -> str:
    return f"epoch {epoch}" + (f" of {epochs}" if epochs else "")


def _loss_rows(progress: JobProgress) -> list[tuple[str, str]]:
    return [(name, f"{progress.latest[name]:.6g} (latest logged)") for name in loss_metrics(list(progress.latest))]


def _billable_words(current: JobStatus) -> str:
    cost = current.cost
    if cost is None:
        return "-" if current.billable_seconds is None else f"{current.billable_seconds} s"
    if cost.upper_bound:
        return (f"at most {cost.billable_seconds} s per instance (since TrainingStartTime, interruptions included; "
                "managed spot bills fewer: SageMaker reports them when the job ends)")
    if cost.estimated:
        return f"about {cost.billable_seconds} s per instance (since TrainingStartTime; not reported yet)"
    if cost.spot_saving is not None:
        return (f"{cost.billable_seconds} s per instance of {cost.training_seconds} s trained (managed spot: "
                f"{cost.spot_saving:.0%} saved)")
    return f"{cost.billable_seconds} s per instance"


def _cost_words(current: JobStatus) -> str:
    cost = current.cost
    if cost is None:
        return "nothing billed yet" if not current.is_terminal else "-"
    if cost.total is None:
        return f"no price on record for {current.instance_type}"
    so_far = "" if current.is_terminal else " so far"
    return (f"{cost.amount}{so_far} = {cost.billable_seconds} s x {cost.instance_count} x "
            f"{cost.currency} {hourly_price(cost.price_per_instance_hour)}/h ({_price_basis(cost)})")


def _price_basis(cost: CostSoFar) -> str:
    """What the figure is: on-demand; a spot job's billed seconds at the on-demand rate (SageMaker bills spot
    that way); or, before SageMaker reports them, an upper bound."""
    if not cost.spot:
        return "on-demand"
    if cost.upper_bound:
        return "managed spot: an upper bound at the on-demand price until SageMaker reports the billable time"
    saved = "" if cost.spot_saving is None else f", {cost.spot_saving:.0%} saved"
    return f"managed spot: the billable time SageMaker reports, at the on-demand rate{saved}"


def _took(item: Transition, current: JobStatus, now: datetime) -> str:
    """How long a secondary status lasted; the last one of a running job is still going. An ended run with no
    end on record (its smtrain was killed while it stopped the job) is not still going: `so far` read as if it
    were, and grew with every look."""
    if item.start is None:
        return ""
    end = item.end or current.ended
    if end is None and current.is_terminal:
        return "  (its end was not recorded)"
    if end is None:
        return f"  (for {format_duration((now - item.start).total_seconds())} so far)"
    return f"  ({format_duration((end - item.start).total_seconds())})"


def status_words(current: JobStatus) -> str:
    if current.secondary_status and current.secondary_status != current.status:
        return f"{current.status} ({current.secondary_status})"
    return current.status


def time_text(moment: datetime | None) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "-"
