"""`smtrain tune plan | submit | status | list | stop | local`: hyperparameter search from a tuning spec.

Thin, as the job commands are: `status`, `list` and `stop` resolve the search a user names to a tuning backend
and its id (`backends.tuning`: `local:FOLDER`, `sagemaker:NAME`, `--backend`, or a bare name) and call it, never
asking which backend they hold; `validate`, `plan`, `submit` and `local` call the planning, API or emulator
function and print what it returns. A boto3 session given as click's context object replaces the default
session (the tests' Stubber).
Exit codes as for single jobs: 0 ok, 1 an AWS call or the search failed, 2 bad input (nothing sent), 130
interrupted.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from orchestrator.backends.base import BACKENDS
from orchestrator.cloud.hang_watch import WatchOptions
from orchestrator.cli.options import (
    allow_unverified_option,
    allowing_unverified,
    any_given,
    backend_option,
    declared_options,
    echo_json,
    job_name_option,
    job_region_option,
    job_set_option,
    local_run_options,
    max_source_option,
    output_option,
    region_option,
    report_output_option,
    runs_option,
    spec_argument,
    wait_option,
)
from orchestrator.specs.catalog import hourly_price
from orchestrator.wording import counted, status_words

if TYPE_CHECKING:
    from orchestrator.backends.tuning import Tuning
    from orchestrator.emulator.run_options import Options
    from orchestrator.emulator.tuning.search_options import SearchOptions
    from orchestrator.observing.trials import Trial, TuningStatus

_STATUSES = ("Completed", "InProgress", "Failed", "Stopped", "Stopping")
TRIAL_OPTIONS = ("inputs", "processes_per_host", "cpus", "link_inputs", "exact_autocast", "gpu_standin", "python",
                 "stall_timeout_seconds", "stop_grace_seconds")
"""`smtrain local`'s options that `tune local` hands every trial (its own --run-dir is the search's directory;
a smoke, a spot interruption or a host order are single runs' checks, not a search's)."""


def _search_options(command: Any) -> Any:
    """`tune local`'s own flags, from their declaration (emulator/tuning/search_options.py), as `search`."""
    from orchestrator.emulator.tuning.search_options import SearchOptions

    return declared_options(SearchOptions, "parallel", "max_jobs", "budget_seconds", "run_dir",
                            receive_as="search")(command)


def _poll_option(command: Any) -> Any:
    """`--poll-seconds` of `tune submit --wait`, declared with how a job is followed (`cloud/hang_watch.py`); a
    tuning job runs for hours, so it is read every minute unless told otherwise."""
    return declared_options(WatchOptions, "poll_seconds", defaults={"poll_seconds": 60.0})(command)


@click.group()
def tune() -> None:
    """Hyperparameter search over a job spec, on SageMaker or on this machine, from one tuning spec.

    \b
    A tuning spec names its job spec (job: train.yaml) and says what to search:
      smtrain tune plan search.yaml        the exact CreateHyperParameterTuningJob request, jobs, worst-case cost
      smtrain tune local search.yaml       run the search here: each trial a real emulated job
      smtrain tune submit search.yaml      create the tuning job on SageMaker
      smtrain tune status TUNING           progress, best trial so far, every trial sorted by objective
                                           (TUNING: a SageMaker tuning job, or local:FOLDER of `tune local`)
    """


@tune.command()
@spec_argument("files", nargs=-1, required=True)
@job_set_option
@job_region_option
@allow_unverified_option
@report_output_option
def validate(files: tuple[str, ...], overrides: tuple[str, ...], allow_unverified: bool, output: str) -> None:
    """Check tuning spec FILES and their job specs against SageMaker's rules for tuning jobs. Offline and fast;
    exits 2 with every problem (file:line, field, fix) when `tune plan` or `tune submit` would refuse one. The
    job spec's notices, and unverified combinations that are allowed, are shown and pass, as `validate` shows
    them.

    \b
    Examples:
      smtrain tune validate job_specs/tuning/mlp-lr-search.yaml
      smtrain tune validate search.yaml --allow-unverified -o json
    """
    from orchestrator.cli.validation import Passed, as_submit_judges, check_named_target, report_on
    from orchestrator.planning.tuning import check_offline
    from orchestrator.specs.loader import load_tuning

    def check(file: str) -> Passed:
        loaded = load_tuning(file, allowing_unverified(overrides, allow_unverified))
        spec, job = loaded.spec, as_submit_judges(loaded.job)
        check_named_target(job)
        check_offline(spec, job.spec)
        return Passed(job, f"{spec.strategy.value} search of {spec.objective.type} {spec.objective.metric} over "
                           f"{', '.join(spec.parameters)}: {counted(spec.total_jobs(), 'trial')}, "
                           f"{spec.max_parallel_jobs} at a time")

    raise SystemExit(report_on(files, check, output))


