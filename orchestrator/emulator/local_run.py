"""`smtrain local`: runs a spec here as SageMaker would run it, every host emulated, no docker, no AWS.

Prepare from the plan (preparing/prepared_run.py: the request submit would send, written into per-host /opt/ml trees;
checked before anything starts), install requirements.txt / setup.py, launch, supervise, restart after a
simulated spot interruption, then report like a finished job: each host's status file, merged artifacts,
result.json, and a failure reason that leads with the failing rank's host, rank and exception.
"""

from __future__ import annotations

import contextlib
import errno
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import psutil

from orchestrator.contract import OPT_ML
from orchestrator.emulator.instances.container import ContainerJob
from orchestrator.emulator.instances.standin import local_gpu_count
from orchestrator.emulator.launching import build_cache, opt_ml
from orchestrator.emulator.launching.launch import (
    EXTENSIONS_VARIABLE,
    RANK_ENDS_DIR,
    HostProcess,
    free_port,
    torch1_torchrun_notice,
)
from orchestrator.emulator.launching.mpi_hooks import rank_ends
from orchestrator.emulator.launching.toolkit_launchers import RunnerType
from orchestrator.emulator.local_plan import local_plan
from orchestrator.emulator.preparing import layout as run_layout
from orchestrator.emulator.preparing.channels import PipeFeeders
from orchestrator.emulator.preparing.deviations import notices, setting_notices
from orchestrator.emulator.preparing.image_match import image_notices
from orchestrator.emulator.preparing.prepared_run import PreparedRun, prepare_run, run_dir_for
from orchestrator.emulator.preparing.usercode import InstallFailed, pip_error
from orchestrator.emulator.reporting.failures import FAILURE_REASON_LIMIT, quoted_hosts, toolkit_failure
from orchestrator.emulator.reporting import quiet_stop
from orchestrator.emulator.reporting.empty_model import empty_model_notice, failed_empty_model_notice
from orchestrator.emulator.reporting.smoke import (
    RankCensus,
    SmokeReport,
    checkpoint_entries,
    killed_in_grace,
    last_step,
    passing,
)
from orchestrator.emulator.run_options import Options
from orchestrator.emulator.supervising.compiling import CompileNotices
from orchestrator.emulator.supervising.interruption import interrupted_by, python_interrupts_forwarded
from orchestrator.emulator.supervising.stall import (
    STACKS_FILE,
    HangReport,
    StallCheck,
    StallWatchdog,
)
from orchestrator.emulator.supervising.status import StatusReport, StopWatch, now, terminal_status
from orchestrator.emulator.supervising.supervisor import FAILURE_TAIL_LINES, Limits, Outcome, Supervisor
from orchestrator.errors import Interrupted, RunFailed
from orchestrator.observing.cause_window import Tails, Window, not_found_in, read_back, screened
from orchestrator.observing.liveness import EXIT_HUNG
from orchestrator.observing.log_file_end import HostLogEnds
from orchestrator.observing.log_lines import LogLine
from orchestrator.observing.metric_series import (
    METRICS_FILE,
    STEP_FORMATS,
    MetricRecorder,
    loss_metrics,
    step_mark,
)
from orchestrator.observing.rank_lines import HostsRankLines
from orchestrator.observing.root_cause import (
    MPI,
    PROCESS,
    TORCHRUN,
    FailureCause,
    Launcher,
    install_cause,
    max_runtime_cause,
    may_hold_own_error,
    own_error,
    ranks_heard_from,
    read_cause,
)
from orchestrator.planning.plan import Plan
from orchestrator.planning.request import metric_definitions
from orchestrator.redact import redact
from orchestrator.specs import images
from orchestrator.specs.loader import LoadedSpec
from orchestrator.specs.words import FieldWords
from orchestrator.wording import counted

class Observer(Protocol):
    """What a run tells its caller as it goes; the CLI draws it (render.LocalConsole)."""

    def notice(self, text: str) -> None: ...

    def started(self, job_name: str, run_dir: Path, world_size: int, hosts: int) -> None: ...

    def line(self, host: str, text: str) -> None: ...

    def progress(self, step: int, total: int | None, metrics: dict[str, float]) -> None: ...

    def attempt(self, number: int, reason: str) -> None: ...


