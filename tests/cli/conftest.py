"""Fixtures for the command line's tests: jobs on moto's server (the `aws` fixture of tests/conftest.py) made from a
planned request."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "aws"))

from job_fakes import shared_loader_session, write_spec_file

from orchestrator.api import Plan, plan


@pytest.fixture(scope="session")
def tiny_request(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The CreateTrainingJob request of job_fakes' BASE_SPEC (2 x ml.c5.2xlarge, default metric definitions)."""
    session = shared_loader_session(region_name="us-east-1", aws_access_key_id="unused",
                                    aws_secret_access_key="unused")
    planned: Plan = plan(write_spec_file(tmp_path_factory.mktemp("tiny")), job_name="tiny-1", boto=session)
    return planned.create_training_job_request

