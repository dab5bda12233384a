"""Fixtures for the observability tests: jobs on moto's server (the `aws` fixture of tests/conftest.py) made from
a planned request, sessions whose SageMaker client is a Stubber where moto cannot play a running or failed job,
and specs around the hang fixture script."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "aws"))

from job_fakes import StubbedSession, shared_loader_session, write_spec_file

from orchestrator.api import Plan, plan

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture(scope="session")
def tiny_request(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The CreateTrainingJob request of job_fakes' BASE_SPEC (2 x ml.c5.2xlarge, default metric definitions)."""
    session = shared_loader_session(region_name="us-east-1", aws_access_key_id="unused",
                                    aws_secret_access_key="unused")
    planned: Plan = plan(write_spec_file(tmp_path_factory.mktemp("tiny")), job_name="tiny-1", boto=session)
    return planned.create_training_job_request


class SageMakerStubbedSession(StubbedSession):
    """SageMaker answers from a Stubber (moto makes every job Completed at once); CloudWatch Logs and metrics
    are moto's server, seeded by the test."""

    STUBBED = ("sagemaker",)


@pytest.fixture
def stubbed_sagemaker(aws: str) -> Iterator[SageMakerStubbedSession]:
    session = SageMakerStubbedSession()
    stubber = session.stubbers["sagemaker"]
    stubber.activate()
    yield session
    stubber.deactivate()
    stubber.assert_no_pending_responses()


@pytest.fixture
def hang_spec(tmp_path: Path) -> Path:
    """Two hosts in mode none running scripts/hang_script.py: rank 0 blocks in an all_reduce rank 1 never joins."""
    shutil.copytree(SCRIPTS, tmp_path / "src")
    spec = {"name": "hang-test", "entry_point": "hang_script.py", "source_dir": "src", "framework_version": "2.3.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 2}, "distribution": {"mode": "none"},
            "max_run_seconds": 600}
    path = tmp_path / "hang.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path
