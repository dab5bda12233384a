"""A real `smtrain local` run of the example spec: no log lines unless --verbose, the loss curve at the end, the
metric series saved in the run directory with exactly the values of the logged lines, and `smtrain metrics
RUN_DIR` reading it back with a PNG."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.observing.metric_series import METRICS_FILE, read_points

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"
SMALL = ["hyperparameters.epochs=1", "hyperparameters.num-samples=1024", "hyperparameters.log-every=2",
         "hyperparameters.mlp-hidden=16"]


def test_local_run_draws_progress_saves_the_series_and_smtrain_metrics_reads_it(tmp_path):
    run_dir = tmp_path / "run"

    done = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(EXAMPLE), "--run-dir", str(run_dir),
                           *(word for override in SMALL for word in ("--set", override))],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, check=False)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "[algo-1]" not in done.stderr, "log lines are printed only with --verbose"
    curve = done.stderr.split("train:loss\n", 1)[1]
    assert sum(0x2800 < ord(char) <= 0x28FF for char in curve) >= 10, done.stderr
    logged = [float(value) for value in re.findall(r"train_loss=([0-9.]+)", (run_dir / "logs" / "algo-1.log").read_text())]
    points = read_points(run_dir / METRICS_FILE)
    assert [point.value for point in points if point.metric == "train:loss"] == logged and len(logged) >= 4
    steps = [point.step for point in points if point.metric == "train:loss"]
    assert steps == sorted(steps) and all(point.host == "algo-1" for point in points)

    png = tmp_path / "run.png"
    shown = subprocess.run([sys.executable, "-m", "orchestrator", "metrics", str(run_dir), "--plot", str(png),
                            "-o", "json"], capture_output=True, text=True, timeout=600, check=False)

    assert shown.returncode == 0, shown.stderr
    assert [row["value"] for row in json.loads(shown.stdout) if row["metric"] == "train:loss"] == logged
    assert png.stat().st_size > 10_000
