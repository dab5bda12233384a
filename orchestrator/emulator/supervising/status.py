"""A local run's status as SageMaker reports a job's: a DescribeTrainingJob response, written as the run goes.

The run directory's `status.json` holds the members of DescribeTrainingJob a person or a script acts on
(TrainingJobStatus, SecondaryStatus and its transitions, times, FailureReason, ModelArtifacts, ResourceConfig,
the metric definitions, hyperparameters and environment with secrets masked), so one status vocabulary and one
reader (`observing.job_status.JobStatus.from_description`) serve both executors. A local run goes

    InProgress: Starting -> Downloading -> Training [-> Interrupted -> Restarting -> Training] -> Uploading
    then Completed, Failed, or Stopped (Stopped, MaxRuntimeExceeded, Interrupted: Ctrl-C or SIGTERM)

and `Stopping` in between when someone asks it to stop. Another process asks by writing `stop-requested`
(`request_stop`: `smtrain stop RUN_DIR`, `Job.stop()`); the run, which watches for it, stops as
StopTrainingJob does. It also records its process, so a reader can tell a run that died without a word (killed)
from one still going.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil

from orchestrator.emulator.instances import run_files
from orchestrator.errors import DamagedRun, SpecError
from orchestrator.observing.sagemaker_text import shown_training_job

STATUS_FILE = "status.json"
STOP_FILE = "stop-requested"
TERMINAL = ("Completed", "Failed", "Stopped")
STOP_POLL_SECONDS = 0.25
_MESSAGES = {
    "Starting": "Preparing the instances for training: the plan, this machine's checks",
    "Downloading": "Downloading input data: every host's /opt/ml tree, channels and code",
    "Training": "Training in progress",
    "Interrupted": "The job was interrupted (simulated spot interruption)",
    "Restarting": "Instances replaced, checkpoints restored, restarting training",
    "Stopping": "Stopping the training job (stop requested)",
    "Uploading": "Uploading generated training model and output",
    # the ends, as SageMaker words them (the status word alone read `Completed: Completed` in `smtrain watch`)
    "Completed": "Training job completed",
    "Failed": "Training job failed",
    "Stopped": "Training job stopped",
    "MaxRuntimeExceeded": "Training job runtime exceeded MaxRuntimeInSeconds provided",
}
_DESCRIBED_TIMES = ("CreationTime", "TrainingStartTime", "TrainingEndTime", "LastModifiedTime")


def now() -> datetime:
    return datetime.now(timezone.utc)


class StatusReport:
    """Writes `status.json` of one run: each transition as it happens, the end once."""

    def __init__(self, root: Path, request: dict[str, Any], created: datetime,
                 processes_per_host: int | None = None) -> None:
        """`request`: the CreateTrainingJob request the run emulates, secrets already masked.
        `processes_per_host`: `--processes-per-host`, where given: the request still names the instance's count,
        and a run killed before it wrote its cause has its ranks read from the logs by this one."""
        self._path = root / STATUS_FILE
        self._lock = threading.Lock()
        self.stop_requested = False
        algorithm = request.get("AlgorithmSpecification", {})
        self._described: dict[str, Any] = {
            "TrainingJobName": request["TrainingJobName"],
            "TrainingJobStatus": "InProgress",
            "SecondaryStatus": "Starting",
            "SecondaryStatusTransitions": [],
            "ResourceConfig": request.get("ResourceConfig", {}),
            "AlgorithmSpecification": {"MetricDefinitions": algorithm.get("MetricDefinitions", [])},
            "HyperParameters": request.get("HyperParameters", {}),
            "Environment": request.get("Environment", {}),
            "StoppingCondition": request.get("StoppingCondition", {}),
            "CreationTime": created,
            "LocalRun": {"run_dir": str(root), "pid": os.getpid(), "process_started": _process_started()},
        }
        if processes_per_host is not None:
            self._described["LocalRun"]["processes_per_host"] = processes_per_host

    def preparing(self) -> None:
        """The run holds its directory now: Starting since it was created (planned, this machine checked), then
        Downloading while its hosts' /opt/ml trees are written. From here on status.json says how the run goes."""
        self.transition("Starting", self._described["CreationTime"])
        self.transition("Downloading")

    def transition(self, secondary: str, started: datetime | None = None, status: str = "InProgress",
                   message: str | None = None) -> None:
        """Ends the current secondary status and begins `secondary` (at `started`, default now), with
        `message` as its StatusMessage (default: SageMaker's words for it)."""
        with self._lock:
            self._begin(secondary, started or now(), status, message)
            self._write()

    def _begin(self, secondary: str, moment: datetime, status: str, message: str | None) -> None:
        """The transition, in memory only: the caller holds the lock and writes."""
        self.stop_requested = self.stop_requested or secondary == "Stopping"
        transitions = self._described["SecondaryStatusTransitions"]
        if transitions and transitions[-1].get("EndTime") is None:
            transitions[-1]["EndTime"] = moment
        transitions.append({"Status": secondary, "StartTime": moment,
                            "StatusMessage": message or _MESSAGES.get(secondary, secondary)})
        if secondary == "Training" and "TrainingStartTime" not in self._described:
            self._described["TrainingStartTime"] = moment
        self._described.update(TrainingJobStatus=status, SecondaryStatus=secondary, LastModifiedTime=moment)

    def interrupted(self, signal_name: str) -> None:
        """A signal to smtrain (Ctrl-C, a CI runner's SIGTERM) is stopping the job: said at once, not only at the
        end, since a runner kills smtrain about 10 s later, while the ranks still have their grace to checkpoint,
        and the run then read as a run killed for no known reason."""
        with self._lock:
            self._described["LocalRun"]["interrupted_by"] = signal_name
        self.transition("Stopping", message=f"smtrain was interrupted ({signal_name}): stopping every process of "
                                            "the job")

    def finish(self, status: str, secondary: str, failure_reason: str | None, model_artifact: Path | None,
               message: str | None = None) -> None:
        """The terminal status, as SageMaker ends a job: the last transition (with `message`, where given),
        end time, reason, model, written at once: a reader never sees the terminal status without its reason."""
        with self._lock:
            ended = now()
            self._begin(secondary, ended, status, message)
            self._described["SecondaryStatusTransitions"][-1]["EndTime"] = ended
            self._described["TrainingEndTime"] = ended
            if failure_reason:
                self._described["FailureReason"] = failure_reason
            if model_artifact is not None:
                self._described["ModelArtifacts"] = {"S3ModelArtifacts": model_artifact.as_uri()}
            self._write()

    def _write(self) -> None:
        """Written as the run goes; a write a full disk refuses leaves the last one, and the final one comes after
        the room kept for it is freed (layout.write_result)."""
        temporary = self._path.with_suffix(".tmp")
        try:
            run_files.write_text(temporary, json.dumps(self._described, default=_encode, indent=1) + "\n")
            temporary.replace(self._path)
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
            temporary.unlink(missing_ok=True)


