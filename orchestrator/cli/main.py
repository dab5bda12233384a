"""The `smtrain` command line. Thin: each command calls library functions and prints their results.

Only click is imported at start-up; every command imports what it needs when it runs, so `smtrain --help` and
`smtrain validate` never load sagemaker, boto3 or torch. Exit codes: 0 ok, 1 the job (or an AWS call) failed,
2 bad input (nothing was sent), 3 the job was stopped, 4 a run or job hung (silent for --stall-timeout with
every rank or host idle), 130 interrupted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from orchestrator import __version__
from orchestrator.cli.options import (
    LazyGroup,
    echo_json,
    error_document,
    key_value_pairs,
    output_option,
    set_option,
)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="smtrain")
def main() -> None:
    """Describe a PyTorch training job in YAML; validate it, see the exact SageMaker request, run it locally
    without docker, or submit it to SageMaker.

    \b
    Typical flow:
      smtrain validate job.yaml          check the spec (fast, offline)
      smtrain plan job.yaml              what submit would send: image, ranks, cost (--full: the exact request)
      smtrain local job.yaml             run it here, every host emulated, no AWS account needed
      smtrain check job.yaml             is the account ready: credentials, role, bucket, image, quota
      smtrain submit job.yaml --wait     send it to SageMaker and follow it

    Examples of specs: job_specs/. Field reference: `smtrain schema` and docs/specs.md.

    \b
    Exit codes:
      0    ok
      1    the job failed, or an AWS call failed
      2    bad input: nothing was sent (the message names the file, line and field, with a fix)
      3    the job was stopped
      4    a local run or SageMaker job hung: silent for --stall-timeout, every rank or host idle
      130  interrupted (Ctrl-C)
    With --output json, errors are one JSON object on stdout too: {"error": {"type", "message", "fix", ...}}.
    """


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@set_option
@click.option("--allow-unverified", is_flag=True,
              help="Pass unverified combinations, as submit --allow-unverified does (overrides allow_unverified "
                   "in the spec).")
@output_option
def validate(files: tuple[str, ...], overrides: tuple[str, ...], allow_unverified: bool, output: str) -> None:
    """Check spec FILES against the schema, SageMaker's API limits and the capability matrix. Offline and fast.

    It is submit's gate: exits 2 whenever `submit` would refuse a file, which includes an unverified combination
    without `allow_unverified: true` (or --allow-unverified) and a channel given as a local path (fine for
    `smtrain local`). Notices, and unverified combinations that are allowed, are shown and pass, among them
    each value the spec writes that contradicts the admin's SageMaker SDK defaults file.
    """
    import dataclasses

    from orchestrator.cli.render import findings_text, summary_line
    from orchestrator.errors import SmtrainError
    from orchestrator.planning.request import offline_request
    from orchestrator.planning.sdk_defaults import load_sdk_defaults
    from orchestrator.planning.training_defaults import sdk_defaults_findings
    from orchestrator.spec.capabilities import submit_refusals
    from orchestrator.spec.loader import InvalidSpec, Problem, load

    results, failed = [], False
    defaults = load_sdk_defaults()  # local files only: validate stays offline
    for file in files:
        try:
            loaded = load(file, overrides, allow_unverified=True if allow_unverified else None)
            loaded = dataclasses.replace(loaded, findings=[*loaded.findings, *sdk_defaults_findings(loaded.spec,
                                                                                                     defaults)])
            refusals = submit_refusals(loaded.spec, loaded.findings)
            if refusals:
                raise InvalidSpec([Problem(loaded.where(finding.field), finding.field,
                                           f"{finding.severity}: {finding.message}", finding.fix)
                                   for finding in refusals])
            offline_request(loaded.spec)  # the limits only the built request shows, as plan checks them
        except SmtrainError as exc:
            failed = True
            problems = ([problem.to_dict() for problem in exc.problems] if isinstance(exc, InvalidSpec)
                        else [error_document(exc)["error"]])
            results.append({"file": file, "valid": False, "problems": problems, "warnings": []})
            if output == "text":
                click.secho(f"✗ {file}", fg="red", bold=True)
                click.echo(str(exc) if isinstance(exc, InvalidSpec) else f"  {exc}")
            continue
        warnings = [finding.__dict__ | {"where": loaded.where(finding.field)} for finding in loaded.findings]
        results.append({"file": file, "valid": True, "problems": [], "warnings": warnings})
        if output == "text":
            click.secho(f"✓ {file}: {summary_line(loaded.spec)}", fg="green")
            text = findings_text(loaded)
            if text:
                click.echo(text)
    if output == "json":
        echo_json(results)
    sys.exit(2 if failed else 0)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@set_option
@output_option
@click.option("--job-name", help="Exact job name to plan for (default: the spec's name plus a timestamp).")
@click.option("--max-source-mb", type=float, default=100, show_default=True,
              help="Refuse a source_dir that packs larger than this.")
@click.option("--full", is_flag=True, help="Also print the resolved spec, the SDK v2 estimator arguments and the "
                                           "exact CreateTrainingJob request.")
def plan(file: str, overrides: tuple[str, ...], output: str, job_name: str | None, max_source_mb: float,
         full: bool) -> None:
    """Show what submitting FILE would send, before anything is sent.

    On one screen: where it runs (image, region, role, output, source), the findings, the ranks per host with
    the launcher and master, the hyperparameters and the worst-case cost. --full adds the resolved spec, the
    exact CreateTrainingJob request (built by smtrain, key for key what SageMaker SDK v2 would send; no SDK
    needed) and the SDK v2 estimator arguments that produce it; --output json holds all of it. Nothing is sent;
    only a missing role or output path is read from the infra stack. Secret-looking values are masked.
    """
    from orchestrator.cli.render import emit_plan

    emit_plan(file, overrides, "full" if full and output == "text" else output, job_name, max_source_mb)


def _explain(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value:
        return
    from orchestrator.emulator.preparing.deviations import DEVIATIONS

    click.echo("How `smtrain local` differs from SageMaker's training container (everything else follows it):")
    for deviation in DEVIATIONS:
        click.echo(f"- {deviation}")
    ctx.exit(0)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@set_option
@click.option("--input", "inputs", multiple=True, metavar="NAME=PATH", callback=key_value_pairs,
              help="Local data for channel NAME (overrides the spec's inputs.NAME; repeatable).")
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the emulated hosts live (default runs/<job-name>/). Reusing one resumes from its "
                   "checkpoints.")
@click.option("--processes-per-host", type=click.IntRange(min=1),
              help="Start this many processes per host instead of the instance's GPU count (to fit a GPU job "
                   "on this machine).")
@click.option("--simulate-spot-interruption", type=click.FloatRange(min=0), metavar="AFTER_SECONDS",
              help="Interrupt the job after this many seconds as a spot reclaim would, restore the checkpoints "
                   "on fresh instances and run it to the end.")
@click.option("--master-host", metavar="algo-N",
              help="Put this host first in the instance group, as SageMaker sometimes does: it becomes the "
                   "master in distributed modes (catches scripts that assume algo-1).")
@click.option("--host-order", metavar="algo-N,...",
              help="The instance group's host order, which SageMaker does not promise (e.g. algo-3,algo-1,algo-2): "
                   "the first is the master in distributed modes, MPI ranks are placed in this order; hosts not "
                   "named follow.")
@click.option("--link-inputs", is_flag=True,
              help="Link local channel files instead of copying them per host (hard links), mounted read-only in "
                   "each host's namespace: the job cannot change them. Where hosts get no mount namespace, files "
                   "the job deletes, renames or creates stay in the run, but WRITING INTO an existing channel file "
                   "changes your original.")
@click.option("--smoke", type=click.FloatRange(min=1), metavar="SECONDS",
              help="A bounded run for CI: the real-sized job (every host, every rank) for at most SECONDS, then "
                   "stopped as StopTrainingJob stops it (SIGTERM to every rank, the grace period, checkpoints "
                   "kept). Exit 0 when every rank started and none failed before the deadline (or the job "
                   "completed sooner); a rank has started once a process of its host runs it (torchrun's worker "
                   "with its RANK, mpirun's rank with its OMPI_COMM_WORLD_RANK, the entry point on each host in "
                   "mode none). Prints the ranks started, the steps reached and the last loss.")
@click.option("--smoke-steps", type=click.IntRange(min=1), metavar="N",
              help="With --smoke: end the smoke as soon as every rank has started and a line shows step N "
                   "(step=N/M, step=N, step: N, global_step=N, a tqdm or Lightning progress bar), stopped as at "
                   "the deadline (checkpoints kept); fail when the "
                   "deadline comes first. A CI smoke then takes what the job needs to start and train N steps, "
                   "on any machine, and the deadline only bounds a job that never gets there.")
@click.option("--exact-autocast", is_flag=True,
              help="Under the CPU stand-in, compute CUDA autocast regions in bfloat16 even on a CPU without native "
                   "bfloat16 (AVX-512 BF16, AMX or Arm BF16), which emulates it about ten times slower. By default "
                   "such a CPU computes them in float32 and says so; what the script converts itself keeps its "
                   "dtype.")
@click.option("--no-gpu-standin", "no_gpu_standin", is_flag=True,
              help="Run a GPU instance's processes as this machine is. By default, where this machine has fewer "
                   "GPUs per host than the instance (or none), every training process gets smtrain's CPU stand-in "
                   "for CUDA (torch.cuda answers as on the instance, nccl runs over gloo, smdistributed is "
                   "importable); with enough GPUs it is off anyway and real NCCL runs.")
@click.option("--python", "python", metavar="PATH",
              help="The interpreter that runs the job (its torch, torchvision and other packages stand for the "
                   "image's), e.g. /usr/bin/python3 for Debian's torch and torchvision; smtrain itself stays in its "
                   "own. Default: smtrain's own interpreter.")
@click.option("--stall-timeout", type=click.FloatRange(min=0), default=300, show_default=True, metavar="SECONDS",
              help="When no rank writes a line or advances a step for this long, the run is silent. Silent while "
                   "some host's work still uses the CPU (a long step, a JIT compile, a data worker): slow, said with "
                   "the busiest rank and where it is, again after each further SECONDS, never stopped. Silent with "
                   "every rank idle (blocked in a collective, sleeping, waiting on a lock): hung: print every rank's "
                   "Python stack, name the ranks waiting in a collective and the one they wait for, and stop "
                   "(exit 4). A smoke's deadline (--smoke) governs a slow run. 0: never. See "
                   "docs/local-runs-hangs.md.")
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
def local(file: str, overrides: tuple[str, ...], inputs: dict[str, str], run_dir: Path | None,
          processes_per_host: int | None, simulate_spot_interruption: float | None, master_host: str | None,
          host_order: str | None, link_inputs: bool, smoke: float | None, smoke_steps: int | None,
          exact_autocast: bool, no_gpu_standin: bool, python: str | None, stall_timeout: float,
          verbose: bool, quiet: bool, hyperparameters_file: Path | None, output: str) -> None:
    """Run FILE on this machine as SageMaker would: every host emulated, no docker, no AWS account.

    Each host gets its own /opt/ml tree (config files, channels, code, model, output, checkpoints) under the
    run directory, the SM_* environment the training toolkit sets, and the launcher of the spec's mode
    (python per host, torchrun per host, or one mpirun across hosts), over 127.0.0.1. Logs are prefixed
    [algo-N] in the logs (printed with --verbose; otherwise a progress bar with steps/s, ETA and loss, and the
    loss curve at the end); model.tar.gz and output.tar.gz are merged across hosts, and the metric series is
    kept in metrics.jsonl (`smtrain metrics RUN_DIR`). A GPU instance's script runs unchanged on a machine
    without its GPUs, on smtrain's CPU stand-in for CUDA (see --no-gpu-standin). Exit code: 0 Completed (or
    passed --smoke), 1 Failed (the reason names the host and rank; with --smoke also a rank that never
    started), 3 Stopped (at max_run_seconds, or by `smtrain stop RUN_DIR` from another shell), 4 Hung
    (--stall-timeout), 130 interrupted. Ctrl-C (or SIGTERM, SIGHUP) gives the ranks up to 10 s to checkpoint, then
    kills them; a second Ctrl-C kills at once. Nothing the run starts outlives it. While it runs, `smtrain status`,
    `logs` and `metrics` take its run directory (SageMaker's statuses, written to status.json as it goes).
    """
    from orchestrator.cli.render import LocalConsole
    from orchestrator.emulator.local_run import Options, run_local
    from orchestrator.emulator.supervising.supervisor import stop_with_parent
    from orchestrator.spec.loader import load

    stop_with_parent()
    if smoke_steps is not None and smoke is None:
        raise click.UsageError("--smoke-steps needs --smoke SECONDS (the deadline that bounds the smoke)")
    loaded = load(file, overrides, hyperparameters=_trial_values(hyperparameters_file))
    _print_warnings(loaded)
    options = Options(run_dir=run_dir, inputs=_input_paths(inputs), processes_per_host=processes_per_host,
                      simulate_spot_interruption=simulate_spot_interruption, master_host=master_host,
                      host_order=tuple(filter(None, host_order.split(","))) if host_order else None,
                      link_inputs=link_inputs, stall_timeout_seconds=stall_timeout or None,
                      gpu_standin=not no_gpu_standin, exact_autocast=exact_autocast, smoke_seconds=smoke,
                      smoke_steps=smoke_steps,
                      **({"python": _interpreter(python)} if python else {}))
    # Where no terminal shows the progress bar (a file, a CI log), the script's own lines are the record of the
    # run: they go to stdout, as SageMaker's fit() prints them (to stderr under --output json).
    stream = None if quiet or sys.stdout.isatty() else (sys.stdout if output == "text" else sys.stderr)
    with LocalConsole(verbose=verbose and output == "text", quiet=quiet, stream=stream, spec_file=file) as console:
        _interrupt_on_termination()
        result = run_local(loaded, options, console, supervisor_hook=_forward_signals)
        console.result(result)
    if result.smoke is not None:
        click.echo(_smoke_line(result), err=True)
    if output == "json":
        from dataclasses import asdict

        echo_json(asdict(result))
    sys.exit(result.exit_code)


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


def _interpreter(python: str) -> str:
    """--python as given (a path, or a name on PATH such as python3), as an absolute path; a usage error (exit 2)
    when it names nothing runnable."""
    import shutil

    found = shutil.which(python)
    if found is None:
        raise click.BadParameter(f"{python!r} is not an executable file here (nor a command on PATH)",
                                 param_hint="--python")
    return str(Path(found).absolute())


def _print_warnings(loaded: Any) -> None:
    """A spec's warnings (an image past its end of patch) are worth a line before a local run too."""
    for finding in loaded.findings:
        if finding.severity == "warning":
            click.secho(f"WARNING: {loaded.where(finding.field)}: {finding.message}\n  fix: {finding.fix}",
                        fg="yellow", err=True)


def _smoke_line(result: Any) -> str:
    """`smoke passed: 16 of 16 ranks started, step 12 reached (progress line), last loss 0.4321, stopped at the
    deadline of 60 s (68.2 s in all: set-up, the stop's grace and packing)`; when no rank reached a step, says so."""
    smoke = result.smoke
    verdict = "passed" if result.exit_code == 0 else "FAILED"
    if result.status == "Stopped" and result.exit_code == 0 and smoke.steps_wanted is not None:
        ending = f"stopped at step {smoke.steps_wanted} (--smoke-steps), within the deadline of "
    elif result.status == "Stopped" and result.exit_code == 0:
        ending = "stopped at the deadline of "
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


def _input_paths(inputs: dict[str, str]) -> dict[str, Path]:
    """--input values as paths; an empty one would silently mean the current directory."""
    empty = [name for name, path in inputs.items() if not path]
    if empty:
        raise click.BadParameter(f"'{empty[0]}=' has no path, e.g. --input {empty[0]}=./data",
                                 param_hint="'--input'")
    return {name: Path(path) for name, path in inputs.items()}


def _interrupt_on_termination() -> None:
    """Until the job's processes start (while requirements install, say), SIGTERM and SIGHUP stop smtrain as
    Ctrl-C does: what it started is ended and result.json written, instead of smtrain dying alone."""
    import signal

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupt)


