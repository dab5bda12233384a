"""Following a SageMaker job and stopping it when it hangs: `watch` and `submit --wait --stall-timeout`.

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

from orchestrator.cloud.jobs import Job, JobStatus
from orchestrator.cloud.job_liveness import JobLiveness, is_judged
from orchestrator.observing.liveness import Verdict
from orchestrator.observing.log_lines import LogLine

DEFAULT_STALL_TIMEOUT_SECONDS = 1800.0
"""30 minutes: a hang costs at most that much idle time, and phases without a line (a large checkpoint written,
an evaluation that prints only at its end) get room; their busy CPUs or GPUs keep them slow, not hung, anyway."""
LIVENESS_POLL_SECONDS = 60.0


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class WatchOptions:
    """How to watch: the stall timeout (None or 0: never judge), whether a hung job is stopped, how often to look.

    `clock` and `sleep` are the wall clock and the pause between polls; tests pass a fake pair."""

    stall_timeout: float | None = DEFAULT_STALL_TIMEOUT_SECONDS
    stop: bool = True
    poll_seconds: float = 15.0
    liveness_seconds: float = LIVENESS_POLL_SECONDS
    clock: Callable[[], datetime] = field(default=_utc_now)
    sleep: Callable[[float], None] = field(default=time.sleep)


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


def watch(
    job: Job,
    options: WatchOptions,
    on_status: Callable[[JobStatus], None] | None = None,
    on_log: Callable[[LogLine], None] | None = None,
    on_verdict: Callable[[JobLiveness], None] | None = None,
) -> WatchOutcome:
    """Follows the job until it ends, or until it is judged hung (then stops it, unless `options.stop` is False).

    Args:
        on_status: called whenever the status or secondary status changes.
        on_log: when given, called with every host's new log lines after each poll.
        on_verdict: called whenever the verdict changes (slow, hung, moving again); the first `moving` is not.
    """
    reader = job.log_reader() if on_log else None
    seen: tuple[str, str | None] | None = None
    reported = Verdict.MOVING
    judged_at: datetime | None = None
    while True:
        current = job.status()
        if on_status and (current.status, current.secondary_status) != seen:
            seen = (current.status, current.secondary_status)
            on_status(current)
        if reader and on_log:
            for line in reader.read_new():
                on_log(line)
        if current.is_terminal:
            return WatchOutcome(current)
        now = options.clock()
        due = judged_at is None or (now - judged_at).total_seconds() >= options.liveness_seconds
        if options.stall_timeout and is_judged(current.status, current.secondary_status) and due:
            judged_at = now
            liveness = job.liveness(options.stall_timeout, now=now, refresh_status=False)
            if liveness.verdict is not reported:
                reported = liveness.verdict
                if on_verdict:
                    on_verdict(liveness)
            if liveness.verdict is Verdict.HUNG:
                requested = job.stop() if options.stop else False
                return WatchOutcome(job.last_status or current, liveness, requested)
        options.sleep(options.poll_seconds)
