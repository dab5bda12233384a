"""The local backend: the emulator behind the same interface as SageMaker.

`schedule` starts `run_local` on the plan in a thread of this process and returns the run directory, the job's
id; everything else reads the run directory, so a run started elsewhere (`smtrain local` in a terminal) is
answered for the same way: `status.json` (its DescribeTrainingJob), `logs/algo-N.log`, `metrics.jsonl`,
`result.json`, and `stop-requested` to stop it (`emulator/supervising/status.py`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from datetime import datetime
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from orchestrator.backends.base import MetricSeries, StatusReport, check_host, follow_lines
from orchestrator.backends.runs import RUNS_ROOT, listed_runs, looked_in
from orchestrator.emulator.local_plan import local_plan
from orchestrator.emulator.gpu_standin.smtrain_gpu_standin.notice import NOTICE as STANDIN_NOTICE
from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.emulator.local_run import QuietObserver, run_local
from orchestrator.emulator.instances.standin import TURN_OFF
from orchestrator.emulator.preparing.layout import TENSORBOARD_DIR, read_result
from orchestrator.emulator.preparing.prepared_run import check_run_input
from orchestrator.emulator.run_options import Options, switch_keywords
from orchestrator.emulator.supervising.status import STATUS_FILE, TERMINAL, read_status, request_stop
from orchestrator.errors import DamagedRun, SmtrainError, in_keywords
from orchestrator.observing.job_status import LOCAL_REGION, JobNotFound, JobStatus, JobSummary
from orchestrator.observing.log_file_end import HostLogEnds, start_of_last_lines
from orchestrator.observing.log_lines import LogLine, character_boundary, host_order
from orchestrator.observing.metric_series import METRICS_FILE, read_points_counted, refuse_unknown_metrics
from orchestrator.observing.plain_text import plain
from orchestrator.observing.progress import FAILURE_TAIL_LINES, JobProgress, job_progress, read_back_progress
from orchestrator.observing.rank_lines import MaskedRankLines
from orchestrator.redact import mask_text
from orchestrator.observing.root_cause import HUNG, FailureCause, SourcePaths
from orchestrator.planning.plan import Plan
from orchestrator.specs.loader import LoadedSpec
from orchestrator.wording import counted

logger = logging.getLogger("orchestrator")
STANDIN_NOTICE_START = STANDIN_NOTICE.split(":", 1)[0]
FUNCTION_JOB_SWITCHES = (" A function job's run() passes its keywords to the function and takes no run options "
                         "(gpu_standin, exact_autocast), so it runs on the stand-in wherever this machine has fewer GPUs "
                         "per host than the instance: for real CUDA, run it on a machine with as many GPUs, or with "
                         "backend=\"sagemaker\"; a CPU instance_type in @orchestrator.remote(...) needs no stand-in.")


class LocalBackend:
    """Runs planned jobs on this machine, every host emulated; answers for any run directory."""

    name = "local"
    poll_seconds = 1.0

    def __init__(self, options: Options = Options(), runs_root: Path = RUNS_ROOT) -> None:
        """`options`: how runs started here run (run directory, processes per host, stall timeout, ...);
        `runs_root`: the folder whose runs `list_jobs` lists (or a run directory itself: that run)."""
        self.options = options
        self.runs_root = runs_root
        self._starting: dict[str, _Start] = {}

    def plan(self, spec: LoadedSpec | Plan) -> Plan:
        return local_plan(spec, self.options)

    def schedule(self, plan: Plan) -> str:
        """Starts the run in a thread and returns its run directory; a mistake in what the user gave (a missing
        input, a bad host order) is raised here, before anything starts.

        Raises:
            SpecError: `prepared_run.check_run_input`'s; the run's other problems come from its `describe`.
        """
        plan = self.plan(plan)
        run_dir = plan.target.output_path.removeprefix("file://").rstrip("/")
        options = dataclasses.replace(self.options, run_dir=Path(run_dir))
        check_run_input(plan, options)
        start = _Start(threading.Thread(target=self._run, args=(plan, options, run_dir), name=f"smtrain-{run_dir}"),
                       Path(run_dir), plan.job_name)
        self._starting[run_dir] = start
        start.thread.start()
        return run_dir

    def _run(self, plan: Plan, options: Options, run_dir: str) -> None:
        start = self._starting[run_dir]
        try:
            observer = _KeptNotices(start.notices, function_job=plan.loaded.field_words.keywords_of is not None)
            run_local(plan, options, observer, supervisor_hook=start.stop_if_asked_early)
        except BaseException as error:  # kept for the caller's next status(): a spec or machine problem
            start.error = error

    def describe(self, job_id: str) -> JobStatus:
        """The run's status.json read as SageMaker's DescribeTrainingJob.

        Raises:
            the error that stopped a run started here before it began (SpecError, EnvironmentProblem, ...);
            JobNotFound: no run in that directory.
        """
        start = self._starting.get(job_id)
        alive = start is not None and start.thread.is_alive()  # before reading: an error is set before it ends
        described = read_status(Path(job_id))
        if start is not None and described is not None and described.get("TrainingJobName") != start.job_name:
            if not alive and start.error is None:  # a later run into the same directory cleared this one
                raise JobNotFound(f"{job_id} now holds the later run {described.get('TrainingJobName')}, started "
                                  f"into the same directory: this job's run, {start.job_name}, was cleared",
                                  fix=f"orchestrator.attach({job_id!r}) follows the run there now; give each run "
                                      "a run_dir of its own (the default, runs/<job name>, is new for every run)")
            described = None  # another run's: an earlier one this run is about to clear, or one it could not clear
        if start is not None and start.error is not None and (
                described is None or described["TrainingJobStatus"] not in TERMINAL):
            raise start.error  # it stopped the run before the run could report it
        if described is None and alive:  # planned, preparing the hosts: status.json comes next
            return JobStatus(name=start.job_name, region=LOCAL_REGION, status="InProgress",
                             secondary_status="Starting", transitions=(), instance_type=None, instance_count=None,
                             billable_seconds=None, failure_reason=None, model_artifact=None, created=None,
                             ended=None)
        if described is None:
            raise JobNotFound(f"{job_id} holds no local run status (status.json)",
                              fix="give the run directory of a `smtrain local` run, or a SageMaker job name")
        try:
            current = JobStatus.from_description(described, LOCAL_REGION)
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            raise DamagedRun(f"{Path(job_id) / STATUS_FILE} is damaged ({type(error).__name__}: {error}): the "
                             "run's status cannot be read") from None
        # A local run bills nothing: no cost so far.
        return dataclasses.replace(current, cost=None)

    def status_report(self, job_id: str, stall_timeout: float | None) -> StatusReport:
        """The run's status.json read as DescribeTrainingJob, progress from its logs; a run judges its own stalls."""
        current = self.describe(job_id)
        progress = self.progress(job_id)
        return StatusReport(current, progress, place=[("run dir", job_id)],
                            fields={"backend": self.name, "run_dir": job_id})

    def progress(self, job_id: str, tail_lines: int = 200) -> JobProgress:
        """From each host's last `tail_lines` lines, as SageMaker's from CloudWatch; a failed run's cause is the one
        it wrote itself (every launcher's exit code and its whole tail), with its failing rank's own lines under it,
        read back as far as they lie (`progress.read_back_progress`, as a SageMaker job's).

        A local line's time is its log's time of last write, which a copy of the run (`cp -r`) makes the copy's:
        no line of an ended run is later than its end in status.json, so the progress time is at most that."""
        run_dir = Path(job_id)
        described = read_status(run_dir) or {}
        ended = described.get("TrainingEndTime")
        last_ms = int(ended.timestamp() * 1000) if ended else None
        copies = [str(path) for path in sorted(run_dir.glob("algo-*/code"))]
        source = SourcePaths((*copies, SourcePaths().copies[0]))
        stored = self.failure_cause(job_id)
        if described.get("TrainingJobStatus") == "Failed" and (stored is None or stored.category != HUNG):
            return read_back_progress(described, HostLogEnds(run_dir / "logs", last_ms), tail_lines, source, stored)
        tails: dict[str, list[LogLine]] = {}
        for line in self.logs(job_id, tail=tail_lines):
            if last_ms is not None and line.timestamp_ms > last_ms:
                line = dataclasses.replace(line, timestamp_ms=last_ms)
            tails.setdefault(line.host, []).append(line)
        progress = job_progress(described, tails, source, stored)
        if stored is not None and stored.category == HUNG:  # the host of the rank the others wait for
            host = stored.host if stored.host in tails else None
            return dataclasses.replace(progress, failing_host=host, failing_rank=None,
                                       failing_lines=tuple(tails[host][-FAILURE_TAIL_LINES:]) if host else ())
        return progress

    def liveness(self, job_id: str, stall_timeout: float, now: datetime) -> None:
        """None: a local run's own stall timeout judges it (`emulator/supervising/stall.py`)."""
        return None

    def list_jobs(self, status: str | None, name_contains: str | None, max_results: int) -> list[JobSummary]:
        """The runs under `runs_root` (runs/ unless told), newest first; a run whose status cannot be read is a Damaged row of its own
        (saying why), not an error of the whole list; a run that never started (no status) is left out."""
        rows = []
        for run_dir in listed_runs(self.runs_root):
            try:
                current = self.describe(str(run_dir))
            except DamagedRun as damage:
                row = JobSummary(run_dir.name, "Damaged", None, None, None, self.name, str(run_dir), damage.message)
            except SmtrainError:
                continue
            else:
                row = JobSummary(current.name, current.status, current.secondary_status, current.created,
                                 current.ended, self.name, str(run_dir))
            if (status is None or row.status == status) and (not name_contains or name_contains in row.name):
                rows.append(row)
        return rows[:max_results]

    def listed_from(self) -> str:
        return looked_in(self.runs_root, "runs")

    def log_reader(self, job_id: str) -> _RunLogs:
        return _RunLogs(Path(job_id), lambda: self.describe(job_id).is_terminal, None, None)

    def logs(self, job_id: str, *, follow: bool = False, host: str | None = None, tail: int | None = None,
             poll_seconds: float = 10.0) -> Iterator[LogLine]:
        """Each host's log, host after host (local logs carry no time per line; each line has its log's time
        of last write). With `follow`, new lines as they come, until the run has ended. Lines are read a block at
        a time and handed on as they are read: a log of gigabytes is never held whole. A host the run does not have
        is refused before any line is read."""

        def ended() -> bool:  # asked by the loop and by the reader (whose last unfinished line waits for the end)
            return not follow or self.describe(job_id).is_terminal

        if host is not None:
            check_host(self.describe(job_id), host)
        yield from follow_lines(_RunLogs(Path(job_id), ended, host, tail), ended, host, tail, poll_seconds)

    def metric_series(self, job_id: str, names: list[str] | None = None,
                      period_seconds: int | None = None) -> MetricSeries:
        """The points the run recorded (`metrics.jsonl`), by the job's metric definitions as SageMaker's."""
        run_dir = Path(job_id)
        path = run_dir / METRICS_FILE
        notes = []
        if path.is_file():
            points, skipped = read_points_counted(path)
            if skipped:
                notes.append(f"skipped {counted(skipped, 'line')} of {path} that are not metric points")
        elif (run_dir / RUN_MARKER_FILE).is_file():  # a run that has recorded no point yet
            points = []
        else:
            raise SmtrainError(f"{run_dir} has no {METRICS_FILE}: it is not a run directory of `smtrain local`",
                               fix="give the run directory of a local run (default runs/<job-name>/), or a "
                                   "SageMaker job name")
        tensorboard = run_dir / TENSORBOARD_DIR
        if tensorboard.is_dir():  # what the job's TensorBoard output config would have uploaded
            notes.append(f"TensorBoard event files: {tensorboard} (tensorboard --logdir {tensorboard})")
        described = read_status(run_dir) or {}
        if "AlgorithmSpecification" in described:  # the run's definitions are known once it has said its status
            refuse_unknown_metrics(names, _defined_metrics(described), points, job_id)
        kept = [point for point in points if point.metric in names] if names else points
        if kept:
            return MetricSeries(kept, f"local run {job_id}", notes)
        return MetricSeries(kept, f"local run {job_id}", notes, empty=_why_no_points(described))

    def stop(self, job_id: str) -> tuple[bool, JobStatus]:
        """Writes the run's stop request; the run (in whatever process) stops as StopTrainingJob does. A run
        started here that is still preparing its hosts (no status of its own yet) is asked as its processes start."""
        current = self.describe(job_id)
        if current.status != "InProgress":
            return False, current
        start = self._starting.get(job_id)
        if start is not None and current.transitions == ():  # the made-up Starting status: nothing written yet
            start.stop_asked = True
        else:
            request_stop(Path(job_id))
        return True, current

    def submission(self, job_id: str) -> None:
        return None

    def notices(self, job_id: str) -> list[str]:
        """The CPU stand-in's notice of a run started by this backend (one started elsewhere printed its own)."""
        start = self._starting.get(job_id)
        return list(start.notices) if start else []

    def artifacts(self, job_id: str) -> dict[str, str]:
        result = read_result(Path(job_id)) or {}
        return {key: str(result[field]) for key, field in (("model", "model_artifact"), ("output", "output_artifact"))
                if result.get(field)}

    def output_files(self, job_id: str, folder: str) -> dict[str, bytes]:
        return {path.name: path.read_bytes() for path in sorted(Path(job_id).glob(f"algo-*/output/data/{folder}/*"))
                if path.is_file() and not path.is_symlink()}

    def phase_advice(self, job_id: str, any_lines: bool | None) -> None:
        return None

    def failure_cause(self, job_id: str) -> FailureCause | None:
        """The cause the run wrote into result.json when it ended."""
        stored = (read_result(Path(job_id)) or {}).get("failure_cause")
        return FailureCause.from_dict(stored) if stored else None


