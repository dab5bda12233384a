"""`smtrain infra show|deploy` go to the region the job commands use: --region, else $AWS_REGION (which the AWS
CLI v2 and SageMaker's containers set but boto3 ignores), else boto3's chain. Against moto's server."""

from __future__ import annotations

import dataclasses
import json

import boto3
from click.testing import CliRunner
from job_fakes import shared_loader_session

from orchestrator.cli.infra import infra as infra_group
from orchestrator.cloud import infra, sdk
from orchestrator.specs import images


def _run(*args: str):
    return CliRunner().invoke(infra_group, list(args))


def test_infra_show_reads_the_stack_in_aws_region_over_the_default_region(moto_session, all_features, monkeypatch):
    outputs = infra.deploy(
        infra.Deployment(parameters=all_features, poll_seconds=0),
        session=moto_session,
    )  # in us-east-1
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")

    elsewhere = _run("show")
    named = _run("show", "--region", "us-east-1", "-o", "json")

    assert elsewhere.exit_code == 2, elsewhere.output
    assert "CloudFormation stack 'smtrain' does not exist in eu-west-1" in elsewhere.stderr
    assert named.exit_code == 0, named.output
    assert json.loads(named.stdout) == dataclasses.asdict(outputs)


def test_infra_deploy_creates_the_stack_in_aws_region(all_features, moto_outputs, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    made = sdk.boto_session
    monkeypatch.setattr(sdk, "boto_session", lambda region=None, **kw: moto_outputs(made(region, **kw)))
    options = [arg for key, value in all_features.items() for arg in ("-p", f"{key}={value}")]

    result = _run("deploy", "--yes", "-o", "json", *options)

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["region"] == "eu-west-1"
    [stack] = boto3.client("cloudformation", region_name="eu-west-1").describe_stacks()["Stacks"]
    assert stack["StackName"] == "smtrain"
    assert boto3.client("cloudformation", region_name="us-east-1").describe_stacks()["Stacks"] == []


def test_infra_deploy_lets_the_role_pull_the_images_smtrain_plans_in_an_opt_in_region(all_features, moto_outputs):
    """af-south-1's Deep Learning Containers are in account 626614931356, not the template's default."""
    session = moto_outputs(shared_loader_session(region_name="af-south-1"))
    image = images.image_uri("2.10.0", "py313", "af-south-1", "gpu")

    outputs = infra.deploy(infra.Deployment(parameters=all_features, poll_seconds=0), session=session)

    iam = session.client("iam")
    [attached] = iam.list_attached_role_policies(RoleName=outputs.role_arn.rsplit("/", 1)[1])["AttachedPolicies"]
    version = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=attached["PolicyArn"], VersionId=version)["PolicyVersion"]["Document"]
    [pull] = [statement for statement in document["Statement"] if statement.get("Sid") == "PullTrainingImages"]
    registry, repository = image.split(".", 1)[0], image.split("/", 1)[1].split(":", 1)[0]
    assert f"arn:aws:ecr:af-south-1:{registry}:repository/{repository}" in pull["Resource"]
