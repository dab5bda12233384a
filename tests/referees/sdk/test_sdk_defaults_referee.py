"""The referee for the SageMaker SDK's defaults files: SDK v2's own loader and its own estimator.

For several admin/user config files (pointed at by SAGEMAKER_ADMIN_CONFIG_OVERRIDE / _USER_): smtrain's merged
reading equals `sagemaker.config.load_sagemaker_config()`, and the request smtrain plans equals what v2 sends for
the estimator a user would write for the same spec, leaving out what the spec leaves out, on a session that
loaded the same files.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from sdk_capture import capture_create_training_job

from orchestrator.api import plan
from orchestrator.cloud.estimator import sdk_kwargs
from orchestrator.cloud.sdk import TELEMETRY_OPT_OUT, import_sagemaker
from orchestrator.planning.sdk_defaults import load_sdk_defaults, merge_dicts
from orchestrator.specs.loader import load

ROLE = "arn:aws:iam::123456789012:role/PlatformTraining"
KEY = "arn:aws:kms:us-east-1:123456789012:key/"


def _doc(training: dict[str, Any] | None = None, session: dict[str, Any] | None = None,
         estimator: dict[str, Any] | None = None) -> dict[str, Any]:
    sagemaker: dict[str, Any] = {}
    modules = {name: value for name, value in (("Session", session), ("Estimator", estimator)) if value}
    if modules:
        sagemaker["PythonSDK"] = {"Modules": modules}
    if training:
        sagemaker["TrainingJob"] = training
    return {"SchemaVersion": "1.0", "SageMaker": sagemaker}


FULL_ADMIN = _doc(
    training={"RoleArn": ROLE, "VpcConfig": {"Subnets": ["subnet-a1", "subnet-a2"], "SecurityGroupIds": ["sg-a"]},
              "EnableNetworkIsolation": True, "EnableInterContainerTrafficEncryption": True,
              "OutputDataConfig": {"KmsKeyId": KEY + "out"}, "ResourceConfig": {"VolumeKmsKeyId": KEY + "vol"},
              "Environment": {"HTTPS_PROXY": "http://proxy:3128", "COMPANY": "acme"},
              "Tags": [{"Key": "cost-center", "Value": "cc-42"}, {"Key": "team", "Value": "platform"}],
              "ProfilerConfig": {"DisableProfiler": True}},
    session={"DefaultS3Bucket": "platform-bucket", "DefaultS3ObjectKeyPrefix": "team-a/jobs"})
USER_OVERRIDES = _doc(
    training={"Environment": {"COMPANY": "acme-research", "EXTRA": "1"}, "Tags": [{"Key": "owner", "Value": "me"}],
              "VpcConfig": {"Subnets": ["subnet-u"]}, "EnableNetworkIsolation": False,
              "ProfilerConfig": {"DisableProfiler": False}},
    session={"DefaultS3Bucket": "research-bucket"})
USER_ONLY = _doc(training={"RoleArn": ROLE, "Environment": {"ONLY": "user"}},
                 session={"DefaultS3Bucket": "research-bucket"}, estimator={"DebugHookConfig": False})

CASES = {
    "admin-only": (FULL_ADMIN, None, {}),
    "admin-and-user": (FULL_ADMIN, USER_OVERRIDES, {}),
    "user-only": (None, USER_ONLY, {}),
    "spec-speaks": (FULL_ADMIN, USER_OVERRIDES, {
        "role": "arn:aws:iam::123456789012:role/Mine", "output_path": "s3://research-bucket/mine/",
        "environment": {"MINE": "1"}, "tags": {"team": "research", "project": "p"},
        "network": {"subnets": ["subnet-m"], "security_group_ids": ["sg-m"], "enable_network_isolation": False,
                    "encrypt_inter_container_traffic": False}}),
    "gpu-without-ebs-key": (FULL_ADMIN, None, {"instance": {"type": "ml.g5.12xlarge", "count": 1}}),
    "checkpointed-torchrun": (FULL_ADMIN, USER_OVERRIDES, {
        "instance": {"type": "ml.p4d.24xlarge", "count": 2}, "distribution": {"mode": "torch_distributed"},
        "checkpoint": {"s3_uri": "s3://research-bucket/ckpt/"}}),
}

# v2's one departure from "the estimator's value wins": `_TrainingJob._get_train_args` passes
# encrypt_inter_container_traffic only when true, so the session re-reads the config's true for a false one
# (estimator.py 2.257.7). smtrain keeps the spec's false (and validate names the contradiction).
V2_FORCES = {"spec-speaks": {"EnableInterContainerTrafficEncryption": True}}

# Where smtrain's plan names an SDK defaults source, the user's estimator leaves the argument out.
_ARGUMENT = {"role": "role", "output_path": "output_path", "network.subnets": "subnets",
             "network.security_group_ids": "security_group_ids",
             "network.enable_network_isolation": "enable_network_isolation",
             "network.encrypt_inter_container_traffic": "encrypt_inter_container_traffic",
             "output_kms_key": "output_kms_key", "volume_kms_key": "volume_kms_key",
             "disable_profiler": "disable_profiler", "debug_hook": "debugger_hook_config"}


def _write(path: Path, document: dict[str, Any] | None) -> Path:
    path.write_text(yaml.safe_dump(document, sort_keys=False) if document else "")
    return path


def _spec(directory: Path, fields: dict[str, Any]) -> Path:
    (directory / "src").mkdir()
    (directory / "src" / "train.py").write_text("print('hi')\n")
    document = {"name": "referee", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
                "py_version": "py311", "region": "us-east-1", "instance": {"type": "ml.c5.2xlarge", "count": 2},
                "hyperparameters": {"epochs": 1}, **fields}
    path = directory / "job.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _users_estimator_arguments(job_plan: Any) -> dict[str, Any]:
    """The plan's estimator arguments less every value the SDK defaults gave: what a user writes."""
    kwargs = copy.deepcopy(sdk_kwargs(job_plan))
    from_defaults = {name for name, source in job_plan.sources.items() if source.kind == "sdk-defaults"}
    for name, argument in _ARGUMENT.items():
        if name in from_defaults:
            kwargs.pop(argument, None)
    if any(name.startswith("environment.") for name in from_defaults):
        kwargs.pop("environment")
    kwargs["tags"] = [tag for tag in kwargs["tags"] if f"tags.{tag['Key']}" not in from_defaults]
    if "output_path" in from_defaults:
        kwargs.pop("code_location")  # smtrain's code prefix follows the bucket; v2 gets the uploaded tarball's URI
    return kwargs


@pytest.mark.parametrize("case", list(CASES))
def test_requests_with_sdk_defaults_equal_what_sdk_v2_sends(case, tmp_path, monkeypatch):
    admin, user, fields = CASES[case]
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(_write(tmp_path / "admin.yaml", admin)))
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(_write(tmp_path / "user.yaml", user)))
    sagemaker = import_sagemaker()

    sdk_document = sagemaker.config.load_sagemaker_config(repeat_log=True)
    assert load_sdk_defaults().merged == sdk_document  # the loader: same files, same merge

    job_plan = plan(load(_spec(tmp_path, fields)), job_name="referee-1")
    session_config = copy.deepcopy(sdk_document) or {"SchemaVersion": "1.0"}
    merge_dicts(session_config, copy.deepcopy(TELEMETRY_OPT_OUT))
    capture = capture_create_training_job(job_plan, _users_estimator_arguments(job_plan), session_config)
    assert {key for key, _ in capture.calls} <= {"s3.ListBuckets"}
    assert {**job_plan.create_training_job_request, **V2_FORCES.get(case, {})} == capture.request
