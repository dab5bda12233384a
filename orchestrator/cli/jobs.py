"""`smtrain submit | status | watch | logs | metrics | stop | list`: a job's life on SageMaker.

Thin: each command calls `orchestrator.cloud.submission` or `orchestrator.cloud.jobs` and prints the result. With
`--output json` stdout holds one JSON document (one per line for `logs`) and progress goes to stderr.

Exit codes: 0 ok (with `--wait`: Completed); 1 the job Failed, or an AWS call failed; 2 bad input, nothing
sent (an invalid spec, blocking findings, no role/region/credentials, an unknown job name: `JobNotFound`);
3 the job was Stopped; 4 the job hung (`watch`, `submit --wait --stall-timeout`: stopped unless `--no-stop`);
130 interrupted.

A boto3 session given as click's context object (`CliRunner().invoke(main, args, obj=session)`) replaces the
default session built from boto3's chain: that is how the tests put a Stubber behind the commands.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from orchestrator.cli.options import echo_json, output_option, set_option
from orchestrator.cloud.hang_watch import DEFAULT_STALL_TIMEOUT_SECONDS
from orchestrator.cloud.jobs import STATUSES, Job, JobStatus, Transition, console_url, list_jobs
from orchestrator.cloud.metrics import DEFAULT_PERIOD_SECONDS, NAMESPACE
from orchestrator.observing.log_lines import LogLine
from orchestrator.observing.metric_series import (
    METRICS_FILE,
    STEP_FORMATS,
    MetricPoint,
    format_duration,
    loss_metrics,
    read_points_counted,
    summarize,
    to_csv,
)
from orchestrator.planning.job_name import check_job_name
from orchestrator.spec.catalog import hourly_price

if TYPE_CHECKING:
    from orchestrator.backends.base import Backend
    from orchestrator.cloud.hang_watch import WatchOutcome
    from orchestrator.cloud.job_liveness import JobLiveness
    from orchestrator.cloud.submission import Submission
    from orchestrator.observing.progress import JobProgress
    from orchestrator.observing.root_cause import FailureCause

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


def _stall_options(default: float, what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--stall-timeout and --no-stop, as `watch` and `submit --wait` share them."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        function = click.option(
            "--no-stop", is_flag=True,
            help="Report a hung job (exit 4) but leave it running: no StopTrainingJob.")(function)
        return click.option(
            "--stall-timeout", type=click.FloatRange(min=0), default=default, show_default=True, metavar="SECONDS",
            help=f"{what}A job whose hosts wrote no line and advanced no metric for this long is hung when every "
                 "host's CPUs and GPUs are idle (SageMaker's utilization metrics): it is stopped with the reason "
                 "and each host's last lines, exit 4. Busy devices make it slow: reported, never stopped.",
        )(function)

    return decorate


def _job(ctx: click.Context, name: str, region: str | None) -> Job:
    from orchestrator.cloud.sdk import boto_session

    check_job_name(name, "JOB_NAME")
    return Job(name, ctx.obj or boto_session(region))


@contextlib.contextmanager
def _no_local_run(name: str) -> Iterator[None]:
    """Around what asks SageMaker for NAME, which is no local run: where SageMaker cannot answer (no region, no
    credentials, no such job, a malformed name), the local runs NAME is near to are named first."""
    from orchestrator.backends.runs import near_runs
    from orchestrator.errors import SmtrainError

    try:
        yield
    except SmtrainError as error:
        near = near_runs(name)
        if not near:
            raise
        shown = ", ".join(str(_relative(path)) for path in near)
        error.message = (f"{name} is no local run; did you mean {shown}? Nor could SageMaker answer for it: "
                         f"{error.message}")
        error.args = (error.message,)
        raise


def _local_run(name: str) -> Path | None:
    """The run directory NAME means (a directory `smtrain local` made, or runs/NAME/), else None: a SageMaker job."""
    from orchestrator.backends.runs import find_run

    return find_run(name)


def _job_id(name: str) -> str:
    run_dir = _local_run(name)
    return str(run_dir) if run_dir is not None else name


def _relative(path: Path) -> Path:
    """`runs/NAME` for a run under the working directory, else the path as it is."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _backend(ctx: click.Context, name: str, region: str | None) -> Backend:
    """The backend that answers for NAME: the local one for a run directory, else SageMaker."""
    if name and _local_run(name) is not None:
        from orchestrator.backends.local import LocalBackend

        return LocalBackend()
    with _no_local_run(name):
        check_job_name(name, "JOB_NAME")  # neither a run directory nor a name SageMaker could have: nothing is sent
        from orchestrator.backends.sagemaker import SageMakerBackend
        from orchestrator.cloud.sdk import boto_session

        return SageMakerBackend(ctx.obj or boto_session(region))


