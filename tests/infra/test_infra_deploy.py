"""orchestrator.cloud.infra: deploy and read the stack against moto's server, and the paths moto cannot take
(rollback, a FAILED empty change set, the deadline) against a Stubber."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from botocore.stub import ANY
from job_fakes import shared_loader_session

from orchestrator.cloud import infra
from orchestrator.cloud.aws_errors import aws_errors
from orchestrator.errors import AwsError, EnvironmentProblem, SmtrainError

STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/smtrain/1"
CHANGE_SET_ID = "arn:aws:cloudformation:us-east-1:123456789012:changeSet/smtrain-1/1"
OUTPUTS = [
    {"OutputKey": "RoleArn", "OutputValue": "arn:aws:iam::123456789012:role/smtrain-ExecutionRole-X"},
    {"OutputKey": "BucketName", "OutputValue": "smtrain-bucket-x"},
    {"OutputKey": "OutputPath", "OutputValue": "s3://smtrain-bucket-x/outputs/"},
    {"OutputKey": "CheckpointPrefix", "OutputValue": "s3://smtrain-bucket-x/checkpoints/"},
    {"OutputKey": "CodePrefix", "OutputValue": "s3://smtrain-bucket-x/code/"},
]
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
REPO = Path(__file__).resolve().parents[2]


def test_resolve_stack_name_prefers_argument_then_environment_then_default(monkeypatch):
    assert infra.resolve_stack_name() == "smtrain"
    monkeypatch.setenv("SMTRAIN_STACK", "team-a")
    assert infra.resolve_stack_name() == "team-a"
    assert infra.resolve_stack_name("mine") == "mine"
    with pytest.raises(SmtrainError, match="not a valid CloudFormation stack name"):
        infra.resolve_stack_name("9lives")


def test_deploy_creates_the_stack_then_finds_nothing_to_change(moto_session, all_features):
    events: list[infra.DeployEvent] = []
    outputs = infra.deploy(
        infra.Deployment(parameters=all_features, on_event=events.append, poll_seconds=0),
        session=moto_session,
    )

    preview = events[0]
    assert preview.stage is infra.DeployStage.PREVIEW
    assert {(c["action"], c["logical_id"], c["type"]) for c in preview.changes} == {
        ("Add", "Bucket", "AWS::S3::Bucket"),
        ("Add", "BucketPolicy", "AWS::S3::BucketPolicy"),
        ("Add", "ExecutionRole", "AWS::IAM::Role"),
        ("Add", "ExecutionPolicy", "AWS::IAM::ManagedPolicy"),
    }
    assert any("CREATE_COMPLETE" in e.message for e in events if e.stage is infra.DeployStage.STACK_EVENT)

    iam = moto_session.client("iam")
    role = iam.get_role(RoleName=outputs.role_arn.rsplit("/", 1)[1])["Role"]
    assert role["Arn"] == outputs.role_arn
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "sagemaker.amazonaws.com"
    }
    attached = iam.list_attached_role_policies(RoleName=role["RoleName"])["AttachedPolicies"]
    assert [policy["PolicyName"].split("-")[1] for policy in attached] == ["ExecutionPolicy"]
    encryption = moto_session.client("s3").get_bucket_encryption(Bucket=outputs.bucket)
    rule = encryption["ServerSideEncryptionConfiguration"]["Rules"][0]["ApplyServerSideEncryptionByDefault"]
    assert rule == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": all_features["KmsKeyArn"]}
    assert outputs == infra.StackOutputs(
        stack_name="smtrain",
        region="us-east-1",
        role_arn=role["Arn"],
        bucket=outputs.bucket,
        output_path=f"s3://{outputs.bucket}/outputs/",
        checkpoint_prefix=f"s3://{outputs.bucket}/checkpoints/",
        code_prefix=f"s3://{outputs.bucket}/code/",
    )

    again: list[infra.DeployEvent] = []
    assert infra.deploy(
        infra.Deployment(on_event=again.append, poll_seconds=0),
        session=moto_session,
    ) == outputs
    assert [e.stage for e in again] == [infra.DeployStage.NO_CHANGES]


def test_deploy_declined_leaves_nothing_behind(moto_session, all_features):
    offered = []

    def decline(changes):
        offered.append(changes)
        return False

    assert (
        infra.deploy(
            infra.Deployment(parameters=all_features, confirm=decline, poll_seconds=0),
            session=moto_session,
        ) is None
    )
    assert len(offered[0]) == 4
    assert moto_session.client("s3").list_buckets()["Buckets"] == []
    with pytest.raises(EnvironmentProblem, match="does not exist"):
        infra.stack_outputs(session=moto_session)


def test_the_permissions_an_access_denied_points_to_name_every_call_deploy_makes(moto_session, all_features):
    """AccessDenied's fix sends the user to docs/sagemaker.md's "Permissions the caller needs", saying it lists
    `smtrain infra deploy`'s actions: a declined first deploy and a deploy that runs, as they call CloudFormation."""
    called: set[str] = set()
    moto_session.events.register("before-call.cloudformation",
                                 lambda model, **_: called.add(model.name))
    infra.deploy(infra.Deployment(parameters=all_features, confirm=lambda _: False, poll_seconds=0),
                 session=moto_session)
    infra.deploy(infra.Deployment(parameters=all_features, poll_seconds=0), session=moto_session)
    called.discard("UpdateStack")  # moto_session's own nudge for the outputs

    listed = (REPO / "docs" / "sagemaker.md").read_text().split("Permissions the caller needs:", 1)[1].split("\n\n")[0]
    with pytest.raises(AwsError) as denied, aws_errors("deploying CloudFormation stack smtrain"):
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not authorized"}}, "CreateChangeSet")
    assert 'docs/sagemaker.md ("Permissions the caller needs") lists' in denied.value.fix
    assert {"DeleteStack", "ExecuteChangeSet", "DescribeStackEvents"} <= called
    assert sorted(action for action in called if f"`{action}`" not in listed
                  and f"`cloudformation:{action}`" not in listed) == []