class QuietObserver:
    """The observer of the API and the tests: the logs are in the run directory."""

    def notice(self, text: str) -> None:
        pass

    def started(self, job_name: str, run_dir: Path, world_size: int, hosts: int) -> None:
        pass

    def line(self, host: str, text: str) -> None:
        pass

    def progress(self, step: int, total: int | None, metrics: dict[str, float]) -> None:
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
    SIGTERM) or Hung (no rank wrote a line for `stall_timeout_seconds` and every host's work was idle)."""
    exit_code: int
    world_size: int
    attempts: int
    seconds: float
    failure_reason: str | None = None
    final_metrics: dict[str, float] = field(default_factory=dict)
    model_artifact: Path | None = None
    output_artifact: Path | None = None
    smoke: SmokeReport | None = None
    failure_cause: dict[str, Any] | None = None
    """Where the failure started (observing/root_cause.py's FailureCause): host, rank, exception, location,
    category, fix; the same fields `smtrain status -o json` gives for a SageMaker job."""


@dataclass(frozen=True)
class _Reporter:
    """What every way a run ends reports from: the prepared run, the metrics it recorded and its status.json."""

    prepared: PreparedRun
    tracker: MetricRecorder
    report: StatusReport
    """status.json, the run's DescribeTrainingJob as it goes."""


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
    cause: FailureCause | None = None
    interrupted_by: str | None = None
    """The signal that interrupted smtrain (SIGINT, SIGTERM, SIGHUP), which status.json's message names."""


def run_local(loaded: LoadedSpec | Plan, options: Options = Options(), observer: Observer | None = None,
              supervisor_hook: Any = None) -> LocalRun:
    """Runs the job on this machine and returns how it ended; `status.json` in the run directory says how it
    goes meanwhile (SageMaker's statuses), and `status.request_stop(run_dir)` stops it from anywhere.

    Args:
        loaded: a spec, or a plan (`local_plan.local_plan`'s; one made for SageMaker is planned again for here).
        supervisor_hook: called with each attempt's Supervisor before it starts (the CLI uses it to forward
            SIGTERM and SIGHUP).

    Python's Ctrl-C (SIGINT: a notebook's interrupt too) while the job's processes run stops the job as `smtrain
    local`'s does (`interruption.python_interrupts_forwarded`): the ranks get SIGTERM and up to 10 s to checkpoint,
    a second one kills them at once, and the run returns as Interrupted.

    Raises:
        SpecError, CapabilityError, EnvironmentProblem: before anything starts (a missing input, mpirun or
            torch, a refusal of the toolkit, an unusable run directory).
        Interrupted: a KeyboardInterrupt ended the run before or after the job's processes ran (installing
            requirements, packing the artifacts); every process it started was ended first, and the one line says
            so and where the run's directory is.
    """
    observer = observer or QuietObserver()
    created = now()
    plan = local_plan(loaded, options)
    # The run reports its status from the moment it holds its directory (prepare_run), and every way it ends writes
    # the last one (Failed for an error).
    report = StatusReport(run_dir_for(options, plan.job_name), _described(plan), created,
                          processes_per_host=options.processes_per_host)
    prepared = prepare_run(plan, options, local_gpu_count(), report)
    layout = prepared.layout
    tracker = MetricRecorder(metric_definitions(plan.spec), layout.root / METRICS_FILE)
    reporter = _Reporter(prepared, tracker, report)
    started = time.monotonic()
    active: list[Any] = []

    def stop_requested() -> None:
        reporter.report.transition("Stopping")
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
        with python_interrupts_forwarded(lambda: active[-1] if active else None):
            for notice in _notices_before(prepared):
                observer.notice(notice)
            observer.started(prepared.job.job_name, layout.root, prepared.world_size, len(layout.hosts))
            with StopWatch(layout.root, stop_requested) as stop_watch:
                return _run(reporter, options, observer, hook, started)
    except KeyboardInterrupt as error:  # before the processes started (installing requirements), a notebook's
        by_signal = interrupted_by(error)
        with contextlib.suppress(OSError):
            _result(reporter, _Ending("Interrupted", 130, f"interrupted ({by_signal}) before the job's processes "
                                      "ended; nothing the run started is left running",
                                      _Effort(1, time.monotonic() - started), interrupted_by=by_signal))
        raise ended_interrupted(plan.job_name, layout.root, by_signal) from None
    except BaseException as error:  # a bug: the run directory still says so
        with contextlib.suppress(OSError):
            _result(reporter, _Ending("Failed", 1, f"smtrain stopped: {type(error).__name__}: {error}",
                                      _Effort(1, time.monotonic() - started)))
        raise
    finally:
        run_layout.release_directory(layout.root)  # the run has ended: another may use its directory


def ended_interrupted(job_name: str, run_dir: Path, by_signal: str) -> Interrupted:
    """The one line a run ended by an interruption raises to its Python caller (a notebook shows just that line)."""
    return Interrupted(f"interrupted ({by_signal}): run {job_name} ended Interrupted, and nothing it started is left "
                       f"running; its logs and checkpoints stay in {run_dir}", by_signal)


def _notices_before(prepared: PreparedRun) -> list[str]:
    """What a run says before its processes start: how this emulation differs from the job's instances, its inputs,
    its source dir, an old torchrun, memory that may not suffice."""
    plan = prepared.plan
    words = plan.loaded.field_words
    said = notices(prepared.hostname.unavailable_because, prepared.accelerators.notice,
                   prepared.host_fs.namespaced, words) + setting_notices(plan.create_training_job_request)
    said += [*prepared.input_notices, *_source_notices(prepared)]
    if plan.spec.distribution.mode.rules.launcher == "torchrun" and (
            torchrun := torch1_torchrun_notice(prepared.python)):
        said.append(torchrun)
    if memory := memory_notice(prepared.world_size, psutil.virtual_memory().available, words):
        said.append(memory)
    return said


RANK_MEMORY_GB = 1.4
"""What one rank is expected to hold here, for the warning before a run: an MLP rank of smtrain's own entrypoints
reached 1.39 GB in its first backward pass (the kernel's report when one was killed, 2026-11-24; the SMDDP
example's 16 ranks reach about 22 GB). A script of one's own may need more or less: the figure is said with it."""


def memory_notice(ranks: int, available_bytes: int, words: FieldWords) -> str | None:
    """The warning when `ranks` processes at RANK_MEMORY_GB each would need more than the memory available now;
    the ways to fewer ranks are named as the run's user gives them (`words`)."""
    expected = ranks * RANK_MEMORY_GB
    available = available_bytes / 1e9
    if expected <= available:
        return None
    return (f"memory: {ranks} ranks x about {RANK_MEMORY_GB:g} GB each (what a rank of smtrain's own entrypoints "
            f"reaches; yours may differ) = about {expected:.1f} GB, but this machine has {available:.1f} GB "
            "available now: the kernel's out-of-memory killer may end ranks (OutOfMemory); fewer ranks "
            f"({words.option(Options, 'processes_per_host')}, {words.changed('instance.count', 'N')}) or a smaller "
            "model fit")


def _described(plan: Plan) -> dict[str, Any]:
    """The request as DescribeTrainingJob echoes it (secrets masked); with instance preferences, the one this run
    uses as SelectedInstanceType/Count, as SageMaker reports its selection."""
    described = redact(plan.create_training_job_request)
    resources = described["ResourceConfig"]
    if "InstancePreferences" in resources:
        job = ContainerJob.from_request(plan.create_training_job_request)
        resources.update(SelectedInstanceType=job.instance_type, SelectedInstanceCount=job.instance_count)
    return described


def _run(reporter: _Reporter, options: Options, observer: Observer, supervisor_hook: Any,
         started: float) -> LocalRun:
    """Installs the user's code, then runs the attempts holding the hosts' build cache (build_cache.py)."""
    try:
        prepared = reporter.prepared.with_user_code_installed(observer.notice)
    except InstallFailed as failure:
        return _install_failed(reporter, options, failure, time.monotonic() - started)
    reporter = replace(reporter, prepared=prepared)
    if prepared.overlay is not None:
        observer.notice(f"requirements installed as the toolkit installs them, into {prepared.overlay.root}"
                        + (" (cached)" if not prepared.overlay.freshly_installed else ""))
        if prepared.overlay.replaced:
            observer.notice(f"the install changed packages this environment has, and the job sees its versions: "
                            f"{', '.join(prepared.overlay.replaced)} (pip did it for another requirement, as it would "
                            "in the image); what was built against the old version may now fail in the job (torch "
                            "built for numpy 1 with numpy 2: `Numpy is not available`); pin them in requirements.txt "
                            "to keep them")

    prepared.inductor_cache_dir.mkdir(parents=True, exist_ok=True)  # a namespace binds it: it must exist
    with build_cache.shared(prepared.extensions_dir) as removed:
        if removed:
            observer.notice(f"removed {counted(len(removed), 'build lock')} that a stopped JIT compile left in "
                            f"{prepared.extensions_dir} ({', '.join(lock.parent.name for lock in removed)}): no run "
                            "builds there now, and the next build starts afresh")
        return _attempts(reporter, options, observer, supervisor_hook, started)


def _attempts(reporter: _Reporter, options: Options, observer: Observer, supervisor_hook: Any,
              started: float) -> LocalRun:
    """Runs the attempts (a simulated spot interruption restarts the job), then reports."""
    prepared, tracker = reporter.prepared, reporter.tracker
    layout = prepared.layout
    watchdog = StallWatchdog(options.stall_timeout_seconds)
    defaults = prepared.plan.spec.metrics is None
    stalls: list[StallCheck] = []
    steps: list[int] = []
    attempt, outcome = 0, None
    interrupt_after, interrupt_at_step = options.simulate_spot_interruption, options.simulate_spot_interruption_at_step
    restored = checkpoint_entries(layout)
    while True:
        attempt += 1
        # Every attempt runs under a new id and fresh rendezvous ports, as a restarted job gets.
        run_id, port = uuid.uuid4().hex, free_port()
        processes = prepared.host_processes(run_id, port)
        run_launches = prepared.launches(processes, port)
        census = RankCensus(processes, prepared.group_hosts, prepared.plan.spec.entry_point)
        stopping_quietly = threading.Event()
        # The console shows each MPI rank's line whole; metrics and step marks read the lines as logged.
        console = HostsRankLines([launch.host for launch in run_launches], prepared.mask)

        def on_line(host: str, text: str) -> None:
            mark = step_mark(text)
            watchdog.activity(mark.step if mark else None)
            if tracker.feed(host, text) and defaults and tracker.claim_first_match():
                observer.notice(_metrics_recognized(tracker))
            if not stopping_quietly.is_set():
                for state in text.split("\n"):  # a progress bar's states, each a line of its own
                    for whole in console.line(host, state):
                        observer.line(host, prepared.user_paths(whole))
            if mark:
                steps.append(mark.step)
                observer.progress(mark.step, mark.total, dict(tracker.latest))

        def stopping(status: str) -> None:
            """smtrain's own stop of a job under torchrun or mpirun shows none of the job's lines from here
            (reporting/quiet_stop.py), but a smoke stopped at its deadline before it passed: it failed, and its
            lines say why. An interruption is written to status.json at once: smtrain may be killed before its end."""
            if status == "interrupted":
                reporter.report.interrupted(supervisor.interrupted_by or "SIGINT")
            if not _launchers_report_stops(processes):
                return
            smoke_passed = options.smoke_seconds is None or passing(census, max(steps, default=0),
                                                                     options.smoke_steps)
            if why := _quiet_stop_reason(status, reporter, supervisor.interrupted_by, smoke_passed):
                stopping_quietly.set()
                observer.notice(quiet_stop.quiet_stop_notice(why, layout.logs_dir))

        stall = StallCheck(run_id, layout, watchdog, observer.notice, prepared.mask,
                           CompileNotices(kept_for_next_run=EXTENSIONS_VARIABLE not in prepared.job.environment))
        stalls.append(stall)

        supervisor = Supervisor(run_launches, run_id, layout.logs_dir, on_line, on_notice=observer.notice,
                                mask=prepared.mask)
        if supervisor_hook:
            supervisor_hook(supervisor)
        if not reporter.report.stop_requested:
            reporter.report.transition("Training")
        elapsed = time.monotonic() - started
        smoke_left = None if options.smoke_seconds is None else max(options.smoke_seconds - elapsed, 0.0)
        watchdog.activity()
        with PipeFeeders(prepared.pipes):
            limits = Limits(prepared.job.max_run_seconds - elapsed, interrupt_after, options.stop_grace_seconds,
                            stop_after=smoke_left, stop_when=_smoke_steps_reached(options, census, steps),
                            interrupt_when=_step_reached(interrupt_at_step, steps), stopping=stopping)
            outcome = supervisor.run(limits, hung=stall,
                                     watch=census.observe if options.smoke_seconds is not None else None)
        if not stopping_quietly.is_set():
            with contextlib.suppress(OSError):  # the terminal is gone (SIGHUP)
                for host, unended in console.end():
                    observer.line(host, prepared.user_paths(unended))
        if outcome.status == "interrupted" and (interrupt_after is not None or interrupt_at_step is not None):
            when = f"after {interrupt_after:g} s" if interrupt_after is not None else f"at step {interrupt_at_step}"
            observer.attempt(attempt + 1, f"simulated spot interruption {when}: instances replaced, checkpoints "
                                          "restored, job restarted")
            reporter.report.transition("Interrupted")
            run_layout.keep_tensorboard(layout, prepared.job.tensorboard_local_path)  # before the instances go
            run_layout.replace_instances(layout)
            reporter.report.transition("Restarting")
            interrupt_after = interrupt_at_step = None
            continue
        break
    run_layout.upload_checkpoints(layout)
    run_layout.keep_tensorboard(layout, prepared.job.tensorboard_local_path)
    for unseen in _unseen_notices(tracker, options, outcome.status):
        observer.notice(unseen)
    if outcome.status == "completed" and (empty := empty_model_notice(layout, prepared.plan.source.files)):
        observer.notice(empty)
    if outcome.status == "failed" and (empty := failed_empty_model_notice(layout)):
        observer.notice(empty)
    if outcome.status == "completed" and (interrupt_after is not None or interrupt_at_step is not None):
        observer.notice(_never_interrupted(options, max(steps, default=None)))
    smoke = None
    if options.smoke_seconds is not None:
        for item in outcome.exits:
            if item.returncode == 0:
                census.launcher_succeeded(item.host)
        census.heard_from(_ranks_heard_from(prepared, processes, outcome))
        smoke = _smoke_report(options, census, last_step(layout, steps, restored), tracker,
                              killed_in_grace(outcome, processes) if outcome.status == "stopped" else [])
    return _finish(reporter, processes, outcome, _Effort(attempt, time.monotonic() - started),
                   stalls[-1].hang, smoke)


def _metrics_recognized(tracker: MetricRecorder) -> str:
    """Said once, when the default definitions first match: which metrics, from which line."""
    assert tracker.first_match is not None
    host, line = tracker.first_match
    return (f"metrics: the default metric definitions read {', '.join(tracker.latest)} from {host}'s line "
            f"{line.strip()[:120]!r}; `metrics:` in the spec sets your own")


def _unseen_notices(tracker: MetricRecorder, options: Options, status: str) -> list[str]:
    """What the job's lines never showed: a value any metric definition matched (said of a completed job only: one
    that failed or was stopped may have ended before its first metric line, and its failure is what matters), a
    step --smoke-steps can read (said unless the job failed: a script that died before its first step, an argparse
    error, a missing file, would be told to print a step line it may well print)."""
    found = []
    if tracker.first_match is None and tracker.definitions and status == "completed":
        found.append(f"metrics: none of the metric definitions ({', '.join(tracker.definitions)}) matched any line "
                     "of the job's output, so `smtrain metrics` and SageMaker's charts stay empty; add yours to the "
                     "spec, group 1 being the number, e.g.\n  metrics:\n    - name: train:loss\n      regex: "
                     "'my_loss=([-+0-9.eE]+)'")
    if options.smoke_steps is not None and not tracker.steps_seen and status != "failed":
        found.append(f"--smoke-steps {options.smoke_steps}: no line of the job showed a step; smtrain reads "
                     f"{', '.join(STEP_FORMATS)}: print one of them (rank 0 is enough)")
    return found


def _never_interrupted(options: Options, last_step: int | None) -> str:
    """Said when the job completed before the simulated spot interruption came: its resume was never tried, though
    the run passes."""
    if options.simulate_spot_interruption_at_step is None:
        return (f"--simulate-spot-interruption {options.simulate_spot_interruption:g}: the job completed sooner, so it "
                "was never interrupted and resuming from its checkpoints was not tried (1 attempt)")
    step = options.simulate_spot_interruption_at_step
    seen = (f"the last step a line showed was {last_step}" if last_step is not None else
            f"no line showed a step; smtrain reads {', '.join(STEP_FORMATS)}")
    return (f"--simulate-spot-interruption-at-step {step}: the job completed before a line showed step {step} "
            f"({seen}), so it was never interrupted and resuming from its checkpoints was not tried (1 attempt)")


def _launchers_report_stops(processes: list[HostProcess]) -> bool:
    """torchrun and mpirun report the workers a stop ended as failed (`ChildFailedError`, `prterun noticed`);
    a script a host runs itself (mode none) prints only its own words at a stop (`checkpoint saved`), which the
    console keeps showing."""
    return any(item.toolkit and item.toolkit.runner in _STOP_REPORTING_RUNNERS for item in processes)


_STOP_REPORTING_RUNNERS = frozenset({RunnerType.torch_distributed, RunnerType.mpi, RunnerType.smdataparallel})


def _quiet_stop_reason(status: str, reporter: _Reporter, interrupted_by: str | None,
                       smoke_passed: bool) -> str | None:
    """Which of smtrain's own stops this is (`Limits.stopping`'s status), for the console's note; None for a smoke
    stopped at its deadline before it passed (`smoke_passed` is True where no smoke runs)."""
    if status == "interrupted":
        return quiet_stop.interrupted(interrupted_by)
    if status == "timeout":
        return quiet_stop.max_run_seconds_reached(reporter.prepared.job.max_run_seconds)
    if reporter.report.stop_requested:
        return quiet_stop.STOPPED_BY_REQUEST
    return quiet_stop.SMOKE_PASSED if smoke_passed else None


def _smoke_steps_reached(options: Options, census: RankCensus, steps: list[int]) -> Callable[[], bool] | None:
    """`--smoke-steps`: every rank has started and a progress line showed the step (the lines come in on
    reader threads; the census is the supervisor's, refreshed right before it asks)."""
    wanted = options.smoke_steps
    if wanted is None or options.smoke_seconds is None:
        return None
    return lambda: passing(census, max(steps, default=0), wanted)


def _step_reached(step: int | None, steps: list[int]) -> Callable[[], bool] | None:
    """Whether a progress line has shown `step` yet (None: no step is waited for)."""
    if step is None:
        return None
    return lambda: max(steps, default=0) >= step


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
        # exit 3 when `smtrain stop` / `Job.stop()` asked (as for a stopped SageMaker job); 0 for --smoke's deadline
        "stopped": ("Stopped", 3 if reporter.report.stop_requested else 0, None),
        "interrupted": ("Interrupted", 130, f"interrupted ({outcome.interrupted_by} forwarded to every "
                        "training process as SIGTERM); " + (
            f"checkpoints are kept in {layout.root}" if layout.checkpoint_path else
            "no checkpoint is kept: the spec has no `checkpoint:`, so a rerun starts from the beginning, as SageMaker "
            "restarts such a job; add checkpoint: {s3_uri: s3://BUCKET/checkpoints/JOB/} and save to "
            "/opt/ml/checkpoints to resume")),
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
    cause = None
    if outcome.status == "timeout":
        cause = max_runtime_cause(job.max_run_seconds, failure_cause(prepared, processes, outcome))
        if cause.category != "max_runtime":  # a rank's error, which the others waited on until the limit
            reason = prepared.user_paths(cause.text())
    if outcome.status == "hung" and hang is not None:
        cause = hang.cause(layout.root / STACKS_FILE)
    if outcome.log_failure is not None:
        reason = outcome.log_failure
    elif outcome.status == "failed":
        reason, cause = _failure_reason(prepared, processes, outcome, failures)
    if unwritten is not None:
        status, exit_code, reason = "Failed", 1, ((reason + "\n") if reason else "") + unwritten
    if smoke is not None and outcome.status == "stopped" and smoke.failure():
        status, exit_code, reason, cause = "Failed", 1, smoke.failure(), None
    if outcome.leftover:
        reason = (reason or "") + f"\n{len(outcome.leftover)} process(es) could not be stopped: {outcome.leftover}"
    escaped = opt_ml.escaped(prepared.machine_opt_ml, opt_ml.snapshot())
    if escaped:
        status, exit_code = "Failed", 1
        reason = ((reason + "\n") if reason else "") + _escape_failure(escaped)
    model = output = None
    reporter.report.transition("Uploading")
    try:
        model, output = run_layout.merge_artifacts(layout)
    except OSError as error:
        status, exit_code = "Failed", 1
        reason = ((reason + "\n") if reason else "") + _artifact_failure(layout.root, error)
    return _result(reporter, _Ending(status, exit_code, reason, effort, model, output, smoke, cause,
                                     outcome.interrupted_by))


def _result(reporter: _Reporter, ending: _Ending) -> LocalRun:
    prepared, reason = reporter.prepared, ending.reason
    result = LocalRun(job_name=prepared.job.job_name, run_dir=prepared.layout.root, status=ending.status,
                      exit_code=ending.exit_code, world_size=prepared.world_size,
                      attempts=ending.effort.attempts, seconds=round(ending.effort.seconds, 2),
                      failure_reason=prepared.mask(reason) if reason else None,
                      final_metrics=dict(reporter.tracker.latest), model_artifact=ending.model,
                      output_artifact=ending.output, smoke=ending.smoke,
                      failure_cause=_masked_cause(prepared, ending.cause))
    try:
        run_layout.write_result(prepared.layout.root, asdict(result))
    except OSError as error:  # not even the room kept for it: the console says it in one line
        raise RunFailed(f"the run ended {result.status}"
                        f"{f' ({result.failure_reason.splitlines()[0]})' if result.failure_reason else ''}, but "
                        f"result.json could not be written in {prepared.layout.root}: {error.strerror or error}",
                        fix="free disk space; the logs are in the run directory") from None
    status, secondary, message = terminal_status(ending.status, result.failure_reason, result.failure_cause,
                                                 ending.interrupted_by)
    reporter.report.finish(status, secondary, result.failure_reason, ending.model, message=message)
    return result


def _masked_cause(prepared: PreparedRun, cause: FailureCause | None) -> dict[str, Any] | None:
    if cause is None:
        return None
    document = {key: prepared.mask(value) if isinstance(value, str) else value for key, value in cause.to_dict().items()}
    return {**document, "detail": [prepared.mask(line) for line in cause.detail]}


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


def _artifact_failure(root: Path, error: OSError) -> str:
    if error.errno == errno.ENOSPC:
        return (f"UploadError: the disk is full (ENOSPC) while writing the model/output archives in {root}; "
                "nothing half-written was left")
    return f"UploadError: writing the model/output archives in {root} failed: {error.strerror or error}"


def _install_failed(reporter: _Reporter, options: Options, failure: InstallFailed, seconds: float) -> LocalRun:
    """pip failed before the entry point: every host's toolkit reports it and the job fails. The install ran once
    for all hosts (one overlay), so the cause names no host: `the job (pip install) failed: ...`, where SageMaker,
    whose every host runs pip, names the first that failed. The reason leads with pip's decisive line, the line of
    requirements.txt it failed on and the fix, as a rank's failure leads with its cause's text; a smoke reports
    its ranks as never started."""
    prepared = reporter.prepared
    message = prepared.mask(toolkit_failure(failure.return_code, failure.command, failure.output.splitlines(),
                                            failure.error_class))
    run_layout.write_status_files(prepared.layout, {host.name: message for host in prepared.layout.hosts})
    last = pip_error(failure.output)
    for host in prepared.layout.hosts:
        with (prepared.layout.logs_dir / f"{host.name}.log").open("a", encoding="utf-8") as log:
            log.write(prepared.mask(f"{failure.command}\n{failure.output}\n{message}\n"))
    cause = install_cause(failure.error_class, failure.output.splitlines(), prepared.source_paths)
    at = f" at {cause.location}" if cause.location else ""
    reason = f"every host: {failure.error_class}: pip could not install the source dir's requirements: {last}{at}\n" \
             f"fix: {cause.fix}\n{message}"
    smoke = None if options.smoke_seconds is None else SmokeReport.never_started(
        options.smoke_seconds, prepared.world_size, prepared.group_hosts, options.smoke_steps)
    return _result(reporter, _Ending("Failed", 1, reason, _Effort(1, seconds), smoke=smoke, cause=cause))


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
                    failures: dict[str, str | None]) -> tuple[str, FailureCause | None]:
    """The root cause first (`algo-2 (rank 1) failed: ValueError: ... at src/train.py:42`, argparse's usage, the
    fix), then what the failing host reports: the failure file its script wrote, else the toolkit's message;
    paths of the hosts' code copies name the user's source dir instead. The toolkit's message is the cause's
    host's, or the first failed host's where smtrain stopped the cause's host after that one failed (its message
    would describe smtrain's SIGTERM)."""
    cause = failure_cause(prepared, processes, outcome)
    first = outcome.first_failure.host if outcome.first_failure else None
    hosts = [host for host in (cause.host if cause else None, first) if host]
    toolkit_hosts = quoted_hosts(cause.host if cause else None, first,
                                 {item.host: item.returncode for item in outcome.exits})

    def script_wrote(host: str) -> str | None:  # the failure file, unless it is the toolkit's message we wrote
        text = run_layout.script_failure_reason(prepared.layout, host)
        return text if text and text != (failures.get(host) or "")[:FAILURE_REASON_LIMIT] else None

    report = (next((text for host in hosts if (text := script_wrote(host))), None)
              or next((failures[host] for host in toolkit_hosts if failures.get(host)), ""))
    headline = cause.text() if cause else ""
    return prepared.user_paths(f"{headline}\n{report[:FAILURE_REASON_LIMIT]}".strip()), cause