def terminal_status(local_status: str, failure_reason: str | None, failure_cause: Mapping[str, Any] | None = None,
                    interrupted_by: str | None = None) -> tuple[str, str, str | None]:
    """A finished local run's status (LocalRun.status) as SageMaker's (TrainingJobStatus, SecondaryStatus),
    and the last transition's StatusMessage where SageMaker's words for the secondary status do not say it.

    Hung has no word in SageMaker's API: it is Failed, Failed there, and the last transition's StatusMessage
    (the cause's headline: `Hung: rank 1 (algo-2) is not in a collective, ...`), the FailureReason and
    result.json's failure_cause say Hung and which rank the others wait for. A run that smtrain's signal ended
    (Ctrl-C, a CI runner's SIGTERM, a closed terminal) is Stopped, Interrupted, as a spot interruption SageMaker
    gives up on, and its message names the signal (`interrupted_by`), as the console's summary does: the words
    of a simulated spot interruption (the run goes on after it) would send its reader after a spot setting."""
    if local_status == "Stopped" and (failure_reason or "").startswith("MaxRuntimeExceeded"):
        return "Stopped", "MaxRuntimeExceeded", None
    if local_status == "Interrupted":
        named = f" ({interrupted_by})" if interrupted_by else ""
        return "Stopped", "Interrupted", f"smtrain was interrupted{named} and stopped every process of the job"
    if local_status == "Hung":
        headline = (failure_cause or {}).get("headline")
        return "Failed", "Failed", headline or "Hung: stopped by smtrain's stall check"
    return local_status, local_status, None


_MAX_STATUS_BYTES = 4 * 1024 * 1024
_DAMAGED_FIX = ("its logs/ and result.json may still say how it went; start the run again to rewrite it, or delete "
                "the run directory")


def _parsed(text: str) -> dict[str, Any]:
    """status.json as StatusReport writes it, times as datetimes. Raises ValueError (or TypeError, ...) where it
    is not: not JSON, not an object, no status or name, a time that is not one."""
    described = json.loads(text)
    if not isinstance(described, dict):
        raise ValueError(f"a JSON {type(described).__name__}, not an object")
    for key in ("TrainingJobName", "TrainingJobStatus"):
        if not isinstance(described.get(key), str):
            raise ValueError(f"no {key}")
    for key in _DESCRIBED_TIMES:
        if described.get(key):
            described[key] = datetime.fromisoformat(described[key])
    transitions = described.get("SecondaryStatusTransitions", [])
    if not isinstance(transitions, list):
        raise ValueError("SecondaryStatusTransitions is not a list")
    for item in transitions:
        for key in ("StartTime", "EndTime"):
            if item.get(key):
                item[key] = datetime.fromisoformat(item[key])
    if not isinstance(described.get("LocalRun", {}), dict):
        raise ValueError("LocalRun is not an object")
    return described


