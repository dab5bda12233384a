"""The /bin/sh a host's command runs under (dash, on Debian and Ubuntu CI runners) waits for the script and
reports the signal that ended it: `[algo-1] Terminated` after a smoke that passed read in a CI log as a failure.
smtrain's own stop leaves that report in the host's log only; a signal smtrain did not send is still shown."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from orchestrator.emulator.launching.launch import Launch
from orchestrator.emulator.supervising.supervisor import Limits, Supervisor

pytestmark = pytest.mark.skipif(not os.path.realpath("/bin/sh").endswith("dash"),
                                reason="only dash reports a script's signal for a one-command line")

SLEEPER = "import pathlib, time\nprint('step=1/9', flush=True)\npathlib.Path('{ready}').touch()\ntime.sleep(60)"
SELF_KILLER = "import os, signal\nprint('step=1/9', flush=True)\nos.kill(os.getpid(), signal.SIGTERM)"


def _supervise(tmp_path: Path, script: str, stop_once: Path | None = None) -> tuple[str, list[str], str]:
    """Runs `script` as a mode-none host does (one python through /bin/sh); stops it as a smoke that passed does
    once `stop_once` exists. Returns the status, the console's lines and the host's log."""
    (tmp_path / "train.py").write_text(script)
    logs = tmp_path / "logs"
    logs.mkdir()
    command = f"{sys.executable} -- train.py"
    shown: list[str] = []
    supervisor = Supervisor([Launch("algo-1", command, dict(os.environ), tmp_path, command)], "run-id", logs,
                            lambda host, line: shown.append(line))
    outcome = supervisor.run(Limits(timeout_seconds=600, interrupt_after=None, stop_grace_seconds=30,
                                    stop_when=stop_once.exists if stop_once else None))
    return outcome.status, shown, (logs / "algo-1.log").read_text()


def test_smtrains_own_stop_is_not_reported_on_the_console(tmp_path):
    ready = tmp_path / "ready"
    status, shown, log = _supervise(tmp_path, SLEEPER.format(ready=ready), stop_once=ready)
    assert status == "stopped"
    assert shown == ["step=1/9"]
    assert log.rstrip().endswith("Terminated"), "the log keeps every line the host printed"


def test_a_script_that_kills_itself_is_still_reported(tmp_path):
    status, shown, _ = _supervise(tmp_path, SELF_KILLER)
    assert status == "failed"
    assert shown == ["step=1/9", "Terminated"]
