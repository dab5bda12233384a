"""`smtrain submit | status | watch | logs | metrics | stop | list`: a job's life, wherever it runs.

Thin: each verb resolves the job a user names to a backend and its id (`backends.resolve`: `local:RUN`,
`sagemaker:NAME`, `--backend`, or a bare name), calls that backend, and hands the answer to `cli/job_views.py` to
print. No verb asks which backend it holds. With `--output json` stdout holds one JSON document (one per line for
`logs`) and progress goes to stderr.

Exit codes: 0 ok (with `--wait`: Completed); 1 the job Failed, or an AWS call failed; 2 bad input, nothing
sent (an invalid spec, blocking findings, no role/region/credentials, an unknown job name: `JobNotFound`, a name
that is both a local run and a SageMaker job: `AmbiguousJob`); 3 the job was Stopped; 4 the job hung (`watch`,
`submit --wait --stall-timeout`: stopped unless `--no-stop`); 130 interrupted.

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

from orchestrator.backends.base import BACKENDS
from orchestrator.backends.resolve import backend_for, resolve_job
from orchestrator.cli import job_views as views
from orchestrator.cli.options import (
    allow_unverified_option,
    allowing_unverified,
    any_given,
    backend_option,
    declared_options,
    echo_json,
    follow_options,
    full_plan_option,
    job_name_option,
    job_region_option,
    max_source_option,
    output_option,
    plan_view,
    region_option,
    runs_option,
    set_option,
    spec_argument,
    wait_option,
)
from orchestrator.cloud.hang_watch import WatchOptions
from orchestrator.cloud.metrics import DEFAULT_PERIOD_SECONDS
from orchestrator.observing.job_status import STATUSES
from orchestrator.observing.metric_series import to_csv

if TYPE_CHECKING:
    from orchestrator.backends.base import Backend
    from orchestrator.backends.job import Job
    from orchestrator.cloud.hang_watch import WatchOutcome
    from orchestrator.cloud.job_liveness import JobLiveness
    from orchestrator.observing.job_status import JobStatus
    from orchestrator.observing.log_lines import LogLine
    from orchestrator.observing.root_cause import FailureCause

EXIT_CODES = {"Completed": 0, "Failed": 1, "Stopped": 3}


def _job_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """JOB, --backend and --region: how every verb that answers for one job is told which."""
    function = region_option("the job", more=" With a bare name that is a local run, SageMaker is asked too: a job "
                                             "there of the same name makes the name ambiguous.")(function)
    function = backend_option("JOB", "a local run")(function)
    return click.argument("job", metavar="JOB")(function)


def _resolve(ctx: click.Context, job: str, backend: str | None, region: str | None) -> tuple[Backend, str]:
    return resolve_job(job, backend, region, ctx.obj)


@click.command()
@spec_argument("file")
@set_option
@job_region_option
@output_option
@job_name_option("job")
@max_source_option
@allow_unverified_option
@click.option("--dry-run", is_flag=True, help="Send nothing: print the plan, exactly as `smtrain plan` does "
                                              "(--full too).")
@full_plan_option
@wait_option("job", "--logs, --stall-timeout, --no-stop and --poll-seconds")
@click.option(
    "--logs", "stream_logs", is_flag=True, help="Stream every host's logs while waiting (implies --wait)."
)
@follow_options(defaults={"stall_timeout": None})  # judged only when asked: a --wait in CI must not stop a job
@click.pass_context
def submit(
    ctx: click.Context,
    file: str,
    overrides: tuple[str, ...],
    output: str,
    job_name: str | None,
    max_source_bytes: int,
    allow_unverified: bool,
    dry_run: bool,
    full: bool,
    wait: bool,
    stream_logs: bool,
    options: WatchOptions,
) -> None:
    """Create the training job that `smtrain plan FILE` shows, exactly that request.

    Uploads the source tarball unless S3 already has it (content-addressed), creates the job with boto3
    (no SageMaker SDK needed), and prints its name, console link, world size, worst-case cost and whether the
    source was uploaded or reused. Refuses (exit 2, nothing sent) a plan with blocking findings.

    \b
    Examples:
      smtrain submit job.yaml --wait --logs
      smtrain submit job.yaml --set role=arn:aws:iam::123456789012:role/SageMakerExecution --dry-run
    """
    overrides = allowing_unverified(overrides, allow_unverified)
    if full and not dry_run:
        raise click.UsageError("--full prints the plan: give it with --dry-run (`smtrain plan --full` prints the "
                               "same)")
    if dry_run:
        from orchestrator.cli.render import emit_plan

        emit_plan(file, overrides, plan_view(output, full), job_name, max_source_bytes, boto=ctx.obj)
        return
    from orchestrator.backends.job import Job
    from orchestrator.cli.options import terminations_interrupt
    from orchestrator.cli.source_bar import source_progress
    from orchestrator.cloud.resolve import plan_on_sagemaker
    from orchestrator.errors import SmtrainError
    from orchestrator.specs.loader import load

    with terminations_interrupt(), source_progress(quiet=output == "json"):
        # orchestrator.plan's own work, less the API's words: the CLI's errors keep its options' names
        job_plan = plan_on_sagemaker(
            load(file, overrides), ctx.obj, job_name=job_name, max_source_bytes=max_source_bytes
        )
        backend = backend_for("sagemaker", job_plan.target.region, ctx.obj,
                              say=lambda text: click.echo(text, err=True))
        job = Job(backend, backend.schedule(job_plan), job_plan)
    assert job.submission is not None
    if output == "text":
        views.print_submission(job.submission)
    if not (wait or stream_logs or any_given(ctx, WatchOptions)):  # a follow flag asks to follow, as --logs does
        if output == "json":
            echo_json(job.submission.to_dict())
        return
    try:
        outcome = _follow(job, options, stream_logs, to_stderr=output == "json")
    except (KeyboardInterrupt, SmtrainError):  # Ctrl-C, or AWS failing mid-way: the job itself goes on billing
        current, why = job.status_read_again()
        if current is None:
            click.echo(f"stopped following; {job.name} may still run (its status could not be read: {why}): "
                       f"`smtrain status {job.name}` says, `smtrain stop {job.name}` stops it", err=True)
        elif not current.is_terminal:
            click.echo(f"stopped following; {job.name} keeps running ({current.status}: `smtrain watch {job.name}` "
                       f"follows it again, `smtrain stop {job.name}` stops it)", err=True)
        else:
            click.echo(f"stopped following; {job.name} had already ended: {current.status}", err=True)
        raise
    _finish(ctx, outcome, output, job.submission.to_dict(), _cause_of(job, outcome))


@click.command()
@_job_options
@output_option
@declared_options(WatchOptions, "stall_timeout")  # the one `watch` judges by: status says what watch would do
@click.pass_context
def status(ctx: click.Context, job: str, backend: str | None, region: str | None, output: str,
           options: WatchOptions) -> None:
    """Status of JOB: status and secondary status with their history, progress (step and epoch of the total,
    from the log lines), rate and ETA, the latest loss, and for a failed job the reason and the failing host's
    last lines. A SageMaker job adds billable seconds and cost so far at the catalog's on-demand price and, while
    it trains, how long its hosts have been silent and whether their CPUs and GPUs work (`liveness`); a local run
    answers in the same statuses, as it goes.

    JOB: `local:RUN` (a run directory, or a run's name under runs/), `sagemaker:NAME`, or a bare name: a local
    run of that name, else a SageMaker job.

    \b
    Examples:
      smtrain status runs/my-job-2026-11-28-09-35-53-379-6xu3
      smtrain status sagemaker:my-job-2026-11-28-09-35-53-379-6xu3 --region eu-west-1 -o json
    """
    chosen, job_id = _resolve(ctx, job, backend, region)
    report = chosen.status_report(job_id, options.stall_timeout)
    if output == "json":
        echo_json(report.to_dict(datetime.now(timezone.utc)))
    else:
        views.print_report(report)


@click.command()
@_job_options
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines until the job has ended.")
@click.option("--host", metavar="algo-N", help="Only this host's lines.")
@click.option("--tail", type=click.IntRange(min=1), metavar="N", help="Only the last N lines of each host (then "
                                                                      "the new ones, with --follow).")
@output_option
@declared_options(WatchOptions, "poll_seconds")
@click.pass_context
def logs(ctx: click.Context, job: str, backend: str | None, region: str | None, follow: bool, host: str | None,
         tail: int | None, output: str, options: WatchOptions) -> None:
    """Every host's log lines of JOB (SageMaker: CloudWatch, /aws/sagemaker/TrainingJobs, merged in time order; a
    local run: host after host), each prefixed with its host, e.g. [algo-2]. `--output json` prints one JSON
    object per line.

    JOB: `local:RUN` (a run directory, or a run's name under runs/), `sagemaker:NAME`, or a bare name: a local
    run of that name, else a SageMaker job.

    \b
    Examples:
      smtrain logs sagemaker:my-job-2026-11-28-09-35-53-379-6xu3 --follow
      smtrain logs runs/my-job-2026-11-28-09-35-53-379-6xu3 --host algo-2 --tail 20
    """
    chosen, job_id = _resolve(ctx, job, backend, region)
    printed = 0
    for line in chosen.logs(job_id, follow=follow, host=host, tail=tail, poll_seconds=options.poll_seconds):
        click.echo(json.dumps(line.to_dict()) if output == "json" else str(line))
        printed += 1
    if not printed:
        click.echo(f"no log lines for {job}{f' on {host}' if host else ''}{_none_yet(chosen.describe(job_id))}",
                   err=True)


def _none_yet(current: JobStatus) -> str:
    """An ended job's missing lines will never come: "yet" would promise them."""
    return f": it ended ({current.status}) without writing any" if current.is_terminal else " yet"


@click.command()
@_job_options
@click.option("--metric", "names", multiple=True, metavar="NAME",
              help="Only this metric, e.g. train:loss (repeatable). Default: every metric of the job.")
@click.option("--output", "-o", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True,
              help="text: a summary table and a chart in the terminal; json and csv: every point, one per row "
                   "(metric, value, timestamp, step, host).")
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.png",
              help="Also draw every selected metric into this image (needs matplotlib: smtrain's plot extra, docs/install.md).")
