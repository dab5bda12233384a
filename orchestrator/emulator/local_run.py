"""`smtrain local`: runs a spec here as SageMaker would run it, every host emulated, no docker, no AWS.

Prepare from the plan (preparing/prepared_run.py: the request submit would send, written into per-host /opt/ml trees;
checked before anything starts), install requirements.txt / setup.py, launch, supervise, restart after a
simulated spot interruption, then report like a finished job: each host's status file, merged artifacts,
result.json, and a failure reason that leads with the failing rank's host, rank and exception.
"""

from __future__ import annotations

import contextlib
import errno
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from orchestrator.contract import OPT_ML
from orchestrator.emulator.instances.standin import local_gpu_count
from orchestrator.emulator.launching import opt_ml
from orchestrator.emulator.launching.launch import HostProcess, free_port, torch1_torchrun_notice
from orchestrator.emulator.launching.toolkit_launchers import RunnerType
from orchestrator.emulator.local_plan import local_plan
from orchestrator.emulator.preparing import layout as run_layout
from orchestrator.emulator.preparing.channels import PipeFeeders
from orchestrator.emulator.preparing.deviations import notices, setting_notices
from orchestrator.emulator.preparing.image_match import image_notices
from orchestrator.emulator.preparing.prepared_run import LocalSettings, PreparedRun, prepare_run
from orchestrator.emulator.preparing.usercode import InstallFailed, pip_error
from orchestrator.emulator.reporting.failures import (
    FAILURE_REASON_LIMIT,
    LauncherOutput,
    RootCause,
    root_cause,
    toolkit_failure,
)
from orchestrator.emulator.reporting.smoke import RankCensus, SmokeReport, killed_in_grace, last_step
from orchestrator.emulator.supervising.stall import (
    DEFAULT_STALL_TIMEOUT_SECONDS,
    EXIT_HUNG,
    STACKS_FILE,
    HangReport,
    StallWatchdog,
    diagnose,
)
from orchestrator.emulator.supervising.status import StatusReport, StopWatch, now, terminal_status
from orchestrator.emulator.supervising.supervisor import Exit, Limits, Outcome, Supervisor
from orchestrator.errors import RunFailed
from orchestrator.observing.metric_series import METRICS_FILE, MetricRecorder, loss_metrics, step_mark
from orchestrator.planning.plan import Plan
from orchestrator.planning.request import metric_definitions
from orchestrator.redact import redact
from orchestrator.spec import images
from orchestrator.spec.loader import LoadedSpec
from orchestrator.spec.model import JobSpec

DEFAULT_STOP_GRACE_SECONDS = 120.0


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
    """Completed, Failed, Stopped (max_run_seconds reached, or the smoke deadline), Interrupted (Ctrl-C /
    SIGTERM) or Hung (no rank wrote a line for `stall_timeout_seconds`)."""
    exit_code: int
    world_size: int
    attempts: int
    seconds: float
    failure_reason: str | None = None
    final_metrics: dict[str, float] = field(default_factory=dict)
    model_artifact: Path | None = None
    output_artifact: Path | None = None
    smoke: SmokeReport | None = None


@dataclass(frozen=True)
class Options(LocalSettings):
    """How `smtrain local` runs a job here: what preparation reads (LocalSettings) and how the run goes."""

    simulate_spot_interruption: float | None = None
    master_host: str | None = None
    """Shorthand for a host order that starts with this host."""
    stop_grace_seconds: float = DEFAULT_STOP_GRACE_SECONDS
    stall_timeout_seconds: float | None = DEFAULT_STALL_TIMEOUT_SECONDS
    """Stop the run, with every rank's stack, when no rank writes a line for this long; None: never."""
    smoke_seconds: float | None = None
    """Stop the job after this long as StopTrainingJob would; it passes (exit 0) when every rank started and
    none failed before (see smoke.py)."""
    smoke_steps: int | None = None
    """With smoke_seconds: stop it as soon as every rank started and a progress line shows this step; the
    smoke fails when the deadline comes first."""


