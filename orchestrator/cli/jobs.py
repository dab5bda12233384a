"""`smtrain submit | status | logs | metrics | stop | list`: a job's life on SageMaker.

Thin: each command calls `orchestrator.cloud.submission` or `orchestrator.cloud.jobs` and prints the result. With
`--output json` stdout holds one JSON document (one per line for `logs`) and progress goes to stderr.

Exit codes: 0 ok (with `--wait`: Completed); 1 the job Failed, or an AWS call failed; 2 bad input, nothing
sent (an invalid spec, blocking findings, no role/region/credentials, an unknown job name: `JobNotFound`);
3 the job was Stopped; 130 interrupted.

A boto3 session given as click's context object (`CliRunner().invoke(main, args, obj=session)`) replaces the
default session built from boto3's chain: that is how the tests put a Stubber behind the commands.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from orchestrator.cli.options import echo_json, output_option, set_option
from orchestrator.cloud.jobs import STATUSES, Job, JobStatus, JobSummary, Transition, console_url, list_jobs
from orchestrator.cloud.metrics import DEFAULT_PERIOD_SECONDS, NAMESPACE
from orchestrator.observing.log_lines import LogLine
from orchestrator.observing.metric_series import (
    METRICS_FILE,
    MetricPoint,
    format_duration,
    loss_metrics,
    read_points_counted,
    summarize,
    to_csv,
)
from orchestrator.planning.job_name import check_job_name

if TYPE_CHECKING:
    from orchestrator.backends.base import Backend
    from orchestrator.cloud.submission import Submission
    from orchestrator.observing.progress import JobProgress

EXIT_CODES = {"Completed": 0, "Failed": 1, "Stopped": 3}
POLL_SECONDS = 15.0


def _region_option(function: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--region", help="AWS region of the job [default: $AWS_REGION, then boto3's chain: AWS_DEFAULT_REGION, profile]."
    )(function)


def _poll_option(function: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--poll-seconds",
        type=click.FloatRange(min=0),
        default=POLL_SECONDS,
        show_default=True,
        help="Pause between DescribeTrainingJob / log reads while following.",
    )(function)


def _job(ctx: click.Context, name: str, region: str | None) -> Job:
    from orchestrator.cloud.sdk import boto_session

    check_job_name(name, "JOB_NAME")
    return Job(name, ctx.obj or boto_session(region))


def _local_run(name: str) -> Path | None:
    """The run directory NAME means (a directory `smtrain local` made, or runs/NAME/), else None: a SageMaker job."""
    from orchestrator.backends.runs import find_run

    return find_run(name)


def _job_id(name: str) -> str:
    run_dir = _local_run(name)
    return str(run_dir) if run_dir is not None else name


def _backend(ctx: click.Context, name: str, region: str | None) -> Backend:
    """The backend that answers for NAME: the local one for a run directory, else SageMaker."""
    if name and _local_run(name) is not None:
        from orchestrator.backends.local import LocalBackend

        return LocalBackend()
    check_job_name(name, "JOB_NAME")  # neither a run directory nor a name SageMaker could have: nothing is sent
    from orchestrator.backends.sagemaker import SageMakerBackend
    from orchestrator.cloud.sdk import boto_session

    return SageMakerBackend(ctx.obj or boto_session(region))


def _local_status(run_dir: Path, output: str) -> None:
    """`smtrain status RUN_DIR`: the run's status.json read as DescribeTrainingJob, progress from its logs."""
    from orchestrator.backends.local import LocalBackend
    from orchestrator.emulator.supervising.status import read_status
    from orchestrator.observing.progress import job_progress

    backend = LocalBackend()
    current = backend.describe(str(run_dir))
    tails: dict[str, list[LogLine]] = {}
    for line in backend.logs(str(run_dir), tail=200):
        tails.setdefault(line.host, []).append(line)
    progress = job_progress(read_status(run_dir) or {}, tails)
    if output == "json":
        document = {key: value for key, value in current.to_dict().items() if key != "console_url"}
        document.update({"backend": "local", "run_dir": str(run_dir), **progress.to_dict(datetime.now(timezone.utc))})
        echo_json(document)
        return
    _print_status(current, progress, None, [], [("run dir", str(run_dir))])


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@set_option
@output_option
@click.option("--job-name", help="Exact job name (default: the spec's name plus a timestamp).")
@click.option(
    "--max-source-mb",
    type=float,
    default=100,
    show_default=True,
    help="Refuse a source_dir that packs larger than this.",
)
@click.option(
    "--allow-unverified",
    is_flag=True,
    help="Submit even where a capability rule says unverified (overrides allow_unverified in the spec).",
)
@click.option("--dry-run", is_flag=True, help="Send nothing: print the plan, exactly as `smtrain plan` does.")
@click.option(
    "--wait", is_flag=True, help="Follow the job to its end; exit 0 Completed, 1 Failed, 3 Stopped."
)
@click.option(
    "--logs", "stream_logs", is_flag=True, help="Stream every host's logs while waiting (implies --wait)."
)
@_poll_option
@click.pass_context
def submit(
    ctx: click.Context,
    file: str,
    overrides: tuple[str, ...],
    output: str,
    job_name: str | None,
    max_source_mb: float,
    allow_unverified: bool,
    dry_run: bool,
    wait: bool,
    stream_logs: bool,
    poll_seconds: float,
) -> None:
    """Create the training job that `smtrain plan FILE` shows, exactly that request.

    Uploads the source tarball unless S3 already has it (content-addressed), creates the job with boto3
    (no SageMaker SDK needed), and prints its name, console link, world size, worst-case cost and whether the
    source was uploaded or reused. Refuses (exit 2, nothing sent) a plan with blocking findings.
    """
    if allow_unverified:
        overrides = (*overrides, "allow_unverified=true")
    if dry_run:
        from orchestrator.cli.render import emit_plan

        emit_plan(file, overrides, output, job_name, max_source_mb, boto=ctx.obj)
        return
    from orchestrator.api import plan
    from orchestrator.cloud.submission import submit as submit_plan
    from orchestrator.spec.loader import load

    job_plan = plan(
        load(file, overrides), job_name=job_name, boto=ctx.obj, max_source_bytes=int(max_source_mb * 1e6)
    )
    job = submit_plan(job_plan, boto=ctx.obj, say=lambda text: click.echo(text, err=True))
    assert job.submission is not None
    if output == "text":
        _print_submission(job.submission)
    if not (wait or stream_logs):
        if output == "json":
            echo_json(job.submission.to_dict())
        return
    try:
        final = _follow(job, stream_logs, poll_seconds, to_stderr=output == "json")
    except KeyboardInterrupt:
        click.echo(
            f"stopped following; {job.name} keeps running (`smtrain stop {job.name}` stops it)", err=True
        )
        raise
    if output == "json":
        echo_json({**job.submission.to_dict(), "final_status": final.to_dict()})
    else:
        _print_final(final)
    ctx.exit(EXIT_CODES[final.status])