@dataclasses.dataclass
class _Start:
    thread: threading.Thread
    run_dir: Path
    job_name: str
    error: BaseException | None = None
    notices: list[str] = dataclasses.field(default_factory=list)
    stop_asked: bool = False
    """`stop()` came before the run wrote its status (preparing its hosts): there was no run to stop yet."""

    def stop_if_asked_early(self, supervisor: object) -> None:
        """Run's supervisor hook: a stop asked for while the run prepared is asked now, as `smtrain stop` asks
        (its status goes Stopping, then Stopped, exit 3)."""
        if self.stop_asked:
            request_stop(self.run_dir)


class _KeptNotices(QuietObserver):
    """The observer of a run started through the API (a notebook): the CPU stand-in's notice is kept for the
    job's summary and logged as a warning, so that `device cuda:0` in the job's output is not taken for a GPU;
    the other notices (the emulator's deviations, said by `smtrain local`) are logged at INFO. They name
    `orchestrator.run`'s keywords, not `smtrain local`'s flags; for a function job (whose `run()` passes its
    keywords to the function and takes none) the stand-in's notice says what to do instead of naming one."""

    def __init__(self, kept: list[str], function_job: bool = False) -> None:
        self._kept = kept
        self._function_job = function_job
        self._switches = switch_keywords()

    def notice(self, text: str) -> None:
        text = in_keywords(text, self._switches)
        if text.startswith(STANDIN_NOTICE_START):
            if self._function_job:  # the keyword it names is not one that run() takes
                text = text.replace(in_keywords(TURN_OFF, self._switches), FUNCTION_JOB_SWITCHES)
            self._kept.append(text)
            logger.warning("%s", text)
        else:
            logger.info("%s", text)