@tune.command()
@spec_argument("file")
@job_set_option
@job_region_option
@output_option
@job_name_option("tuning job")
@max_source_option
@click.pass_context
def plan(ctx: click.Context, file: str, overrides: tuple[str, ...], output: str, job_name: str | None,
         max_source_bytes: int) -> None:
    """Show what `tune submit FILE` would send: the CreateHyperParameterTuningJob request (its training
    definition is the job spec's CreateTrainingJob request, every setting carried), how many trials and how many
    at once, and the worst-case cost. Nothing is sent. `--set` applies to the job spec.

    \b
    Examples:
      smtrain tune plan job_specs/tuning/mlp-lr-search.yaml
      smtrain tune plan search.yaml --set hyperparameters.epochs=2 -o json
    """
    from orchestrator.api import plan_tuning as api_plan_tuning
    from orchestrator.cli.options import terminations_interrupt
    from orchestrator.cli.source_bar import source_progress

    plan_tuning = api_plan_tuning.__wrapped__  # the CLI's errors keep its options' names

    with terminations_interrupt(), source_progress(quiet=output == "json"):
        tuning_plan = plan_tuning(file, job_name=job_name, boto=ctx.obj, overrides=overrides,
                                  max_source_bytes=max_source_bytes)
    if output == "json":
        echo_json(tuning_plan.to_dict())
        return
    _print_plan(tuning_plan)


@tune.command()
@spec_argument("file")
@job_set_option
@job_region_option
@output_option
@job_name_option("tuning job")
@allow_unverified_option
@max_source_option
@wait_option("tuning job", "--poll-seconds")
@_poll_option
@click.pass_context
def submit(ctx: click.Context, file: str, overrides: tuple[str, ...], output: str, job_name: str | None,
           allow_unverified: bool, max_source_bytes: int, wait: bool, options: WatchOptions) -> None:
    """Create the tuning job `smtrain tune plan FILE` shows, exactly that request, exactly once (the source is
    uploaded unless S3 has it already). With --wait, follow it to its end as `smtrain submit --wait` follows a
    job: each change of its trials' counts, then what `smtrain tune status` prints, and its exit code.

    \b
    Examples:
      smtrain tune submit job_specs/tuning/mlp-lr-search.yaml
      smtrain tune submit search.yaml --job-name mlp-lr-1 --wait
    """
    from orchestrator.api import plan_tuning as api_plan_tuning, submit_tuning as api_submit_tuning
    from orchestrator.cli.options import terminations_interrupt
    from orchestrator.cli.source_bar import source_progress

    plan_tuning, submit_tuning = api_plan_tuning.__wrapped__, api_submit_tuning.__wrapped__  # the CLI's errors keep its options' names

    with terminations_interrupt(), source_progress(quiet=output == "json"):
        tuning_plan = plan_tuning(file, job_name=job_name, boto=ctx.obj,
                                  overrides=allowing_unverified(overrides, allow_unverified),
                                  max_source_bytes=max_source_bytes)
        tuning = submit_tuning(tuning_plan, boto=ctx.obj)
    assert tuning.plan is not None
    submitted = {"tuning_job_name": tuning.name, "region": tuning.plan.job.target.region,
                 "jobs": tuning.plan.spec.total_jobs(), "cost": tuning.plan.cost.to_dict()}
    if output == "text":
        click.echo(f"submitted tuning job {tuning.name}: {counted(tuning.plan.spec.total_jobs(), 'trial')}, "
                   f"{tuning.plan.spec.max_parallel_jobs} at a time ({tuning.plan.spec.strategy.value})")
        click.echo(f"  cost     {_cost_words(tuning.plan)}")
        click.echo(f"  follow   smtrain tune status {tuning.name}")
    if not (wait or any_given(ctx, WatchOptions)):  # --poll-seconds asks to follow, as it does for submit
        if output == "json":
            echo_json(submitted)
        return
    _follow(ctx, tuning, options.poll_seconds, output, submitted)


