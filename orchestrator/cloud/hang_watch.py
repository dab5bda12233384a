"""How a SageMaker job is followed and stopped when it hangs (`watch`, `submit --wait --stall-timeout`): the
options and the outcome of `orchestrator.Job.follow`, the one follow loop.

A job blocked in a collective for a dead peer logs nothing and never fails: it bills every instance until
MaxRuntimeInSeconds. While the job trains, each look asks `cloud.job_liveness` for the verdict: moving, slow
(silent, but some host's CPU or GPU works: reported, never stopped) or hung (silent and every host idle: stopped
with StopTrainingJob unless told not to). Status and new log lines are read every `poll_seconds`; liveness at
most every `liveness_seconds` (60 s: SageMaker publishes utilization once a minute, so reading it more often
tells nothing new and costs GetMetricData calls).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from orchestrator.cloud.job_liveness import JobLiveness
from orchestrator.declaration import declared, options_from
from orchestrator.observing.job_status import JobStatus

DEFAULT_STALL_TIMEOUT_SECONDS = 1800.0
"""30 minutes: a hang costs at most that much idle time, and phases without a line (a large checkpoint written,
an evaluation that prints only at its end) get room; their busy CPUs or GPUs keep them slow, not hung, anyway."""
LIVENESS_POLL_SECONDS = 60.0


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class WatchOptions:
    """How to watch: the stall timeout (None or 0: never judge), whether a hung job is stopped, how often to look.

    Declared once (orchestrator/declaration.py): `smtrain watch`'s and `submit --wait`'s flags are generated from
    the declared fields, and `Job.follow` reads them. `clock` and `sleep` are the wall clock and the pause between
    polls; tests pass a fake pair."""

    stall_timeout: float | None = declared(
        DEFAULT_STALL_TIMEOUT_SECONDS, takes="number", minimum=0, metavar="SECONDS", show_default=True,
        normalize=lambda seconds: seconds or None, word=lambda seconds: format(seconds or 0, "g"),
        help="A job whose hosts wrote no line and advanced no metric for this long is hung when every host's CPUs "
             "and GPUs are idle (SageMaker's utilization metrics): followed (watch, submit --wait), it is stopped "
             "with the reason and each host's last lines, exit 4; `status` only says so. Busy devices make it slow: "
             "reported, never stopped. 0: never judged.")
    stop: bool = declared(
        True, takes="flag", flag="--no-stop",
        help="Report a hung job (exit 4) but leave it running: no StopTrainingJob.")
    poll_seconds: float = declared(
        15.0, takes="number", minimum=0, show_default=True,
        help="Pause between status and log reads while following.")
    liveness_seconds: float = LIVENESS_POLL_SECONDS
    clock: Callable[[], datetime] = field(default=_utc_now)
    sleep: Callable[[float], None] = field(default=time.sleep)


def refuse_unless_watch_option(keyword: str, value: Any, owner: str) -> None:
    """A keyword of `owner` (`Job.wait`, `Tuning.wait`: the API) that is one of these options, `poll_seconds` or
    `stall_timeout`, checked as their declaration has the CLI's flags check them (a number, 0 or more): a negative
    pause otherwise failed inside time.sleep with a traceback.

    Raises:
        SpecError: the value is not what the option takes, naming the keyword.
    """
    options_from(WatchOptions, {keyword: value}, owner)


@dataclass(frozen=True)
class WatchOutcome:
    """How watching ended: the job's last status, the hung verdict if that ended it, and whether it was stopped."""

    status: JobStatus
    hang: JobLiveness | None = None
    stop_requested: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            "final_status": self.status.to_dict(),
            "verdict": self.hang.verdict.value if self.hang else None,
            "reason": self.hang.reason() if self.hang else None,
            "stop_requested": self.stop_requested,
            "liveness": self.hang.to_dict() if self.hang else None,
        }
