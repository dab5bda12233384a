"""A stop (StopTrainingJob, a tuning budget, max_run_seconds) reaches a training process that its launcher starts
only after the SIGTERM went out: found when a tuning budget ran out while a trial's host was still starting its
script, and the trial trained to its end inside the grace period. A launcher that drops the SIGTERM (here a shell
that ignores it while it waits; in a run, the PID namespace's first process) starts its script a moment later;
the supervisor signals it when it appears. What a signalled script starts for its own exit is left alone."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from orchestrator.emulator.launching.launch import Launch
from orchestrator.emulator.supervising.supervisor import Limits, Supervisor

# A launcher that ignores SIGTERM until the test says go (after the supervisor's stop went out), then starts the
# script with SIGTERM's default action back, as the namespace's first process does for its child.
LAUNCHER = """trap '' TERM
: > {waiting}
while [ ! -e {go} ]; do sleep 0.05; done
trap - TERM
exec {python} -c '{script}'"""
SCRIPT = "import pathlib, time\ntime.sleep(20)\npathlib.Path(\"{done}\").write_text(\"trained to the end\")"
HELPER_SCRIPT = """import pathlib, signal, subprocess, sys, time
def on_term(*_):
    subprocess.run([sys.executable, "-c", "import pathlib, time; time.sleep(1); pathlib.Path(\\"{saved}\\").touch()"])
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
pathlib.Path("{ready}").touch()
time.sleep(60)"""


def _supervise(tmp_path: Path, command: str, stop_once: Path, on_notice) -> str:
    """Runs `command` as a host's launch; stops it (as StopTrainingJob) once `stop_once` exists."""
    logs = tmp_path / "logs"
    logs.mkdir()
    launch = Launch("algo-1", command, dict(os.environ), tmp_path, command)
    supervisor = Supervisor([launch], "run-id", logs, lambda host, line: None, on_notice=on_notice)
    return supervisor.run(Limits(timeout_seconds=600, interrupt_after=None, stop_grace_seconds=120,
                                 stop_when=stop_once.exists)).status


def test_a_script_started_after_the_stop_gets_the_signal(tmp_path):
    waiting, go, done = tmp_path / "waiting", tmp_path / "go", tmp_path / "done"
    command = LAUNCHER.format(waiting=waiting, go=go, python=sys.executable, script=SCRIPT.format(done=done))
    notices: list[str] = []

    def on_notice(text: str) -> None:  # "stopped: waiting up to 120 s for ...": the SIGTERM went out a second ago
        notices.append(text)
        go.touch()

    assert _supervise(tmp_path, command, waiting, on_notice) == "stopped"
    assert notices and "waiting up to 120 s" in notices[0]
    assert not done.exists(), "the script started after the stop trained to its end"


def test_what_a_stopping_script_starts_for_its_exit_is_not_signalled(tmp_path):
    ready, saved = tmp_path / "ready", tmp_path / "saved"
    script = HELPER_SCRIPT.format(ready=ready, saved=saved)
    (tmp_path / "train.py").write_text(script)
    command = f"exec {sys.executable} {tmp_path / 'train.py'}"
    assert _supervise(tmp_path, command, ready, lambda text: None) == "stopped"
    assert saved.exists(), "the helper the script started on SIGTERM was signalled too"
