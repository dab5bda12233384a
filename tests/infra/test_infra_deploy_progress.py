"""`smtrain infra deploy` while CloudFormation works: each stack event with the time since the change set was
executed, a line when no event has come for a while, and after a deploy a stack without outputs names its causes
instead of sending the user back to `smtrain infra deploy`. CloudFormation answers from a Stubber (moto creates a
stack at once, with no events in between)."""

from __future__ import annotations

import dataclasses
import re

import pytest
from click.testing import CliRunner
from test_infra_deploy import CHANGE_SET_ID, NOW, OUTPUTS, STACK_ID, _event, _stub_change_set_created

from orchestrator.cli.infra import infra as infra_group
from orchestrator.cloud import infra

STACK_TYPE = "AWS::CloudFormation::Stack"


def _stub_a_create(stub, outputs: list[dict]) -> None:
    """A create that reports one event, then nothing new for a poll, then completes."""
    _stub_change_set_created(stub)
    stub.add_response("describe_change_set", {
        "ChangeSetName": "smtrain-1", "ChangeSetId": CHANGE_SET_ID, "Status": "CREATE_COMPLETE",
        "Changes": [{"Type": "Resource", "ResourceChange": {"Action": "Add", "LogicalResourceId": "Bucket",
                                                             "ResourceType": "AWS::S3::Bucket"}}]})
    stub.add_response("describe_stack_events", {"StackEvents": [_event("e0", "smtrain", STACK_TYPE,
                                                                       "REVIEW_IN_PROGRESS")]})
    stub.add_response("execute_change_set", {}, {"ChangeSetName": CHANGE_SET_ID})
    in_progress = {"Stacks": [{"StackName": "smtrain", "CreationTime": NOW, "StackStatus": "CREATE_IN_PROGRESS"}]}
    first = [_event("e1", "Bucket", "AWS::S3::Bucket", "CREATE_IN_PROGRESS"),
             _event("e0", "smtrain", STACK_TYPE, "REVIEW_IN_PROGRESS")]
    stub.add_response("describe_stacks", in_progress)
    stub.add_response("describe_stack_events", {"StackEvents": first})
    stub.add_response("describe_stacks", in_progress)
    stub.add_response("describe_stack_events", {"StackEvents": first})  # nothing new: the heartbeat
    done = [_event("e2", "Bucket", "AWS::S3::Bucket", "CREATE_COMPLETE"), *first]
    stack = {"StackName": "smtrain", "StackId": STACK_ID, "CreationTime": NOW, "StackStatus": "CREATE_COMPLETE",
             "Outputs": outputs}
    stub.add_response("describe_stacks", {"Stacks": [stack]})
    stub.add_response("describe_stack_events", {"StackEvents": done})
    stub.add_response("describe_stacks", {"Stacks": [stack]})


@pytest.fixture
def prompt_heartbeat(monkeypatch):
    """The heartbeat at once, and no poll waiting its 5 s for answers that are stubbed (the CLI's deployment keeps
    the default interval: 10 s of sleep a test without this)."""
    monkeypatch.setattr(infra, "HEARTBEAT_SECONDS", 0.0)
    pause = infra._Poller.pause
    monkeypatch.setattr(infra._Poller, "pause",
                        lambda poller, waiting_for: pause(dataclasses.replace(poller, poll_seconds=0.0), waiting_for))


def test_each_stack_event_and_the_wait_are_printed_with_elapsed_time(stubbed, prompt_heartbeat):
    _stub_a_create(stubbed.stubber, OUTPUTS)
    events: list[infra.DeployEvent] = []
    infra.deploy(infra.Deployment(on_event=events.append, poll_seconds=0), session=stubbed)
    stages = [event.stage for event in events]
    assert stages[0] is infra.DeployStage.PREVIEW and infra.DeployStage.WAITING in stages
    timed = [event for event in events if event.stage is not infra.DeployStage.PREVIEW]
    assert [event.message.split(" ")[0] for event in timed if event.stage is infra.DeployStage.STACK_EVENT] == \
        ["Bucket", "Bucket"]
    assert all(event.elapsed_seconds is not None and event.elapsed_seconds >= 0 for event in timed)


def test_the_cli_prefixes_stack_events_with_minutes_and_seconds(stubbed, prompt_heartbeat):
    _stub_a_create(stubbed.stubber, OUTPUTS)
    result = CliRunner().invoke(infra_group, ["deploy", "--yes"], obj=stubbed)
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert any(re.fullmatch(r"\[ ?\d+m\d\ds\] Bucket \(AWS::S3::Bucket\) CREATE_COMPLETE", line) for line in lines)
    assert any(re.fullmatch(r"\[ ?\d+m\d\ds\] stack smtrain still CREATE_IN_PROGRESS: .*", line) for line in lines)


def test_a_stack_just_deployed_without_outputs_names_the_causes_not_deploy_again(stubbed, prompt_heartbeat):
    _stub_a_create(stubbed.stubber, [])
    result = CliRunner().invoke(infra_group, ["deploy", "--yes"], obj=stubbed)
    assert result.exit_code == 2
    assert "stack smtrain deployed, but it lacks the outputs RoleArn" in result.stderr
    assert "moto" in result.stderr and "run `smtrain infra deploy`" not in result.stderr
