"""`smtrain local`: runs a spec here as SageMaker would, every host emulated (emulator/local_run.py).

Its run options are not declared here: `local_run_options` generates their flags from `emulator/run_options.py`
and hands the command one `Options`; what stays here is how the command line shows the run (--verbose, --quiet,
--output, --explain) and --hyperparameters-file, how `tune local` hands a trial its values (they change the spec,
not how it runs).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from orchestrator.cli.options import (
    echo_json,
    interrupt_on_termination,
    job_region_option,
    local_run_options,
    output_option,
    set_option,
    spec_argument,
)

if TYPE_CHECKING:
    from orchestrator.emulator.run_options import Options


def _explain(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value:
        return
    from orchestrator.emulator.preparing.deviations import DEVIATIONS

    click.echo("How `smtrain local` differs from SageMaker's training container (everything else follows it):")
    for deviation in DEVIATIONS:
        click.echo(f"- {deviation}")
    ctx.exit(0)


@click.command()
@spec_argument("file")
@set_option
@job_region_option
@local_run_options()
@click.option("--verbose", "-v", is_flag=True, help="Print every host's log lines, prefixed [algo-N], under the "
                                                    "progress bar (when stdout is not a terminal, they are streamed "
                                                    "to it anyway).")
@click.option("--quiet", "-q", is_flag=True, help="No notices and no host log lines: only the progress bar and the "
                                                  "result.")
@click.option("--hyperparameters-file", type=click.Path(dir_okay=False, path_type=Path), hidden=True,
              help="A JSON object of hyperparameters that replace the spec's, each name and value verbatim (how "
                   "`tune local` hands a trial its values: never on a command line).")
@click.option("--explain", is_flag=True, is_eager=True, expose_value=False, callback=_explain,
              help="Print how this emulation differs from SageMaker's training container, and exit.")
@output_option
def local(file: str, overrides: tuple[str, ...], options: Options, verbose: bool, quiet: bool,
          hyperparameters_file: Path | None, output: str) -> None:
    """Run FILE on this machine as SageMaker would: every host emulated, no docker, no AWS account.

    Each host gets its own /opt/ml tree (config files, channels, code, model, output, checkpoints) under the
    run directory, the SM_* environment the training toolkit sets, and the launcher of the spec's mode
    (python per host, torchrun per host, or one mpirun across hosts), over 127.0.0.1. Each host's log lines go
    to logs/algo-N.log and, prefixed [algo-N], to stdout when it is no terminal (a file, a CI log) or with
    --verbose; a terminal shows a progress bar with steps/s, ETA and loss, and the loss curve at the end;
    model.tar.gz and output.tar.gz are merged across hosts, and the metric series is
    kept in metrics.jsonl (`smtrain metrics RUN_DIR`). A GPU instance's script runs unchanged on a machine
    without its GPUs, on smtrain's CPU stand-in for CUDA (see --no-gpu-standin). Exit code: 0 Completed (or
    passed --smoke), 1 Failed (the reason names the host and rank; with --smoke also a rank that never
    started), 3 Stopped (at max_run_seconds, or by `smtrain stop RUN_DIR` from another shell), 4 Hung
    (--stall-timeout), 130 interrupted. Ctrl-C (or SIGTERM, SIGHUP) gives the ranks up to 10 s to checkpoint, then
    kills them; a second Ctrl-C kills at once. Nothing the run starts outlives it. While it runs, `smtrain status`,
    `logs` and `metrics` take its run directory (SageMaker's statuses, written to status.json as it goes).

    \b
    Examples:
      smtrain local job.yaml --set hyperparameters.epochs=1
      smtrain local job.yaml --smoke 600 --smoke-steps 5 --run-dir runs/smoke
      smtrain local job.yaml --input train=data/train --processes-per-host 1
    """
    interrupt_on_termination()  # from the command's first moment until the job's processes start
    from orchestrator.cli.render import LocalConsole
    from orchestrator.emulator.local_run import run_local
    from orchestrator.emulator.supervising.supervisor import stop_with_parent
    from orchestrator.specs.loader import load

    stop_with_parent()
    loaded = load(file, overrides, hyperparameters=_trial_values(hyperparameters_file))
    _print_warnings(loaded)
    # Where no terminal shows the progress bar (a file, a CI log), the script's own lines are the record of the
    # run: they go to stdout, as SageMaker's fit() prints them (to stderr under --output json).
    stream = None if quiet or _redraws_a_bar() else (sys.stdout if output == "text" else sys.stderr)
    with LocalConsole(verbose=verbose and output == "text", quiet=quiet, stream=stream,
                      command=_command(file, overrides, options, hyperparameters_file),
                      keeps_checkpoints=loaded.spec.checkpoint is not None) as console:
        result = run_local(loaded, options, console, supervisor_hook=_forward_signals)
        console.result(result)
    # The exit code is the run's, even where the terminal has closed (SIGHUP) or a pipe's reader has gone.
    from orchestrator.cli.ci_annotations import local_run
    from orchestrator.cli.closed_console import Tolerant

    smoke = _smoke_line(result, options.stall_timeout_seconds) if result.smoke is not None else None
    if smoke is not None:
        click.echo(smoke, file=Tolerant(sys.stderr))
    if output == "json":
        from dataclasses import asdict

        echo_json(asdict(result), file=Tolerant(sys.stdout))
    local_run(result, loaded.spec, smoke)
    sys.exit(result.exit_code)


def _redraws_a_bar() -> bool:
    """stdout is a terminal that redraws a line in place: elsewhere (a file, a CI log, TERM=dumb) no progress bar
    shows the run, and it showed nothing until it ended."""
    from orchestrator.cli.live_terminal import redraws_in_place

    return redraws_in_place(sys.stdout)


def _command(file: str, overrides: tuple[str, ...], options: Options, hyperparameters_file: Path | None) -> list[str]:
    """The words after `smtrain local` that run this job again, but --run-dir (the resume line adds the run's)."""
    from dataclasses import replace

    from orchestrator.emulator.run_options import command_words
    from orchestrator.specs.option_overrides import override_words

    words = [file, *(word for override in overrides for word in override_words(override))]
    if hyperparameters_file is not None:
        words += ["--hyperparameters-file", str(hyperparameters_file)]
    return words + command_words(replace(options, run_dir=None))


def _trial_values(path: Path | None) -> dict[str, Any] | None:
    """--hyperparameters-file: a JSON object (the trial values `tune local` wrote), or None without the option."""
    import json

    if path is None:
        return None
    try:
        values = json.loads(path.read_bytes())
    except (OSError, ValueError) as error:
        raise click.BadParameter(f"{path} is not a readable JSON file ({error})", param_hint="--hyperparameters-file")
    if not isinstance(values, dict):
        raise click.BadParameter(f"{path} holds no JSON object", param_hint="--hyperparameters-file")
    return values


def _print_warnings(loaded: Any) -> None:
    """A spec's warnings (an image past its end of patch) are worth a line before a local run too."""
    from orchestrator.cli.ci_annotations import spec_warnings

    spec_warnings(loaded)
    for finding in loaded.findings:
        if finding.severity == "warning":
            click.secho(f"WARNING: {loaded.where(finding.field)}: {finding.message}\n  fix: {finding.fix}",
                        fg="yellow", err=True)


def _smoke_line(result: Any, stall_timeout: float | None) -> str:
    """`smoke passed: 16 of 16 ranks started, step 12 reached (progress line), last loss 0.4321, stopped at the
    deadline of 60 s (68.2 s in all: set-up, the stop's grace and packing)`; when no rank reached a step, says so.
    Under --smoke-steps N the smoke stops at the first step line at N or past it: a script that logs every 50 steps
    may first show step 51, so the step reached is the one the script reported and N only what was asked. A hung
    run says when and why it was judged hung (silent for the stall timeout), not "hung within" the deadline."""
    smoke = result.smoke
    verdict = "passed" if result.exit_code == 0 else "FAILED"
    if result.status == "Stopped" and result.exit_code == 0 and smoke.steps_wanted is not None:
        wanted = smoke.steps_wanted
        past = "" if smoke.steps_reached == wanted else " or past it"
        ending = f"stopped once a line showed step {wanted}{past} (--smoke-steps {wanted}), within the deadline of "
    elif result.status == "Stopped" and result.exit_code == 0:
        ending = "stopped at the deadline of "
    elif result.status == "Hung":
        ending = (f"judged hung {result.seconds:.1f} s in (no rank wrote a line or advanced a step for "
                  f"{stall_timeout:g} s, the --stall-timeout), before the deadline of ")
    else:
        ending = f"{result.status.lower()} within "
    ending += f"{smoke.deadline_seconds:g} s"
    if result.seconds > smoke.deadline_seconds:
        ending += f" ({result.seconds:.1f} s in all: set-up, the stop's grace and packing)"
    steps = (f"step {smoke.steps_reached} reached ({smoke.step_source})" if smoke.steps_reached is not None
             else "NO rank reached a step (no step=N/M line, no step in metrics.jsonl, no checkpoint)")
    loss = f", last loss {smoke.last_loss:.6g}" if smoke.last_loss is not None else ""
    return (f"smoke {verdict}: {smoke.ranks_started} of {smoke.ranks_expected} ranks started, {steps}{loss}, "
            f"{ending}")


def _forward_signals(supervisor: Any) -> None:
    """SIGTERM and SIGHUP (the terminal closed) stop the run as Ctrl-C does, which the run forwards itself (for
    the API too: `interruption.python_interrupts_forwarded`), through the same handler: SIGTERM to every training
    process, a bounded grace to checkpoint, then SIGKILL; a second one kills at once. Once the run's processes have
    ended (merging artifacts, between attempts), they interrupt smtrain itself."""
    import signal

    from orchestrator.emulator.supervising.interruption import forwarding_to

    interrupt = forwarding_to(lambda: supervisor)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupt)