def read_status(run_dir: Path) -> dict[str, Any] | None:
    """The run's DescribeTrainingJob document (times as datetimes, free text shown as the cloud's is:
    observing/sagemaker_text.py); None before the run has written one.

    A run whose process has gone while it still said InProgress or Stopping (killed, the machine restarted)
    reads as Failed, saying so, rather than running forever.

    Raises:
        DamagedRun: the file is there but is no status smtrain wrote (not JSON, not an object, fields missing).
    """
    path = run_dir / STATUS_FILE
    try:
        if path.stat().st_size > _MAX_STATUS_BYTES:
            raise DamagedRun(f"{path} is damaged: {path.stat().st_size} bytes, where smtrain writes a few KiB",
                             fix=_DAMAGED_FIX)
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise DamagedRun(f"{path} cannot be read: {getattr(error, 'strerror', None) or error}",
                         fix=_DAMAGED_FIX) from None
    try:
        described = _parsed(text)
    except (ValueError, TypeError, AttributeError, KeyError) as error:
        raise DamagedRun(f"{path} is damaged ({error}): the run's status cannot be read", fix=_DAMAGED_FIX) from None
    if described["TrainingJobStatus"] not in TERMINAL and not _alive(described.get("LocalRun", {})):
        described.update(_ended_without_a_result(described.get("LocalRun", {})))
    return shown_training_job(described)


def _ended_without_a_result(local: dict[str, Any]) -> dict[str, str]:
    """The status of a run whose smtrain is gone before it wrote its end: Stopped where an interruption was
    stopping it (a CI runner's cancel or time limit: a signal, then SIGKILL before the ranks' grace was over;
    GitHub Actions sends SIGINT, SIGTERM 7.5 s later, SIGKILL 2.5 s after that, docs/ci.md), else Failed."""
    pid, signal_name = local.get("pid"), local.get("interrupted_by")
    if signal_name:
        return {"TrainingJobStatus": "Stopped", "SecondaryStatus": "Interrupted",
                "FailureReason": f"smtrain was interrupted ({signal_name}) and its process (pid {pid}) was killed "
                                 "while it stopped the job, before it wrote the run's result (a CI runner kills a "
                                 "cancelled or timed-out job's processes seconds after its first signal: GitHub "
                                 "Actions 10 s after its SIGINT)"}
    return {"TrainingJobStatus": "Failed", "SecondaryStatus": "Failed",
            "FailureReason": f"the smtrain process of this run (pid {pid}) ended without a result: it was killed, "
                             "or the machine restarted"}


def request_stop(run_dir: Path) -> None:
    """Asks the run to stop (StopTrainingJob): it sees the file within a moment, wherever it runs."""
    try:
        run_files.write_text(run_dir / STOP_FILE, f"requested by pid {os.getpid()} at {now().isoformat()}\n")
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise SpecError(f"{run_dir / STOP_FILE} is a link smtrain did not make: the stop request is not written "
                        "through it", fix="remove the link, then stop the run again") from None


class StopWatch:
    """Calls `on_stop` once when someone asks the run to stop (`request_stop`), from a thread of its own."""

    def __init__(self, run_dir: Path, on_stop: Callable[[], None]) -> None:
        self._file = run_dir / STOP_FILE
        self._on_stop = on_stop
        self._done = threading.Event()
        self.requested = False
        self._thread = threading.Thread(target=self._watch, name="smtrain-stop-watch", daemon=True)

    def __enter__(self) -> StopWatch:
        """A stop asked for before the watch began (while the hosts were prepared) is acted on here, before the
        job's processes start, not at the first look a moment later, which a short job may never see."""
        if not self._stopped():
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()

    def _watch(self) -> None:
        while not self._done.wait(STOP_POLL_SECONDS):
            if self._stopped():
                return

    def _stopped(self) -> bool:
        if not self._file.exists():
            return False
        self.requested = True
        self._on_stop()
        return True


def _alive(local: dict[str, Any]) -> bool:
    try:
        process = psutil.Process(local["pid"])
        return abs(process.create_time() - local["process_started"]) < 1.0
    except (KeyError, TypeError, psutil.Error):
        return False


def _process_started() -> float:
    return psutil.Process().create_time()


def _encode(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")