@dataclass(frozen=True)
class _Reporter:
    """What every way a run ends reports from: the prepared run and the metrics it recorded."""

    prepared: PreparedRun
    tracker: MetricRecorder


@dataclass(frozen=True)
class _Effort:
    """The attempts a run made (a simulated spot interruption adds one) and the seconds they took."""

    attempts: int
    seconds: float


@dataclass(frozen=True)
class _Ending:
    """How a run ended, as result.json and status.json say it."""

    status: str
    exit_code: int
    reason: str | None
    effort: _Effort
    model: Path | None = None
    output: Path | None = None
    smoke: SmokeReport | None = None


def run_local(loaded: LoadedSpec | JobSpec | Plan, options: Options = Options(), observer: Observer | None = None,
              supervisor_hook: Any = None) -> LocalRun:
    """Runs the job on this machine and returns how it ended; `status.json` in the run directory says how it
    goes meanwhile (SageMaker's statuses), and `status.request_stop(run_dir)` stops it from anywhere.

    Args:
        loaded: a spec, or a plan (`local_plan.local_plan`'s; one made for SageMaker is planned again for here).
        supervisor_hook: called with each attempt's Supervisor before it starts (the CLI uses it to forward
            Ctrl-C and SIGTERM).

    Raises:
        SpecError, CapabilityError, EnvironmentProblem: before anything starts (a missing input, mpirun or
            torch, a refusal of the toolkit, an unusable run directory).
    """
    observer = observer or _Quiet()
    settings = replace(options, host_order=options.host_order or (
        (options.master_host,) if options.master_host else None))
    created = now()
    plan = local_plan(loaded, settings)
    planned = now()
    prepared = prepare_run(plan, settings, local_gpu_count())
    layout = prepared.layout
    tracker = MetricRecorder(metric_definitions(plan.spec), layout.root / METRICS_FILE)
    reporter = _Reporter(prepared, tracker)
    # From here on the run reports its status, and every way it ends writes the last one (Failed for an error).
    prepared.report = StatusReport(layout.root, _described(prepared), created)
    started = time.monotonic()
    active: list[Any] = []

    def stop_requested() -> None:
        assert prepared.report is not None
        prepared.report.transition("Stopping")
        observer.notice("stop requested: stopping the job as StopTrainingJob does")
        for supervisor in active[-1:]:
            supervisor.stop()

    def hook(supervisor: Any) -> None:
        active.append(supervisor)
        if stop_watch.requested:
            supervisor.stop()
        if supervisor_hook:
            supervisor_hook(supervisor)

    try:
        prepared.report.transition("Starting", created)
        prepared.report.transition("Downloading", planned)
        for deviation in notices(prepared.hostname.unavailable_because, prepared.accelerators.notice,
                                 prepared.host_fs.namespaced) + setting_notices(plan.create_training_job_request):
            observer.notice(deviation)
        for warning in _source_notices(prepared):
            observer.notice(warning)
        if plan.spec.distribution.mode.rules.launcher == "torchrun" and (
                torchrun := torch1_torchrun_notice(prepared.python)):
            observer.notice(torchrun)
        if options.link_inputs:
            observer.notice(_link_inputs_notice(prepared.host_fs.namespaced))
        observer.started(prepared.job.job_name, layout.root, prepared.world_size, len(layout.hosts))
        with StopWatch(layout.root, stop_requested) as stop_watch:
            return _run(reporter, options, observer, hook, started)
    except KeyboardInterrupt:  # before the processes started (installing requirements), or a notebook's
        with contextlib.suppress(OSError):
            _result(reporter, _Ending("Interrupted", 130, "interrupted (SIGINT/SIGTERM/SIGHUP) before the job's "
                                      "processes ended; nothing the run started is left running",
                                      _Effort(1, time.monotonic() - started)))
        raise
    except BaseException as error:  # a bug: the run directory still says so
        with contextlib.suppress(OSError):
            _result(reporter, _Ending("Failed", 1, f"smtrain stopped: {type(error).__name__}: {error}",
                                      _Effort(1, time.monotonic() - started)))
        raise


