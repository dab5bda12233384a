"""Issue 35, logs read back from a run directory are bounded: `smtrain logs RUN` (no --tail) and `--follow` hand
each line on as it is read, a block at a time, so a log of gigabytes is never held whole; a line longer than
64 KiB comes in pieces, none lost, no character cut."""

from __future__ import annotations

import json
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import psutil
from click.testing import CliRunner

from orchestrator.backends.local import LocalBackend
from orchestrator.cli.main import main
from orchestrator.contract import RUN_MARKER_FILE

MOST_HELD = 8 * 1024 * 1024
# 16 MiB of 1 KiB lines: twice what may be held, so a reader holding the log (its bytes, or its lines as str)
# fails the bound; a larger log would show no more and costs CPU on every run.
FILLER_LINES = 16 * 1024


def _run(root: Path, status: str = "Completed") -> Path:
    """A run directory as `smtrain local` writes it; one InProgress is this process's (alive, so followed)."""
    run_dir = root / "runs" / "chatty"
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    (run_dir / RUN_MARKER_FILE).write_text("")
    (run_dir / "status.json").write_text(json.dumps({
        "TrainingJobName": "chatty", "TrainingJobStatus": status, "SecondaryStatus": status,
        "CreationTime": "2026-11-26T10:00:00+00:00", "SecondaryStatusTransitions": [],
        "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 2},
        "LocalRun": {"run_dir": str(run_dir), "pid": os.getpid(), "process_started": psutil.Process().create_time()}}))
    return run_dir


def _write_big_log(run_dir: Path) -> None:
    with (run_dir / "logs" / "algo-1.log").open("wb") as log:
        for number in range(FILLER_LINES):
            log.write(b"%08d " % number + b"x" * 1014 + b"\n")
        log.write(b"the last line\n")


def _peak_while(action: Callable[[], None]) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_every_line_of_a_huge_log_is_read_without_holding_the_log(tmp_path):
    run_dir = _run(tmp_path)
    _write_big_log(run_dir)
    seen = {"count": 0, "last": ""}

    def read_all() -> None:
        for line in LocalBackend().logs(str(run_dir)):
            seen["count"] += 1
            seen["last"] = line.message

    peak = _peak_while(read_all)

    assert seen == {"count": FILLER_LINES + 1, "last": "the last line"}
    assert peak < MOST_HELD, f"{peak / 2**20:.0f} MiB held to hand on a 16 MiB log line by line"


def test_follow_hands_on_the_lines_already_there_then_the_new_ones_bounded(tmp_path):
    run_dir = _run(tmp_path, status="InProgress")
    _write_big_log(run_dir)
    lines = LocalBackend().logs(str(run_dir), follow=True, poll_seconds=0.01)
    first: list[str] = []

    def read_what_is_there() -> None:
        for _ in range(FILLER_LINES + 1):
            first.append(next(lines).message[:8])

    peak = _peak_while(read_what_is_there)
    with (run_dir / "logs" / "algo-1.log").open("a") as log:
        log.write("step=7 loss=0.5\nunfinished")
    _run(tmp_path, status="Completed")
    rest = [line.message for line in lines]

    assert first[0] == "00000000" and first[-1] == "the last" and len(first) == FILLER_LINES + 1
    assert rest == ["step=7 loss=0.5", "unfinished"]
    assert peak < MOST_HELD, f"{peak / 2**20:.0f} MiB held while following a 16 MiB log"


def test_a_line_too_long_to_hold_comes_in_pieces_none_lost_no_character_cut(tmp_path):
    run_dir = _run(tmp_path)
    huge = "a" * (64 * 1024 - 1) + "é" + "b" * (3 * 1024 * 1024)
    (run_dir / "logs" / "algo-1.log").write_text(f"before\n{huge}\nafter\n", encoding="utf-8")

    messages = [line.message for line in LocalBackend().logs(str(run_dir))]

    assert messages[0] == "before" and messages[-1] == "after"
    pieces = messages[1:-1]
    assert "".join(pieces) == huge
    assert all(len(piece.encode()) <= 64 * 1024 for piece in pieces)
    assert pieces[0] == "a" * (64 * 1024 - 1), "the cut moved back to the start of é"


def test_smtrain_logs_prints_every_line_of_a_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = _run(tmp_path)
    (run_dir / "logs" / "algo-1.log").write_text("".join(f"step={step} loss=0.5\n" for step in range(1, 2001)))
    (run_dir / "logs" / "algo-2.log").write_text("from the second host\n")

    result = CliRunner().invoke(main, ["logs", "chatty"])
    only_two = CliRunner().invoke(main, ["logs", "chatty", "--host", "algo-2"])

    assert result.exit_code == 0, result.output
    printed = result.stdout.splitlines()
    assert printed[0] == "[algo-1] step=1 loss=0.5" and printed[1999] == "[algo-1] step=2000 loss=0.5"
    assert printed[2000:] == ["[algo-2] from the second host"]
    assert only_two.stdout.splitlines() == ["[algo-2] from the second host"]
