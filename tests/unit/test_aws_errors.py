"""One translation of AWS failures for every command: the same failure gets the same advice whether a job
command or `smtrain infra` met it (botocore's Stubber: real clients, canned errors, no network)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from orchestrator.cloud import infra
from orchestrator.cloud.jobs import Job
from orchestrator.errors import AwsError, EnvironmentProblem

DENIED = ("User: arn:aws:iam::123456789012:user/dev is not authorized to perform: {action} on resource: "
          "arn:aws:{service}:us-east-1:123456789012:thing because no identity-based policy allows it")


def _session_answering(service: str, method: str, code: str, message: str) -> Any:
    session = boto3.Session(region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    client = session.client(service)
    stubber = Stubber(client)
    stubber.add_client_error(method, service_error_code=code, service_message=message, http_status_code=403)
    stubber.activate()
    session.client = lambda *args, **kwargs: client  # cloud.sdk.client() asks the session for its client
    return session


def _failure(call, service: str, method: str, code: str, action: str) -> AwsError:
    session = _session_answering(service, method, code, DENIED.format(action=action, service=service))
    with pytest.raises(AwsError) as raised:
        call(session)
    return raised.value


def test_access_denied_gets_the_same_advice_from_infra_and_job_commands():
    from_infra = _failure(lambda session: infra.stack_outputs(session=session), "cloudformation",
                          "describe_stacks", "AccessDenied", "cloudformation:DescribeStacks")
    from_jobs = _failure(lambda session: Job("tiny-1", session).status(), "sagemaker",
                         "describe_training_job", "AccessDeniedException", "sagemaker:DescribeTrainingJob")

    assert "reading CloudFormation stack smtrain: DescribeStacks failed: AccessDenied" in str(from_infra)
    assert "not authorized to perform: cloudformation:DescribeStacks" in str(from_infra)
    assert "DescribeTrainingJob failed: AccessDeniedException" in str(from_jobs)
    assert from_infra.fix == from_jobs.fix
    assert "action named above" in from_infra.fix and "README" in from_infra.fix
    assert from_infra.exit_code == from_jobs.exit_code == 1


def test_missing_region_gets_the_same_advice_from_infra_and_job_commands(monkeypatch):
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    bare = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
    problems = []
    for call in (lambda: infra.stack_outputs(session=bare), lambda: Job("tiny-1", bare).status()):
        with pytest.raises(EnvironmentProblem, match="no AWS region configured") as raised:
            call()
        problems.append(raised.value.fix)

    assert problems[0] == problems[1]
    assert "AWS_REGION" in problems[0] and "--region" in problems[0]