def _described(prepared: PreparedRun) -> dict[str, Any]:
    """The request as DescribeTrainingJob echoes it (secrets masked); with instance preferences, the one this run
    uses as SelectedInstanceType/Count, as SageMaker reports its selection."""
    described = redact(prepared.plan.create_training_job_request)
    resources = described["ResourceConfig"]
    if "InstancePreferences" in resources:
        resources.update(SelectedInstanceType=prepared.job.instance_type, SelectedInstanceCount=prepared.job.instance_count)
    return described


def _run(reporter: _Reporter, options: Options, observer: Observer, supervisor_hook: Any,
         started: float) -> LocalRun:
    """Installs the user's code, runs the attempts (a simulated spot interruption restarts the job), reports."""
    prepared, tracker = reporter.prepared, reporter.tracker
    layout = prepared.layout
    try:
        prepared.install_user_code()
    except InstallFailed as failure:
        return _install_failed(reporter, failure, time.monotonic() - started)
    if prepared.overlay is not None:
        observer.notice(f"requirements installed as the toolkit installs them, into {prepared.overlay.root}"
                        + (" (cached)" if not prepared.overlay.freshly_installed else ""))
        if prepared.overlay.replaced:
            observer.notice(f"the install changed packages this environment has, and the job sees its versions: "
                            f"{', '.join(prepared.overlay.replaced)} (pip did it for another requirement, as it would "
                            "in the image); what was built against the old version may now fail in the job (torch "
                            "built for numpy 1 with numpy 2: `Numpy is not available`); pin them in requirements.txt "
                            "to keep them")

    watchdog = StallWatchdog(options.stall_timeout_seconds)
    hangs: list[HangReport] = []
    steps: list[int] = []
    attempt, outcome, interrupt_after = 0, None, options.simulate_spot_interruption
    while True:
        attempt += 1
        # Every attempt runs under a new id and fresh rendezvous ports, as a restarted job gets.
        run_id, port = uuid.uuid4().hex, free_port()
        processes = prepared.host_processes(run_id, port)
        run_launches = prepared.launches(processes, port)
        census = RankCensus(processes, prepared.group_hosts, prepared.plan.spec.entry_point)

        def on_line(host: str, text: str) -> None:
            watchdog.activity()
            tracker.feed(host, text)
            observer.line(host, prepared.user_paths(text))
            mark = step_mark(text)
            if mark:
                steps.append(mark.step)
                observer.progress(mark.step, mark.total, dict(tracker.latest))

        def hung(run_id: str = run_id) -> bool:
            if not watchdog.stalled():
                return False
            observer.notice(f"no rank wrote a line for {watchdog.idle_seconds():.0f} s: reading every rank's stack")
            hangs.append(diagnose(run_id, layout.root, layout.logs_dir, watchdog.idle_seconds()))
            return True

        supervisor = Supervisor(run_launches, run_id, layout.logs_dir, on_line, on_notice=observer.notice,
                                mask=prepared.mask)
        if supervisor_hook:
            supervisor_hook(supervisor)
        assert prepared.report is not None
        if not prepared.report.stop_requested:
            prepared.report.transition("Training")
        elapsed = time.monotonic() - started
        smoke_left = None if options.smoke_seconds is None else max(options.smoke_seconds - elapsed, 0.0)
        watchdog.activity()
        with PipeFeeders(prepared.pipes):
            limits = Limits(prepared.job.max_run_seconds - elapsed, interrupt_after, options.stop_grace_seconds,
                            stop_after=smoke_left, stop_when=_smoke_steps_reached(options, census, steps))
            outcome = supervisor.run(limits, hung=hung,
                                     watch=census.observe if options.smoke_seconds is not None else None)
        if outcome.status == "interrupted" and interrupt_after is not None:
            observer.attempt(attempt + 1, f"simulated spot interruption after {interrupt_after:g} s: instances "
                                          "replaced, checkpoints restored, job restarted")
            prepared.report.transition("Interrupted")
            run_layout.replace_instances(layout)
            prepared.report.transition("Restarting")
            interrupt_after = None
            continue
        break
    run_layout.upload_checkpoints(layout)
    run_layout.keep_tensorboard(layout, prepared.job.tensorboard_local_path)
    smoke = None
    if options.smoke_seconds is not None:
        for item in outcome.exits:
            if item.returncode == 0:
                census.launcher_succeeded(item.host)
        smoke = _smoke_report(options, census, last_step(layout, steps), tracker,
                              killed_in_grace(outcome, processes) if outcome.status == "stopped" else [])
    return _finish(reporter, processes, outcome, _Effort(attempt, time.monotonic() - started),
                   hangs[-1] if hangs else None, smoke)