@click.option("--period", "period_seconds", type=click.IntRange(min=1), default=DEFAULT_PERIOD_SECONDS,
              show_default=True, help="SageMaker jobs: seconds per CloudWatch datapoint (each is the average "
                                      "of the values logged in its period).")
@click.pass_context
def metrics(ctx: click.Context, job: str, backend: str | None, region: str | None, names: tuple[str, ...],
            output: str, plot_file: Path | None, period_seconds: int) -> None:
    """The metric series of JOB: a SageMaker job's from CloudWatch (namespace /aws/sagemaker/TrainingJobs), a
    local run's from the directory `smtrain local` wrote (default runs/<job-name>/). Both come from the job's
    metric definitions applied to its log lines, so the same lines give the same values.

    JOB: `local:RUN` (a run directory, or a run's name under runs/), `sagemaker:NAME`, or a bare name: a local
    run of that name, else a SageMaker job.

    \b
    Examples:
      smtrain metrics runs/my-job-2026-11-28-09-35-53-379-6xu3
      smtrain metrics sagemaker:my-job-2026-11-28-09-35-53-379-6xu3 --metric train:loss -o csv --plot loss.png
    """
    chosen, job_id = _resolve(ctx, job, backend, region)
    series = chosen.metric_series(job_id, list(names) or None, period_seconds)
    for note in series.notes:
        click.echo(note, err=True)
    points, title = series.points, Path(job_id).name
    if plot_file is not None and points:
        from orchestrator.observing.metric_charts import figure

        figure(points, list(names) or None, title=title).savefig(plot_file, dpi=100)
    if output == "json":
        echo_json([point.to_dict() for point in points])
    elif output == "csv":
        click.echo(to_csv(points), nl=False)
    elif not points:
        click.echo(f"no metric data for {job} ({series.source}): {series.empty}", err=True)
    else:
        views.print_metrics(title, points, series.source, list(names))
    if plot_file is not None:
        click.echo(f"plot written to {plot_file}" if points else f"no plot written to {plot_file}: no data",
                   err=True)


