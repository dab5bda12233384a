"""The SageMaker SDK's defaults files (admin and user, and their override variables) applied to specs: the
request carries the config's values where the spec is silent and the spec's where it is not; lists merge as
the SDK merges them; plan -o json names where every value came from; validate flags contradictions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from orchestrator.api import plan
from orchestrator.cli.main import main
from orchestrator.errors import EnvironmentProblem
from orchestrator.planning.sdk_defaults import default_locations, load_sdk_defaults
from orchestrator.specs.loader import load

ADMIN_ROLE = "arn:aws:iam::111122223333:role/PlatformTraining"
SPEC_ROLE = "arn:aws:iam::111122223333:role/MyOwnRole"
OUTPUT_KEY = "arn:aws:kms:us-west-2:111122223333:key/output-key"
VOLUME_KEY = "arn:aws:kms:us-west-2:111122223333:key/volume-key"

ADMIN = {
    "SchemaVersion": "1.0",
    "SageMaker": {
        "PythonSDK": {"Modules": {"Session": {"DefaultS3Bucket": "platform-bucket",
                                              "DefaultS3ObjectKeyPrefix": "team-a/"}}},
        "TrainingJob": {
            "RoleArn": ADMIN_ROLE,
            "VpcConfig": {"Subnets": ["subnet-admin1", "subnet-admin2"], "SecurityGroupIds": ["sg-admin"]},
            "EnableNetworkIsolation": True,
            "EnableInterContainerTrafficEncryption": True,
            "OutputDataConfig": {"KmsKeyId": OUTPUT_KEY},
            "ResourceConfig": {"VolumeKmsKeyId": VOLUME_KEY},
            "Environment": {"HTTPS_PROXY": "http://proxy.corp:3128", "COMPANY": "acme"},
            "Tags": [{"Key": "cost-center", "Value": "cc-42"}, {"Key": "team", "Value": "platform"}],
            "ProfilerConfig": {"DisableProfiler": True},
        },
    },
}


def _write(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@pytest.fixture
def configs(tmp_path, monkeypatch):
    """Writes the admin and user documents and points the override variables at them."""

    def install(admin: Any = None, user: Any = None) -> tuple[Path, Path]:
        admin_path = _write(tmp_path / "admin" / "config.yaml", admin) if admin else tmp_path / "empty-admin.yaml"
        user_path = _write(tmp_path / "user" / "config.yaml", user) if user else tmp_path / "empty-user.yaml"
        for path in (admin_path, user_path):
            if not path.exists():
                path.write_text("")
        monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(admin_path))
        monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(user_path))
        return admin_path, user_path

    return install


def _spec(tmp_path: Path, **fields: Any) -> Path:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "train.py").write_text("print('hi')\n")
    document = {"name": "tiny", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
                "py_version": "py311", "region": "us-west-2", "instance": {"type": "ml.c5.2xlarge", "count": 2},
                **fields}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _request(spec_path: Path, *overrides: str) -> dict[str, Any]:
    return plan(load(spec_path, overrides), job_name="tiny-1").create_training_job_request


def test_a_silent_spec_gets_every_admin_default(tmp_path, configs):
    admin_path, _ = configs(admin=ADMIN)
    request = _request(_spec(tmp_path))
    assert request["RoleArn"] == ADMIN_ROLE
    assert request["VpcConfig"] == {"Subnets": ["subnet-admin1", "subnet-admin2"], "SecurityGroupIds": ["sg-admin"]}
    assert request["EnableNetworkIsolation"] is True
    assert request["EnableInterContainerTrafficEncryption"] is True
    assert request["OutputDataConfig"] == {"S3OutputPath": "s3://platform-bucket/team-a/", "KmsKeyId": OUTPUT_KEY}
    assert request["ResourceConfig"]["VolumeKmsKeyId"] == VOLUME_KEY
    assert request["Environment"] == {"HTTPS_PROXY": "http://proxy.corp:3128", "COMPANY": "acme"}
    assert request["Tags"] == [{"Key": "cost-center", "Value": "cc-42"}, {"Key": "team", "Value": "platform"}]
    assert request["ProfilerConfig"] == {"DisableProfiler": True}
    # Isolation sends the source as the `code` channel, as v2 does; the code sits under the session's prefix.
    assert request["InputDataConfig"][-1]["ChannelName"] == "code"
    assert request["InputDataConfig"][-1]["DataSource"]["S3DataSource"]["S3Uri"].startswith(
        "s3://platform-bucket/team-a/code/")


def test_the_spec_wins_where_it_speaks(tmp_path, configs):
    configs(admin=ADMIN)
    spec = _spec(tmp_path, role=SPEC_ROLE, output_path="s3://mine/out/", environment={"MINE": "1"},
                 tags={"team": "research", "project": "x"}, output_kms_key="alias/mine",
                 network={"subnets": ["subnet-mine"], "security_group_ids": ["sg-mine"],
                          "enable_network_isolation": False})
    request = _request(spec)
    assert request["RoleArn"] == SPEC_ROLE
    assert request["OutputDataConfig"] == {"S3OutputPath": "s3://mine/out/", "KmsKeyId": "alias/mine"}
    assert request["ResourceConfig"]["VolumeKmsKeyId"] == VOLUME_KEY  # not in the spec: the admin's
    assert request["VpcConfig"] == {"Subnets": ["subnet-mine"], "SecurityGroupIds": ["sg-mine"]}
    assert "EnableNetworkIsolation" not in request  # written out as false: a value, not silence
    assert request["EnableInterContainerTrafficEncryption"] is True  # not written: the admin's
    # v2 replaces the config's environment with the estimator's, whole; tags are appended where keys are new.
    assert request["Environment"] == {"MINE": "1"}
    assert request["Tags"] == [{"Key": "team", "Value": "research"}, {"Key": "project", "Value": "x"},
                               {"Key": "cost-center", "Value": "cc-42"}]


def test_set_overrides_count_as_the_spec(tmp_path, configs):
    configs(admin=ADMIN)
    request = _request(_spec(tmp_path), "network.encrypt_inter_container_traffic=false")
    assert "EnableInterContainerTrafficEncryption" not in request
    assert request["EnableNetworkIsolation"] is True


def test_user_file_wins_over_admin_mappings_merge_and_lists_are_replaced_whole(tmp_path, configs):
    user = {"SchemaVersion": "1.0", "SageMaker": {"TrainingJob": {
        "Environment": {"COMPANY": "acme-research", "EXTRA": "1"},
        "Tags": [{"Key": "owner", "Value": "me"}],
        "VpcConfig": {"Subnets": ["subnet-user"]},
        "EnableNetworkIsolation": False,
    }}}
    configs(admin=ADMIN, user=user)
    request = _request(_spec(tmp_path))
    # merge_dicts: mappings key by key (the user's value wins), lists replaced whole.
    assert request["Environment"] == {"HTTPS_PROXY": "http://proxy.corp:3128", "COMPANY": "acme-research",
                                      "EXTRA": "1"}
    assert request["Tags"] == [{"Key": "owner", "Value": "me"}]
    assert request["VpcConfig"] == {"Subnets": ["subnet-user"], "SecurityGroupIds": ["sg-admin"]}
    assert "EnableNetworkIsolation" not in request
    assert request["RoleArn"] == ADMIN_ROLE


def test_volume_key_only_on_instances_with_an_ebs_volume(tmp_path, configs):
    configs(admin=ADMIN)
    request = _request(_spec(tmp_path, instance={"type": "ml.g5.12xlarge", "count": 1}))
    assert "VolumeKmsKeyId" not in request["ResourceConfig"]  # g5's volume is local NVMe: v2 leaves it out
    assert request["OutputDataConfig"]["KmsKeyId"] == OUTPUT_KEY


def test_plan_json_names_the_source_of_every_value(tmp_path, configs, monkeypatch):
    admin_path, user_path = configs(admin=ADMIN, user={"SchemaVersion": "1.0", "SageMaker": {"TrainingJob": {
        "Environment": {"EXTRA": "1"}}}})
    spec = _spec(tmp_path, hyperparameters={"epochs": 2})
    result = CliRunner().invoke(main, ["plan", str(spec), "-o", "json", "--set", "max_run_seconds=600"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    sources = document["sources"]
    admin_file = str(admin_path)
    assert sources["role"] == {"from": "sdk-defaults", "where": admin_file, "key": "SageMaker.TrainingJob.RoleArn",
                               "level": "admin"}
    assert sources["output_path"]["key"] == "SageMaker.PythonSDK.Modules.Session.DefaultS3Bucket"
    assert sources["environment.EXTRA"] == {"from": "sdk-defaults", "where": str(user_path),
                                            "key": "SageMaker.TrainingJob.Environment.EXTRA", "level": "user"}
    assert sources["environment.COMPANY"]["level"] == "admin"
    assert sources["tags.cost-center"]["key"] == "SageMaker.TrainingJob.Tags"
    assert sources["network.enable_network_isolation"]["key"] == "SageMaker.TrainingJob.EnableNetworkIsolation"
    assert sources["output_kms_key"]["key"] == "SageMaker.TrainingJob.OutputDataConfig.KmsKeyId"
    assert sources["code_location"] == {"from": "default"}
    line = spec.read_text().splitlines().index("  epochs: 2") + 1
    assert sources["hyperparameters.epochs"] == {"from": "spec", "where": f"{spec}:{line}:3"}
    assert sources["max_run_seconds"] == {"from": "--set", "where": "--set max_run_seconds=600"}
    assert sources["spot.enabled"] == {"from": "default"}
    assert sources["region"]["from"] == "spec"
    # Every leaf of the resolved spec has a source.
    from orchestrator.planning.provenance import leaves

    assert {path for path, _ in leaves(document["spec"])} <= set(sources)


def test_environment_and_fallback_sources(tmp_path, configs, monkeypatch):
    configs()
    monkeypatch.setenv("SMTRAIN_ROLE", SPEC_ROLE)
    monkeypatch.setenv("SMTRAIN_OUTPUT_PATH", "s3://env-bucket/out/")
    job_plan = plan(load(_spec(tmp_path)), job_name="tiny-1")
    assert job_plan.sources["role"].to_dict() == {"from": "environment", "where": "SMTRAIN_ROLE"}
    assert job_plan.sources["output_path"].to_dict() == {"from": "environment", "where": "SMTRAIN_OUTPUT_PATH"}
    assert job_plan.create_training_job_request["Tags"] == []


def test_no_config_changes_nothing(tmp_path, configs):
    configs()
    spec = _spec(tmp_path, role=SPEC_ROLE, output_path="s3://mine/out/")
    request = _request(spec)
    assert request["OutputDataConfig"] == {"S3OutputPath": "s3://mine/out/"}
    assert "VpcConfig" not in request and "EnableNetworkIsolation" not in request
    assert request["ProfilerConfig"] == {"S3OutputPath": "s3://mine/out/", "DisableProfiler": False}
    assert request["Environment"] == {} and request["Tags"] == []


def test_a_missing_override_file_is_refused_as_the_sdk_refuses_it(tmp_path, monkeypatch):
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(tmp_path / "nowhere.yaml"))
    result = CliRunner().invoke(main, ["plan", str(_spec(tmp_path, role=SPEC_ROLE, output_path="s3://mine/o/"))])
    assert result.exit_code == 2
    assert "SAGEMAKER_ADMIN_CONFIG_OVERRIDE names" in result.output and "nowhere.yaml" in result.output
    assert "Traceback" not in result.output


def test_a_folder_means_its_config_yaml(tmp_path, monkeypatch):
    _write(tmp_path / "etc" / "config.yaml", ADMIN)
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(tmp_path / "etc"))
    defaults = load_sdk_defaults()
    assert defaults.get("SageMaker.TrainingJob.RoleArn").file.location == str(tmp_path / "etc" / "config.yaml")


@pytest.mark.parametrize(("text", "message"), [
    ("SchemaVersion: '1.0'\nSageMaker: {TrainingJob: {EnableNetworkIsolation: 'yes'}}\n",
     "SageMaker.TrainingJob.EnableNetworkIsolation: must be a bool"),
    ("SageMaker: {TrainingJob: {RoleArn: x}}\n", "SchemaVersion: must be the string '1.0'"),
    ("SchemaVersion: '1.0'\nSageMaker: {TrainingJob: {Rolearn: x}}\n",
     "SageMaker.TrainingJob.Rolearn: is not a key the schema allows here"),
    ("SchemaVersion: '1.0'\nSageMaker: [\n", "is not valid YAML"),
])
def test_a_broken_defaults_file_names_file_and_key(tmp_path, monkeypatch, text, message):
    path = tmp_path / "admin.yaml"
    path.write_text(text)
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(path))
    with pytest.raises(EnvironmentProblem) as caught:
        load_sdk_defaults()
    assert str(path) in str(caught.value) and message in str(caught.value)


def test_default_locations_follow_platformdirs(monkeypatch, tmp_path):
    platformdirs = pytest.importorskip("platformdirs")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-home"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", f"{tmp_path / 'site-a'}:{tmp_path / 'site-b'}")
    assert default_locations() == {"admin": str(Path(platformdirs.site_config_dir("sagemaker")) / "config.yaml"),
                                   "user": str(Path(platformdirs.user_config_dir("sagemaker")) / "config.yaml")}
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.delenv("XDG_CONFIG_DIRS")
    assert default_locations() == {"admin": str(Path(platformdirs.site_config_dir("sagemaker")) / "config.yaml"),
                                   "user": str(Path(platformdirs.user_config_dir("sagemaker")) / "config.yaml")}


def test_validate_warns_where_the_spec_contradicts_the_admin(tmp_path, configs):
    admin_path, _ = configs(admin=ADMIN)
    spec = _spec(tmp_path, role=SPEC_ROLE, output_path="s3://mine/o/", tags={"cost-center": "mine"},
                 network={"enable_network_isolation": False})
    result = CliRunner().invoke(main, ["validate", str(spec), "-o", "json"])
    assert result.exit_code == 0, result.output
    warnings = {warning["field"]: warning for warning in json.loads(result.output)[0]["warnings"]}
    isolation = warnings["network.enable_network_isolation"]["message"]
    assert "enable_network_isolation: false" in isolation and f"{admin_path}" in isolation
    assert "SageMaker.TrainingJob.EnableNetworkIsolation: true" in isolation
    assert SPEC_ROLE in warnings["role"]["message"] and ADMIN_ROLE in warnings["role"]["message"]
    assert "cc-42" in warnings["tags.cost-center"]["message"]
    assert "network.encrypt_inter_container_traffic" not in warnings  # silent: the admin's value applies


def test_validate_is_quiet_when_the_spec_agrees_or_only_the_user_file_differs(tmp_path, configs):
    configs(user={"SchemaVersion": "1.0", "SageMaker": {"TrainingJob": {"EnableNetworkIsolation": True}}})
    spec = _spec(tmp_path, network={"enable_network_isolation": False})
    result = CliRunner().invoke(main, ["validate", str(spec), "-o", "json"])
    assert result.exit_code == 0
    assert [warning for warning in json.loads(result.output)[0]["warnings"]
            if warning["rule"] == "contradicts-admin-sdk-defaults"] == []


def test_sources_never_show_a_secret_given_with_set(tmp_path, configs):
    configs()
    spec = _spec(tmp_path, role=SPEC_ROLE, output_path="s3://mine/o/")
    result = CliRunner().invoke(main, ["plan", str(spec), "-o", "json", "--set", "environment.HF_TOKEN=s3cr3t-value"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sources"]["environment.HF_TOKEN"]["from"] == "--set"
    assert "s3cr3t-value" not in result.stdout


def test_validate_names_the_admin_variables_a_spec_environment_drops(tmp_path, configs):
    configs(admin=ADMIN)
    keeps_all = _spec(tmp_path, environment={"HTTPS_PROXY": "http://proxy.corp:3128", "COMPANY": "acme", "X": "1"})
    result = CliRunner().invoke(main, ["validate", str(keeps_all), "-o", "json"])
    assert "environment" not in {warning["field"] for warning in json.loads(result.output)[0]["warnings"]}
    drops = _spec(tmp_path, environment={"COMPANY": "other", "X": "1"})
    result = CliRunner().invoke(main, ["validate", str(drops), "-o", "json"])
    [warning] = [item for item in json.loads(result.output)[0]["warnings"] if item["field"] == "environment"]
    assert "{HTTPS_PROXY: (unset), COMPANY: other}" in warning["message"]
    assert "{HTTPS_PROXY: http://proxy.corp:3128, COMPANY: acme}" in warning["message"]


def test_without_override_variables_the_default_locations_are_read(tmp_path, monkeypatch):
    monkeypatch.delenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE")
    monkeypatch.delenv("SAGEMAKER_USER_CONFIG_OVERRIDE")
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "etc-xdg"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home-config"))
    request = _request(_spec(tmp_path, role=SPEC_ROLE, output_path="s3://mine/o/"))  # no file there yet: no error
    assert request["Tags"] == [] and "VpcConfig" not in request
    _write(tmp_path / "etc-xdg" / "sagemaker" / "config.yaml", ADMIN)
    _write(tmp_path / "home-config" / "sagemaker" / "config.yaml", {"SchemaVersion": "1.0", "SageMaker": {
        "TrainingJob": {"Tags": [{"Key": "owner", "Value": "me"}]}}})
    job_plan = plan(load(_spec(tmp_path, output_path="s3://mine/o/")), job_name="tiny-1")
    assert job_plan.create_training_job_request["RoleArn"] == ADMIN_ROLE
    assert job_plan.create_training_job_request["Tags"] == [{"Key": "owner", "Value": "me"}]
    assert job_plan.sources["tags.owner"].where == str(tmp_path / "home-config" / "sagemaker" / "config.yaml")


def test_plan_text_says_which_values_the_defaults_gave(tmp_path, configs):
    admin_path, _ = configs(admin=ADMIN)
    result = CliRunner().invoke(main, ["plan", str(_spec(tmp_path)), "--set", "max_run_seconds=600"])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("  from the admin's")]
    assert line.startswith(f"  from the admin's SageMaker SDK defaults {admin_path}: role, ")
    assert {"output_path", "environment.COMPANY", "tags.cost-center", "network.subnets"} <= set(
        line.split(": ", 1)[1].split(", "))
    assert "from --set: max_run_seconds (--set max_run_seconds=600)" in result.output