def _follow(ctx: click.Context, tuning: Tuning, poll_seconds: float, output: str, submitted: dict[str, Any]) -> None:
    """Follows the tuning job to its end, a line for each change of its status or trials' counts (on stderr under
    json), then prints it as `tune status` does and exits with its final status's code. Ctrl-C leaves it running,
    saying so."""
    from datetime import datetime, timezone

    from orchestrator.cli.jobs import EXIT_CODES

    said: list[str] = []

    def show(current: TuningStatus) -> None:
        words = f"{current.status}; trials: {_counts_words(current)}"
        if words not in said[-1:]:
            said.append(words)
            click.echo(f"{datetime.now(timezone.utc):%H:%M:%S}  {words}", err=output == "json")

    try:
        current = tuning.wait(poll_seconds, on_status=show)
    except KeyboardInterrupt as interrupted:
        interrupted.add_note(f"stopped following; {tuning.name} keeps running (`smtrain tune status {tuning.name}` "
                             f"says how far it is, `smtrain tune stop {tuning.name}` stops it)")
        raise
    trials = tuning.trials()
    if output == "json":
        echo_json({**submitted, "final_status": {**current.to_dict(), "trial_list": [trial.to_dict()
                                                                                     for trial in trials]}})
    else:
        _print_status(current, trials)
    ctx.exit(EXIT_CODES[current.status])


def _tuning_options(function: Any) -> Any:
    """TUNING, --backend and --region: how every verb that answers for one search is told which."""
    function = region_option("the tuning job")(function)
    function = backend_option("TUNING", "a local search")(function)
    return click.argument("tuning", metavar="TUNING")(function)


def _resolve(ctx: click.Context, tuning: str, backend: str | None, region: str | None) -> tuple[Any, str]:
    from orchestrator.backends.tuning import resolve_tuning

    return resolve_tuning(tuning, backend, region, ctx.obj)


@tune.command()
@_tuning_options
@output_option
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.png",
              help="Draw the objective over the trials and against each parameter (needs matplotlib).")
@click.pass_context
def status(ctx: click.Context, tuning: str, backend: str | None, region: str | None, output: str,
           plot_file: Path | None) -> None:
    """Progress of search TUNING (trials completed, running, stopped, failed), the best trial so far with its
    objective and hyperparameters, every trial sorted by objective, and why each failed trial failed.

    TUNING: `sagemaker:NAME` (a tuning job), `local:FOLDER` (what `tune local` wrote: its --run-dir, or a name
    under runs/), or a bare name: a local search of that name, else a SageMaker tuning job.

    \b
    Examples:
      smtrain tune status local:runs/mlp-cpu-search-261128-093500-ab12
      smtrain tune status sagemaker:mlp-lr-search-2611280935 --plot search.png
    """
    from orchestrator.backends.tuning import Tuning

    handle = Tuning(*_resolve(ctx, tuning, backend, region))
    current = handle.status()
    trials = handle.trials()
    if plot_file is not None:
        handle.plot().savefig(plot_file, dpi=100)
    if output == "json":
        echo_json({**current.to_dict(), "trial_list": [trial.to_dict() for trial in trials]})
        return
    _print_status(current, trials)
    if plot_file is not None:
        click.echo(f"plot written to {plot_file}", err=True)


def _counts_words(current: TuningStatus) -> str:
    """`3 completed, 2 running, 0 stopped, 1 failed of 12`: how far the search is."""
    counts = ", ".join(f"{value} {status_words(key)}" for key, value in current.counts.items())
    return counts + (f" of {current.max_jobs}" if current.max_jobs else "")


