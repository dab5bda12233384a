"""What the ranks of a function job kept (orchestrator/function_jobs/runner.py writes one file per rank), read back.

A rank that raised kept its exception and its traceback: the first such rank's exception is raised again here,
as `concurrent.futures` does for a worker process, with the remote traceback as its cause, so a notebook shows
the function's own line, and with the rank and host said in the message's notes.
"""

from __future__ import annotations

import pickle
import re
from typing import Any

from orchestrator.errors import JobFailed

RESULTS_FOLDER = "smtrain-remote"
"""The folder of SM_OUTPUT_DATA_DIR the runner writes to: the same name on both sides (tests/contract)."""
_RANK_FILE = re.compile(r"rank-(\d+)\.pkl")


class RemoteTraceback(Exception):
    """The traceback the function raised on its rank, as text (tracebacks do not travel as objects)."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0])


def outcomes(files: dict[str, bytes]) -> list[dict[str, Any]]:
    """Every rank's kept outcome, in rank order."""
    import cloudpickle  # noqa: F401  (its reconstructors unpickle what a by-value function returned)

    ranked = sorted((int(match.group(1)), data) for name, data in files.items()
                    if (match := _RANK_FILE.fullmatch(name)))
    return [pickle.loads(data) for _, data in ranked]


def raise_first_error(kept: list[dict[str, Any]], final: Any, job_name: str) -> None:
    """Raises the lowest failing rank's exception; JobFailed when the job did not end with every rank's value."""
    for outcome in kept:
        if "error" in outcome:
            error = outcome["error"]
            where = f"raised on rank {outcome['rank']} ({outcome['host']}) of job {job_name}"
            if hasattr(error, "add_note"):
                error.add_note(where)
            error.__cause__ = RemoteTraceback(f"{where}:\n{outcome['traceback']}")
            raise error
        if "unpicklable" in outcome:
            raise JobFailed(outcome["unpicklable"], fix="return something pickle can carry (numbers, lists, "
                                                        "dicts, tensors moved to the CPU)")
    if final.status != "Completed" or not kept:
        reason = final.failure_reason or f"it ended {final.status}"
        raise JobFailed(f"job {job_name} returned no value: {reason}",
                        fix="see its logs: `smtrain logs` with the job's name or run directory")
