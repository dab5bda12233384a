"""What the ranks of a function job kept (orchestrator/function_jobs/runner.py writes one file per rank), read back.

A rank that raised kept its exception and its traceback: the first such rank's exception is raised again by the
job's handle, as `concurrent.futures` does for a worker process, with the remote traceback as its cause, so a
notebook shows the function's own line, and with the rank and host said in the message's notes. A rank that
exited (`sys.exit(3)`) or was interrupted is a JobFailed instead: raised again in the caller, SystemExit would end
the notebook's kernel or the script that waited, without a traceback.
"""

from __future__ import annotations

import contextlib
import pickle
import re
from typing import Any

from orchestrator.errors import JobFailed
from orchestrator.observing.root_cause import SourcePaths

RESULTS_FOLDER = "smtrain-remote"
"""The folder of SM_OUTPUT_DATA_DIR the runner writes to: the same name on both sides (tests/contract)."""
_RANK_FILE = re.compile(r"rank-(\d+)\.pkl")
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)', re.MULTILINE)


class RemoteTraceback(Exception):
    """The traceback the function raised on its rank, as text (tracebacks do not travel as objects)."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0])


def outcomes(files: dict[str, bytes]) -> list[dict[str, Any]]:
    """Every rank's kept outcome, in rank order, its value or exception rebuilt here."""
    import cloudpickle  # noqa: F401  (its reconstructors unpickle what a by-value function returned)

    ranked = sorted((int(match.group(1)), data) for name, data in files.items()
                    if (match := _RANK_FILE.fullmatch(name)))
    return [_rebuilt(pickle.loads(data)) for _, data in ranked]


def _rebuilt(kept: dict[str, Any]) -> dict[str, Any]:
    """A rank's outcome with its `value` or `error` unpickled. One that cannot be rebuilt here (an exception
    class whose __init__ wants other arguments, a class from a package this machine lacks, a CUDA tensor without
    CUDA) was the unpickler's traceback from deep in smtrain, with the function's own error lost: an exception
    becomes a RuntimeError of its type and message, its remote traceback kept; a value is said, with why."""
    outcome = {key: value for key, value in kept.items() if key != "pickled"}
    if "pickled" not in kept:  # the rank could not pickle its value: `unpicklable` says so
        return outcome
    try:
        outcome["error" if kept["raised"] else "value"] = pickle.loads(kept["pickled"])
    except Exception as error:  # noqa: BLE001 (whatever unpickling raises, the outcome cannot be rebuilt here)
        why = f"{type(error).__name__}: {error}"
        if kept["raised"]:
            outcome["error"] = RuntimeError(f"{kept['described']} (its exception cannot be rebuilt here: {why})")
        else:
            outcome["unpicklable"] = f"rank {kept['rank']} returned a {kept['described']} that cannot be read " \
                                     f"here: {why}"
    return outcome


def first_error(kept: list[dict[str, Any]], final: Any, job_name: str, source: SourcePaths) -> BaseException | None:
    """What `Job.results` raises, None when every rank returned: the lowest failing rank's own exception, with the
    remote traceback as its cause, the rank and host in its notes, and shown by IPython as that traceback alone
    (`_shown_as_raised`); JobFailed when the job did not end with every rank's value. The traceback names the
    user's own files (`source`), not the job's copies of them."""
    for outcome in kept:
        if "error" in outcome:
            error = outcome["error"]
            where = f"raised on rank {outcome['rank']} ({outcome['host']}) of job {job_name}"
            if hasattr(error, "add_note"):
                error.add_note(where)
            remote_traceback = source.in_traceback(outcome["traceback"])
            if not isinstance(error, Exception):  # SystemExit, KeyboardInterrupt: they mean the caller's end
                error = _exited(error, outcome, job_name, remote_traceback)
            else:
                _shown_as_raised(error, remote_traceback, where)
            error.__cause__ = RemoteTraceback(f"{where}:\n{remote_traceback}")
            return error
        if "unpicklable" in outcome:
            return JobFailed(outcome["unpicklable"], fix="return something pickle can carry (numbers, lists, "
                                                         "dicts, tensors moved to the CPU); a value of a package's "
                                                         "class needs that package here too")
    if final.status != "Completed" or not kept:
        reason = final.failure_reason or f"it ended {final.status}"
        return JobFailed(f"job {job_name} returned no value: {reason}",
                         fix="see its logs: `smtrain logs` with the job's name or run directory")
    return None


def _exited(error: BaseException, outcome: dict[str, Any], job_name: str, remote_traceback: str) -> JobFailed:
    """The JobFailed that stands for a rank's SystemExit or KeyboardInterrupt: its exit status (`sys.exit("text")`
    exits 1 after printing the text) or the exception's name, the rank and host, and the innermost frame of its
    traceback, the line that exited."""
    if isinstance(error, SystemExit):
        status = int(error.code) if isinstance(error.code, int) else 1
        how = f"exited with status {status}" + (f" (sys.exit({error.code!r}))" if status != error.code else "")
    else:
        how = f"ended with {type(error).__name__}"
    frames = _FRAME.findall(remote_traceback)
    at = f" at {frames[-1][0]}:{frames[-1][1]}" if frames else ""
    return JobFailed(f"job {job_name} failed: its function {how} on rank {outcome['rank']} ({outcome['host']}){at}",
                     fix="a function job hands back what the function returns or raises: return a value, or raise "
                         "an exception (the caller gets it), instead of exiting; `job.failure_cause()` and the job's "
                         "logs (`smtrain logs` with its name or run directory) say what the rank printed")


def _shown_as_raised(error: BaseException, remote_traceback: str, where: str) -> None:
    """Lets IPython show `error` as its rank printed it (the function's own frames, the exception, where it was
    raised) instead of the remote traceback and then smtrain's frames that handed it back; `%debug` and
    `error.__traceback__` keep those. An exception that takes no attributes is shown as Python shows it."""
    with contextlib.suppress(AttributeError):
        error._render_traceback_ = lambda: [*remote_traceback.rstrip("\n").splitlines(), where]
