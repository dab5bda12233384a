"""The stops smtrain carries out itself end quietly: they end a torchrun job's workers by SIGTERM, which torchrun
reports as a failure (`ChildFailedError`); that report goes to the hosts' logs, not to a console (a CI log) after one
note saying which stop it is (a smoke that passed, Ctrl-C, max_run_seconds). A smoke that fails shows everything,
and torchrun's agent is never signalled itself once its workers are gone (it then printed `SignalException` or died
by the signal)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
RUN_DEADLINE_SECONDS = 600  # only a run that never stops reaches it
TORCHRUN_ON_TWO_HOSTS = {"mode": "torch_distributed", "instance": "ml.g4dn.xlarge"}
STOP_NOISE = ("Traceback", "ChildFailedError", "SignalException")
QUIET_NOTICE = "stopping the job: the smoke passed; what its launchers print while stopping is in"
LOGS_NOT_SHOWN = "; what its launchers print while stopping is in {logs}, not shown here"


def _command(spec: Path, run_dir: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run_dir), *options]


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _smtrain_local(spec: Path, run_dir: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_command(spec, run_dir, *options), capture_output=True, text=True,
                          timeout=RUN_DEADLINE_SECONDS, check=False, env=_environment())


def _job_lines(run_dir: Path, host: str) -> list[str]:
    """What the host's processes printed: its log without the command line smtrain writes first."""
    return (run_dir / "logs" / f"{host}.log").read_text().split("\n\n", 2)[2].splitlines()


def _torchrun_spec(make_spec, **extra) -> Path:
    return make_spec("torchrun_steps.py", mode=TORCHRUN_ON_TWO_HOSTS["mode"],
                     instance=TORCHRUN_ON_TWO_HOSTS["instance"], **extra)


def _interrupted_at_step_2(spec: Path, run_dir: Path, hosts: tuple[str, ...]) -> str:
    """The console of `smtrain local` given Ctrl-C (SIGINT) once each of `hosts` showed step 2; it exits 130."""
    smtrain = subprocess.Popen(_command(spec, run_dir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=_environment())
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(smtrain.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + RUN_DEADLINE_SECONDS
        while not all(any(f"[{host}] step=2 loss=" in line for line in lines) for host in hosts):
            assert time.monotonic() < deadline and smtrain.poll() is None, "".join(lines)
            time.sleep(0.1)
        smtrain.send_signal(signal.SIGINT)
        assert smtrain.wait(timeout=RUN_DEADLINE_SECONDS) == 130, "".join(lines)
    finally:
        if smtrain.poll() is None:
            smtrain.kill()
    reader.join(timeout=30)
    return "".join(lines)


def _stopped_quietly(console: str, run_dir: Path, processes_of) -> None:
    """The job's lines were shown until the stop, none of torchrun's report of it; the logs keep that report."""
    assert "[algo-1] step=1 loss=" in console  # the run's own lines are shown until the stop
    assert not [word for word in STOP_NOISE if word in console], console[-3000:]
    for host in ("algo-1", "algo-2"):
        lines = _job_lines(run_dir, host)
        assert any("ChildFailedError" in line for line in lines), lines  # the log keeps torchrun's report
        # smtrain left the agent to end after its workers: it was not signalled while it reported them
        assert not [line for line in lines if "SignalException" in line or line == "Terminated"], lines
    assert processes_of(run_dir) == []


def test_a_passed_smoke_of_a_torchrun_job_keeps_torchruns_stop_report_off_the_console(make_spec, tmp_path,
                                                                                      processes_of):
    spec = _torchrun_spec(make_spec)
    run_dir = tmp_path / "run"

    done = _smtrain_local(spec, run_dir, "--smoke", "600", "--smoke-steps", "1")

    console = done.stdout + done.stderr
    assert done.returncode == 0, console
    assert "smoke passed: 2 of 2 ranks started, step " in done.stderr
    _stopped_quietly(console, run_dir, processes_of)
    assert QUIET_NOTICE in done.stderr


def test_a_failed_smoke_of_a_torchrun_job_shows_everything_the_job_printed(make_spec, tmp_path, startup_seconds):
    spec = _torchrun_spec(make_spec)
    run_dir = tmp_path / "run"
    deadline = round(max(8.0, 6 * startup_seconds("torch", "torch.distributed")), 1)

    # a step it never reaches
    done = _smtrain_local(spec, run_dir, "--smoke", str(deadline), "--smoke-steps", "1000000")

    assert done.returncode == 1, done.stderr
    assert "smoke: step 1000000 (--smoke-steps) not reached" in done.stderr
    assert QUIET_NOTICE not in done.stderr
    for host in ("algo-1", "algo-2"):
        missing = [line for line in _job_lines(run_dir, host) if f"[{host}] {line}" not in done.stdout]
        assert not missing, missing


def test_ctrl_c_during_a_torchrun_job_keeps_torchruns_stop_report_off_the_console(make_spec, tmp_path,
                                                                                  processes_of):
    spec = _torchrun_spec(make_spec)
    run_dir = tmp_path / "run"
    console = _interrupted_at_step_2(spec, run_dir, ("algo-1",))
    _stopped_quietly(console, run_dir, processes_of)
    assert f"stopping the job: interrupted (Ctrl-C){LOGS_NOT_SHOWN.format(logs=run_dir / 'logs' / 'algo-N.log')}" \
        in console


def test_max_run_seconds_of_a_torchrun_job_keeps_torchruns_stop_report_off_the_console(make_spec, tmp_path,
                                                                                       processes_of,
                                                                                       startup_seconds):
    # long enough for both hosts to start torch and step, on this machine now
    max_run_seconds = round(max(15.0, 10 * startup_seconds("torch", "torch.distributed")))
    spec = _torchrun_spec(make_spec, max_run_seconds=max_run_seconds)
    run_dir = tmp_path / "run"

    done = _smtrain_local(spec, run_dir)

    console = done.stdout + done.stderr
    assert done.returncode == 3, console
    _stopped_quietly(console, run_dir, processes_of)
    assert (f"stopping the job: max_run_seconds ({max_run_seconds} s) reached"
            f"{LOGS_NOT_SHOWN.format(logs=run_dir / 'logs' / 'algo-N.log')}") in done.stderr


def test_ctrl_c_during_a_script_a_host_runs_itself_shows_what_the_script_says_as_it_stops(make_spec, tmp_path):
    """Mode none has no launcher to report the stop: the console keeps the job's own last words (a checkpoint it
    saved on SIGTERM)."""
    spec = make_spec("says_on_sigterm.py")
    run_dir = tmp_path / "run"
    console = _interrupted_at_step_2(spec, run_dir, ("algo-1", "algo-2"))
    assert "[algo-1] checkpoint saved at step" in console and "[algo-2] checkpoint saved at step" in console, console
    assert "not shown here" not in console