@click.command()
@click.argument("job_name", metavar="JOB_NAME|RUN_DIR")
@_region_option
@output_option
@click.pass_context
def status(ctx: click.Context, job_name: str, region: str | None, output: str) -> None:
    """Status of JOB_NAME: status and secondary status with their history, progress (step and epoch of the
    total, from the log lines), rate and ETA, the latest loss, billable seconds and cost so far at the
    catalog's on-demand price, instances, and for a failed job the reason and the failing host's last lines.
    A local run (RUN_DIR, or its name under runs/) answers in the same statuses, as it goes."""
    from orchestrator.errors import AwsError

    run_dir = _local_run(job_name)
    if run_dir is not None:
        _local_status(run_dir, output)
        return
    job = _job(ctx, job_name, region)
    current = job.status()
    try:
        progress: JobProgress | None = job.progress(refresh_status=False)
        unread = None
    except AwsError as exc:  # e.g. no logs:GetLogEvents permission: the status itself is still worth showing
        progress, unread = None, exc.message
    now = datetime.now(timezone.utc)
    if output == "json":
        document = current.to_dict()
        document.update(progress.to_dict(now) if progress else {"progress": None, "logs_unreadable": unread})
        echo_json(document)
        return
    _print_status(current, progress, unread, [("billable", _billable_words(current)), ("cost", _cost_words(current))],
                  [("console", current.console_url)])