def _smoke_steps_reached(options: Options, census: RankCensus, steps: list[int]) -> Callable[[], bool] | None:
    """`--smoke-steps`: every rank has started and a progress line showed the step (the lines come in on
    reader threads; the census is the supervisor's, refreshed right before it asks)."""
    wanted = options.smoke_steps
    if wanted is None or options.smoke_seconds is None:
        return None
    return lambda: not census.missing() and max(steps, default=0) >= wanted


def _smoke_report(options: Options, census: RankCensus, step: tuple[int | None, str | None],
                  tracker: MetricRecorder, killed: list[str]) -> SmokeReport:
    losses = loss_metrics(list(tracker.latest))
    return SmokeReport(deadline_seconds=options.smoke_seconds, ranks_expected=census.expected,
                       ranks_started=census.started, missing=census.missing(), steps_reached=step[0],
                       step_source=step[1], last_loss=tracker.latest[losses[0]] if losses else None,
                       killed_after_deadline=killed, steps_wanted=options.smoke_steps)


def _finish(reporter: _Reporter, processes: list[HostProcess], outcome: Outcome, effort: _Effort,
            hang: HangReport | None = None, smoke: SmokeReport | None = None) -> LocalRun:
    """Each host's status file, the merged artifacts and result.json (always, also when writing an artifact
    fails), as a finished job reports."""
    prepared = reporter.prepared
    layout, job = prepared.layout, prepared.job
    status, exit_code, reason = {
        "completed": ("Completed", 0, None),
        "timeout": ("Stopped", 3, (f"MaxRuntimeExceeded: the job ran longer than max_run_seconds="
                                   f"{job.max_run_seconds}")),
        "stopped": ("Stopped", 3 if _stop_was_requested(prepared) else 0, None),
        "interrupted": ("Interrupted", 130, ("interrupted (SIGINT/SIGTERM forwarded to every process); checkpoints "
                                             f"are kept in {layout.root}")),
        "failed": ("Failed", 1, None),
        "hung": ("Hung", EXIT_HUNG, (f"{hang.summary() if hang else 'Hung'}; every rank's stack: "
                                     f"{layout.root / STACKS_FILE}")),
    }[outcome.status]
    failures = _host_failures(prepared, processes, outcome)
    run_layout.clear_host_tmp(layout)
    try:
        run_layout.write_status_files(layout, failures)
        unwritten = None
    except OSError as error:  # a full disk: result.json says so, in the room kept for it
        unwritten = (f"StatusFileError: writing each host's status file in {layout.root} failed: "
                     f"{'the disk is full (ENOSPC)' if error.errno == errno.ENOSPC else error.strerror or error}")
    if outcome.log_failure is not None:
        reason = outcome.log_failure
    elif outcome.status == "failed":
        reason = _failure_reason(prepared, processes, outcome, failures)
    if unwritten is not None:
        status, exit_code, reason = "Failed", 1, ((reason + "\n") if reason else "") + unwritten
    if smoke is not None and outcome.status == "stopped" and smoke.failure():
        status, exit_code, reason = "Failed", 1, smoke.failure()
    if outcome.leftover:
        reason = (reason or "") + f"\n{len(outcome.leftover)} process(es) could not be stopped: {outcome.leftover}"
    escaped = opt_ml.escaped(prepared.machine_opt_ml, opt_ml.snapshot())
    if escaped:
        status, exit_code = "Failed", 1
        reason = ((reason + "\n") if reason else "") + _escape_failure(escaped)
    model = output = None
    if prepared.report is not None:
        prepared.report.transition("Uploading")
    try:
        model, output = run_layout.merge_artifacts(layout)
    except OSError as error:
        status, exit_code = "Failed", 1
        reason = ((reason + "\n") if reason else "") + _artifact_failure(layout.root, error)
    return _result(reporter, _Ending(status, exit_code, reason, effort, model, output, smoke))


