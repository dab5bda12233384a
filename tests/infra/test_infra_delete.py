"""`smtrain infra delete` and orchestrator.cloud.infra's plan_teardown/tear_down, against moto's server; the
DELETE_FAILED path, which moto cannot take, against a Stubber.

moto 5.2.5 cannot delete smtrain's own stack (its DeleteStack removes the role before detaching the managed policy:
DeleteConflict), and honours only DeletionPolicy "Retain", not the template's RetainExceptOnCreate. So the stacks
deleted here are small ones of a bucket and a role, made with CreateStack; smtrain's template is only planned.
"""

from __future__ import annotations

import datetime as dt
import json

import boto3
import pytest
from click.testing import CliRunner

from orchestrator.cli.infra import infra as infra_group
from orchestrator.cloud import infra
from orchestrator.errors import AwsError

ROLE = {
    "Type": "AWS::IAM::Role",
    "Properties": {"AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}]}},
}
STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/smtrain/1"


def _stack(deletion_policy: str | None) -> tuple[str, str]:
    """A stack named smtrain of a versioned bucket holding 1 object in 4 versions and delete markers, and a role;
    returns the bucket's and the role's names."""
    bucket: dict = {"Type": "AWS::S3::Bucket"}
    if deletion_policy:
        bucket["DeletionPolicy"] = deletion_policy
    cfn, s3 = boto3.client("cloudformation"), boto3.client("s3")
    template = {"Resources": {"Bucket": bucket, "ExecutionRole": ROLE}}
    cfn.create_stack(StackName="smtrain", TemplateBody=json.dumps(template), Capabilities=["CAPABILITY_IAM"])
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"]
                for r in cfn.list_stack_resources(StackName="smtrain")["StackResourceSummaries"]}
    name = physical["Bucket"]
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    for key in ("outputs/model.tar.gz", "outputs/model.tar.gz", "checkpoints/step-1.pt"):
        s3.put_object(Bucket=name, Key=key, Body=b"x")
    s3.delete_object(Bucket=name, Key="checkpoints/step-1.pt")
    return name, physical["ExecutionRole"]


def _run(*args: str, **kwargs):
    return CliRunner().invoke(infra_group, ["delete", *args], **kwargs)


def _stack_status(cfn) -> str | None:
    stacks = cfn.describe_stacks()["Stacks"]  # live stacks only, as CloudFormation lists them by name
    return stacks[0]["StackStatus"] if stacks else None


def _role_exists(name: str) -> bool:
    return any(role["RoleName"] == name for role in boto3.client("iam").list_roles()["Roles"])


def _versions(bucket: str) -> int:
    listed = boto3.client("s3").list_object_versions(Bucket=bucket)
    return len(listed.get("Versions", [])) + len(listed.get("DeleteMarkers", []))


def test_a_kept_bucket_is_said_kept_and_outlives_the_stack_with_its_objects(aws):
    bucket, role = _stack("Retain")

    result = _run("--yes")

    assert result.exit_code == 0, result.output
    assert "stack smtrain in us-east-1 (CREATE_COMPLETE):" in result.stderr
    assert "kept (Retain)" in result.stderr and role in result.stderr
    assert (f"bucket {bucket} is kept: its DeletionPolicy is Retain, so your outputs and checkpoints outlive the "
            "stack (1 object, 4 versions and delete markers in all)") in " ".join(result.stderr.split())
    assert "DELETE_COMPLETE" in result.stderr
    assert result.stdout == f"stack smtrain deleted in us-east-1; bucket {bucket} kept\n"
    assert _stack_status(boto3.client("cloudformation")) is None
    assert not _role_exists(role)
    assert _versions(bucket) == 4


def test_a_bucket_the_stack_would_delete_while_it_holds_objects_is_refused_before_anything_is_deleted(aws):
    bucket, role = _stack(None)

    result = _run("--yes")

    assert result.exit_code == 2, result.output
    assert (f"Error: CloudFormation cannot delete bucket {bucket} with stack smtrain: it holds 1 object, "
            "4 versions and delete markers in all") in result.stderr
    assert "pass --delete-bucket" in result.stderr and "Traceback" not in result.output
    assert _stack_status(boto3.client("cloudformation")) == "CREATE_COMPLETE"
    assert _role_exists(role) and _versions(bucket) == 4