def _defined_metrics(described: dict[str, Any]) -> list[str]:
    return [item.get("Name") for item in (described.get("AlgorithmSpecification") or {}).get("MetricDefinitions") or []]


def _why_no_points(described: dict[str, Any]) -> str:
    """Why a local run has no point: none of its lines matched yet, or, once it has ended, none ever did (the lines
    are all there: no later publication will bring one)."""
    if described.get("TrainingJobStatus") not in TERMINAL:
        return "no line of the run has matched its metric definitions yet"
    return (f"no line of the run matched its metric definitions ({', '.join(_defined_metrics(described)) or 'none'}); "
            "`metrics:` in the job spec sets your own, group 1 of each regex being the number, e.g. "
            "{name: train:loss, regex: 'my_loss=([-+0-9.eE]+)'}")


class _RunLogs:
    """Every host's log of a run, read on from where the last read ended (the unfinished last line of each only
    once the run has ended); a host whose log appears later is read from its start."""

    def __init__(self, run_dir: Path, ended: Callable[[], bool], host: str | None, tail: int | None) -> None:
        """`host`: only this host's log is opened; `tail`: the first read starts at each log's last `tail` lines."""
        self._run_dir = run_dir
        self._ended = ended
        self._host = host
        self._tail = tail
        self._files: dict[str, _LogFile] = {}
        self._first = True

    def read_new(self) -> Iterator[LogLine]:
        """The new lines, host after host, as they are read (a block at a time)."""
        final = self._ended()
        for path in sorted((self._run_dir / "logs").glob("algo-*.log"), key=lambda item: host_order(item.stem)):
            if path.stem not in self._files and self._host in (None, path.stem):
                self._files[path.stem] = _LogFile(path)
                if self._first and self._tail is not None:
                    self._files[path.stem].skip_to_last(self._tail)
        self._first = False
        for reader in list(self._files.values()):
            yield from reader.read_new(final=final)


