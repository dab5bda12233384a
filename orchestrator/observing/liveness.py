"""Slow is not hung: one rule, for a local run and a SageMaker job alike.

A job that writes no line and advances no step for the stall timeout is *silent*. Silence alone proves nothing:
a rank computing a long bf16 backward pass on a CPU, or a compiler building a JIT extension, is silent and busy.
So every place a job runs reports, per host, whether its work is still moving (locally: CPU time of the ranks
and of their children advances, or they read or write data; on SageMaker: the host's CPU or GPU utilization
metrics). The verdict:

- not silent for the stall timeout: moving;
- silent, and some host busy (or its activity cannot be read): slow; reported, never stopped;
- silent, and every host idle: hung; reported with where each rank waits, and stopped where asked.

A rank blocked in a collective for a peer that computes is slow (the peer is busy); for a peer that is dead or
itself blocked, hung.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

EXIT_HUNG = 4
"""The exit code of a run or a watch that ended because the job hung (`smtrain local`, `watch`, `submit --wait`)."""


class Verdict(enum.Enum):
    MOVING = "moving"
    SLOW = "slow"
    HUNG = "hung"


@dataclass(frozen=True)
class HostActivity:
    """What one host's work did over the last sampling window."""

    host: str
    busy: bool | None
    """True: its work advanced (CPU time, a child process, device utilization); False: idle; None: unknown."""
    detail: str = ""
    """Said to the user: `rank 0 at 97% CPU in Trainer._forward_backward`, `GPU 0% and CPU 1%`."""


def judge(silent_seconds: float, stall_timeout: float | None, activities: Sequence[HostActivity]) -> Verdict:
    """The verdict for a job silent for `silent_seconds`; `stall_timeout` None or 0 never stalls.

    Unknown activity counts as busy: a job is called hung only on evidence that nothing moves.
    """
    if not stall_timeout or silent_seconds < stall_timeout:
        return Verdict.MOVING
    if any(activity.busy is not False for activity in activities):
        return Verdict.SLOW
    return Verdict.HUNG


def busy_hosts(activities: Sequence[HostActivity]) -> list[HostActivity]:
    return [activity for activity in activities if activity.busy is not False]


def idle_hosts(activities: Sequence[HostActivity]) -> list[HostActivity]:
    return [activity for activity in activities if activity.busy is False]