def _local_status(run_dir: Path, output: str) -> None:
    """`smtrain status RUN_DIR`: the run's status.json read as DescribeTrainingJob, progress from its logs."""
    from orchestrator.backends.local import LocalBackend
    from orchestrator.emulator.preparing.layout import read_result
    from orchestrator.emulator.supervising.status import read_status
    from orchestrator.observing.progress import FAILURE_READ_LINES, job_progress
    from orchestrator.observing.root_cause import FailureCause, SourcePaths

    backend = LocalBackend()
    current = backend.describe(str(run_dir))
    tails: dict[str, list[LogLine]] = {}
    for line in backend.logs(str(run_dir), tail=FAILURE_READ_LINES if current.status == "Failed" else 200):
        tails.setdefault(line.host, []).append(line)
    copies = [str(path) for path in sorted(run_dir.glob("algo-*/code"))]
    progress = job_progress(read_status(run_dir) or {}, tails, SourcePaths((*copies, SourcePaths().copies[0])))
    stored = (read_result(run_dir) or {}).get("failure_cause")
    if stored:  # the run's own reading: every launcher's exit code and its whole tail
        progress = dataclasses.replace(progress, failure_cause=FailureCause.from_dict(stored))
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
@_stall_options(0, "With --wait; 0: never judged. ")
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
    stall_timeout: float,
    no_stop: bool,
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
        outcome = _follow(job, stream_logs, poll_seconds, to_stderr=output == "json",
                          stall=(stall_timeout, not no_stop))
    except KeyboardInterrupt:
        click.echo(
            f"stopped following; {job.name} keeps running (`smtrain stop {job.name}` stops it)", err=True
        )
        raise
    _finish(ctx, outcome, output, job.submission.to_dict(), _cause_of(job, outcome))


@click.command()
@click.argument("job_name", metavar="JOB_NAME|RUN_DIR")
@_region_option
@output_option
@click.option("--stall-timeout", type=click.FloatRange(min=0), default=DEFAULT_STALL_TIMEOUT_SECONDS, show_default=True,
              metavar="SECONDS", help="A training job silent this long is judged: hung when every host is idle, "
                                      "slow when some host's CPUs or GPUs work (nothing is stopped here).")
@click.pass_context
def status(ctx: click.Context, job_name: str, region: str | None, output: str, stall_timeout: float) -> None:
    """Status of JOB_NAME: status and secondary status with their history, progress (step and epoch of the
    total, from the log lines), rate and ETA, the latest loss, billable seconds and cost so far at the
    catalog's on-demand price, instances, and for a failed job the reason and the failing host's last lines.
    While it trains: how long its hosts have been silent and whether their CPUs and GPUs work (`liveness`).
    A local run (RUN_DIR, or its name under runs/) answers in the same statuses, as it goes."""
    from orchestrator.errors import AwsError

    run_dir = _local_run(job_name)
    if run_dir is not None:
        _local_status(run_dir, output)
        return
    with _no_local_run(job_name):
        job = _job(ctx, job_name, region)
        current = job.status()
    try:
        progress: JobProgress | None = job.progress(refresh_status=False)
        unread = None
    except AwsError as exc:  # e.g. no logs:GetLogEvents permission: the status itself is still worth showing
        progress, unread = None, exc.message
    liveness, liveness_rows = _liveness(job, current, stall_timeout)
    now = datetime.now(timezone.utc)
    if output == "json":
        document = current.to_dict()
        document.update(progress.to_dict(now) if progress else {"progress": None, "logs_unreadable": unread})
        document["liveness"] = liveness.to_dict() if liveness else None
        echo_json(document)
        return
    _print_status(current, progress, unread, [*liveness_rows, ("billable", _billable_words(current)),
                                              ("cost", _cost_words(current))], [("console", current.console_url)])


def _liveness(job: Job, current: JobStatus, stall_timeout: float) -> tuple[JobLiveness | None, list[tuple[str, str]]]:
    """A training job's liveness and its status row; nothing for a job that does not train now."""
    from orchestrator.cloud.job_liveness import is_judged
    from orchestrator.errors import AwsError

    if not is_judged(current.status, current.secondary_status):
        return None, []
    try:
        liveness = job.liveness(stall_timeout or None, refresh_status=False)
    except AwsError as exc:  # e.g. no logs:GetLogEvents permission (unreadable metrics only make it unknown)
        return None, [("liveness", f"unknown: {exc.message}")]
    return liveness, [("liveness", _verdict_words(liveness))]


