"""A local run's handle in a notebook: its summary shows the status, the step of the total from the progress
lines and the latest loss (from the run's metric series: an attached handle has no plan), and links the run directory; read from the run's
own status.json and logs as written by the emulator's StatusReport."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from orchestrator.backends.job import Job
from orchestrator.backends.local import LocalBackend
from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.emulator.supervising.status import StatusReport
from orchestrator.observing.metric_series import MetricPoint


def test_local_run_summary_shows_steps_loss_and_the_run_directory(tmp_path):
    run_dir = tmp_path / "tiny-1"
    (run_dir / "logs").mkdir(parents=True)
    request = {"TrainingJobName": "tiny-1", "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 2},
               "AlgorithmSpecification": {"MetricDefinitions": [dict(item) for item in DEFAULT_METRIC_DEFINITIONS]},
               "HyperParameters": {"epochs": "2"}}
    report = StatusReport(run_dir, request, datetime.now(timezone.utc))
    report.transition("Training")
    (run_dir / "logs" / "algo-1.log").write_text(
        "epoch=1 step=10/40 train_loss=0.900000 samples_per_sec=100.0\n"
        "epoch=1 step=20/40 train_loss=0.500000 samples_per_sec=100.0\n")
    (run_dir / "logs" / "algo-2.log").write_text("hello from 2\n")
    (run_dir / "metrics.jsonl").write_text(json.dumps(MetricPoint("train:loss", 0.5, None, 20, "algo-1").to_dict()) + "\n")

    job = Job(LocalBackend(), str(run_dir))
    job.status()
    progress = job.progress()

    assert (progress.estimate.step, progress.estimate.total) == (20, 40)
    shown = job._repr_html_()
    assert ">InProgress</b> · Training" in shown and '<progress value="20" max="40"' in shown
    assert "step 20/40 (50%)" in shown and "train:loss = 0.5" in shown
    assert f'href="{run_dir.resolve().as_uri()}"' in shown and "2 x ml.c5.2xlarge" in shown