def test_stack_outputs_of_a_stack_that_is_not_smtrains(moto_session):
    moto_session.client("cloudformation").create_stack(
        StackName="other", TemplateBody='{"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}'
    )
    with pytest.raises(EnvironmentProblem, match="lacks the outputs RoleArn, BucketName") as raised:
        infra.stack_outputs("other", session=moto_session)
    assert "smtrain infra deploy" in str(raised.value)


def test_deploy_rejects_a_parameter_the_template_lacks():
    # No AWS fixture: the check must come before any call (the env has no credentials).
    with pytest.raises(SmtrainError, match="has no parameter Bogus") as raised:
        infra.deploy(infra.Deployment(parameters={"Bogus": "1"}))
    assert "EnableVpcAccess" in raised.value.fix


def test_deploy_update_keeps_previous_values_of_parameters_not_given(stubbed):
    """Also the real CloudFormation answer to an empty change set: FAILED with a reason, not an error."""
    previous = [
        {"ParameterKey": key, "ParameterValue": value}
        for key, value in [("KmsKeyArn", ""), ("CodeExpirationDays", "90"), ("EnableVpcAccess", "true")]
    ]
    stack = {"StackName": "smtrain", "StackId": STACK_ID, "CreationTime": NOW, "Outputs": OUTPUTS}
    stub = stubbed.stubber
    stub.add_response(
        "describe_stacks", {"Stacks": [{**stack, "StackStatus": "UPDATE_COMPLETE", "Parameters": previous}]}
    )
    stub.add_response(
        "create_change_set",
        {"Id": CHANGE_SET_ID, "StackId": STACK_ID},
        {
            "StackName": "smtrain",
            "ChangeSetName": ANY,
            "ChangeSetType": "UPDATE",
            "TemplateBody": ANY,
            "Capabilities": ["CAPABILITY_IAM"],
            "Description": ANY,
            "Parameters": [
                {"ParameterKey": "KmsKeyArn", "UsePreviousValue": True},
                {"ParameterKey": "CodeExpirationDays", "ParameterValue": "90"},
                {"ParameterKey": "EnableVpcAccess", "UsePreviousValue": True},
            ],
        },
    )
    stub.add_response(
        "describe_change_set",
        {
            "ChangeSetName": "smtrain-1",
            "ChangeSetId": CHANGE_SET_ID,
            "Status": "FAILED",
            "StatusReason": "The submitted information didn't contain changes. "
            "Submit different information to create a change set.",
            "Changes": [],
        },
    )
    stub.add_response("delete_change_set", {}, {"ChangeSetName": CHANGE_SET_ID})
    stub.add_response("describe_stacks", {"Stacks": [{**stack, "StackStatus": "UPDATE_COMPLETE"}]})
    events: list[infra.DeployEvent] = []

    outputs = infra.deploy(
        infra.Deployment(parameters={"CodeExpirationDays": "90"}, on_event=events.append, poll_seconds=0),
        session=stubbed,
    )

    assert [e.stage for e in events] == [infra.DeployStage.NO_CHANGES]
    assert outputs.role_arn == "arn:aws:iam::123456789012:role/smtrain-ExecutionRole-X"


def _event(
    event_id: str, logical_id: str, resource_type: str, status: str, reason: str | None = None
) -> dict:
    event = {
        "StackId": STACK_ID,
        "StackName": "smtrain",
        "EventId": event_id,
        "LogicalResourceId": logical_id,
        "ResourceType": resource_type,
        "ResourceStatus": status,
        "Timestamp": NOW,
    }
    return {**event, "ResourceStatusReason": reason} if reason else event