def _launcher(prepared: PreparedRun, processes: list[HostProcess]) -> Launcher:
    """Who printed the run's lines, for the shared reader: the script itself, torchrun, or mpirun."""
    runner = next((item.toolkit.runner for item in processes if item.toolkit), RunnerType.process)
    per_host = next((item.toolkit.processes_per_host for item in processes if item.toolkit), 1)
    kind = {RunnerType.mpi: MPI, RunnerType.smdataparallel: MPI, RunnerType.torch_distributed: TORCHRUN}.get(
        runner, PROCESS)
    if kind == MPI:
        return Launcher(kind, tuple(prepared.group_hosts), per_host)
    return Launcher(kind, tuple(host.name for host in prepared.layout.hosts), per_host)


def _rank_exits(prepared: PreparedRun, launcher: Launcher) -> dict[tuple[str, int], int]:
    """How each rank of this attempt ended, as the MPI hooks recorded it (none under another launcher)."""
    return rank_ends(str(prepared.layout.root / RANK_ENDS_DIR)) if launcher.kind == MPI else {}


def _ranks_heard_from(prepared: PreparedRun, processes: list[HostProcess], outcome: Outcome) -> set[int]:
    """The ranks the hosts' last lines and the ranks' recorded exits show ran: a smoke's ranks that ended before
    the census saw their processes."""
    launcher = _launcher(prepared, processes)
    return ranks_heard_from(outcome.tails, launcher, exit_codes={item.host: item.returncode for item in outcome.exits},
                            rank_exits=_rank_exits(prepared, launcher))


