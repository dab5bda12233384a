"""A smoke of a torchrun job that passes ends quietly: smtrain's own stop ends the workers by SIGTERM, which
torchrun reports as a failure (`ChildFailedError`); that report goes to the hosts' logs, not to a console (a CI
log) that has just said every rank joined. A smoke that fails shows everything, and torchrun's agent is never
signalled itself once its workers are gone (it then printed `SignalException` or died by the signal)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
RUN_DEADLINE_SECONDS = 600  # only a run that never stops reaches it
TORCHRUN_ON_TWO_HOSTS = {"mode": "torch_distributed", "instance": "ml.g4dn.xlarge"}
STOP_NOISE = ("Traceback", "ChildFailedError", "SignalException")
QUIET_NOTICE = "stopping the job: the smoke passed; what its launchers print while stopping is in"


def _smoke(spec: Path, run_dir: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run_dir),
                           *options], capture_output=True, text=True, timeout=RUN_DEADLINE_SECONDS, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def _job_lines(run_dir: Path, host: str) -> list[str]:
    """What the host's processes printed: its log without the command line smtrain writes first."""
    return (run_dir / "logs" / f"{host}.log").read_text().split("\n\n", 2)[2].splitlines()


def test_a_passed_smoke_of_a_torchrun_job_keeps_torchruns_stop_report_off_the_console(make_spec, tmp_path,
                                                                                      processes_of):
    spec = make_spec("torchrun_steps.py", mode=TORCHRUN_ON_TWO_HOSTS["mode"],
                     instance=TORCHRUN_ON_TWO_HOSTS["instance"])
    run_dir = tmp_path / "run"

    done = _smoke(spec, run_dir, "--smoke", "600", "--smoke-steps", "1")

    console = done.stdout + done.stderr
    assert done.returncode == 0, console
    assert "smoke passed: 2 of 2 ranks started, step " in done.stderr
    assert "[algo-1] step=1 loss=" in done.stdout  # the run's own lines are shown until the smoke has passed
    assert not [word for word in STOP_NOISE if word in console], console[-3000:]
    assert QUIET_NOTICE in done.stderr
    for host in ("algo-1", "algo-2"):
        lines = _job_lines(run_dir, host)
        assert any("ChildFailedError" in line for line in lines), lines  # the log keeps torchrun's report
        # smtrain left the agent to end after its workers: it was not signalled while it reported them
        assert not [line for line in lines if "SignalException" in line or line == "Terminated"], lines
    assert processes_of(run_dir) == []


def test_a_failed_smoke_of_a_torchrun_job_shows_everything_the_job_printed(make_spec, tmp_path, startup_seconds):
    spec = make_spec("torchrun_steps.py", mode=TORCHRUN_ON_TWO_HOSTS["mode"],
                     instance=TORCHRUN_ON_TWO_HOSTS["instance"])
    run_dir = tmp_path / "run"
    deadline = round(max(8.0, 6 * startup_seconds("torch", "torch.distributed")), 1)

    done = _smoke(spec, run_dir, "--smoke", str(deadline), "--smoke-steps", "1000000")  # a step it never reaches

    assert done.returncode == 1, done.stderr
    assert "smoke: step 1000000 (--smoke-steps) not reached" in done.stderr
    assert QUIET_NOTICE not in done.stderr
    for host in ("algo-1", "algo-2"):
        missing = [line for line in _job_lines(run_dir, host) if f"[{host}] {line}" not in done.stdout]
        assert not missing, missing