@click.command()
@_job_options
@output_option
@click.pass_context
def stop(ctx: click.Context, job: str, backend: str | None, region: str | None, output: str) -> None:
    """Stop JOB as StopTrainingJob does (a local run wherever it runs: its processes get SIGTERM and the grace to
    checkpoint). A job that is already stopping, stopped, completed or failed is left as it is, which is not an
    error (exit 0).

    JOB: `local:RUN` (a run directory, or a run's name under runs/), `sagemaker:NAME`, or a bare name: a local
    run of that name, else a SageMaker job.

    \b
    Examples:
      smtrain stop sagemaker:my-job-2026-11-28-09-35-53-379-6xu3
      smtrain stop runs/my-job-2026-11-28-09-35-53-379-6xu3
    """
    chosen, job_id = _resolve(ctx, job, backend, region)
    requested, was = chosen.stop(job_id)
    if output == "json":
        echo_json({"job_name": job, "stop_requested": requested, "status": was.status})
    elif requested:
        click.echo(f"stop requested for {job} (it was {was.status}; it goes Stopping, then Stopped)")
    else:
        click.echo(f"{job} is already {was.status}: nothing to stop")


@click.command("list")
@click.option("--status", "status_equals", type=click.Choice(STATUSES, case_sensitive=False),
              help="Only jobs in this status (any case: failed is Failed).")