def failure_cause(prepared: PreparedRun, processes: list[HostProcess], outcome: Outcome) -> FailureCause | None:
    """The shared reader (observing/root_cause.py) on every host's output, with each launcher's exit code: the
    supervisor's last lines of each host, and where they hold no error of a rank's own, the host logs further
    back (observing/cause_window.py), so that what a run printed after its error never hides it."""
    launcher = _launcher(prepared, processes)
    spec = prepared.plan.spec
    recorded = _rank_exits(prepared, launcher)

    def cause_of(tails: Tails) -> FailureCause | None:
        return read_cause({host: [line.message for line in lines] for host, lines in tails.items()}, launcher,
                          exit_codes={item.host: item.returncode for item in outcome.exits}, rank_exits=recorded,
                          source=prepared.source_paths,
                          framework_version=spec.framework_version if not spec.image_uri else None)

    kept = Window({host: [LogLine(host, 0, line) for line in lines] for host, lines in outcome.tails.items()},
                  more_before=any(len(lines) >= FAILURE_TAIL_LINES for lines in outcome.tails.values()))
    last: list[Any] = [None, None]
    """The window read last and its cause: the one the search stops at is not read twice."""

    def own_error_in(tails: Tails) -> bool:
        last[:] = [tails, cause_of(tails)]
        return own_error(last[1])

    reading = read_back(HostLogEnds(prepared.layout.logs_dir), kept, FAILURE_TAIL_LINES,
                        screened(own_error_in, may_hold_own_error))
    cause = last[1] if last[0] is reading.window.tails else cause_of(reading.window.tails)
    if cause is not None and not reading.found and reading.window.bound:
        return not_found_in(cause, reading.window.bound)
    return cause
