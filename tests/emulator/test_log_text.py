"""A host's log is text: NUL bytes a process prints (Open MPI's tagged stderr carries one where a rank's stderr
closes: `[1,mpirank:1,algo-2]<stderr>: \\x00`) reach neither the log file nor the console."""

from __future__ import annotations

import os
import sys

from orchestrator.emulator.launching.launch import Launch
from orchestrator.emulator.supervising.supervisor import Limits, Supervisor

SCRIPT = "import sys; sys.stdout.buffer.write(b'[1,mpirank:1,algo-2]<stderr>: \\x00\\nbefore\\x00after\\n')"


def test_supervisor_log_drops_nul_bytes(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    lines: list[str] = []
    command = f'{sys.executable} -c "{SCRIPT}"'
    launch = Launch("algo-1", command, dict(os.environ), tmp_path, command)
    outcome = Supervisor([launch], "run-id", logs, lambda host, text: lines.append(text)).run(
        Limits(timeout_seconds=60, interrupt_after=None, stop_grace_seconds=5))
    assert outcome.status == "completed"
    assert lines == ["[1,mpirank:1,algo-2]<stderr>: ", "beforeafter"]
    log = (logs / "algo-1.log").read_bytes()
    assert b"\0" not in log and log.endswith(b"<stderr>: \nbeforeafter\n")
    assert "\0" not in "".join(outcome.tails["algo-1"])