def _forward_signals(supervisor: Any) -> None:
    """Ctrl-C, SIGTERM and SIGHUP (the terminal closed) stop the run as a spot interruption would: SIGTERM to
    every training process, a bounded grace to checkpoint, then SIGKILL; a second one kills at once. Once the
    run's processes have ended (merging artifacts, between attempts), they interrupt smtrain itself."""
    import signal

    def interrupt(signum: int, frame: Any) -> None:
        if supervisor.finished:
            raise KeyboardInterrupt
        supervisor.interrupt()

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupt)


@main.command()
@click.option("--output", "-o", type=click.Choice(["json", "yaml"]), default="json", show_default=True,
              help="The schema as JSON, or as YAML (the same document).")
def schema(output: str) -> None:
    """Print the JSON Schema of job specs (for editors: yaml-language-server, VS Code, PyCharm)."""
    from orchestrator.spec.field_docs import json_schema
    from orchestrator.spec.model import JobSpec

    document = {"$schema": "https://json-schema.org/draft/2020-12/schema", **json_schema(JobSpec)}
    if output == "yaml":
        import yaml

        click.echo(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), nl=False)
    else:
        echo_json(document)


@main.command()
@click.option("--family", help="Only this family, e.g. g5 or p4d.")
@click.option("--accelerator", type=click.Choice(["cpu", "gpu", "trainium"]), help="Only this kind.")
@output_option
def instances(family: str | None, accelerator: str | None, output: str) -> None:
    """The instance catalog: vCPUs, memory, accelerators, EFA and on-demand price per hour."""
    from orchestrator.spec.catalog import catalog

    rows = [entry for entry in catalog().instances.values()
            if (family is None or entry.family == family) and (accelerator is None or entry.accelerator == accelerator)]
    if output == "json":
        echo_json([entry.__dict__ for entry in rows])
        return
    from orchestrator.cli.render import print_instances

    print_instances(rows, catalog())


@main.command()
@output_option
def images(output: str) -> None:
    """SageMaker's PyTorch training images smtrain plans with: Python, tags, release and end of patch, SMDDP.

    A framework_version outside this table needs image_uri. An unverified image is one whose build configuration
    and release data in AWS's image repository disagree (submit needs allow_unverified: true).
    """
    from orchestrator.cli.render import image_rows, print_images

    rows = image_rows()
    if output == "json":
        echo_json(rows)
        return
    print_images(rows)


_LAZY_COMMANDS = {
    "check": "orchestrator.cli.check:check",
    "infra": "orchestrator.cli.infra:infra",
    "tune": "orchestrator.cli.tune:tune",
    **{name: f"orchestrator.cli.jobs:{attribute}" for name, attribute in (
        ("submit", "submit"), ("status", "status"), ("watch", "watch"), ("logs", "logs"), ("metrics", "metrics"),
        ("stop", "stop"),
        ("list", "list_command"))},
}
main.lazy_commands.update(_LAZY_COMMANDS)