def _result(reporter: _Reporter, ending: _Ending) -> LocalRun:
    prepared, reason = reporter.prepared, ending.reason
    result = LocalRun(job_name=prepared.job.job_name, run_dir=prepared.layout.root, status=ending.status,
                      exit_code=ending.exit_code, world_size=prepared.world_size,
                      attempts=ending.effort.attempts, seconds=round(ending.effort.seconds, 2),
                      failure_reason=prepared.mask(reason) if reason else None,
                      final_metrics=dict(reporter.tracker.latest), model_artifact=ending.model,
                      output_artifact=ending.output, smoke=ending.smoke)
    try:
        run_layout.write_result(prepared.layout.root, asdict(result))
    except OSError as error:  # not even the room kept for it: the console says it in one line
        raise RunFailed(f"the run ended {result.status}"
                        f"{f' ({result.failure_reason.splitlines()[0]})' if result.failure_reason else ''}, but "
                        f"result.json could not be written in {prepared.layout.root}: {error.strerror or error}",
                        fix="free disk space; the logs are in the run directory") from None
    if prepared.report is not None:
        prepared.report.finish(*terminal_status(ending.status, result.failure_reason), result.failure_reason,
                               ending.model)
    return result


def _link_inputs_notice(namespaced: bool) -> str:
    """What --link-inputs means for the user's files: read-only where hosts have namespaces, else only relinked."""
    if namespaced:
        return ("--link-inputs: the local channels are your files, linked and mounted read-only in each host: the "
                "job reads them, and a write, delete or rename there fails (Read-only file system)")
    return ("--link-inputs: the local channels' files are your files, linked: what the job deletes, renames or "
            "creates stays in the run, but a write into an existing file changes yours (no mount namespace here to "
            "make them read-only)")


def _source_notices(prepared: PreparedRun) -> list[str]:
    """What the source dir needs said before the run: literal /opt/ml paths without namespaces, and its imports
    against the image's packages."""
    spec, source = prepared.plan.spec, prepared.plan.source
    found = opt_ml.fallback_notice(prepared.host_fs, source.directory, source.files)
    image = images.lookup(spec.framework_version) if spec.framework_version and not spec.image_uri else None
    if image is not None:
        found += image_notices(image.version, source.directory, source.files, prepared.python)
    return found


def _escape_failure(paths: list[str]) -> str:
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return (f"WrittenOutsideTheRun: the job wrote to this machine's own {OPT_ML} ({shown}), not the emulated "
            f"host's: on SageMaker that is the instance's {OPT_ML} (model.tar.gz here lacks it); write under "
            "SM_MODEL_DIR / SM_OUTPUT_DATA_DIR, or run where mount namespaces are allowed")


def _stop_was_requested(prepared: PreparedRun) -> bool:
    """Stopped by `smtrain stop` / `Job.stop()` (exit 3, as a stopped SageMaker job), not by --smoke's deadline."""
    return prepared.report is not None and prepared.report.stop_requested


def _artifact_failure(root: Path, error: OSError) -> str:
    if error.errno == errno.ENOSPC:
        return (f"UploadError: the disk is full (ENOSPC) while writing the model/output archives in {root}; "
                "nothing half-written was left")
    return f"UploadError: writing the model/output archives in {root} failed: {error.strerror or error}"