def _print_status(current: JobStatus, progress: JobProgress | None, unread: str | None,
                  billing: list[tuple[str, str]], place: list[tuple[str, str]]) -> None:
    """`smtrain status`'s text, for a SageMaker job (billing and console rows) or a local run (its directory)."""
    now = datetime.now(timezone.utc)
    click.echo(f"{current.name}: {_status_words(current)}")
    rows = [("instances", current.instances)]
    rows += _progress_rows(progress, unread, current, now)
    rows += [
        *billing,
        ("created", _time(current.created)),
        ("started", _time(current.started)),
        ("ended", _time(current.ended)),
        ("failure", current.failure_reason or "-"),
        ("model", current.model_artifact or "-"),
        *current.settings,
        *place,
    ]
    width = max(10, *(len(key) for key, _ in rows))
    for key, value in rows:
        click.echo(f"  {key:<{width}} {value}")
    if current.transitions:
        click.echo("  history")
        width = max(len(item.status) for item in current.transitions)
        for item in current.transitions:
            click.echo(f"    {_time(item.start)}  {item.status:<{width}}  {item.message}{_took(item, current, now)}")
    if progress and progress.failing_host:
        click.echo(f"  last lines of {progress.failing_host} (the host that failed first)")
        for line in progress.failing_lines:
            click.echo(f"    {line}")


@click.command()
@click.argument("job_name", metavar="JOB_NAME|RUN_DIR")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines until the job has ended.")
@click.option("--host", metavar="algo-N", help="Only this host's lines.")
@click.option("--tail", type=click.IntRange(min=1), metavar="N", help="Only the last N lines of each host (then "
                                                                      "the new ones, with --follow).")
@_region_option
@output_option
@_poll_option
@click.pass_context
def logs(ctx: click.Context, job_name: str, follow: bool, host: str | None, tail: int | None, region: str | None,
         output: str, poll_seconds: float) -> None:
    """Every host's log lines of JOB_NAME (CloudWatch, /aws/sagemaker/TrainingJobs) merged in time order, or of a
    local run (RUN_DIR, or its name under runs/: host after host), each prefixed with its host, e.g. [algo-2].
    `--output json` prints one JSON object per line."""
    printed = 0
    for line in _backend(ctx, job_name, region).logs(_job_id(job_name), follow=follow, host=host, tail=tail,
                                                      poll_seconds=poll_seconds):
        click.echo(json.dumps(line.to_dict()) if output == "json" else str(line))
        printed += 1
    if not printed:
        click.echo(f"no log lines for {job_name} yet", err=True)


@click.command()
@click.argument("target", metavar="JOB_NAME|RUN_DIR")
@click.option("--metric", "names", multiple=True, metavar="NAME",
              help="Only this metric, e.g. train:loss (repeatable). Default: every metric of the job.")
@click.option("--output", "-o", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True,
              help="text: a summary table and a chart in the terminal; json and csv: every point, one per row "
                   "(metric, value, timestamp, step, host).")
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.png",
              help="Also draw every selected metric into this image (needs matplotlib: pip install 'smtrain[plot]').")
@click.option("--period", "period_seconds", type=click.IntRange(min=1), default=DEFAULT_PERIOD_SECONDS,
              show_default=True, help="SageMaker jobs: seconds per CloudWatch datapoint (each is the average "
                                      "of the values logged in its period).")