class _LogFile:
    """Reads the complete lines a host's log gained since the last read (the last, unfinished one at the end),
    without empty lines, which CloudWatch does not hold either (an event has at least one character), each MPI
    rank's line whole (`rank_lines`: a rank's pieces are held until its line ends, or the run does)."""

    _BLOCK = 64 * 1024
    _MOST_BYTES_PER_LINE = 64 * 1024
    """The longest line handed on whole (longer ones come in pieces, as the supervisor showed them), and how far
    back `skip_to_last` reads per line wanted: a log of huge lines is not read whole either."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._offset = 0
        self._ranks = MaskedRankLines(mask_text)

    def skip_to_last(self, lines: int) -> None:
        """Starts reading at the last `lines` non-empty lines (what `read_new` gives, as CloudWatch holds them),
        found from the end backwards: `status` of a run with a log of gigabytes reads a few blocks of it."""
        with self._path.open("rb") as log:
            self._offset, _ = start_of_last_lines(log, lines, lines * self._MOST_BYTES_PER_LINE)

    def read_new(self, final: bool) -> Iterator[LogLine]:
        """The lines added since the last read, a block at a time: memory holds one block and one line, whatever
        the log's size. A line longer than `_MOST_BYTES_PER_LINE` comes in pieces of that size, as the console
        showed it while the run printed it; the last, unfinished line only when `final`."""
        stamp = int(self._path.stat().st_mtime * 1000)
        with self._path.open("rb") as log:
            log.seek(self._offset)
            pending = b""
            while block := log.read(self._BLOCK):
                pending += block
                start = 0
                while True:
                    newline = pending.find(b"\n", start, start + self._MOST_BYTES_PER_LINE + 1)
                    if newline >= 0:
                        end, after = newline, newline + 1
                    elif len(pending) - start > self._MOST_BYTES_PER_LINE:
                        end = after = character_boundary(pending, start + self._MOST_BYTES_PER_LINE)
                    else:
                        break
                    yield from self._lines(pending[start:end], stamp)
                    self._offset += after - start
                    start = after
                pending = pending[start:]
            if final and pending:
                yield from self._lines(pending, stamp)
                self._offset += len(pending)
            if final:
                yield from (LogLine(self._path.stem, stamp, line) for line in self._ranks.end() if line)

    def _lines(self, data: bytes, stamp: int) -> Iterator[LogLine]:
        """The lines as plain text (`plain_text`), as CloudWatch's are shown: the supervisor wrote them so, but a
        run of an earlier smtrain (or a log written by hand) may hold terminal controls. A line rejoined from a
        rank's pieces is masked again as a whole (MaskedRankLines)."""
        text = plain(data.decode("utf-8", errors="replace"))
        return (LogLine(self._path.stem, stamp, whole)
                for line in text.split("\n") if line for whole in self._ranks.line(line) if whole)
