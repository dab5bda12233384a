"""One region chain for both executors: a local run plans for the region a submit would use."""

from __future__ import annotations

from pathlib import Path

from forked import SMTRAIN_PRELOAD, run_forked

from orchestrator.cloud.resolve import resolve_target
from orchestrator.emulator.local_plan import local_target
from orchestrator.specs.model import JobSpec


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


def test_the_region_is_read_without_boto3_unless_a_profile_may_name_it(tmp_path):
    """boto3's import is most of a plan's time: the environment, or the absence of any AWS config file, answers
    without it; only a config file (a profile's region) needs boto3 to read it. Each case runs in a process
    forked from the CLI's warm interpreter (tests/support/forked.py), which has not imported boto3 either."""
    script = tmp_path / "region.py"
    script.write_text("import sys\nfrom pathlib import Path\n"
                      "from orchestrator.emulator.local_plan import local_target\n"
                      "from orchestrator.specs.model import JobSpec\n"
                      "spec = JobSpec(name='region', entry_point='train.py', framework_version='2.10.0', "
                      "instance={'type': 'ml.c5.2xlarge'})\n"
                      "target = local_target(spec, Path('run'))\n"
                      "print(target.region, target.region_is_fallback, 'boto3' in sys.modules)")
    config = tmp_path / "aws-config"
    config.write_text("[default]\nregion = eu-west-1\n")
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cases = {"nothing": ({}, "us-east-1 True False"),
             "AWS_DEFAULT_REGION": ({"AWS_DEFAULT_REGION": "eu-central-1"}, "eu-central-1 False False"),
             "a config file": ({"AWS_CONFIG_FILE": str(config)}, "eu-west-1 False True")}
    for case, (extra, expected) in cases.items():
        done = run_forked(str(script), [], SMTRAIN_PRELOAD, env={**base, **extra}, cwd=tmp_path)
        assert done.stdout.split() == expected.split(), f"{case}: {done.stdout}{done.stderr[-2000:]}"
