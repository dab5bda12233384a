"""Sessions for the infra tests: one for moto's server that fills moto's change-set gap, one on a Stubber."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import boto3
import pytest
from botocore.stub import Stubber
from job_fakes import shared_loader_core, shared_loader_session

from orchestrator.cloud.infra import CAPABILITIES


@pytest.fixture
def all_features() -> dict[str, str]:
    """Parameters that turn on every optional part of the template.

    moto 5.2.5 turns `!If [Cond, {...}, !Ref AWS::NoValue]` inside a list into null instead of dropping the
    item (moto/cloudformation/parsing.py, clean_json), and its IAM then rejects the policy as malformed. With
    every feature on, no condition falls back to AWS::NoValue, and every statement meets moto's validator.
    """
    return {
        "KmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        "DataBucketArns": "arn:aws:s3:::training-data-a,arn:aws:s3:::training-data-b",
        "EnableVpcAccess": "true",
        "EnableRemoteDebug": "true",
    }


@pytest.fixture
def moto_session(aws) -> boto3.Session:
    """A session on the freshly reset moto server, plus the one nudge moto needs to give stacks outputs.

    moto 5.2.5's ExecuteChangeSet creates the resources but never builds the stack's Outputs
    (moto/cloudformation/models.py, CloudFormationBackend.execute_change_set). After each ExecuteChangeSet
    this asks moto for an UpdateStack of every stack (the tests make one) with its current template and
    parameters, which builds the outputs from the template as CloudFormation would. Nothing is faked.
    """
    return with_moto_outputs(shared_loader_session())


@pytest.fixture
def moto_outputs(aws) -> Callable[[boto3.Session], boto3.Session]:
    """moto_session's nudge, for sessions the code under test makes itself: `moto_outputs(session)`."""
    return with_moto_outputs


def with_moto_outputs(session: boto3.Session) -> boto3.Session:
    """Registers moto_session's outputs nudge on `session`; returns it."""

    def build_outputs(**_):
        cfn = session.client("cloudformation")
        for stack in cfn.describe_stacks()["Stacks"]:
            cfn.update_stack(
                StackName=stack["StackName"], UsePreviousTemplate=True, Capabilities=list(CAPABILITIES)
            )

    session.events.register("after-call.cloudformation.ExecuteChangeSet", build_outputs)
    return session


class StubbedSession(boto3.Session):
    """A real boto3 Session whose CloudFormation client answers from `self.stubber`, without network."""

    def __init__(self) -> None:
        super().__init__(region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing",
                         botocore_session=shared_loader_core())
        self.cfn = super().client("cloudformation")
        self.stubber = Stubber(self.cfn)

    def client(self, service_name, **kwargs):
        assert service_name == "cloudformation", service_name
        return self.cfn


@pytest.fixture
def stubbed() -> Iterator[StubbedSession]:
    """Queue responses on `stubbed.stubber`; every queued response must be consumed by the test."""
    session = StubbedSession()
    with session.stubber:
        yield session
        session.stubber.assert_no_pending_responses()
