"""Fixtures for the command line's tests: jobs on moto's server (the `aws` fixture of tests/conftest.py) made from a
planned request, and local runs as `smtrain local` leaves them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "aws"))

from job_fakes import shared_loader_session, write_spec_file

from orchestrator.api import Plan, plan
from orchestrator.contract import RUN_MARKER_FILE


@pytest.fixture(scope="session")
def tiny_request(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The CreateTrainingJob request of job_fakes' BASE_SPEC (2 x ml.c5.2xlarge, default metric definitions)."""
    session = shared_loader_session(region_name="us-east-1", aws_access_key_id="unused",
                                    aws_secret_access_key="unused")
    planned: Plan = plan(write_spec_file(tmp_path_factory.mktemp("tiny")), job_name="tiny-1", boto=session)
    return planned.create_training_job_request


def finished_run(root: Path, name: str, status: str = "Completed") -> Path:
    """A finished run directory under root/runs/ as `smtrain local` leaves it: status.json, one host's log."""
    run_dir = root / "runs" / name
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / RUN_MARKER_FILE).write_text("")
    (run_dir / "status.json").write_text(json.dumps({
        "TrainingJobName": name, "TrainingJobStatus": status, "SecondaryStatus": status,
        "CreationTime": "2026-11-26T10:00:00+00:00", "SecondaryStatusTransitions": [],
        "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1}}))
    (run_dir / "logs" / "algo-1.log").write_text("epoch=1 step=2/2 train_loss=0.5\n")
    (run_dir / "metrics.jsonl").write_text(json.dumps({"metric": "train:loss", "value": 0.5, "timestamp": "2026-11-26T10:00:01+00:00",
                                                       "step": 2, "host": "algo-1"}) + "\n")
    return run_dir