@click.option("--name-contains", help="Only jobs whose name contains this text.")
@click.option(
    "--max",
    "max_results",
    type=click.IntRange(1, 1000),
    default=20,
    show_default=True,
    help="At most this many jobs, newest first.",
)
@click.option("--local", "local_only", is_flag=True,
              help="Only local runs (the run directories under runs/, or --runs DIR).")
@click.option("--cloud", "cloud_only", is_flag=True, help="Only SageMaker jobs.")
@runs_option("runs")
@region_option("the SageMaker jobs")
@output_option
@click.pass_context
def list_command(ctx: click.Context, status_equals: str | None, name_contains: str | None, max_results: int,
                 local_only: bool, cloud_only: bool, runs_root: Path | None, region: str | None, output: str) -> None:
    """The most recent training jobs, newest first: SageMaker's, and the local runs under runs/ (`smtrain
    local`'s default run directories; another folder's with --runs DIR) beside them, marked `local`; `--max`
    counts both, and stderr says which folder was read. Where a backend cannot be read (SageMaker: no region or
    credentials), the others are shown and stderr says why its jobs are missing (exit 0; asked for alone, with
    --local or --cloud, it is an error). A damaged run is listed as Damaged.

    \b
    Examples:
      smtrain list --status failed --name-contains mlp
      smtrain list --local
    """
    from orchestrator.errors import SmtrainError

    if runs_root is not None and cloud_only:
        raise click.UsageError("--runs names local runs, --cloud lists only SageMaker's jobs: drop one of them")
    asked = [name for name, only in zip(BACKENDS, (local_only, cloud_only)) if only or local_only == cloud_only]
    rows, missing, places = [], [], []
    for name in asked:
        try:
            listing = backend_for(name, region, ctx.obj, runs_root=runs_root)
            found = listing.list_jobs(status_equals, name_contains, max_results)
        except SmtrainError as error:
            if len(asked) == 1:
                raise
            missing.append(error)
        else:
            rows += [row.to_dict() for row in found]
            places.append(listing.listed_from())
    rows = sorted(rows, key=lambda row: row["created"] or "", reverse=True)[:max_results]
    views.print_list(rows, output)
    if output == "text":  # where local runs were read: an empty list explains itself
        for place in filter(None, places):
            click.echo(place, err=True)
    for error in missing:
        fix = f" ({error.fix})" if error.fix else ""
        click.echo(f"SageMaker's jobs are not listed: {error.message}{fix}", err=True)