def _print_status(current: TuningStatus, trials: list[Trial]) -> None:
    """What `tune status` prints: the counts, the best trial, why it failed or completed early, every trial."""
    from orchestrator.observing.metric_series import format_duration
    from orchestrator.observing.trials import failures, table

    click.echo(f"{current.name}: {current.status} ({current.strategy}); trials: {_counts_words(current)}")
    if current.best is not None:
        click.echo(f"  best: {current.best.name}  {current.metric} = {current.best.objective:.6g}  "
                   f"{current.best.hyperparameters}")
    if current.failure_reason:
        click.echo(f"  failure: {current.failure_reason}")
    if current.completion_reason:
        click.echo(f"  completed early: {current.completion_reason}")
    elif current.trials_not_improving:
        click.echo(f"  not improving: {counted(current.trials_not_improving, 'trial')} improved the objective by "
                   "1% or less")
    if current.runtime_seconds is not None:
        click.echo(f"  runtime: {format_duration(current.runtime_seconds)}")
    if trials:
        click.echo(table(trials, current.goal, current.metric))
    for line in failures(trials):
        click.echo(f"  {line}")


@tune.command("list")
@click.option("--status", "status_equals", type=click.Choice(_STATUSES, case_sensitive=False),
              help="Only tuning jobs in this status (any case: failed is Failed).")
@click.option("--name-contains", help="Only tuning jobs whose name contains this text.")
@click.option("--max", "max_results", type=click.IntRange(1, 100), default=20, show_default=True,
              help="At most this many tuning jobs, newest first.")
@click.option("--backend", type=click.Choice(BACKENDS),
              help="SageMaker's tuning jobs, or the searches `tune local` wrote under runs/ (or --runs DIR) "
                   "[default: sagemaker; local with --runs].")
@runs_option("searches")
@region_option("the SageMaker tuning jobs")
@output_option
@click.pass_context
def list_command(ctx: click.Context, status_equals: str | None, name_contains: str | None, max_results: int,
                 backend: str | None, runs_root: Path | None, region: str | None, output: str) -> None:
    """The most recent tuning jobs, newest first; the local ones (--backend local) with a line on stderr saying
    which folder was read.

    \b
    Examples:
      smtrain tune list --backend local
      smtrain tune list --status completed --max 5
    """
    from orchestrator.backends.tuning import tuning_backend_for

    listing = tuning_backend_for(backend, region, ctx.obj, runs_root)
    rows = listing.list_tunings(status_equals, name_contains, max_results)
    if output == "json":
        echo_json([row.to_dict() for row in rows])
        return
    if not rows:
        click.echo("no tuning jobs match", err=True)
    else:
        width = max(len(row.name) for row in rows)
        click.echo(f"{'NAME':<{width}}  {'STATUS':<10}  {'STRATEGY':<9}  TRIALS")
        for row in rows:
            counts = ", ".join(f"{value} {status_words(key)}" for key, value in row.counts.items() if value)
            click.echo(f"{row.name:<{width}}  {row.status:<10}  {row.strategy:<9}  {counts or '-'}")
    place = listing.listed_from()
    if place:  # where local searches were read: an empty list explains itself
        click.echo(place, err=True)


@tune.command()
@_tuning_options
@output_option
@click.pass_context
def stop(ctx: click.Context, tuning: str, backend: str | None, region: str | None, output: str) -> None:
    """Stop search TUNING and its running trials. One that has ended is fine (exit 0). TUNING as for `status`.

    \b
    Examples:
      smtrain tune stop sagemaker:mlp-lr-search-2611280935
    """
    chosen, tuning_id = _resolve(ctx, tuning, backend, region)
    requested, was = chosen.stop(tuning_id)
    if output == "json":
        echo_json({"tuning_job_name": tuning, "stop_requested": requested, "status": was.status})
    elif requested:
        click.echo(f"stop requested for {tuning}: its running trials stop, then it is Stopped")
    else:
        click.echo(f"{tuning} is already {was.status}: nothing to stop")


@tune.command()
@spec_argument("file")
@job_set_option
@job_region_option
@_search_options
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.png",
              help="Draw the objective over the trials and against each parameter (needs matplotlib).")
