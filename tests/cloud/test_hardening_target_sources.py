"""A role or output path the spec leaves out, taken from $SMTRAIN_ROLE, $SMTRAIN_OUTPUT_PATH or an SDK
defaults file, is held to the rules the spec's own `role:` and `output_path:` keep: `plan` refuses it in one
line naming where it came from, exit 2, before anything is packed or sent (SageMaker refused it after the
upload, or the upload itself failed on a bucket that cannot exist); `validate` and `tune validate`, submit's gate,
report it alike (before, they passed the spec that `plan` then refused)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from forked import smtrain

pytestmark = pytest.mark.hardening

REPO = Path(__file__).resolve().parents[2]
SPEC = """name: target-probe
entry_point: train.py
framework_version: "2.3.0"
py_version: py311
region: us-east-1
instance: {type: ml.c5.2xlarge}
"""
DEFAULTS = """SchemaVersion: '1.0'
SageMaker:
  TrainingJob: {RoleArn: %s}
  PythonSDK: {Modules: {Session: {DefaultS3Bucket: %s}}}
"""
SEARCH = """job: spec.yaml
name: target-search
objective: {metric: "train:loss", type: Minimize}
parameters:
  lr: {type: continuous, min: 0.001, max: 0.1}
max_jobs: 2
"""
GOOD_ROLE = "arn:aws:iam::123456789012:role/SageMakerExecution"


@pytest.mark.parametrize(("variables", "defaults", "expected"), [
    ({"SMTRAIN_ROLE": "arn:aws:iam::123:role/x y", "SMTRAIN_OUTPUT_PATH": "s3://my-bucket/out/"}, None,
     "role from environment SMTRAIN_ROLE: 'arn:aws:iam::123:role/x y' is not an IAM role ARN"),
    ({"SMTRAIN_ROLE": GOOD_ROLE, "SMTRAIN_OUTPUT_PATH": "s3://My Bucket/out/"}, None,
     "output_path from environment SMTRAIN_OUTPUT_PATH: 'My Bucket' is not an S3 bucket name"),
    ({"SMTRAIN_ROLE": GOOD_ROLE, "SMTRAIN_OUTPUT_PATH": "s3://my-bucket//out/"}, None,
     "has '//' in its path"),
    ({}, ("'arn:aws:iam::123:role/x y'", "my-bucket"),
     "role from SDK defaults (admin) {admin}: SageMaker.TrainingJob.RoleArn: 'arn:aws:iam::123:role/x y' is"),
    ({}, (GOOD_ROLE, "'My_Bucket'"),
     "output_path from SDK defaults (admin) {admin}: SageMaker.PythonSDK.Modules.Session.DefaultS3Bucket: "
     "'My_Bucket' is not an S3 bucket name"),
], ids=["role-variable", "bucket-variable", "double-slash-variable", "role-defaults", "bucket-defaults"])
@pytest.mark.parametrize("command", [("plan", "spec.yaml"), ("validate", "spec.yaml"),
                                     ("tune", "validate", "search.yaml")], ids=" ".join)
def test_a_role_or_output_path_from_outside_the_spec_is_held_to_the_specs_rules(tmp_path, variables, defaults,
                                                                                expected, command):
    (tmp_path / "train.py").write_text("print(1)\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    (tmp_path / "search.yaml").write_text(SEARCH)
    admin = tmp_path / "admin.yaml"
    admin.write_text(DEFAULTS % defaults if defaults else "SchemaVersion: '1.0'\n")
    user = tmp_path / "user.yaml"
    user.write_text("SchemaVersion: '1.0'\n")
    environment = {name: value for name, value in os.environ.items()
                   if name not in ("SMTRAIN_ROLE", "SMTRAIN_OUTPUT_PATH")}
    environment.update(variables, SAGEMAKER_ADMIN_CONFIG_OVERRIDE=str(admin),
                       SAGEMAKER_USER_CONFIG_OVERRIDE=str(user))
    result = smtrain(*command[:-1], str(tmp_path / command[-1]), cwd=REPO, env=environment)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output, output
    assert expected.format(admin=admin) in output, output
    assert output.count("To fix:") == 1, output