def _verdict_words(liveness: JobLiveness) -> str:
    """`silent for 14 min, GPUs idle on algo-3` and, once past the stall timeout, what that makes the job."""
    from orchestrator.observing.liveness import Verdict

    if liveness.verdict is Verdict.MOVING:
        return liveness.summary()
    return f"{liveness.verdict.value}: {liveness.summary()}"


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
        *(progress.failure_cause.rows() if progress and progress.failure_cause else []),
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
    backend = _backend(ctx, job_name, region)
    with _no_local_run(job_name) if backend.name != "local" else contextlib.nullcontext():
        for line in backend.logs(_job_id(job_name), follow=follow, host=host, tail=tail, poll_seconds=poll_seconds):
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
    from orchestrator.backends.runs import is_directory

    run_dir = _local_run(target)
    if is_directory(Path(target)) or run_dir is not None:
        from orchestrator.emulator.preparing.layout import TENSORBOARD_DIR

        points, source = _local_points(run_dir or Path(target), names), f"local run {target}"
        tensorboard = (run_dir or Path(target)) / TENSORBOARD_DIR
        if tensorboard.is_dir():  # what the job's TensorBoard output config would have uploaded
            click.echo(f"TensorBoard event files: {tensorboard} (tensorboard --logdir {tensorboard})", err=True)
    else:
        with _no_local_run(target):
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
        with _no_local_run(job_name):
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
    local`'s default run directories) beside them, marked `local`; `--max` counts both. Where SageMaker cannot be
    read (no region or credentials), the local runs are shown and stderr says why SageMaker's jobs are missing
    (exit 0; with --cloud it is an error). A damaged run is listed as Damaged, with why."""
    from orchestrator.errors import SmtrainError

    both = local_only == cloud_only
    rows = _local_rows(status_equals, name_contains) if local_only or both else []
    missing = None
    if cloud_only or both:
        try:
            found = list_jobs(boto=ctx.obj, region=region, status=status_equals, name_contains=name_contains,
                              max_results=max_results)
        except SmtrainError as error:
            if cloud_only:
                raise
            missing = error
        else:
            rows += [{**row.to_dict(), "backend": "sagemaker"} for row in found]
    rows = sorted(rows, key=lambda row: row["created"] or "", reverse=True)[:max_results]
    _print_list(rows, output)
    if missing is not None:
        fix = f" ({missing.fix})" if missing.fix else ""
        click.echo(f"SageMaker's jobs are not listed: {missing.message}{fix}", err=True)


def _print_list(rows: list[dict[str, Any]], output: str) -> None:
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
        click.echo(f"{row['job_name']:<{width}}  {row['status']:<10}  {_time(created):<23}{place}{damage}")


def _local_rows(status_equals: str | None, name_contains: str | None) -> list[dict[str, Any]]:
    """The local runs under runs/ as `list` rows, filtered as the SageMaker jobs are; a run whose status cannot
    be read is a Damaged row of its own (saying why), not an error of the whole list."""
    from orchestrator.backends.local import LocalBackend
    from orchestrator.backends.runs import local_runs
    from orchestrator.errors import DamagedRun, SmtrainError

    backend, rows = LocalBackend(), []
    for run_dir in local_runs():
        try:
            current = backend.describe(str(run_dir))
        except DamagedRun as damage:
            row = {"job_name": run_dir.name, "status": "Damaged", "secondary_status": None, "created": None,
                   "ended": None, "damaged": damage.message}
        except SmtrainError:  # a run that never started (its preparation failed) has no status
            continue
        else:
            row = {key: value for key, value in current.to_dict().items() if key in _LIST_KEYS}
        if (status_equals and row["status"] != status_equals) or (name_contains and name_contains not in
                                                                  row["job_name"]):
            continue
        rows.append({**row, "backend": "local", "run_dir": str(run_dir)})
    return rows


_LIST_KEYS = ("job_name", "status", "secondary_status", "created", "ended")


def _follow(job: Job, stream_logs: bool, poll_seconds: float, to_stderr: bool,
            stall: tuple[float, bool]) -> WatchOutcome:
    """Follows the job to its end, printing status changes (and log lines); `stall` is (stall timeout, stop)."""
    from orchestrator.cloud.hang_watch import WatchOptions
    from orchestrator.cloud.hang_watch import watch as watch_job

    def show_status(current: JobStatus) -> None:
        latest = current.transitions[-1] if current.transitions else None
        message = latest.message if latest and latest.status == current.secondary_status else ""
        now = datetime.now(timezone.utc).strftime("%H:%M:%S")
        click.echo(f"{now}  {_status_words(current)}{': ' + message if message else ''}", err=to_stderr)

    def show_line(line: LogLine) -> None:
        click.echo(str(line), err=to_stderr)

    def show_verdict(liveness: JobLiveness) -> None:
        now = datetime.now(timezone.utc).strftime("%H:%M:%S")
        click.echo(f"{now}  {_verdict_words(liveness)}", err=to_stderr)

    options = WatchOptions(stall_timeout=stall[0] or None, stop=stall[1], poll_seconds=poll_seconds)
    return watch_job(job, options, on_status=show_status, on_log=show_line if stream_logs else None,
                 on_verdict=show_verdict)


def _cause_of(job: Job, outcome: WatchOutcome) -> FailureCause | None:
    """Where a job that failed (or was stopped) by itself failed; a hung job's reason is its hang."""
    return _failure_cause(job) if outcome.hang is None and outcome.status.status in ("Failed", "Stopped") else None


def _finish(ctx: click.Context, outcome: WatchOutcome, output: str, document: dict[str, Any],
            cause: FailureCause | None) -> None:
    """Prints how following ended (for a failed job: the failing rank's error; for a hung job: why, each host's
    last lines, whether it was stopped) and exits with its code: the final status's, or 4 for a hung job."""
    from orchestrator.emulator.supervising.stall import EXIT_HUNG

    hang = outcome.hang
    if output == "json":
        echo_json({**document, **outcome.to_dict(), "failure_cause": cause.to_dict() if cause else None})
    elif hang is None:
        _print_final(outcome.status, cause)
    else:
        click.echo(hang.reason())
        click.echo(hang.last_lines_text())
        if outcome.stop_requested:
            click.echo(f"stopped {hang.job_name}: StopTrainingJob requested (it goes Stopping, then Stopped)")
        else:
            click.echo(f"{hang.job_name} left running ({outcome.status.status}): "
                       f"`smtrain stop {hang.job_name}` stops it")
    ctx.exit(EXIT_HUNG if hang else EXIT_CODES[outcome.status.status])


@click.command()
@click.argument("job_name")
@_stall_options(DEFAULT_STALL_TIMEOUT_SECONDS, "")
@click.option("--logs", "stream_logs", is_flag=True, help="Stream every host's logs while watching.")
@_region_option
@output_option
@_poll_option
@click.pass_context
def watch(ctx: click.Context, job_name: str, stall_timeout: float, no_stop: bool, stream_logs: bool,
          region: str | None, output: str, poll_seconds: float) -> None:
    """Follow a running SageMaker job to its end and stop it if it hangs: silent for --stall-timeout with every
    host's CPUs and GPUs idle. A silent job whose devices work is slow: reported, left running. Utilization is
    read once a minute: DescribeTrainingJob and the new log lines every --poll-seconds, then one DescribeLogStreams,
    one GetLogEvents per host and one GetMetricData for all hosts a minute (docs/following-jobs.md).
    Exit codes: 0 Completed, 1 Failed, 3 Stopped, 4 hung (stopped unless --no-stop)."""
    job = _job(ctx, job_name, region)
    job.status()  # an unknown name fails here, before anything is followed
    outcome = _follow(job, stream_logs, poll_seconds, to_stderr=output == "json",
                      stall=(stall_timeout, not no_stop))
    _finish(ctx, outcome, output, {"job_name": job_name}, _cause_of(job, outcome))


def _failure_cause(job: Job) -> FailureCause | None:
    """Where the job failed; None where its logs cannot be read (the final status still stands)."""
    from orchestrator.errors import AwsError

    try:
        return job.failure_cause()
    except AwsError as exc:
        click.echo(f"the failing rank's error could not be read: {exc.message}", err=True)
        return None


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


def _print_final(final: JobStatus, cause: FailureCause | None) -> None:
    line = f"{final.name} {final.status}"
    if final.billable_seconds is not None:
        line += f" after {final.billable_seconds} billable seconds"
    click.echo(line)
    if final.failure_reason:
        click.echo(f"  failure: {final.failure_reason}")
    for key, value in cause.rows() if cause else []:
        click.echo(f"  {key + ':':<8} {value}")
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
        when = "" if current.is_terminal else " yet"
        return [("progress", f"no step in the logs' last lines{when}; smtrain reads {', '.join(STEP_FORMATS)}")]
    text = estimate.position()
    if estimate.epoch is not None:
        text += f", epoch {estimate.epoch}" + (f" of {estimate.epochs}" if estimate.epochs else "")
    rows = [("progress", text + f" at {_time(estimate.at)}")]
    if estimate.steps_per_second:
        rows.append(("rate", f"{estimate.steps_per_second:.3g} steps/s"))
    finish = estimate.finish_time()
    if not current.is_terminal and finish is not None and estimate.total and estimate.step < estimate.total:
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
            f"{cost.currency} {hourly_price(cost.price_per_instance_hour)}/h (on-demand)")


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


