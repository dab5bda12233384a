"""A spec that leaves `role` and `output_path` out takes them from the deployed stack (moto server)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from orchestrator.api import plan
from orchestrator.cli.main import main
from orchestrator.cloud import infra
from orchestrator.specs.loader import load

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"


def test_spec_without_role_or_output_path_uses_the_stack(moto_session, all_features):
    outputs = infra.deploy(infra.Deployment(parameters=all_features, poll_seconds=0), session=moto_session)
    job = plan(load(EXAMPLE, ["role=null", "output_path=null", "checkpoint=null"]), boto=moto_session,
               job_name="from-stack")
    request = job.create_training_job_request
    assert request["RoleArn"] == outputs.role_arn
    assert request["OutputDataConfig"]["S3OutputPath"] == outputs.output_path
    assert job.source_uri == f"{outputs.code_prefix.rstrip('/')}/{job.source.sha256}/sourcedir.tar.gz"
    for name in ("role", "output_path", "code_location"):  # plan names the stack as their source
        assert job.sources[name].to_dict() == {"from": "infra-stack", "where": outputs.stack_name}


def test_spec_values_win_over_the_stack(moto_session, all_features):
    infra.deploy(infra.Deployment(parameters=all_features, poll_seconds=0), session=moto_session)
    job = plan(load(EXAMPLE), boto=moto_session)
    assert job.create_training_job_request["RoleArn"] == "arn:aws:iam::123456789012:role/SageMakerExecution"


def test_infra_show_and_plan_agree(moto_session, all_features, monkeypatch):
    outputs = infra.deploy(infra.Deployment(parameters=all_features, poll_seconds=0), session=moto_session)
    shown = json.loads(CliRunner().invoke(main, ["infra", "show", "--output", "json"]).stdout)
    assert shown["role_arn"] == outputs.role_arn and shown["output_path"] == outputs.output_path
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), "--set", "role=null", "--set", "output_path=null",
                                       "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["create_training_job_request"]["RoleArn"] == outputs.role_arn


def test_a_job_writing_where_the_stacks_role_may_not_is_warned_before_it_trains(moto_session, all_features):
    """The stack's role writes only under outputs/ and checkpoints/: a checkpoint or TensorBoard prefix elsewhere
    (docs/specs.md's example is s3://<bucket>/tensorboard/) planned clean and failed on SageMaker."""
    outputs = infra.deploy(infra.Deployment(parameters=all_features, poll_seconds=0), session=moto_session)
    bucket = f"s3://{outputs.bucket}"
    elsewhere = plan(load(EXAMPLE, ["role=null", "output_path=s3://another-bucket/out/",
                                    f"checkpoint.s3_uri={bucket}/ckpt/", f"tensorboard.s3_uri={bucket}/tensorboard/"]),
                     boto=moto_session)
    warned = {finding.field: finding for finding in elsewhere.findings if finding.rule == "beyond-the-stack-role"}
    assert sorted(warned) == ["checkpoint.s3_uri", "output_path", "tensorboard.s3_uri"]
    assert warned["checkpoint.s3_uri"].message == (
        f"the infra stack's role may write only under {outputs.checkpoint_prefix}: SageMaker could not write "
        f"{bucket}/ckpt/ with it")
    assert warned["checkpoint.s3_uri"].fix.startswith(f"put it under {outputs.checkpoint_prefix}, or set `role:")

    inside = plan(load(EXAMPLE, ["role=null", "output_path=null", f"checkpoint.s3_uri={outputs.checkpoint_prefix}j/",
                                 f"tensorboard.s3_uri={outputs.output_path}tb/"]), boto=moto_session)
    assert not [finding for finding in inside.findings if finding.rule == "beyond-the-stack-role"]
    named_role = plan(load(EXAMPLE, [f"tensorboard.s3_uri={bucket}/tensorboard/"]), boto=moto_session)
    assert not [finding for finding in named_role.findings if finding.rule == "beyond-the-stack-role"]