@click.command()
@_job_options
@follow_options()
@click.option("--logs", "stream_logs", is_flag=True, help="Stream every host's logs while watching.")
@output_option
@click.pass_context
def watch(ctx: click.Context, job: str, backend: str | None, region: str | None, options: WatchOptions,
          stream_logs: bool, output: str) -> None:
    """Follow JOB to its end and stop it if it hangs: silent for --stall-timeout with every host's CPUs and GPUs
    idle. A silent job whose devices work is slow: reported, left running. A SageMaker job's utilization is read
    once a minute: DescribeTrainingJob and the new log lines every --poll-seconds, then one DescribeLogStreams, one
    GetLogEvents per host and one GetMetricData for all hosts a minute (docs/following-jobs.md); a local run's own
    stall timeout judges it. Exit codes: 0 Completed, 1 Failed, 3 Stopped, 4 hung (stopped unless --no-stop).

    \b
    Examples:
      smtrain watch sagemaker:my-job-2026-11-28-09-35-53-379-6xu3 --stall-timeout 1800 --logs
    """
    from orchestrator.backends.job import Job

    chosen, job_id = _resolve(ctx, job, backend, region)
    handle = Job(chosen, job_id)
    handle.status()  # an unknown name fails here, before anything is followed
    outcome = _follow(handle, options, stream_logs, to_stderr=output == "json")
    _finish(ctx, outcome, output, {"job_name": job}, _cause_of(handle, outcome))


def _follow(job: Job, options: WatchOptions, stream_logs: bool, to_stderr: bool) -> WatchOutcome:
    """Follows the job to its end as `options` say, printing status changes (and log lines)."""

    def show_status(current: JobStatus) -> None:
        latest = current.transitions[-1] if current.transitions else None
        message = latest.message if latest and latest.status == current.secondary_status else ""
        # a run's status.json written before its ends had words of their own says `Completed: Completed`
        message = "" if message == current.secondary_status else message
        now = datetime.now(timezone.utc).strftime("%H:%M:%S")
        click.echo(f"{now}  {views.status_words(current)}{': ' + message if message else ''}", err=to_stderr)

    def show_line(line: LogLine) -> None:
        click.echo(str(line), err=to_stderr)

    def show_verdict(liveness: JobLiveness) -> None:
        now = datetime.now(timezone.utc).strftime("%H:%M:%S")
        click.echo(f"{now}  {views.verdict_words(liveness)}", err=to_stderr)

    return job.follow(options, on_status=show_status, on_log=show_line if stream_logs else None,
                      on_verdict=show_verdict)


def _cause_of(job: Job, outcome: WatchOutcome) -> FailureCause | None:
    """Where a job that failed (or was stopped) by itself failed; a hung job's reason is its hang. None where
    its logs cannot be read (the final status still stands)."""
    from orchestrator.errors import AwsError

    if outcome.hang is not None or outcome.status.status not in ("Failed", "Stopped"):
        return None
    try:
        return job.failure_cause()
    except AwsError as exc:
        click.echo(f"the failing rank's error could not be read: {exc.message}", err=True)
        return None


def _finish(ctx: click.Context, outcome: WatchOutcome, output: str, document: dict[str, Any],
            cause: FailureCause | None) -> None:
    """Prints how following ended (for a failed job: the failing rank's error; for a hung job: why, each host's
    last lines, whether it was stopped) and exits with its code: the final status's, or 4 for a hung job (one
    this watch stopped, or a local run that ended hung)."""
    from orchestrator.observing.liveness import EXIT_HUNG

    hang = outcome.hang
    if output == "json":
        echo_json({**document, **outcome.to_dict(), "failure_cause": cause.to_dict() if cause else None})
    elif hang is None:
        views.print_final(outcome.status, cause)
    else:
        click.echo(hang.reason())
        click.echo(hang.last_lines_text())
        if outcome.stop_requested:
            click.echo(f"stopped {hang.job_name}: StopTrainingJob requested (it goes Stopping, then Stopped)")
        else:
            click.echo(f"{hang.job_name} left running ({outcome.status.status}): "
                       f"`smtrain stop {hang.job_name}` stops it")
    hung_by_itself = cause is not None and cause.category == "hung"  # a local run its own stall clock stopped
    ctx.exit(EXIT_HUNG if hang or hung_by_itself else EXIT_CODES[outcome.status.status])
