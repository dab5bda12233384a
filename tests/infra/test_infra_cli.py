"""`smtrain infra deploy|show` through click's CliRunner, against moto's server where AWS is needed."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from orchestrator.cli.infra import infra as infra_group
from orchestrator.cloud import infra


def _run(*args: str, session=None):
    return CliRunner().invoke(infra_group, list(args), obj=session)


def test_infra_deploy_previews_the_changes_then_prints_the_outputs(moto_session, all_features):
    options = [arg for key, value in all_features.items() for arg in ("--parameter", f"{key}={value}")]

    # The session that fills moto's outputs gap, handed in as the job commands' tests do.
    result = _run("deploy", "--yes", "--output", "json", *options, session=moto_session)

    assert result.exit_code == 0, result.output
    assert "4 changes" in result.stderr
    assert "ExecutionRole" in result.stderr and "AWS::IAM::ManagedPolicy" in result.stderr
    printed = json.loads(result.stdout)
    assert printed == dataclasses.asdict(infra.stack_outputs(session=moto_session))
    assert printed["output_path"] == f"s3://{printed['bucket']}/outputs/"


def test_infra_deploy_answered_no_changes_nothing(moto_session, all_features, monkeypatch):
    monkeypatch.setattr("orchestrator.cli.infra._can_ask", lambda: True)
    options = [arg for key, value in all_features.items() for arg in ("-p", f"{key}={value}")]

    result = CliRunner().invoke(infra_group, ["deploy", *options], input="n\n", obj=moto_session)

    assert result.exit_code == 0, result.output  # "n" is a normal answer, not a failure
    assert "Execute these 4 changes? [y/N]" in result.stderr
    assert "Cancelled: the change set was deleted and nothing changed." in result.stderr
    assert result.stdout == ""
    assert moto_session.client("cloudformation").describe_stacks()["Stacks"] == []
    assert moto_session.client("s3").list_buckets()["Buckets"] == []


def test_infra_show_prints_the_outputs_as_text_and_json(moto_session, all_features):
    outputs = infra.deploy(infra.Deployment(parameters=all_features, poll_seconds=0), session=moto_session)

    text = _run("show")
    as_json = _run("show", "--output", "json")

    assert text.exit_code == 0, text.output
    assert f"role_arn           {outputs.role_arn}\n" in text.stdout
    assert f"checkpoint_prefix  s3://{outputs.bucket}/checkpoints/\n" in text.stdout
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == dataclasses.asdict(outputs)


def test_infra_show_of_an_unknown_stack_is_a_clean_error(aws):
    result = _run("show", "--stack-name", "nope")

    assert result.exit_code == 2
    assert "Error: CloudFormation stack 'nope' does not exist in us-east-1" in result.stderr
    assert "smtrain infra deploy" in result.stderr and "SMTRAIN_ROLE" in result.stderr
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)


@pytest.mark.parametrize(
    "args, expected",
    [
        ([], "pass --yes"),
        (["--yes", "--parameter", "EnableVpcAccess"], "'EnableVpcAccess' is not KEY=VALUE"),
        (["--yes", "--parameter", "Bogus=1"], "smtrain.yaml has no parameter Bogus"),
        (["--yes", "--stack-name", "9lives"], "'9lives' is not a valid CloudFormation stack name"),
        (["--yes", "--template-file", "missing.yaml"], "cannot read the CloudFormation template"),
        # CloudFormation would refuse the last two only at CreateChangeSet; the bucket name or s3:// URI in a list
        # only IAM would, as a malformed policy once the bucket exists (a ROLLBACK_COMPLETE stack to delete).
        (["--yes", "-p", "DataBucketArns=s3://my-data"],
         "parameter DataBucketArns: 's3://my-data' must be a bucket ARN (arn:aws:s3:::<bucket>)"),
        (["--yes", "-p", "DataBucketArns=arn:aws:s3:::training-data,my-data"], "'my-data' must be a bucket ARN"),
        (["--yes", "-p", "EnableVpcAccess=yes"], "parameter EnableVpcAccess: 'yes' must be one of true, false"),
        (["--yes", "-p", "CheckpointExpirationDays=0"], "'0' must be a number, at least 1"),
    ],
)
def test_infra_deploy_rejects_bad_input_before_calling_aws(args, expected):
    result = _run("deploy", *args)

    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert "Traceback" not in result.output
