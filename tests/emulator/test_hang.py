"""A local run where one rank blocks forever in a collective: `smtrain local` stops it within the stall timeout
plus 10 s with exit code 4, prints every rank's stack (py-spy, or faulthandler without it), names the rank that
waits and the one it waits for, and leaves nothing running.

The stall clock counts from the last line any rank wrote; the fixture script writes one every half second until
it hangs (scripts/hang_script.py), so the clock starts when the hang does, however slow the start-up, and the
times below are measured from the moment rank 0 announced it is about to block."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
import yaml

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.emulator.supervising import stall
from orchestrator.emulator.supervising.stacks import (
    RankProcess,
    RankStack,
    find_py_spy,
    py_spy_read,
    with_data_workers,
)
from orchestrator.emulator.supervising.status import read_status
from orchestrator.specs.loader import load
from run_observers import NoticeRecorder

pytestmark = pytest.mark.slow

STALL_SECONDS = 8.0
BLOCKING = "about to block"
# Only a run that never stops reaches it; a loaded machine can take minutes to start two torch processes.
RUN_DEADLINE_SECONDS = 600


def processes_of(run_dir: Path) -> list[int]:
    """Live processes of the run (tagged with its directory), zombies aside."""
    marker = str(run_dir)
    left = []
    for process in psutil.process_iter(["pid", "environ", "status"]):
        env = process.info["environ"] or {}
        if env.get("SMTRAIN_RUN_DIR") == marker and process.info["status"] != psutil.STATUS_ZOMBIE:
            left.append(process.info["pid"])
    return left


class BlockWatch(threading.Thread):
    """Notes when rank 0 announced it is about to block (the last line anyone writes)."""

    def __init__(self, log: Path) -> None:
        super().__init__(daemon=True)
        self.log, self.seen_at = log, None

    def run(self) -> None:
        deadline = time.monotonic() + RUN_DEADLINE_SECONDS
        while self.seen_at is None and time.monotonic() < deadline:
            if self.log.exists() and BLOCKING in self.log.read_text(errors="replace"):
                self.seen_at = time.monotonic()
            time.sleep(0.05)


def py_spy_can_attach() -> bool:
    return find_py_spy() is not None and os.geteuid() == 0


def test_smtrain_local_stops_a_hung_collective_with_every_stack_and_exit_4(hang_spec, tmp_path):
    run_dir = tmp_path / "run"
    watch = BlockWatch(run_dir / "logs" / "algo-1.log")
    watch.start()

    done = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(hang_spec), "--run-dir", str(run_dir),
                           "--stall-timeout", str(STALL_SECONDS)], capture_output=True, text=True,
                          timeout=RUN_DEADLINE_SECONDS, cwd=tmp_path, check=False)
    stopped_at = time.monotonic()

    output = done.stdout + done.stderr
    assert done.returncode == 4, output
    assert watch.seen_at is not None, output
    assert stopped_at - watch.seen_at <= STALL_SECONDS + 10, "stopped within the stall timeout plus 10 s"
    assert "Hung in " in output
    assert "waiting in a collective: rank 0 (algo-1) in all_reduce called at main (hang_script.py:" in output
    assert "(the ranks above wait for it): rank 1 (algo-2) at load_next_batch_forever (hang_script.py:" in output
    source = "py-spy" if py_spy_can_attach() else "faulthandler"
    assert "--- rank 0 (algo-1), pid " in output and f"stack from {source} ---" in output
    assert "distributed_c10d.py" in output  # the blocked rank's own stack, down to the collective
    assert processes_of(run_dir) == []
    assert (run_dir / "stacks.txt").read_text() in output.replace("\n\n\n", "\n\n")
    assert '"status": "Hung"' in (run_dir / "result.json").read_text()


class Timeline(NoticeRecorder):
    """The runner's observer: when the last rank line before the stall arrived (faulthandler's stacks come after
    it) and when the stall was noticed, by the runner's own reader and watchdog threads (no polling by the test)."""

    def __init__(self) -> None:
        super().__init__()
        self.last_line_at = self.blocking_at = self.noticed_at = None

    def line(self, host: str, text: str) -> None:
        if self.noticed_at is not None:
            return
        self.last_line_at = time.monotonic()
        if BLOCKING in text:
            self.blocking_at = self.last_line_at

    def notice(self, text: str) -> None:
        if text.startswith("no rank wrote a line for "):
            self.noticed_at = time.monotonic()


@pytest.mark.skipif(not py_spy_can_attach(), reason="py-spy missing, or not root: it may not attach")
def test_the_dataloader_worker_a_rank_waits_for_is_found_and_read(tmp_path):
    """A real DataLoader worker (forked, as torch makes it here), blocked in __getitem__: found as the rank's
    worker and read by py-spy."""
    script = Path(__file__).parent / "scripts" / "stuck_data_worker.py"
    rank = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert rank.stdout.readline().startswith("waiting after step 0")
        text, _ = py_spy_read(find_py_spy(), rank.pid)
        [read] = with_data_workers([RankStack(RankProcess(rank.pid, "algo-1", 0), text, "py-spy")], find_py_spy())
        [worker] = read.workers
        assert worker.process.pid in [child.pid for child in psutil.Process(rank.pid).children()]
        assert read.waiting_for == f", waiting for its DataLoader worker (pid {worker.process.pid}) at " \
                                   "Shards.__getitem__ (stuck_data_worker.py:16)"
    finally:
        for child in psutil.Process(rank.pid).children(recursive=True):
            child.kill()
        rank.kill()
        rank.wait()


