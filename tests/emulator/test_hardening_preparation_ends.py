"""A run that ends while its hosts are prepared (a CI runner's SIGTERM, a channel that cannot be copied) says how it
ended in status.json and result.json, and a `smtrain stop` from another shell while they are prepared stops it:
status.json is there from the moment the run holds its directory.

The preparation is held where it copies a channel: one regular file of the channel is under a lease this test holds
(as Samba holds one for a Windows client's oplock), so smtrain's open of it waits until the test lets go of it (or
the kernel's lease-break-time, 45 s by default, passes). The kernel tells the lease holder, by SIGIO, the moment the
open begins: the test acts on the run exactly while it is held there."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import threading
from collections.abc import Iterator
from dataclasses import dataclass
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


def _spec(tmp_path: Path, held: Path | None = None) -> Path:
    """A one-host job whose channel `train` holds a.csv and, given `held`, a link `held` to it."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('trained', flush=True)\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("1,2\n")
    if held is not None:
        (data / "held").symlink_to(held)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "prepared", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
        "instance": {"type": "ml.c5.2xlarge", "count": 1}, "metrics": [], "max_run_seconds": 600,
        "inputs": {"train": "s3://bucket/train/"}, "local_inputs": {"train": "data"}}))
    return spec


@dataclass
class Lease:
    """A write lease on the channel's file `held`: another process's open of it waits until `release`."""

    path: Path
    descriptor: int
    opened: threading.Event

    def release(self) -> None:
        fcntl.fcntl(self.descriptor, fcntl.F_SETLEASE, fcntl.F_UNLCK)


@pytest.fixture
def lease(tmp_path: Path) -> Iterator[Lease]:
    """A file under this process's write lease; `opened` is set when another process begins to open it."""
    if int(Path("/proc/sys/fs/lease-break-time").read_text()) < 30:
        pytest.skip("the kernel breaks a lease in under 30 s here: too soon to act on the held run")
    path = tmp_path / "leased.csv"
    path.write_text("3,4\n")
    opened = threading.Event()
    previous = signal.signal(signal.SIGIO, lambda *_: opened.set())
    descriptor = os.open(path, os.O_RDONLY)
    try:
        fcntl.fcntl(descriptor, fcntl.F_SETLEASE, fcntl.F_WRLCK)
    except OSError as error:
        os.close(descriptor)
        signal.signal(signal.SIGIO, previous)
        pytest.skip(f"no file lease on {tmp_path} ({error.strerror})")
    yield Lease(path, descriptor, opened)
    os.close(descriptor)
    signal.signal(signal.SIGIO, previous)


def _smtrain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True, cwd=REPO,
                          check=False, timeout=300)


def _held_in_preparation(tmp_path: Path, lease: Lease) -> tuple[subprocess.Popen[str], Path]:
    """`smtrain local` started, and waiting to open the leased file as it copies the channel into algo-1."""
    run = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-m", "orchestrator", "local", str(_spec(tmp_path, lease.path)),
                                "--run-dir", str(run)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, cwd=REPO)
    deadline = time.monotonic() + 240  # a safety net only: the wait ends as soon as the copy opens the file
    while not lease.opened.wait(0.1):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the run never reached the channel's copy:\n{process.communicate()[0]}")
    assert (run / "algo-1" / "input" / "data" / "train" / "a.csv").exists()  # the copy is under way
    return process, run


def _status(run: Path) -> dict:
    shown = _smtrain("status", str(run), "--output", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    return json.loads(shown.stdout)


@pytest.mark.slow
def test_a_sigterm_while_the_hosts_are_prepared_leaves_a_status_saying_interrupted(tmp_path, lease):
    process, run = _held_in_preparation(tmp_path, lease)
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
def test_a_stop_while_the_hosts_are_prepared_stops_the_run(tmp_path, lease):
    process, run = _held_in_preparation(tmp_path, lease)
    try:
        stop = _smtrain("stop", str(run))
        assert stop.returncode == 0, stop.stdout + stop.stderr
        lease.release()  # the copy goes on, and the run acts on the stop before any process of the job starts
        console = process.communicate(timeout=300)[0]
    finally:
        process.kill()
    assert process.returncode == 3, console
    assert json.loads((run / "result.json").read_text())["status"] == "Stopped"
    assert _status(run)["status"] == "Stopped"


def test_a_channel_that_cannot_be_copied_leaves_a_failed_status(tmp_path):
    """A link to a named pipe: no S3 object holds one, so the copy refuses it, naming it (shutil refused it too)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    run = tmp_path / "run"
    with pytest.raises(RunFailed, match="ChannelError"):
        run_local(load(_spec(tmp_path, fifo)), Options(run_dir=run))
    status = LocalBackend().describe(str(run))
    assert status.status == "Failed" and "ChannelError: copying channel train" in status.failure_reason
    assert f"{tmp_path}/data/held is a link to {fifo}, a named pipe (FIFO)" in status.failure_reason
