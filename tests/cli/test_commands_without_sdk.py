"""The SageMaker SDK is optional: every command but the notebook's `build_estimator` runs without it.

The commands run in a process forked from the CLI's warm interpreter (tests/support/forked.py) where importing
`sagemaker` or `torch` raises, against moto's server, so a command that reached for either fails instead of
passing quietly; neither may be among the modules loaded at the end, the warm interpreter's own included.
Role names are expanded with IAM GetRole at submit, as the SDK does, and `build_estimator` says what to
install when v2 is missing.
"""

from __future__ import annotations

import json
import sys

import boto3
import pytest
from forked import SMTRAIN_PRELOAD, run_forked

from orchestrator.api import build_estimator, plan, submit
from orchestrator.errors import AwsError, EnvironmentProblem

PROBE = r"""
import json, sys

class NoSdkOrTorch:
    # An import hook ahead of every other: these imports fail as if nothing were installed.
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("sagemaker", "torch"):
            raise ImportError(f"{name} was imported")

sys.meta_path.insert(0, NoSdkOrTorch())
from click.testing import CliRunner
from orchestrator.cli.main import main

def smtrain(*args):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, (args, result.output, repr(result.exception))
    return result.stdout

spec = sys.argv[1]
smtrain("validate", spec)
smtrain("plan", spec, "-o", "json")
name = json.loads(smtrain("submit", spec, "-o", "json"))["job_name"]
smtrain("status", name)
smtrain("logs", name)
smtrain("stop", name)
smtrain("list")
smtrain("infra", "show", "--stack-name", "smtrain-probe")
smtrain("images")
print(sorted(module for module in sys.modules if module.split(".")[0] in ("sagemaker", "torch")))
"""


def test_validate_plan_submit_status_logs_stop_list_infra_images_never_import_the_sdk(write_spec, bucket, tmp_path):
    # A role by name: submit's IAM GetRole runs too. infra show reads a stack deployed here (its outputs are
    # written by hand: moto's ExecuteChangeSet builds none, see tests/infra/conftest.py).
    boto3.client("iam").create_role(RoleName="Trainer", AssumeRolePolicyDocument="{}")
    _stack_with_outputs("smtrain-probe")
    spec = write_spec(role="Trainer")

    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    result = run_forked(str(probe), [str(spec)], SMTRAIN_PRELOAD, cwd=tmp_path)

    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_role_given_by_name_is_submitted_as_its_arn(write_spec, bucket):
    arn = boto3.client("iam").create_role(RoleName="Trainer", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    job_plan = plan(write_spec(role="Trainer"), job_name="by-name-1")
    assert job_plan.create_training_job_request["RoleArn"] == "Trainer"  # planned as given, no AWS call

    job = submit(job_plan)

    described = boto3.client("sagemaker").describe_training_job(TrainingJobName="by-name-1")
    assert described["RoleArn"] == arn == job.submission.plan.create_training_job_request["RoleArn"]


def test_unknown_role_name_is_refused_before_anything_is_created(write_spec, bucket):
    with pytest.raises(AwsError, match="execution role 'Nobody' \\(iam:GetRole\\)") as raised:
        submit(plan(write_spec(role="Nobody"), job_name="by-name-2"))

    assert "full ARN" in raised.value.fix
    assert boto3.client("sagemaker").list_training_jobs()["TrainingJobSummaries"] == []


@pytest.mark.parametrize("installed, expected", [
    ("3.27.0", "sagemaker 3.27.0 is installed here, which has no sagemaker.pytorch.PyTorch"),
    (None, "the SageMaker Python SDK v2 is not installed"),
])
def test_build_estimator_without_sdk_v2_says_what_to_install(tiny_plan, monkeypatch, installed, expected):
    import importlib.metadata
    import types

    # v3: `import sagemaker` gives a namespace package without `pytorch`; nothing installed: both imports fail.
    monkeypatch.setitem(sys.modules, "sagemaker", types.ModuleType("sagemaker") if installed else None)
    monkeypatch.setitem(sys.modules, "sagemaker.pytorch", None)

    def version(name: str) -> str:
        if installed is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed

    monkeypatch.setattr(importlib.metadata, "version", version)
    with pytest.raises(EnvironmentProblem, match=expected) as raised:
        build_estimator(tiny_plan, upload_source=False)
    # smtrain is on no index: its extra comes through this environment's pip, or from its clone into a fresh venv
    if installed is None:
        assert "-m pip install 'smtrain[sdk]';" in raised.value.fix
    else:
        assert "[sdk]' in a separate virtualenv" in raised.value.fix and "'smtrain[sdk]'" not in raised.value.fix


def _stack_with_outputs(name: str) -> None:
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}, "Outputs": {
        key: {"Value": value} for key, value in {
            "RoleArn": "arn:aws:iam::123456789012:role/Trainer", "BucketName": "smtrain-test",
            "OutputPath": "s3://smtrain-test/outputs/", "CheckpointPrefix": "s3://smtrain-test/checkpoints/",
            "CodePrefix": "s3://smtrain-test/code/"}.items()}}
    boto3.client("cloudformation").create_stack(StackName=name, TemplateBody=json.dumps(template))
