"""A flood of output: a 24 MiB line (standing in for the probe's 1 GB one) leaves smtrain's memory
where it was, reaches the log file whole, and reaches the console in 64 KiB pieces, said once, none dropped.
24 MiB is more than twice the 10 MiB the memory may rise: a supervisor holding the line whole rose by 280 MiB
(the line is no longer than that proof needs; its pieces cost 0.2 CPU-s a MiB before a piece without `: ` stopped
being tried as a YAML entry whose value goes on below it, about 0.03 since)."""

from __future__ import annotations

import os
import sys
import threading

import psutil
import pytest

from orchestrator.emulator.launching.launch import Launch
from orchestrator.emulator.supervising.supervisor import MAX_LINE_BYTES, Limits, Supervisor

pytestmark = pytest.mark.hardening

LINE_BYTES = 24 * 1024 * 1024
# One 50 MB line without a newline in it, a line with a 2-byte character cut across the split, then short lines.
SCRIPT = f"""
import sys
out = sys.stdout.buffer
for _ in range({LINE_BYTES} // (1 << 20)):
    out.write(b"x" * (1 << 20))
out.write(b"\\n" + b"y" * ({MAX_LINE_BYTES} - 1) + "é".encode() + b"z\\n")
out.write(b"".join(b"line %d\\n" % number for number in range(1000)))
out.write(b"no newline at the end")
"""


def _peak_rss_growth(action) -> int:
    """How far this process's resident memory rose above where it was, sampled every 5 ms while `action` ran."""
    me = psutil.Process()
    baseline = peak = me.memory_info().rss
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, me.memory_info().rss)
            done.wait(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        action()
    finally:
        done.set()
        sampler.join()
    return peak - baseline


def test_a_huge_line_keeps_memory_bounded_and_the_log_whole(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    lines: list[tuple[int, str]] = []
    notices: list[str] = []

    def on_line(host: str, text: str) -> None:
        lines.append((len(text), text if len(text) < 100 else text[-3:]))

    command = f"{sys.executable} -c '{SCRIPT}'"
    launch = Launch("algo-1", command, dict(os.environ), tmp_path, command)
    supervisor = Supervisor([launch], "run-id", logs, on_line, on_notice=notices.append)
    outcomes = []
    limits = Limits(timeout_seconds=120, interrupt_after=None, stop_grace_seconds=5)
    growth = _peak_rss_growth(lambda: outcomes.append(supervisor.run(limits)))

    print(f"peak RSS growth while streaming a {LINE_BYTES // 2**20} MiB line: {growth / 2**20:.1f} MiB")
    assert outcomes[0].status == "completed"
    assert growth < 10 * 1024 * 1024, f"memory rose by {growth / 2**20:.0f} MiB"
    huge = [length for length, _ in lines[:LINE_BYTES // MAX_LINE_BYTES]]
    assert all(length == MAX_LINE_BYTES for length in huge) and sum(huge) == LINE_BYTES
    cut = lines[len(huge):len(huge) + 2]
    assert cut == [(MAX_LINE_BYTES - 1, "yyy"), (2, "éz")], "the split moved back to the start of é"
    assert [text for _, text in lines[len(huge) + 2:]] == [f"line {n}" for n in range(1000)] + ["no newline at the end"]
    assert len(notices) == 1 and "algo-1 printed a line longer than 64 KiB" in notices[0]
    log = (logs / "algo-1.log").read_bytes()
    body = log[log.index(b"x" * 1000):]
    assert body.startswith(b"x" * LINE_BYTES + b"\n") and body.endswith(b"line 999\nno newline at the end")