def _stub_change_set_created(stub) -> None:
    stub.add_client_error(
        "describe_stacks", "ValidationError", "Stack with id smtrain does not exist", http_status_code=400
    )
    stub.add_response("create_change_set", {"Id": CHANGE_SET_ID, "StackId": STACK_ID})


def test_deploy_rollback_names_the_resource_that_failed_first(stubbed):
    policy_error = (
        "Resource handler returned message: MalformedPolicyDocument (Service: Iam, Status Code: 400)"
    )
    stub = stubbed.stubber
    _stub_change_set_created(stub)
    stub.add_response(
        "describe_change_set",
        {
            "ChangeSetName": "smtrain-1",
            "ChangeSetId": CHANGE_SET_ID,
            "Status": "CREATE_COMPLETE",
            "Changes": [
                {
                    "Type": "Resource",
                    "ResourceChange": {
                        "Action": "Add",
                        "LogicalResourceId": "ExecutionPolicy",
                        "ResourceType": "AWS::IAM::ManagedPolicy",
                    },
                }
            ],
        },
    )
    stack_type = "AWS::CloudFormation::Stack"
    stub.add_response(
        "describe_stack_events", {"StackEvents": [_event("e0", "smtrain", stack_type, "REVIEW_IN_PROGRESS")]}
    )
    stub.add_response("execute_change_set", {}, {"ChangeSetName": CHANGE_SET_ID})
    stub.add_response(
        "describe_stacks",
        {"Stacks": [{"StackName": "smtrain", "CreationTime": NOW, "StackStatus": "ROLLBACK_COMPLETE"}]},
    )
    newest_first = [
        _event("e5", "smtrain", stack_type, "ROLLBACK_COMPLETE"),
        _event("e4", "Bucket", "AWS::S3::Bucket", "CREATE_FAILED", "Resource creation cancelled"),
        _event("e3", "ExecutionPolicy", "AWS::IAM::ManagedPolicy", "CREATE_FAILED", policy_error),
        _event("e2", "ExecutionPolicy", "AWS::IAM::ManagedPolicy", "CREATE_IN_PROGRESS"),
        _event("e1", "smtrain", stack_type, "CREATE_IN_PROGRESS", "User Initiated"),
        _event("e0", "smtrain", stack_type, "REVIEW_IN_PROGRESS"),
    ]
    stub.add_response("describe_stack_events", {"StackEvents": newest_first})
    events: list[infra.DeployEvent] = []

    with pytest.raises(AwsError) as raised:
        infra.deploy(infra.Deployment(on_event=events.append, poll_seconds=0), session=stubbed)

    error = raised.value
    failed_policy = f"ExecutionPolicy (AWS::IAM::ManagedPolicy) CREATE_FAILED: {policy_error}"
    assert str(error).startswith(f"stack smtrain ended in ROLLBACK_COMPLETE: {failed_policy}\n")
    assert "delete-stack --stack-name smtrain" in error.fix
    assert error.exit_code == 1
    reported = [e.message.split(" ")[0] for e in events if e.stage is infra.DeployStage.STACK_EVENT]
    assert reported == ["smtrain", "ExecutionPolicy", "ExecutionPolicy", "Bucket", "smtrain"]


def test_deploy_over_a_failed_create_says_to_delete_the_stack_first(stubbed):
    stubbed.stubber.add_response(
        "describe_stacks",
        {"Stacks": [{"StackName": "smtrain", "CreationTime": NOW, "StackStatus": "ROLLBACK_COMPLETE"}]},
    )
    with pytest.raises(AwsError, match="stack smtrain is ROLLBACK_COMPLETE") as raised:
        infra.deploy(session=stubbed)
    assert "aws cloudformation delete-stack --stack-name smtrain" in raised.value.fix


def test_deploy_gives_up_at_the_deadline(stubbed):
    stub = stubbed.stubber
    _stub_change_set_created(stub)
    stub.add_response(
        "describe_change_set",
        {"ChangeSetName": "smtrain-1", "ChangeSetId": CHANGE_SET_ID, "Status": "CREATE_IN_PROGRESS"},
    )
    with pytest.raises(AwsError, match="gave up after 0 s waiting for change set smtrain-1"):
        infra.deploy(infra.Deployment(poll_seconds=0, timeout_seconds=0), session=stubbed)


@pytest.mark.parametrize(
    "region, expected",
    [(None, "no AWS region configured"), ("us-east-1", "no AWS credentials found")],
)
def test_stack_outputs_without_region_or_credentials_says_how_to_fix(monkeypatch, region, expected):
    if region:
        monkeypatch.setenv("AWS_DEFAULT_REGION", region)
    with pytest.raises(EnvironmentProblem, match=expected) as raised:
        infra.stack_outputs(session=shared_loader_session())
    assert raised.value.fix