@_region_option
@click.pass_context
def metrics(ctx: click.Context, target: str, names: tuple[str, ...], output: str, plot_file: Path | None,
            period_seconds: int, region: str | None) -> None:
    """The metric series of a SageMaker job (JOB_NAME: from CloudWatch, namespace /aws/sagemaker/TrainingJobs)
    or of a local run (RUN_DIR: the directory `smtrain local` wrote, default runs/<job-name>/). Both come from
    the job's metric definitions applied to its log lines, so the same lines give the same values."""
    run_dir = _local_run(target)
    if Path(target).is_dir() or run_dir is not None:
        from orchestrator.emulator.preparing.layout import TENSORBOARD_DIR

        points, source = _local_points(run_dir or Path(target), names), f"local run {target}"
        tensorboard = (run_dir or Path(target)) / TENSORBOARD_DIR
        if tensorboard.is_dir():  # what the job's TensorBoard output config would have uploaded
            click.echo(f"TensorBoard event files: {tensorboard} (tensorboard --logdir {tensorboard})", err=True)
    else:
        job = _job(ctx, target, region)
        points = job.metric_points(list(names) or None, period_seconds)
        source = f"CloudWatch {NAMESPACE}, {period_seconds} s averages"
    if plot_file is not None and points:
        from orchestrator.observing.metric_charts import figure

        figure(points, list(names) or None, title=Path(target).name).savefig(plot_file, dpi=100)
    if output == "json":
        echo_json([point.to_dict() for point in points])
    elif output == "csv":
        click.echo(to_csv(points), nl=False)
    elif not points:
        click.echo(f"no metric data for {target} yet ({source}); SageMaker publishes values a few minutes after "
                   "the lines are logged", err=True)
    else:
        _print_metrics(Path(target).name, points, source, list(names))
    if plot_file is not None:
        click.echo(f"plot written to {plot_file}" if points else f"no plot written to {plot_file}: no data",
                   err=True)


def _local_points(run_dir: Path, names: tuple[str, ...]) -> list[MetricPoint]:
    from orchestrator.errors import SmtrainError

    path = run_dir / METRICS_FILE
    if not path.is_file():
        raise SmtrainError(f"{run_dir} has no {METRICS_FILE}: it is not a run directory of `smtrain local`",
                           fix="give the run directory of a local run (default runs/<job-name>/), or a "
                               "SageMaker job name")
    points, skipped = read_points_counted(path)
    if skipped:
        click.echo(f"skipped {skipped} line(s) of {path} that are not metric points", err=True)
    return [point for point in points if point.metric in names] if names else points


def _print_metrics(title: str, points: list[MetricPoint], source: str, names: list[str]) -> None:
    from orchestrator.observing.metric_charts import text_chart

    summaries = summarize(points)
    click.echo(f"{title}: {len(points)} points of {len(summaries)} metric(s) ({source})")
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


@click.command()
@click.argument("job_name", metavar="JOB_NAME|RUN_DIR")
@_region_option
@output_option
@click.pass_context
def stop(ctx: click.Context, job_name: str, region: str | None, output: str) -> None:
    """Ask SageMaker to stop JOB_NAME, or a local run (RUN_DIR, or its name under runs/) wherever it runs: its
    processes get SIGTERM and the grace to checkpoint, as StopTrainingJob gives them. A job that is already
    stopping, stopped, completed or failed is left as it is, which is not an error (exit 0)."""
    run_dir = _local_run(job_name)
    if run_dir is not None:
        from orchestrator.backends.local import LocalBackend

        backend = LocalBackend()
        was = backend.describe(str(run_dir)).status
        requested = backend.stop(str(run_dir))
    else:
        job = _job(ctx, job_name, region)
        requested = job.stop()
        assert job.last_status is not None
        was = job.last_status.status
    if output == "json":
        echo_json({"job_name": job_name, "stop_requested": requested, "status": was})
    elif requested:
        click.echo(f"stop requested for {job_name} (it was {was}; it goes Stopping, then Stopped)")
    else:
        click.echo(f"{job_name} is already {was}: nothing to stop")


