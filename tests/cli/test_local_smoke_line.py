"""The line `smtrain local --smoke` ends with, for a run judged hung."""

from __future__ import annotations

from types import SimpleNamespace

from orchestrator.cli.local import _smoke_line
from orchestrator.emulator.reporting.smoke import SmokeReport


def test_a_smoke_that_hung_says_when_and_why_not_within_the_deadline():
    """It said "hung within 30 s" of a run judged hung 7 s in: the deadline had nothing to do with it."""
    smoke = SmokeReport(deadline_seconds=30, ranks_expected=1, ranks_started=1, missing=[], steps_reached=None,
                        last_loss=None, killed_after_deadline=[])
    result = SimpleNamespace(smoke=smoke, status="Hung", exit_code=4, seconds=7.04)

    line = _smoke_line(result, 5.0)

    assert line.endswith("judged hung 7.0 s in (no rank wrote a line or advanced a step for 5 s, the "
                         "--stall-timeout), before the deadline of 30 s"), line
    assert "within" not in line