def test_without_py_spy_the_ranks_faulthandler_gives_the_stacks(hang_spec, tmp_path, monkeypatch):
    monkeypatch.setattr(stall, "find_py_spy", lambda: None)
    run_dir = tmp_path / "run"
    timeline = Timeline()

    result = run_local(load(hang_spec), Options(run_dir=run_dir, stall_timeout_seconds=STALL_SECONDS), timeline)
    stopped_at = time.monotonic()

    assert (result.status, result.exit_code) == ("Hung", 4)
    assert timeline.blocking_at is not None and timeline.noticed_at is not None
    assert timeline.noticed_at - timeline.last_line_at >= STALL_SECONDS, "not before the stall timeout"
    assert stopped_at - timeline.blocking_at <= STALL_SECONDS + 10, "stopped within the stall timeout plus 10 s"
    stacks = (run_dir / "stacks.txt").read_text()
    assert "--- rank 0 (algo-1)" in stacks and "stack from faulthandler ---" in stacks
    assert 'hang_script.py", line' in stacks and "in load_next_batch_forever" in stacks
    assert "distributed_c10d.py" in stacks and " in all_reduce" in stacks
    idle = re.match(r"Hung: no rank wrote a line or advanced a step for (\d+) s; waiting in a collective: rank 0 "
                    r"\(algo-1\) in all_reduce called at main", result.failure_reason)
    assert idle is not None, result.failure_reason
    assert STALL_SECONDS <= int(idle.group(1)) <= STALL_SECONDS + 10, result.failure_reason
    assert result.failure_reason.endswith(f"every rank's stack: {run_dir.resolve() / 'stacks.txt'}")
    cause = result.failure_cause
    assert (cause["host"], cause["rank"], cause["category"]) == ("algo-2", 1, "hung"), cause
    assert cause["headline"].startswith(
        "Hung: rank 1 (algo-2) is not in a collective, at load_next_batch_forever")
    described = read_status(run_dir)
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Failed", "Failed")
    assert described["SecondaryStatusTransitions"][-1]["StatusMessage"] == cause["headline"]
    assert processes_of(run_dir.resolve()) == []


def test_a_rank_that_computes_before_it_stops_is_slow_first_then_hung(hang_spec, tmp_path, notice_recorder):
    """Rank 1 computes silently for twice the stall timeout while rank 0 waits for it in the all_reduce: slow (its
    host is busy); then it stops outside any collective: every host idle, hung, with both stacks."""
    spec = yaml.safe_load(hang_spec.read_text())
    spec["hyperparameters"] = {"compute-first": 2 * STALL_SECONDS}
    hang_spec.write_text(yaml.safe_dump(spec))

    result = run_local(load(hang_spec), Options(run_dir=tmp_path / "run", stall_timeout_seconds=STALL_SECONDS),
                       notice_recorder)

    assert (result.status, result.exit_code) == ("Hung", 4), result.failure_reason
    said = notice_recorder.notices
    slow = [index for index, text in enumerate(said) if text.startswith("slow, not hung: ")]
    hung = [index for index, text in enumerate(said) if text.startswith("no rank wrote a line for ")]
    assert slow and hung and slow[0] < hung[0], said
    assert "algo-2: rank 1 (algo-2) at " in said[slow[0]], said[slow[0]]
    assert "waiting in a collective: rank 0 (algo-1) in all_reduce called at main (hang_script.py:" in (
        result.failure_reason)
    assert "rank 1 (algo-2) at load_next_batch_forever (hang_script.py:" in result.failure_reason
    assert processes_of((tmp_path / "run").resolve()) == []


def test_where_ptrace_is_refused_the_report_says_py_spy_could_not_attach_and_how_to_let_it(
        hang_spec, tmp_path, monkeypatch):
    """As a CI user under kernel.yama.ptrace_scope 1 (or in a container without SYS_PTRACE) py-spy is refused: the
    report said only `stack from faulthandler`, beside each rank's `Fatal Python error: Aborted`, not why nor
    what would read the stacks without ending the ranks."""
    refused = tmp_path / "py-spy"
    refused.write_text("#!/bin/sh\necho \"Permission Denied: Try running again with elevated permissions by going "
                       "'sudo env \\\"PATH=\\$PATH\\\" !!'\" >&2\nexit 1\n")
    refused.chmod(0o755)
    monkeypatch.setattr(stall, "find_py_spy", lambda: str(refused))
    run_dir = tmp_path / "run"

    result = run_local(load(hang_spec), Options(run_dir=run_dir, stall_timeout_seconds=STALL_SECONDS))

    assert (result.status, result.exit_code) == ("Hung", 4)
    stacks = (run_dir / "stacks.txt").read_text()
    assert "stack from faulthandler ---" in stacks and " in all_reduce" in stacks
    assert ("py-spy could not read rank 0 (algo-1), rank 1 (algo-2) (Permission Denied: Try running again with "
            "elevated permissions") in stacks
    assert "wrote its own stack with faulthandler on SIGABRT, which ended it" in stacks
    assert "kernel.yama.ptrace_scope 0; in a container, --cap-add SYS_PTRACE" in stacks
