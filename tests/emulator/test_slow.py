"""Slow is not hung: a run whose rank computes (or waits for a child that computes, or downloads with little CPU)
without writing a line for longer than the stall timeout is said to be slow and keeps running, though its other host's rank waits idle; only
a run whose every host is idle is stopped as hung (test_hang.py). Under --smoke the smoke's deadline governs, not
the stall clock.

The stall timeout is short (3 s) and the first host's rank works silently for three times as long (the other one
waits as long, idle: one computing rank is all the behaviour needs, and each takes a core the whole time), so the
stall clock runs out while it works; nothing here measures how fast it works."""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.specs.loader import load
from run_observers import NoticeRecorder

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


class SlowSource(http.server.BaseHTTPRequestHandler):
    """A download that trickles: 64 KiB every 0.2 s (320 KiB/s, five times what makes a host busy) until the
    server's `done` is set, with almost no CPU on the receiving side."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        try:
            while not self.server.done.wait(0.2):  # type: ignore[attr-defined]
                self.wfile.write(bytes(64 * 1024))
        except ConnectionError:  # the run was stopped (as Hung, before the fix)
            pass

    def log_message(self, *args: object) -> None:
        pass


class SlowAfterMoving(NoticeRecorder):
    """The run's observer: keeps its notices, and keeps and sets `slow_while_moving` at the first slow notice after
    rank 0 said it starts moving data, so that the silence that notice judged is the I/O's alone, not torch's import
    before it (which computes), nor the ranks' ending after it."""

    def __init__(self) -> None:
        super().__init__()
        self.moving = False
        self.slow_while_moving = threading.Event()
        self.said_while_moving = ""

    def line(self, host: str, text: str) -> None:
        self.moving = self.moving or text == "moving"

    def notice(self, text: str) -> None:
        super().notice(text)
        if self.moving and text.startswith("slow, not hung: ") and not self.slow_while_moving.is_set():
            self.said_while_moving = text
            self.slow_while_moving.set()


@pytest.mark.parametrize("work", ["download", "download-to-memory"])
def test_a_rank_downloading_silently_past_the_stall_timeout_while_the_other_waits_is_slow_and_completes(
        work, tmp_path):
    """Rank 0 downloads (blocked in recv, little CPU) with no output while rank 1 waits in a barrier: on SageMaker
    it finishes; locally it was stopped as Hung, into a file before its writes counted, into memory (plain HTTP's
    recv(), which /proc/<pid>/io does not count) before its socket's bytes did. The server trickles until the run is
    said to be slow, so the download outlasts the stall timeout however fast the machine is."""
    observer = SlowAfterMoving()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowSource)
    server.done = observer.slow_while_moving  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    spec = yaml.safe_load(busy_spec(tmp_path, "loop").read_text())
    spec.update(entry_point="io_script.py", hyperparameters={
        "work": work, "source": f"http://127.0.0.1:{server.server_port}/checkpoint"})
    (tmp_path / "busy.yaml").write_text(yaml.safe_dump(spec))
    try:
        result = run_local(load(tmp_path / "busy.yaml"),
                           Options(run_dir=tmp_path / "run", stall_timeout_seconds=STALL_SECONDS), observer)
    finally:
        server.shutdown()

    assert (result.status, result.exit_code) == ("Completed", 0), (result.failure_reason, observer.notices)
    slow = observer.said_while_moving
    assert "but its work moves: algo-1: rank 0 (algo-1) at " in slow, slow
    assert "; rank 0 (algo-1) reads or writes " in slow, slow
    assert "algo-2" not in slow, slow