@local_run_options(*TRIAL_OPTIONS)
@output_option
def local(file: str, overrides: tuple[str, ...], search: SearchOptions, plot_file: Path | None, options: Options,
          output: str) -> None:
    """Run the search of FILE on this machine: each trial a real `smtrain local` run of the job spec (its own
    run directory, every host emulated), at most N at once, the objective read from each trial's log with the
    job's metric definitions. Random and Grid choose exactly as described; Bayesian and Hyperband are stood in
    for by optuna (smtrain's tune extra: docs/install.md). Prints every trial sorted by objective and the best one. The
    options of `smtrain local` below apply to every trial.

    \b
    Examples:
      smtrain tune local job_specs/tuning/mlp-lr-search.yaml
      smtrain tune local search.yaml --max-jobs 4 --parallel 2 --budget 900 --plot search.png
    """
    from orchestrator.cli.ci_annotations import tune_search
    from orchestrator.emulator.tuning.search import tune_local
    from orchestrator.observing.trials import table
    from orchestrator.specs.loader import load_tuning

    loaded = load_tuning(file, overrides)

    def show(line: str) -> None:
        click.echo(line, err=output == "json")

    result = tune_local(loaded, dataclasses.replace(search, trial=options), on_event=show)
    if plot_file is not None:
        result.figure().savefig(plot_file, dpi=100)
    if output == "json":
        echo_json(result.to_dict())
    else:
        click.echo(table(result.trials, result.goal, result.metric))
        if result.best is not None:
            click.echo(f"best: {result.best.name}  {result.metric} = {result.best.objective:.6g}  "
                       f"{result.best.hyperparameters}  ({result.best.run_dir})")
        click.echo(f"{counted(len(result.trials), 'trial')} in {result.seconds:.1f} s, up to {result.parallel} at once; "
                   f"results in {result.run_dir}")
    if plot_file is not None:
        click.echo(f"plot written to {plot_file}", err=True)
    why_no_best = None if result.best is not None else _why_no_best(result, loaded.job.path)
    if why_no_best:
        show(why_no_best)
    tune_search(result, loaded.job.spec, why_no_best)
    raise SystemExit(0 if result.best is not None else 1)


def _why_no_best(result: Any, job_spec: Path | None) -> str:
    """Why the search has no best trial (its exit 1): the objective never read, or no trial completed."""
    from orchestrator.observing.trials import counts_of

    completed = [trial for trial in result.trials if trial.status == "Completed"]
    if completed:
        return (f"no best trial: no completed trial reported {result.metric} (its metric definition matched no line "
                f"of their logs); `smtrain metrics {completed[0].run_dir}` shows what the job's definitions read, "
                f"and `metrics:` in {job_spec or 'the job spec'} sets the regex that reads {result.metric}")
    counts = ", ".join(f"{count} {status_words(status)}" for status, count in counts_of(result.trials).items() if count)
    return f"no best trial: no trial completed ({counts or 'none ran'})"


def _cost_words(tuning_plan: Any) -> str:
    """The bound with its factors as `smtrain plan` shows them (hourly price, count, hours): a per-trial price
    rounded to the cent made the product read wrong (12 x 0.10 shown as 1.22)."""
    cost, trial = tuning_plan.cost, tuning_plan.job.cost
    if cost.max_total is None:
        return f"no price on record for {tuning_plan.job.spec.instance.type}"
    return (f"at most {cost.currency} {cost.max_total:,.2f} = {counted(cost.trials, 'trial')} x {cost.currency} "
            f"{hourly_price(trial.price_per_instance_hour)}/h x {trial.instance_count} x "
            f"{trial.max_billable_seconds / 3600:g} h ({trial.basis})")


def _print_plan(tuning_plan: Any) -> None:
    import json

    from orchestrator.redact import redact

    spec = tuning_plan.spec
    click.echo(f"tuning job {tuning_plan.name}: {spec.strategy.value} search over "
               f"{', '.join(spec.parameters)} of {tuning_plan.job.spec.name}")
    click.echo(f"  objective {spec.objective.type} {spec.objective.metric}")
    click.echo(f"  jobs      {counted(spec.total_jobs(), 'trial')}, {spec.max_parallel_jobs} at a time, each "
               f"{tuning_plan.job.spec.instance.count} x {tuning_plan.job.spec.instance.type}")
    click.echo(f"  cost      {_cost_words(tuning_plan)}")
    for finding in tuning_plan.job.findings:
        click.echo(f"  {finding.severity}: {finding.field}: {finding.message}")
    click.echo("CreateHyperParameterTuningJob request:")
    click.echo(json.dumps(redact(tuning_plan.request), indent=2))
