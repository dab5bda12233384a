"""Inside SageMaker Studio or a notebook instance, a spec without a role takes the Studio's execution role,
found as SDK v2's get_execution_role finds it but with boto3 alone (Studio images ship SDK v3). moto's server
for notebook instances; a Stubber for user profiles, which moto does not model."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber
from job_fakes import shared_loader_session

from orchestrator.cloud import resolve
from orchestrator.specs.model import JobSpec

ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-1"
SPEC = JobSpec.model_validate({"name": "tiny", "entry_point": "train.py", "framework_version": "2.3.0",
                               "instance": {"type": "ml.c5.2xlarge"}, "output_path": "s3://smtrain-test/outputs/"})


@pytest.fixture
def studio_metadata(tmp_path, monkeypatch):
    def write(document: dict) -> None:
        path = tmp_path / "resource-metadata.json"
        path.write_text(json.dumps(document))
        monkeypatch.setattr(resolve, "STUDIO_METADATA", path)

    return write


def test_role_from_the_metadata_file_needs_no_call(studio_metadata):
    studio_metadata({"DomainId": "d-1", "UserProfileName": "me", "ExecutionRoleArn": ROLE})
    session = shared_loader_session(region_name="us-east-1")  # no credentials, no endpoint: any call would fail
    target = resolve.resolve_target(SPEC.model_copy(update={"region": "us-east-1"}), session)
    assert target.role == ROLE
    assert target.sources["role"].to_dict() == {"from": "studio-metadata", "where": str(resolve.STUDIO_METADATA)}


def test_role_of_a_notebook_instance(aws, studio_metadata):
    boto3.client("sagemaker").create_notebook_instance(NotebookInstanceName="nb", InstanceType="ml.t3.medium",
                                                       RoleArn=ROLE)
    studio_metadata({"ResourceName": "nb"})
    assert resolve.resolve_target(SPEC).role == ROLE


@pytest.mark.parametrize("profile_role", [ROLE, None])
def test_role_of_a_studio_user_profile_else_its_domain(aws, studio_metadata, profile_role):
    """The user profile's role; without one, the domain's default (each call queued must be the one made)."""
    studio_metadata({"DomainId": "d-1", "UserProfileName": "me", "ResourceName": "default"})
    session = shared_loader_session()
    sagemaker = session.client("sagemaker")
    stubber = Stubber(sagemaker)
    stubber.add_response("describe_user_profile", {"UserSettings": {"ExecutionRole": profile_role}}
                         if profile_role else {"UserSettings": {}}, {"DomainId": "d-1", "UserProfileName": "me"})
    if not profile_role:
        stubber.add_response("describe_domain", {"DefaultUserSettings": {"ExecutionRole": ROLE}}, {"DomainId": "d-1"})
    real_client = session.client
    session.client = lambda service, *args, **kwargs: (  # CloudFormation (the stack lookup) stays on moto
        sagemaker if service == "sagemaker" else real_client(service, *args, **kwargs))

    with stubber:
        assert resolve.resolve_target(SPEC, session).role == ROLE
    stubber.assert_no_pending_responses()
