"""A CI runner ends a cancelled or timed-out job with SIGTERM and, about 10 s later, SIGKILL: the same 10 s smtrain
gives the ranks to checkpoint. Killed inside that grace, smtrain never wrote the run's end, and `smtrain status` of
the uploaded run directory said it failed, "killed, or the machine restarted", with no word of the interruption."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

pytestmark = pytest.mark.hardening

STUBBORN = """\
import signal, time
signal.signal(signal.SIGTERM, lambda *_: print("SIGTERM: still saving", flush=True))
for step in range(1, 100000):
    print(f"step={step} loss={1 / step:.4f}", flush=True)
    time.sleep(0.2)
"""


def _spec(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(STUBBORN)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "ci-cancelled", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.10.0",
        "instance": {"type": "ml.c5.2xlarge", "count": 1}, "metrics": [], "max_run_seconds": 600}))
    return spec


def _waited_for(condition, what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.1)


def test_smtrain_killed_within_the_interruptions_grace_leaves_a_run_saying_it_was_interrupted(tmp_path):
    run = tmp_path / "run"
    with subprocess.Popen([sys.executable, "-m", "orchestrator", "local", str(_spec(tmp_path)), "--run-dir", str(run)],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          cwd=tmp_path) as smtrain:
        try:
            _waited_for(lambda: "step=3 " in _log(run), "the script's third step")
            ranks = [process for process in psutil.Process(smtrain.pid).children(recursive=True)
                     if "train.py" in " ".join(process.cmdline())]
            smtrain.send_signal(signal.SIGTERM)
            _waited_for(lambda: "SIGTERM: still saving" in _log(run), "the rank told of the stop")
            smtrain.kill()  # the runner's SIGKILL, while the rank that ignores SIGTERM still has its grace
        finally:
            smtrain.kill()
    assert ranks, "no training process was found"
    _waited_for(lambda: not any(rank.is_running() and rank.status() != psutil.STATUS_ZOMBIE for rank in ranks),
                "the training processes ending with smtrain", seconds=30)

    shown = subprocess.run([sys.executable, "-m", "orchestrator", "status", str(run), "--output", "json"],
                           capture_output=True, text=True, check=False, timeout=120)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    status = json.loads(shown.stdout)
    assert (status["status"], status["secondary_status"]) == ("Stopped", "Interrupted"), status
    assert status["failure_reason"].startswith("smtrain was interrupted (SIGTERM) and its process"), status
    assert "the machine restarted" not in status["failure_reason"]


def _log(run: Path) -> str:
    try:
        return (run / "logs" / "algo-1.log").read_text()
    except OSError:
        return ""