def _install_failed(reporter: _Reporter, failure: InstallFailed, seconds: float) -> LocalRun:
    """pip failed before the entry point: every host's toolkit reports it and the job fails."""
    prepared = reporter.prepared
    message = prepared.mask(toolkit_failure(failure.return_code, failure.command, failure.output.splitlines(),
                                            failure.error_class))
    run_layout.write_status_files(prepared.layout, {host.name: message for host in prepared.layout.hosts})
    last = pip_error(failure.output)
    for host in prepared.layout.hosts:
        with (prepared.layout.logs_dir / f"{host.name}.log").open("a", encoding="utf-8") as log:
            log.write(prepared.mask(f"{failure.command}\n{failure.output}\n{message}\n"))
    reason = f"every host: {failure.error_class}: pip could not install the source dir's requirements: {last}\n" \
             f"{message}"
    return _result(reporter, _Ending("Failed", 1, reason, _Effort(1, seconds)))


def _host_failures(prepared: PreparedRun, processes: list[HostProcess], outcome: Outcome) -> dict[str, str | None]:
    """What each host's toolkit writes: None (`success`) where its launcher exited 0, or where an MPI worker
    only served the master (the toolkit's workers always report success), else its own failure message."""
    codes = {item.host: item.returncode for item in outcome.exits}
    failures: dict[str, str | None] = {}
    for item in processes:
        code = codes.get(item.host.name, 0)
        if item.toolkit is None or code == 0:
            failures[item.host.name] = None
        else:
            command = prepared.mask(" ".join(item.toolkit.argv))
            tail = outcome.tails.get(item.host.name, [])
            failures[item.host.name] = prepared.mask(toolkit_failure(code, command, tail))
    return failures


def _failure_reason(prepared: PreparedRun, processes: list[HostProcess], outcome: Outcome,
                    failures: dict[str, str | None]) -> str:
    """The root cause first (`algo-2 (rank 1) failed: ValueError: ... at src/train.py:42`), then what the
    failing host reports: the failure file its script wrote, else the toolkit's message; paths of the hosts'
    code copies name the user's source dir instead."""
    cause = _root_cause(prepared, processes, outcome)
    launcher_host = outcome.first_failure.host if outcome.first_failure else cause.host
    report = (run_layout.script_failure_reason(prepared.layout, cause.host)
              or run_layout.script_failure_reason(prepared.layout, launcher_host)
              or failures.get(cause.host) or failures.get(launcher_host) or "")
    headline = cause.headline(prepared.user_location(cause.frames))
    return prepared.user_paths(f"{headline}\n{report[:FAILURE_REASON_LIMIT]}".strip())


def _root_cause(prepared: PreparedRun, processes: list[HostProcess], outcome: Outcome) -> RootCause:
    """Of every launcher that failed (the first one first), the first whose error is not a consequence of
    another's (a rank whose peer vanished reports a closed socket before the failing rank's launcher exits)."""
    first = outcome.first_failure
    assert first is not None
    failed = [first, *(item for item in outcome.exits if item.returncode != 0 and item.host != first.host)]
    causes = [_host_root_cause(prepared, processes, outcome, item) for item in failed]
    return next((cause for cause in causes if not cause.is_consequence), causes[0])


def _host_root_cause(prepared: PreparedRun, processes: list[HostProcess], outcome: Outcome,
                     failed: Exit) -> RootCause:
    launcher = next(item for item in processes if item.host.name == failed.host)
    runner = launcher.toolkit.runner if launcher.toolkit else RunnerType.process
    hosts = [host.name for host in prepared.layout.hosts]
    per_host = launcher.toolkit.processes_per_host if launcher.toolkit else 1
    return root_cause(failed.host, failed.returncode, outcome.tails.get(failed.host, []),
                      LauncherOutput(
                          mpi=runner in (RunnerType.mpi, RunnerType.smdataparallel),
                          torchrun=runner is RunnerType.torch_distributed,
                          host_rank=hosts.index(failed.host) if runner is RunnerType.process else None,
                          group_hosts=prepared.group_hosts, per_host=per_host))
