"""Slow is not hung: a run whose rank computes (or waits for a child that computes) without writing a line for
longer than the stall timeout is said to be slow and keeps running, though its other host's rank waits idle; only
a run whose every host is idle is stopped as hung (test_hang.py). Under --smoke the smoke's deadline governs, not
the stall clock.

The stall timeout is short (3 s) and the first host's rank works silently for three times as long (the other one
waits as long, idle: one computing rank is all the behaviour needs, and each takes a core the whole time), so the
stall clock runs out while it works; nothing here measures how fast it works."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.specs.loader import load

pytestmark = pytest.mark.slow

SCRIPTS = Path(__file__).parent / "scripts"
STALL_SECONDS = 3.0
WORK_SECONDS = 3 * STALL_SECONDS


def busy_spec(tmp_path: Path, work: str, steps: int = 1) -> Path:
    """Two hosts (mode none) running scripts/busy_script.py: algo-1's rank works, algo-2's waits idle."""
    shutil.copytree(SCRIPTS, tmp_path / "src")
    spec = {"name": "busy-test", "entry_point": "busy_script.py", "source_dir": "src", "framework_version": "2.3.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 2}, "distribution": {"mode": "none"},
            "hyperparameters": {"work": work, "seconds": WORK_SECONDS, "steps": steps}, "max_run_seconds": 600}
    path = tmp_path / "busy.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize("work", ["loop", "child"])
def test_a_rank_computing_silently_past_the_stall_timeout_beside_an_idle_one_is_slow_and_completes(
        work, tmp_path, notice_recorder):
    result = run_local(load(busy_spec(tmp_path, work)),
                       Options(run_dir=tmp_path / "run", stall_timeout_seconds=STALL_SECONDS), notice_recorder)

    assert (result.status, result.exit_code) == ("Completed", 0), (result.failure_reason, notice_recorder.notices)
    slow = [text for text in notice_recorder.notices if text.startswith("slow, not hung: ")]
    assert slow, notice_recorder.notices
    assert "no step seen yet" in slow[0] and "but its work moves: algo-1" in slow[0], slow[0]
    assert "algo-2" not in slow[0], slow[0]  # the idle host is not said to move
    # Whose work: the rank's own loop, or the child it waits for, named under its rank.
    assert ("rank " if work == "loop" else "python") in slow[0].split("its work moves: ")[1]
    if work == "child":
        assert " under rank " in slow[0], slow[0]
    assert not [text for text in notice_recorder.notices if text.startswith("no rank wrote a line for ")]
    assert not (tmp_path / "run" / "stacks.txt").exists()


def test_a_busy_smoke_longer_than_the_stall_timeout_ends_at_its_first_step(tmp_path):
    """The README's CI smoke: --smoke far longer than the stall timeout, and ranks silent while the first
    host's computes its first step. It passes at that step, not Hung at the stall timeout."""
    done = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(busy_spec(tmp_path, "loop", steps=50)),
                           "--run-dir", str(tmp_path / "run"), "--stall-timeout", str(STALL_SECONDS),
                           "--smoke", "600", "--smoke-steps", "1", "-o", "json"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, check=False)

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["smoke"]["steps_reached"] >= 1 and result["smoke"]["missing"] == []
    assert "slow, not hung: " in done.stderr
    assert "smoke passed: 2 of 2 ranks started" in done.stderr


def test_where_py_spy_is_refused_the_slow_notice_says_so_instead_of_where_the_rank_is(tmp_path, notice_recorder,
                                                                                     monkeypatch):
    """As a user py-spy may not attach for, the slow notice dropped the busiest rank's place without a word."""
    from orchestrator.emulator.supervising import stall

    refused = tmp_path / "py-spy"
    refused.write_text("#!/bin/sh\necho 'Permission Denied: Try running again with elevated permissions' >&2\nexit 1\n")
    refused.chmod(0o755)
    monkeypatch.setattr(stall, "find_py_spy", lambda: str(refused))
    result = run_local(load(busy_spec(tmp_path, "loop")),
                       Options(run_dir=tmp_path / "run", stall_timeout_seconds=STALL_SECONDS), notice_recorder)

    assert (result.status, result.exit_code) == ("Completed", 0), (result.failure_reason, notice_recorder.notices)
    slow = [text for text in notice_recorder.notices if text.startswith("slow, not hung: ")]
    assert slow, notice_recorder.notices
    assert "py-spy could not read (Permission Denied: Try running again with elevated permissions)" in slow[0]
