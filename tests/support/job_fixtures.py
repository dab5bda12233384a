"""Fixtures for the tests of SageMaker jobs (tests/cli, cloud, backends, api, observing; a pytest plugin that
tests/conftest.py loads): specs, a bucket and call-recording sessions on moto's server, a planned request, and a
Stubber-backed session where moto has gaps (StopTrainingJob; jobs that are not Completed at once)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from job_fakes import BUCKET, SageMakerStubbedSession, StubbedSession, shared_loader_session, write_spec_file

from orchestrator.api import Plan, plan


@pytest.fixture
def write_spec(tmp_path: Path) -> Callable[..., Path]:
    """Writes BASE_SPEC updated with the given fields, and a one-file source_dir, into tmp_path."""
    return functools.partial(write_spec_file, tmp_path)


@pytest.fixture(scope="session")
def tiny_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    """The plan of BASE_SPEC as job `tiny-1`, made once: planning is pure; moto is reset for every test."""
    session = shared_loader_session(
        region_name="us-east-1", aws_access_key_id="unused", aws_secret_access_key="unused"
    )
    return plan(write_spec_file(tmp_path_factory.mktemp("tiny")), job_name="tiny-1", boto=session)


@pytest.fixture(scope="session")
def tiny_request(tiny_plan: Plan) -> dict:
    """The CreateTrainingJob request of job_fakes' BASE_SPEC (2 x ml.c5.2xlarge, default metric definitions)."""
    return tiny_plan.create_training_job_request


@pytest.fixture
def bucket(aws: str) -> str:
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    return BUCKET


@pytest.fixture
def calls(aws: str) -> tuple[boto3.Session, list[str]]:
    """A session on moto's server, and the `service.Operation` of each HTTP request it sends."""
    session = shared_loader_session(region_name="us-east-1")
    sent: list[str] = []

    def record(request: Any, event_name: str, **_: Any) -> None:
        sent.append(".".join(event_name.split(".")[1:3]))

    session.events.register("before-send", record)
    return session, sent


@pytest.fixture
def stubbed() -> Iterator[StubbedSession]:
    """Queue responses on `stubbed.stubbers[service]`; every queued response must be consumed."""
    session = StubbedSession()
    for stubber in session.stubbers.values():
        stubber.activate()
    yield session
    for stubber in session.stubbers.values():
        stubber.deactivate()
        stubber.assert_no_pending_responses()


@pytest.fixture
def stubbed_sagemaker(aws: str) -> Iterator[SageMakerStubbedSession]:
    """SageMaker on a Stubber (queue on `.stubbers["sagemaker"]`, every response consumed), CloudWatch Logs and
    metrics on moto's server; `.sent` lists the `service.Operation` of each request that reached moto."""
    session = SageMakerStubbedSession()
    session.sent = []
    session.events.register("before-send", lambda event_name, **_: session.sent.append(
        ".".join(event_name.split(".")[1:3])))
    stubber = session.stubbers["sagemaker"]
    stubber.activate()
    yield session
    stubber.deactivate()
    stubber.assert_no_pending_responses()