def test_delete_bucket_empties_every_version_first_so_cloudformation_deletes_the_bucket(aws):
    bucket, role = _stack(None)

    result = _run("--yes", "--delete-bucket", "--output", "json")

    assert result.exit_code == 0, result.output
    assert f"bucket {bucket}: deleted 4 of 4 object versions" in result.stderr
    assert json.loads(result.stdout) == {
        "stack_name": "smtrain", "region": "us-east-1", "status": "DELETE_COMPLETE", "bucket": bucket,
        "bucket_kept": False, "object_versions_deleted": 4,
    }
    assert bucket not in [b["Name"] for b in boto3.client("s3").list_buckets()["Buckets"]]
    assert not _role_exists(role)


def test_delete_bucket_deletes_a_kept_bucket_after_the_stack(aws):
    bucket, _ = _stack("Retain")

    result = _run("--yes", "--delete-bucket")

    assert result.exit_code == 0, result.output
    assert "after the stack is deleted" in " ".join(result.stderr.split())
    assert result.stderr.index("DELETE_COMPLETE") < result.stderr.index(f"bucket {bucket}: deleted 4 of 4")
    assert result.stdout == (
        f"stack smtrain deleted in us-east-1; bucket {bucket} deleted with its 4 object versions\n"
    )
    assert bucket not in [b["Name"] for b in boto3.client("s3").list_buckets()["Buckets"]]


def test_answering_no_deletes_nothing_and_the_plan_reads_smtrains_deletion_policy(
    moto_session, all_features, monkeypatch
):
    monkeypatch.setattr("orchestrator.cli.infra._can_ask", lambda: True)
    outputs = infra.deploy(infra.Deployment(parameters=all_features, poll_seconds=0), session=moto_session)
    status = _stack_status(moto_session.client("cloudformation"))

    result = _run(input="n\n")

    assert result.exit_code == 0, result.output
    flat = " ".join(result.stderr.split())
    assert "kept (RetainExceptOnCreate)" in flat and outputs.role_arn.rsplit("/", 1)[1] in flat
    assert f"bucket {outputs.bucket} is kept: its DeletionPolicy is RetainExceptOnCreate" in flat
    assert "Delete stack smtrain in us-east-1? [y/N]" in result.stderr
    assert "Cancelled: nothing was deleted." in result.stderr
    assert _stack_status(moto_session.client("cloudformation")) == status
    assert _role_exists(outputs.role_arn.rsplit("/", 1)[1])


@pytest.mark.parametrize("args, expected", [
    (["--stack-name", "nope", "--yes"],
     "Error: CloudFormation stack 'nope' does not exist in us-east-1: nothing to delete"),
    ([], "no terminal to confirm the deletion on: pass --yes"),
])
def test_a_missing_stack_or_no_terminal_is_a_clean_error(aws, args, expected):
    result = _run(*args)

    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert "Traceback" not in result.output


def test_delete_failed_names_the_resource_and_cloudformations_reason(stubbed):
    reason = "Cannot delete entity, must detach all policies first. (Service: Iam, Status Code: 409)"
    now = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    stack = {"StackName": "smtrain", "StackId": STACK_ID, "CreationTime": now}
    event = {"StackId": STACK_ID, "StackName": "smtrain", "Timestamp": now}
    stub = stubbed.stubber
    stub.add_response("describe_stack_events", {"StackEvents": [
        {**event, "EventId": "old", "LogicalResourceId": "smtrain", "ResourceType": "AWS::CloudFormation::Stack",
         "ResourceStatus": "CREATE_COMPLETE"}]})
    stub.add_response("delete_stack", {}, {"StackName": STACK_ID})
    stub.add_response("describe_stacks", {"Stacks": [{**stack, "StackStatus": "DELETE_FAILED"}]})
    stub.add_response("describe_stack_events", {"StackEvents": [
        {**event, "EventId": "2", "LogicalResourceId": "ExecutionRole", "ResourceType": "AWS::IAM::Role",
         "ResourceStatus": "DELETE_FAILED", "ResourceStatusReason": reason},
        {**event, "EventId": "old", "LogicalResourceId": "smtrain", "ResourceType": "AWS::CloudFormation::Stack",
         "ResourceStatus": "CREATE_COMPLETE"}]})
    teardown = infra.Teardown("smtrain", STACK_ID, "us-east-1", "CREATE_COMPLETE", (), None, None)
    events: list[infra.DeployEvent] = []

    with pytest.raises(AwsError) as raised:
        infra.tear_down(teardown, infra.Removal(on_event=events.append, poll_seconds=0), session=stubbed)

    assert raised.value.message == (
        f"stack smtrain ended in DELETE_FAILED: ExecutionRole (AWS::IAM::Role) DELETE_FAILED: {reason}"
    )
    assert "smtrain infra delete` again" in raised.value.fix and "--retain-resources" in raised.value.fix
    assert [e.stage for e in events] == [infra.DeployStage.STACK_EVENT]