@click.command("list")
@click.option("--status", "status_equals", type=click.Choice(STATUSES), help="Only jobs in this status.")
@click.option("--name-contains", help="Only jobs whose name contains this text.")
@click.option(
    "--max",
    "max_results",
    type=click.IntRange(1, 1000),
    default=20,
    show_default=True,
    help="At most this many jobs, newest first.",
)
@click.option("--local", "local_only", is_flag=True, help="Only local runs (the run directories under runs/).")
@click.option("--cloud", "cloud_only", is_flag=True, help="Only SageMaker jobs.")
@_region_option
@output_option
@click.pass_context
def list_command(
    ctx: click.Context,
    status_equals: str | None,
    name_contains: str | None,
    max_results: int,
    local_only: bool,
    cloud_only: bool,
    region: str | None,
    output: str,
) -> None:
    """The most recent training jobs, newest first: SageMaker's, and the local runs under runs/ (`smtrain
    local`'s default run directories) beside them, marked `local`. Where SageMaker cannot be read (no region or
    credentials), the local runs are still shown before the error."""
    from orchestrator.errors import SmtrainError

    both = local_only == cloud_only
    local = _local_rows(status_equals, name_contains, max_results) if local_only or both else []
    try:
        rows = [] if local_only and not both else list_jobs(
            boto=ctx.obj,
            region=region,
            status=status_equals,
            name_contains=name_contains,
            max_results=max_results,
        )
    except SmtrainError:
        if local:
            _print_list([], local, output)
        raise
    _print_list(rows, local, output)


def _print_list(rows: list[JobSummary], local: list[dict[str, Any]], output: str) -> None:
    if output == "json":
        echo_json([{**row.to_dict(), "backend": "sagemaker"} for row in rows] + local)
        return
    if not rows and not local:
        click.echo("no training jobs match", err=True)
        return
    width = max(len(row["job_name"]) for row in [*(row.to_dict() for row in rows), *local])
    click.echo(f"{'NAME':<{width}}  {'STATUS':<10}  CREATED" + ("                  WHERE" if local else ""))
    for row in rows:
        click.echo(f"{row.name:<{width}}  {row.status:<10}  {_time(row.created)}" + ("  sagemaker" if local else ""))
    for item in local:
        created = datetime.fromisoformat(item["created"]) if item["created"] else None
        click.echo(f"{item['job_name']:<{width}}  {item['status']:<10}  {_time(created)}  local {item['run_dir']}")


def _local_rows(status_equals: str | None, name_contains: str | None, max_results: int) -> list[dict[str, Any]]:
    """The local runs under runs/ as `list` rows (newest first), filtered as the SageMaker jobs are."""
    from orchestrator.backends.local import LocalBackend
    from orchestrator.backends.runs import local_runs
    from orchestrator.errors import SmtrainError

    backend, rows = LocalBackend(), []
    for run_dir in local_runs():
        try:
            current = backend.describe(str(run_dir))
        except SmtrainError:  # a run that never started (its preparation failed) has no status
            continue
        if (status_equals and current.status != status_equals) or (name_contains and name_contains not in
                                                                     current.name):
            continue
        rows.append({**{key: value for key, value in current.to_dict().items() if key in _LIST_KEYS},
                     "backend": "local", "run_dir": str(run_dir)})
    return rows[:max_results]


_LIST_KEYS = ("job_name", "status", "secondary_status", "created", "ended")


