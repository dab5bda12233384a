"""The emulated container against the contract (sagemaker-contract.md), value by value."""

from __future__ import annotations

import json

import pytest

from orchestrator.emulator.instances.container import (
    GROUP_NAME,
    Host,
    HostConfig,
    InstanceGroup,
    Processors,
    env_value,
    framework_variables,
    resource_config,
    sm_variables,
    training_env,
    user_args,
)

# The worked example of sagemaker-contract.md §3.2 and §5.
CONTRACT_HYPERPARAMETERS = {"b": 7, "backend": "gloo", "learning-rate": 0.001, "use-cuda": True,
                            "layers": [64, 32], "opt": {"beta1": 0.9, "name": "adam"}, "note": None}


def test_user_args_follow_the_toolkit():
    assert user_args(CONTRACT_HYPERPARAMETERS) == [
        "-b", "7", "--backend", "gloo", "--layers", "[64, 32]", "--learning-rate", "0.001", "--note", "",
        "--opt", "beta1=0.9,name=adam", "--use-cuda", "True"]


@pytest.mark.parametrize(("value", "encoded"), [
    (7, "7"), ("gloo", "gloo"), (0.001, "0.001"), (True, "true"), ([64, 32], "[64,32]"),
    ({"name": "adam", "beta1": 0.9}, '{"beta1":0.9,"name":"adam"}'), (None, ""),
])
def test_environment_values_are_compact_sorted_json(value, encoded):
    assert env_value(value) == encoded


def _environment(tmp_path, hyperparameters, group_hosts, current="algo-2"):
    host = Host(current, tmp_path / current)
    resource = resource_config(current, [(InstanceGroup(GROUP_NAME, "ml.p4d.24xlarge", 2), group_hosts)])
    encoded = {key: json.dumps(value) for key, value in hyperparameters.items()}
    channels = {"training": {"TrainingInputMode": "File"}, "testing": {"TrainingInputMode": "File"}}
    env = training_env(HostConfig(host, resource, encoded, channels, "job-1"), Processors(gpus=8, cpus=2))
    return host, env, {**sm_variables(env), **framework_variables(env, "us-west-2", "2.3.0")}


def test_sm_variables_match_the_contract_table(tmp_path):
    hyperparameters = {**CONTRACT_HYPERPARAMETERS, "sagemaker_program": "train.py",
                       "sagemaker_submit_directory": "s3://bucket/job/source/sourcedir.tar.gz",
                       "sagemaker_container_log_level": 20, "sagemaker_job_name": "job-1",
                       "sagemaker_region": "us-west-2", "sagemaker_mpi_enabled": True,
                       "sagemaker_mpi_num_of_processes_per_host": 2}
    host, env, variables = _environment(tmp_path, hyperparameters, ["algo-2", "algo-1"])
    expected = {
        "SM_HOSTS": '["algo-1","algo-2"]',
        "SM_CURRENT_HOST": "algo-2",
        "SM_CURRENT_INSTANCE_TYPE": "ml.p4d.24xlarge",
        "SM_CURRENT_INSTANCE_GROUP": "homogeneousCluster",
        "SM_INSTANCE_GROUPS": '["homogeneousCluster"]',
        "SM_CURRENT_INSTANCE_GROUP_HOSTS": '["algo-2","algo-1"]',
        "SM_DISTRIBUTION_INSTANCE_GROUPS": '["homogeneousCluster"]',
        "SM_IS_HETERO": "false",
        "SM_NETWORK_INTERFACE_NAME": "eth0",
        "SM_CHANNELS": '["testing","training"]',
        "SM_CHANNEL_TRAINING": str(host.root / "input" / "data" / "training"),
        "SM_HPS": '{"b":7,"backend":"gloo","layers":[64,32],"learning-rate":0.001,"note":null,'
                  '"opt":{"beta1":0.9,"name":"adam"},"use-cuda":true}',
        "SM_HP_LEARNING-RATE": "0.001",
        "SM_HP_USE-CUDA": "true",
        "SM_HP_LAYERS": "[64,32]",
        "SM_HP_BACKEND": "gloo",
        "SM_HP_NOTE": "",
        "SM_FRAMEWORK_PARAMS": '{"sagemaker_mpi_enabled":true,"sagemaker_mpi_num_of_processes_per_host":2}',
        "SM_USER_ENTRY_POINT": "train.py",
        "SM_MODULE_NAME": "train",
        "SM_MODULE_DIR": "s3://bucket/job/source/sourcedir.tar.gz",
        "SM_FRAMEWORK_MODULE": "sagemaker_pytorch_container.training:main",
        "SM_LOG_LEVEL": "20",
        "SM_MODEL_DIR": str(host.root / "model"),
        "SM_OUTPUT_DATA_DIR": str(host.root / "output" / "data"),
        "SM_OUTPUT_INTERMEDIATE_DIR": str(host.root / "output" / "intermediate"),
        "SM_INPUT_CONFIG_DIR": str(host.root / "input" / "config"),
        "SM_NUM_GPUS": "8",
        "SM_NUM_CPUS": "2",
        "SM_NUM_NEURONS": "0",
        "MASTER_ADDR": "algo-2",
        "MASTER_PORT": "7777",
        "CURRENT_HOST": "algo-2",
        "SAGEMAKER_JOB_NAME": "job-1",
        "SAGEMAKER_REGION": "us-west-2",
        "NCCL_IB_DISABLE": "1",
        "SM_DLC_TORCH_VERSION": "2.3.0",
    }
    assert {key: variables.get(key) for key in expected} == expected
    assert json.loads(variables["SM_USER_ARGS"]) == user_args(CONTRACT_HYPERPARAMETERS)
    assert json.loads(variables["SM_TRAINING_ENV"]) == env
    assert len(env) == 37 and env["topology"] == [] and "SM_TOPOLOGY" not in variables
    assert env["master_hostname"] == "algo-2" and env["is_master"] is True


def test_master_is_hosts0_without_a_distribution_flag(tmp_path):
    _, env, variables = _environment(tmp_path, {"sagemaker_program": "train.py"}, ["algo-2", "algo-1"],
                                     current="algo-1")
    assert env["master_hostname"] == "algo-1" and env["distribution_hosts"] == []
    assert variables["SM_DISTRIBUTION_INSTANCE_GROUPS"] == "[]"
    assert variables["MASTER_ADDR"] == "algo-1"
