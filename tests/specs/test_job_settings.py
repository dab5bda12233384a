"""Channels, instance groups, capacity, retries, tracking and KMS keys: the spec says them, `validate` checks them
offline, `plan` emits them exactly, and botocore's own parameter validation accepts every request (no network).

Golden files for the examples in job_specs/settings/ are in tests/golden/settings/ (UPDATE_GOLDEN=1 rewrites them;
review the diff). Every top-level CreateTrainingJob member and every ResourceConfig member of botocore's model is
either produced from a spec here or listed in docs/specs.md as left out.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ParamValidationError
from botocore.validate import validate_parameters
from click.testing import CliRunner

from orchestrator.api import plan
from orchestrator.cli.main import main
from orchestrator.specs.loader import from_mapping, load

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "job_specs").glob("*.yaml"))
SETTINGS = sorted((REPO / "job_specs" / "settings").glob("*.yaml"))
GOLDEN = REPO / "tests" / "golden" / "settings"
SHA = re.compile(r"[0-9a-f]{64}")
ROLE = "arn:aws:iam::123456789012:role/SageMakerExecution"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-reserved"
MLFLOW_ARN = "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/team"


@pytest.fixture(autouse=True)
def _region(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")


def _create_training_job_input() -> Any:
    model = botocore.session.get_session().get_service_model("sagemaker")
    return model.operation_model("CreateTrainingJob").input_shape


INPUT_SHAPE = _create_training_job_input()


def _base(**changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "settings", "entry_point": "train.py", "source_dir": str(REPO / "entrypoints"),
        "framework_version": "2.10.0", "role": ROLE, "instance": {"type": "ml.g5.12xlarge", "count": 2},
        "distribution": {"mode": "torch_distributed"}, "output_path": "s3://my-bucket/outputs/",
        "inputs": {"train": "s3://my-bucket/train/"},
    }
    spec.update(changes)
    return spec


def _request(spec: dict[str, Any]) -> dict[str, Any]:
    return plan(from_mapping(spec), job_name="settings-job").create_training_job_request


def _normalised(request: dict) -> dict:
    return json.loads(SHA.sub("<sha256>", json.dumps(request)))


@pytest.mark.parametrize("spec_file", SETTINGS, ids=[path.stem for path in SETTINGS])
def test_settings_example_request_matches_golden_file(spec_file):
    request = _normalised(plan(load(spec_file), job_name="golden-job").create_training_job_request)
    golden = GOLDEN / f"{spec_file.stem}.request.json"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(json.dumps(request, indent=2, sort_keys=True) + "\n")
    assert request == json.loads(golden.read_text())


def test_golden_requests_cover_the_four_kinds_the_issue_names():
    requests = {path.stem: json.loads((GOLDEN / f"{path.stem}.request.json").read_text()) for path in SETTINGS}
    hetero = requests["hetero-mpi-2groups-c5-g5"]
    assert [group["InstanceGroupName"] for group in hetero["ResourceConfig"]["InstanceGroups"]] == ["data", "train"]
    sharded = {channel["ChannelName"]: channel["DataSource"]["S3DataSource"] for channel in hetero["InputDataConfig"]}
    assert sharded["train"]["S3DataDistributionType"] == "ShardedByS3Key"
    assert sharded["train"]["InstanceGroupNames"] == ["train"]
    assert json.loads(hetero["HyperParameters"]["sagemaker_distribution_instance_groups"]) == ["train"]
    assert "TrainingPlanArn" in requests["training-plan-torch_distributed-2x-p5.48xlarge"]["ResourceConfig"]
    preferences = requests["preferences-torch_distributed-p5-p4d-p4de"]["ResourceConfig"]
    assert "InstanceType" not in preferences and "InstanceCount" not in preferences
    assert [item["InstanceType"] for item in preferences["InstancePreferences"]] == [
        "ml.p5.48xlarge", "ml.p4d.24xlarge", "ml.p4de.24xlarge"]
    pipe = {channel["ChannelName"]: channel for channel in requests["pipe-none-1x-c5.2xlarge"]["InputDataConfig"]}
    assert pipe["train"]["InputMode"] == "Pipe" and pipe["train"]["CompressionType"] == "Gzip"


@pytest.mark.parametrize("spec_file", EXAMPLES + SETTINGS, ids=[path.stem for path in EXAMPLES + SETTINGS])
def test_botocore_parameter_validation_accepts_every_example_request(spec_file):
    validate_parameters(plan(load(spec_file), job_name="botocore-check").create_training_job_request, INPUT_SHAPE)


def test_botocore_parameter_validation_refuses_what_it_should():
    """The check above can fail: a request with a preference count of the wrong type is refused."""
    request = _request(_base(instance={"preferences": [{"type": "ml.p5.48xlarge", "count": 1}]}))
    request["ResourceConfig"]["InstancePreferences"][0]["InstanceCount"] = "one"
    with pytest.raises(ParamValidationError):
        validate_parameters(request, INPUT_SHAPE)


def test_a_channel_written_out_with_its_defaults_plans_like_the_bare_uri():
    bare = _request(_base())
    written = _request(_base(inputs={"train": {"uri": "s3://my-bucket/train/", "distribution": "FullyReplicated",
                                               "s3_data_type": "S3Prefix"}}))
    assert written == bare
    assert bare["InputDataConfig"] == [{"ChannelName": "train", "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix", "S3Uri": "s3://my-bucket/train/", "S3DataDistributionType": "FullyReplicated"}}}]
    assert bare["AlgorithmSpecification"]["TrainingInputMode"] == "File"


# Each member of botocore's CreateTrainingJob input (top level, and ResourceConfig.<member>) -> a spec that makes
# smtrain send it. Members the spec cannot express are in docs/specs.md's left-out table.
_GROUPS = [{"name": "data", "type": "ml.c5.2xlarge", "count": 1}, {"name": "train", "type": "ml.g5.12xlarge",
                                                                  "count": 2}]
EXPRESSING: dict[str, dict[str, Any]] = {
    "TrainingJobName": {}, "HyperParameters": {}, "AlgorithmSpecification": {}, "RoleArn": {},
    "InputDataConfig": {}, "OutputDataConfig": {}, "ResourceConfig": {}, "StoppingCondition": {}, "Tags": {},
    "Environment": {}, "ProfilerConfig": {}, "DebugHookConfig": {},
    "VpcConfig": {"network": {"subnets": ["subnet-0abc"], "security_group_ids": ["sg-0abc"]}},
    "EnableNetworkIsolation": {"network": {"enable_network_isolation": True}},
    "EnableInterContainerTrafficEncryption": {"network": {"encrypt_inter_container_traffic": True}},
    "EnableManagedSpotTraining": {"spot": {"enabled": True, "max_wait_seconds": 90000},
                                  "checkpoint": {"s3_uri": "s3://my-bucket/ckpt/"}},
    "CheckpointConfig": {"checkpoint": {"s3_uri": "s3://my-bucket/ckpt/"}},
    "TensorBoardOutputConfig": {"tensorboard": {"s3_uri": "s3://my-bucket/tb/"}},
    "ExperimentConfig": {"experiment": {"experiment_name": "mnist"}},
    "RetryStrategy": {"max_retry_attempts": 2},
    "RemoteDebugConfig": {"remote_debug": True},
    "InfraCheckConfig": {"infra_check": True},
    "SessionChainingConfig": {"session_tag_chaining": True},
    "MlflowConfig": {"mlflow": {"tracking_server_arn": MLFLOW_ARN}},
    "ResourceConfig.InstanceType": {}, "ResourceConfig.InstanceCount": {}, "ResourceConfig.VolumeSizeInGB": {},
    "ResourceConfig.VolumeKmsKeyId": {"volume_kms_key": "alias/volumes"},
    "ResourceConfig.KeepAlivePeriodInSeconds": {"keep_alive_seconds": 600},
    "ResourceConfig.InstanceGroups": {"instance": {"groups": _GROUPS}, "distribution": {"mode": "none"}},
    "ResourceConfig.TrainingPlanArn": {"instance": {"type": "ml.p5.48xlarge", "training_plan_arn": PLAN_ARN}},
    "ResourceConfig.InstancePlacementConfig": {"instance": {"type": "ml.p6e-gb200.36xlarge", "placement": {
        "enable_multiple_jobs": False, "specifications": [{"count": 1, "ultraserver_id": "us-1"}]}},
        "allow_unverified": True},
    "ResourceConfig.InstancePreferences": {"instance": {"preferences": [{"type": "ml.p5.48xlarge"},
                                                                        {"type": "ml.p4d.24xlarge"}]}},
}


def _members() -> set[str]:
    resource = INPUT_SHAPE.members["ResourceConfig"]
    return set(INPUT_SHAPE.members) | {f"ResourceConfig.{member}" for member in resource.members}


def _left_out_in_readme() -> set[str]:
    readme = (REPO / "docs" / "specs.md").read_text()
    table = readme[readme.index("<!-- left-out:start -->"):readme.index("<!-- left-out:end -->")]
    return set(re.findall(r"^\| `([A-Za-z.]+)` \|", table, re.MULTILINE))


def test_every_create_training_job_member_is_in_the_spec_or_left_out_in_the_readme():
    members, left_out = _members(), _left_out_in_readme()
    assert left_out, "docs/specs.md's left-out table is empty or missing"
    assert not left_out & set(EXPRESSING), "a member is both expressed and listed as left out"
    assert left_out <= members, f"docs/specs.md lists members botocore does not have: {left_out - members}"
    unplaced = members - set(EXPRESSING) - left_out
    assert not unplaced, f"botocore has members the spec does not express and docs/specs.md does not list: {unplaced}"


@pytest.mark.parametrize("member", sorted(EXPRESSING))
def test_each_expressed_member_is_sent_and_botocore_accepts_the_request(member):
    request = _request(_base(**EXPRESSING[member]))
    top, _, inner = member.partition(".")
    assert top in request
    if inner:
        assert inner in request[top], request[top]
    validate_parameters(request, INPUT_SHAPE)


def test_instance_preferences_with_one_job_count_send_resource_config_instance_count():
    resources = _request(_base(**EXPRESSING["ResourceConfig.InstancePreferences"]))["ResourceConfig"]
    assert resources == {"InstanceCount": 1, "InstancePreferences": [{"InstanceType": "ml.p5.48xlarge"},
                                                                     {"InstanceType": "ml.p4d.24xlarge"}],
                         "VolumeSizeInGB": 30}


def test_instance_groups_put_every_host_in_the_resource_config_and_the_ranks_on_the_training_group():
    job = plan(load(REPO / "job_specs" / "settings" / "hetero-mpi-2groups-c5-g5.yaml"), job_name="x")
    assert job.create_training_job_request["ResourceConfig"]["InstanceGroups"] == [
        {"InstanceGroupName": "data", "InstanceType": "ml.c5.2xlarge", "InstanceCount": 1},
        {"InstanceGroupName": "train", "InstanceType": "ml.g5.12xlarge", "InstanceCount": 2}]
    assert {row.host for row in job.topology.ranks()} == {"algo-2", "algo-3"}
    assert job.topology.world_size == 8 and job.topology.master_addr == "algo-2"
    # the groups' prices summed: 1 x c5.2xlarge + 2 x g5.12xlarge
    from orchestrator.specs.catalog import lookup
    hourly = lookup("ml.c5.2xlarge").price_per_hour + 2 * lookup("ml.g5.12xlarge").price_per_hour
    assert job.cost.max_total == pytest.approx(hourly * 7200 / 3600)


# `validate` refuses, offline, with the field, its line and a fix (exit 2, nothing sent).
_SPEC_TEXT = """name: demo
entry_point: train.py
framework_version: "2.10.0"
role: arn:aws:iam::123456789012:role/Demo
output_path: s3://demo-bucket/outputs/
"""

INVALID = [
    ("preferences-with-spot",
     "instance:\n  preferences:\n    - {type: ml.p5.48xlarge}\nspot: {enabled: true, max_wait_seconds: 90000}\n"
     "checkpoint: {s3_uri: s3://demo-bucket/ckpt/}\n",
     "spot.enabled", "cannot be combined with managed spot", "spot.enabled: false"),
    ("channel-group-missing",
     "instance:\n  groups:\n    - {name: data, type: ml.c5.2xlarge}\n    - {name: train, type: ml.c5.2xlarge}\n"
     "inputs:\n  train: {uri: s3://demo-bucket/train/, instance_groups: [trian]}\n",
     "inputs.train.instance_groups.0", "'trian', which instance.groups does not define", "data, train"),
    ("six-preferences",
     "instance:\n  preferences:\n" + "".join(f"    - {{type: {name}}}\n" for name in (
         "ml.p5.48xlarge", "ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.g5.48xlarge", "ml.g6.48xlarge",
         "ml.p5e.48xlarge")),
     "instance.preferences", "6 instance preferences; SageMaker takes at most 5", "keep the 5"),
    ("unknown-input-mode",
     "instance: {type: ml.c5.2xlarge}\ninputs:\n  train: {uri: s3://demo-bucket/train/, input_mode: Fastfile}\n",
     "inputs.train.input_mode", "Input should be", "did you mean `FastFile`?"),
    ("unknown-job-input-mode", "instance: {type: ml.c5.2xlarge}\ninput_mode: pipe\n",
     "input_mode", "Input should be", "did you mean `Pipe`?"),
    ("distribution-group-missing",
     "instance:\n  groups:\n    - {name: data, type: ml.c5.2xlarge}\n    - {name: train, type: ml.c5.2xlarge}\n"
     "distribution: {mode: mpi, instance_groups: [gpu]}\n",
     "distribution.instance_groups.0", "'gpu', which instance.groups does not define", "data, train"),
    ("mpi-on-groups-without-a-training-group",
     "instance:\n  groups:\n    - {name: data, type: ml.c5.2xlarge}\n    - {name: train, type: ml.c5.2xlarge}\n"
     "distribution: {mode: mpi}\n",
     "distribution.instance_groups", "needs exactly one group", "instance_groups: [<group>]"),
    ("torchrun-across-groups",
     "instance:\n  groups:\n    - {name: data, type: ml.c5.2xlarge}\n    - {name: train, type: ml.g5.12xlarge}\n"
     "distribution: {mode: torch_distributed}\n",
     "distribution.mode", "separate launcher in every group", "mode mpi or smddp"),
    ("type-and-groups",
     "instance:\n  type: ml.c5.2xlarge\n  groups:\n    - {name: data, type: ml.c5.2xlarge}\n",
     "instance", "both say which instances to use", "remove instance.groups"),
    ("counts-on-some-preferences",
     "instance:\n  preferences:\n    - {type: ml.p5.48xlarge, count: 1}\n    - {type: ml.p4d.24xlarge}\n",
     "instance.preferences", "count is given on some preferences but not all", "give count on every preference"),
    ("training-plan-arn-shape",
     "instance: {type: ml.p5.48xlarge, training_plan_arn: 'arn:aws:sagemaker:us-east-1:123:plan/x'}\n",
     "instance.training_plan_arn", "is not what SageMaker accepts here", "training-plan/"),
    ("retries-over-the-limit", "instance: {type: ml.c5.2xlarge}\nmax_retry_attempts: 31\n",
     "max_retry_attempts", "less than or equal to 30", "at most 30"),
]


@pytest.mark.parametrize(("text", "field", "message", "fix"), [case[1:] for case in INVALID],
                         ids=[case[0] for case in INVALID])
def test_validate_refuses_offline_with_field_line_and_fix(write_spec, text, field, message, fix):
    path = write_spec(_SPEC_TEXT + text)
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.splitlines()
    located = [index for index, line in enumerate(lines)
               if re.search(rf"spec\.yaml:\d+:\d+: {re.escape(field)}: ", line) and message in line]
    assert len(located) == 1, result.output
    assert lines[located[0] + 1].strip().startswith("fix:") and fix in lines[located[0] + 1], result.output