def _follow(job: Job, stream_logs: bool, poll_seconds: float, to_stderr: bool) -> JobStatus:
    def show_status(current: JobStatus) -> None:
        latest = current.transitions[-1] if current.transitions else None
        message = latest.message if latest and latest.status == current.secondary_status else ""
        now = datetime.now(timezone.utc).strftime("%H:%M:%S")
        click.echo(f"{now}  {_status_words(current)}{': ' + message if message else ''}", err=to_stderr)

    def show_line(line: LogLine) -> None:
        click.echo(str(line), err=to_stderr)

    return job.wait(poll_seconds, on_status=show_status, on_log=show_line if stream_logs else None)


def _print_submission(submission: Submission) -> None:
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
        ("source", f"{source.size_bytes / 1024:.1f} KiB, {stored} {job_plan.source_uri}"),
    ]
    for key, value in rows:
        click.echo(f"  {key:<8} {value}")


def _print_final(final: JobStatus) -> None:
    line = f"{final.name} {final.status}"
    if final.billable_seconds is not None:
        line += f" after {final.billable_seconds} billable seconds"
    click.echo(line)
    if final.failure_reason:
        click.echo(f"  failure: {final.failure_reason}")
    if final.status == "Completed" and final.model_artifact:
        click.echo(f"  model:   {final.model_artifact}")


def _progress_rows(
    progress: JobProgress | None, unread: str | None, current: JobStatus, now: datetime
) -> list[tuple[str, str]]:
    """progress / rate / eta / latest loss rows; nothing where the logs say nothing."""
    if progress is None:
        return [("progress", f"unknown: the logs could not be read ({unread})")]
    estimate = progress.estimate
    if estimate is None:
        return [("progress", "no progress line (`step=N/TOTAL`) in the logs yet")]
    text = f"step {estimate.step}/{estimate.total} ({100 * estimate.fraction:.0f}%)"
    if estimate.epoch is not None:
        text += f", epoch {estimate.epoch}" + (f" of {estimate.epochs}" if estimate.epochs else "")
    rows = [("progress", text + f" at {_time(estimate.at)}")]
    if estimate.steps_per_second:
        rows.append(("rate", f"{estimate.steps_per_second:.3g} steps/s"))
    finish = estimate.finish_time()
    if not current.is_terminal and finish is not None and estimate.step < estimate.total:
        eta = estimate.eta_seconds(now) or 0.0
        late = " (overdue: no progress line since)" if finish < now else ""
        rows.append(("eta", f"{format_duration(eta)}, about {_time(finish)}{late}"))
    for name in loss_metrics(list(progress.latest)):
        rows.append((name, f"{progress.latest[name]:.6g} (latest logged)"))
    return rows


def _billable_words(current: JobStatus) -> str:
    cost = current.cost
    if cost is None:
        return "-" if current.billable_seconds is None else f"{current.billable_seconds} s"
    if cost.estimated:
        return f"about {cost.billable_seconds} s per instance (since TrainingStartTime; not reported yet)"
    return f"{cost.billable_seconds} s per instance"


def _cost_words(current: JobStatus) -> str:
    cost = current.cost
    if cost is None:
        return "nothing billed yet" if not current.is_terminal else "-"
    if cost.total is None:
        return f"no price on record for {current.instance_type}"
    about = "about " if cost.estimated else ""
    so_far = "" if current.is_terminal else " so far"
    return (f"{about}{cost.currency} {cost.total:,.2f}{so_far} = {cost.billable_seconds} s x {cost.instance_count} x "
            f"{cost.currency} {cost.price_per_instance_hour}/h (on-demand)")


def _took(item: Transition, current: JobStatus, now: datetime) -> str:
    """How long a secondary status lasted; the last one of a running job is still going."""
    if item.start is None:
        return ""
    end = item.end or current.ended
    if end is None:
        return f"  (for {format_duration((now - item.start).total_seconds())} so far)"
    return f"  ({format_duration((end - item.start).total_seconds())})"


def _status_words(current: JobStatus) -> str:
    if current.secondary_status and current.secondary_status != current.status:
        return f"{current.status} ({current.secondary_status})"
    return current.status


def _time(moment: datetime | None) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "-"
