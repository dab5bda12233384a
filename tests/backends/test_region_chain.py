"""One region chain for both executors: a local run plans for the region a submit would use."""

from __future__ import annotations

from pathlib import Path

from orchestrator.cloud.resolve import resolve_target
from orchestrator.emulator.local_plan import local_target
from orchestrator.spec.model import JobSpec


def _spec(**fields) -> JobSpec:
    return JobSpec(name="region", entry_point="train.py", framework_version="2.10.0",
                   instance={"type": "ml.c5.2xlarge"}, role="arn:aws:iam::123456789012:role/SageMakerExecution",
                   output_path="s3://bucket/out/", **fields)


def test_the_emulator_and_the_cloud_resolve_the_same_region_from_the_same_profile(tmp_path, monkeypatch):
    config = Path(tmp_path / "aws-config")
    config.write_text("[profile training]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "training")

    local, cloud = local_target(_spec(), tmp_path / "run"), resolve_target(_spec())

    assert local.region == cloud.region == "eu-west-1"
    assert not local.region_is_fallback and not cloud.region_is_fallback


def test_aws_region_and_the_spec_come_before_the_profile_for_both(tmp_path, monkeypatch):
    config = Path(tmp_path / "aws-config")
    config.write_text("[default]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_REGION", "ap-southeast-2")

    assert local_target(_spec(), tmp_path).region == resolve_target(_spec()).region == "ap-southeast-2"
    named = _spec(region="us-west-2")
    assert local_target(named, tmp_path).region == resolve_target(named).region == "us-west-2"


def test_with_no_region_anywhere_both_fall_back_and_say_so(tmp_path):
    local, cloud = local_target(_spec(), tmp_path), resolve_target(_spec())

    assert local.region == cloud.region == "us-east-1"
    assert local.region_is_fallback and cloud.region_is_fallback
