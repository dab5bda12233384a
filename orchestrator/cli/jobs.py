"""`smtrain submit | status | logs | stop | list`: a job's life on SageMaker.

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
from typing import TYPE_CHECKING, Any

import click

from orchestrator.cli.options import echo_json, output_option, set_option
from orchestrator.cloud.jobs import STATUSES, Job, JobStatus, console_url, list_jobs
from orchestrator.cloud.logs import LogLine

if TYPE_CHECKING:
    from orchestrator.cloud.submission import Submission

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

    return Job(name, ctx.obj or boto_session(region))


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
    job = submit_plan(job_plan, boto=ctx.obj)
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
@click.argument("job_name")
@_region_option
@output_option
@click.pass_context
def status(ctx: click.Context, job_name: str, region: str | None, output: str) -> None:
    """Status of JOB_NAME: status, secondary status and its history, billable seconds, instances, failure
    reason and model artifact."""
    current = _job(ctx, job_name, region).status()
    if output == "json":
        echo_json(current.to_dict())
        return
    click.echo(f"{current.name}: {_status_words(current)}")
    rows = [
        ("instances", f"{current.instance_count} x {current.instance_type}"),
        ("billable", "-" if current.billable_seconds is None else f"{current.billable_seconds} s"),
        ("created", _time(current.created)),
        ("ended", _time(current.ended)),
        ("failure", current.failure_reason or "-"),
        ("model", current.model_artifact or "-"),
        ("console", current.console_url),
    ]
    for key, value in rows:
        click.echo(f"  {key:<10} {value}")
    if current.transitions:
        click.echo("  history")
        width = max(len(item.status) for item in current.transitions)
        for item in current.transitions:
            click.echo(f"    {_time(item.start)}  {item.status:<{width}}  {item.message}")


@click.command()
@click.argument("job_name")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines until the job has ended.")
@_region_option
@output_option
@_poll_option
@click.pass_context
def logs(
    ctx: click.Context, job_name: str, follow: bool, region: str | None, output: str, poll_seconds: float
) -> None:
    """Every host's log lines of JOB_NAME (CloudWatch, /aws/sagemaker/TrainingJobs) merged in time order, each
    prefixed with its host, e.g. [algo-2]. `--output json` prints one JSON object per line."""
    printed = 0
    for line in _job(ctx, job_name, region).logs(follow=follow, poll_seconds=poll_seconds):
        click.echo(json.dumps(line.to_dict()) if output == "json" else str(line))
        printed += 1
    if not printed:
        click.echo(f"no log lines for {job_name} yet", err=True)


@click.command()
@click.argument("job_name")
@_region_option
@output_option
@click.pass_context
def stop(ctx: click.Context, job_name: str, region: str | None, output: str) -> None:
    """Ask SageMaker to stop JOB_NAME. A job that is already stopping, stopped, completed or failed is left as
    it is, which is not an error (exit 0)."""
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
@_region_option
@output_option
@click.pass_context
def list_command(
    ctx: click.Context,
    status_equals: str | None,
    name_contains: str | None,
    max_results: int,
    region: str | None,
    output: str,
) -> None:
    """The most recent training jobs, newest first."""
    rows = list_jobs(
        boto=ctx.obj,
        region=region,
        status=status_equals,
        name_contains=name_contains,
        max_results=max_results,
    )
    if output == "json":
        echo_json([row.to_dict() for row in rows])
        return
    if not rows:
        click.echo("no training jobs match", err=True)
        return
    width = max(len(row.name) for row in rows)
    click.echo(f"{'NAME':<{width}}  {'STATUS':<10}  CREATED")
    for row in rows:
        click.echo(f"{row.name:<{width}}  {row.status:<10}  {_time(row.created)}")


JOB_COMMANDS = (submit, status, logs, stop, list_command)


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
        f"no price on record for {job_plan.spec.instance.type}"
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
                f"{topo.world_size} = {job_plan.spec.instance.count} x {job_plan.spec.instance.type} x "
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


def _status_words(current: JobStatus) -> str:
    if current.secondary_status and current.secondary_status != current.status:
        return f"{current.status} ({current.secondary_status})"
    return current.status


def _time(moment: datetime | None) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "-"
