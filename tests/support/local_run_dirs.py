"""A local run's directory as `smtrain local` leaves it, written by hand: for tests of what status, logs and
metrics read from one, without running a job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.contract import RUN_MARKER_FILE


def written_run_dir(run_dir: Path, logs: dict[str, str], **status: Any) -> Path:
    """`run_dir` with its marker, a status.json of a one-host run still Training (`status` overrides its
    fields) and each host's log text (`logs`: host to text, as the run writes it)."""
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / RUN_MARKER_FILE).write_text("")
    (run_dir / "status.json").write_text(json.dumps({
        "TrainingJobName": run_dir.name, "TrainingJobStatus": "InProgress", "SecondaryStatus": "Training",
        "CreationTime": "2026-11-26T10:00:00+00:00", "SecondaryStatusTransitions": [],
        "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1}, **status}))
    for host, text in logs.items():
        (run_dir / "logs" / f"{host}.log").write_text(text)
    return run_dir
