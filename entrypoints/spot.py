"""Stopping on SIGTERM (spot interruption, StopTrainingJob) at a step boundary that every rank agrees on.

Ranks receive the signal at slightly different moments. If each stopped on its own, one would wait forever in a
gradient all-reduce that the others never join, so the ranks compare their flags with an all-reduce and stop
together. Comparing at every step would cost a collective per step (about 25% of a small CPU step measured on
a 2-core machine), so they compare about every `CHECK_SECONDS`: at each comparison they also share the time the
last steps took (the maximum over ranks) and derive the same next comparison step from it. SageMaker allows
120 s between SIGTERM and SIGKILL; torchrun's agent allows its workers 30 s.
"""

from __future__ import annotations

import signal
import time
from types import FrameType

import torch
import torch.distributed as dist

CHECK_SECONDS = 0.5
MAX_STEPS_BETWEEN_CHECKS = 1000


class StopAgreement:
    """Turns SIGTERM into a flag and decides, identically on every rank, at which step to act on it."""

    def __init__(self, group: dist.ProcessGroup | None, first_step: int) -> None:
        """Installs the SIGTERM handler; `first_step` is where this run starts (non-zero after a resume)."""
        self.requested = False
        self._group = group
        self._last_check_step = first_step
        self._last_check_time = time.monotonic()
        self._next_check_step = first_step + 1
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True

    def should_stop(self, step: int) -> bool:
        """True on every rank, at the same step, once any rank has received SIGTERM. Call at every step boundary."""
        if step < self._next_check_step:
            return False
        now = time.monotonic()
        seconds_per_step = (now - self._last_check_time) / (step - self._last_check_step)
        votes = torch.tensor([float(self.requested), seconds_per_step], dtype=torch.float64)
        dist.all_reduce(votes, op=dist.ReduceOp.MAX, group=self._group)
        steps_until_next = int(CHECK_SECONDS / max(votes[1].item(), 1e-9))
        self._next_check_step = step + min(max(steps_until_next, 1), MAX_STEPS_BETWEEN_CHECKS)
        self._last_check_step, self._last_check_time = step, now
        return votes[0].item() > 0
