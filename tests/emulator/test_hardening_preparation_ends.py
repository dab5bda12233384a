"""A run that ends while its hosts are prepared (a CI runner's SIGTERM, a channel that cannot be copied) says how it
ended in status.json and result.json, and a `smtrain stop` from another shell while they are prepared stops it:
status.json is there from the moment the run holds its directory.

The preparation is held where it copies a channel: one file of the channel is a link to a pseudo-terminal, whose
read waits until the test writes to it (then end-of-file, ^D)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from orchestrator.backends.local import LocalBackend
from orchestrator.emulator.local_run import run_local
from orchestrator.emulator.run_options import Options
from orchestrator.errors import RunFailed
from orchestrator.specs.loader import load

pytestmark = pytest.mark.hardening

REPO = Path(__file__).resolve().parents[2]


def _spec(tmp_path: Path, held_by: str) -> Path:
    """A one-host job whose channel `train` holds a.csv and `held`, a link to `held_by`."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('trained', flush=True)\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("1,2\n")
    (data / "held").symlink_to(held_by)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "prepared", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
        "instance": {"type": "ml.c5.2xlarge", "count": 1}, "metrics": [], "max_run_seconds": 600,
        "inputs": {"train": "s3://bucket/train/"}, "local_inputs": {"train": "data"}}))
    return spec


@pytest.fixture
def terminal() -> Iterator[tuple[int, str]]:
    """(the master's descriptor, the pseudo-terminal's path): a read of the path waits for the master's writes."""
    master, follower = os.openpty()
    yield master, os.ttyname(follower)
    os.close(follower)
    os.close(master)


def _smtrain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True, cwd=REPO,
                          check=False, timeout=300)


def _held_in_preparation(tmp_path: Path, terminal_path: str) -> tuple[subprocess.Popen[str], Path]:
    """`smtrain local` started, and waiting on the pseudo-terminal as it copies the channel into algo-1."""
    run = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-m", "orchestrator", "local", str(_spec(tmp_path, terminal_path)),
                                "--run-dir", str(run)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, cwd=REPO)
    copying = run / "algo-1" / "input" / "data" / "train" / "held"
    deadline = time.monotonic() + 240  # a safety net only: the wait ends as soon as the copy has begun
    while not copying.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the run never reached the channel's copy:\n{process.communicate()[0]}")
        time.sleep(0.1)
    return process, run


def _status(run: Path) -> dict:
    shown = _smtrain("status", str(run), "--output", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    return json.loads(shown.stdout)


@pytest.mark.slow
def test_a_sigterm_while_the_hosts_are_prepared_leaves_a_status_saying_interrupted(tmp_path, terminal):
    _, terminal_path = terminal
    process, run = _held_in_preparation(tmp_path, terminal_path)
    try:
        assert _status(run)["status"] == "InProgress"
        process.send_signal(signal.SIGTERM)
        console = process.communicate(timeout=120)[0]
    finally:
        process.kill()
    assert process.returncode == 130, console
    status = _status(run)
    assert (status["status"], status["secondary_status"]) == ("Stopped", "Interrupted"), status
    assert status["failure_reason"].startswith("interrupted (SIGTERM) while the hosts' /opt/ml trees were prepared")
    assert status["history"][-1]["message"].startswith("smtrain was interrupted (SIGTERM) and "), status["history"]
    result = json.loads((run / "result.json").read_text())
    assert (result["status"], result["exit_code"]) == ("Interrupted", 130)
    assert not (run / ".smtrain-reserve").exists()


@pytest.mark.slow
def test_a_stop_while_the_hosts_are_prepared_stops_the_run(tmp_path, terminal):
    master, terminal_path = terminal
    process, run = _held_in_preparation(tmp_path, terminal_path)
    try:
        stop = _smtrain("stop", str(run))
        assert stop.returncode == 0, stop.stdout + stop.stderr
        os.write(master, b"x\n" + b"\x04" * 3)  # the line, then end-of-file (a buffered read may take one ^D)
        console = process.communicate(timeout=300)[0]
    finally:
        process.kill()
    assert process.returncode == 3, console
    assert json.loads((run / "result.json").read_text())["status"] == "Stopped"
    assert _status(run)["status"] == "Stopped"


def test_a_channel_that_cannot_be_copied_leaves_a_failed_status(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # a named pipe: no copy of it can be made (shutil refuses it)
    run = tmp_path / "run"
    with pytest.raises(RunFailed, match="ChannelError"):
        run_local(load(_spec(tmp_path, str(fifo))), Options(run_dir=run))
    status = LocalBackend().describe(str(run))
    assert status.status == "Failed" and "ChannelError: copying channel train" in status.failure_reason
