"""dist_env.detect over every launcher's variables, and every malformed input it must reject."""

from __future__ import annotations

import json
import re

import dist_env
import pytest
from dist_env import DistEnv, DistEnvError

TORCHRUN = {"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1",
            "MASTER_ADDR": "algo-2", "MASTER_PORT": "29500"}
OMPI = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
HOSTS = json.dumps(["algo-1", "algo-2", "algo-3"])
# Resource config of a 2-host job whose instance group lists algo-2 first (sagemaker-contract.md §3.1).
RESOURCE_CONFIG = json.dumps({
    "current_host": "algo-1", "current_group_name": "homogeneousCluster", "hosts": ["algo-1", "algo-2"],
    "instance_groups": [{"instance_group_name": "homogeneousCluster", "hosts": ["algo-2", "algo-1"]}],
})
SMDDP_PARAMS = json.dumps({"sagemaker_distributed_dataparallel_enabled": True, "sagemaker_instance_type": "ml.p4d"})


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        pytest.param({}, DistEnv(0, 0, 1, 1, 0, "127.0.0.1", 7777, "single"), id="nothing-set"),
        pytest.param(TORCHRUN, DistEnv(5, 1, 8, 4, 1, "algo-2", 29500, "torchrun"), id="torchrun"),
        pytest.param({k: v for k, v in TORCHRUN.items() if k != "GROUP_RANK"},
                     DistEnv(5, 1, 8, 4, 1, "algo-2", 29500, "torchrun"), id="torchrun-without-group-rank"),
        pytest.param({**OMPI, "MASTER_ADDR": "algo-1", "MASTER_PORT": "7777"},
                     DistEnv(3, 1, 4, 2, 1, "algo-1", 7777, "mpirun"), id="mpirun"),
        pytest.param({**OMPI, "SM_HOSTS": '["algo-1","algo-2"]', "SM_CURRENT_HOST": "algo-1",
                      "SM_RESOURCE_CONFIG": RESOURCE_CONFIG},
                     DistEnv(3, 1, 4, 2, 1, "algo-2", 7777, "mpirun"),
                     id="mpirun-ignores-current-host-and-takes-master-from-group-order"),
        pytest.param({**OMPI, "SM_TRAINING_ENV": json.dumps({"master_hostname": "algo-2"})},
                     DistEnv(3, 1, 4, 2, 1, "algo-2", 7777, "mpirun"), id="mpirun-master-from-training-env"),
        pytest.param({**OMPI, "SM_TRAINING_ENV": json.dumps({"distribution_hosts": ["algo-3", "algo-1"]})},
                     DistEnv(3, 1, 4, 2, 1, "algo-3", 7777, "mpirun"), id="mpirun-master-from-distribution-hosts"),
        pytest.param({**OMPI, "RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "SM_FRAMEWORK_PARAMS": SMDDP_PARAMS},
                     DistEnv(3, 1, 4, 2, 1, "127.0.0.1", 7777, "mpirun", "smddp"),
                     id="smddprun-torch-names-agreeing-with-open-mpi"),
        pytest.param({"SM_HOSTS": HOSTS, "SM_CURRENT_HOST": "algo-2", "MASTER_ADDR": "algo-1", "MASTER_PORT": "7777"},
                     DistEnv(1, 0, 3, 1, 1, "algo-1", 7777, "sagemaker"), id="sagemaker-hosts"),
        pytest.param({"SM_HOSTS": HOSTS, "SM_CURRENT_HOST": "algo-3"},
                     DistEnv(2, 0, 3, 1, 2, "algo-1", 7777, "sagemaker"), id="sagemaker-master-defaults-to-hosts0"),
        pytest.param({"SM_HOSTS": HOSTS, "SM_CURRENT_HOST": "algo-2", "MASTER_ADDR": "127.0.0.1",
                      "MASTER_PORT": "29411"},
                     DistEnv(1, 0, 3, 1, 1, "127.0.0.1", 29411, "sagemaker"), id="sagemaker-emulated-on-loopback"),
        pytest.param({"SM_HOSTS": HOSTS, "SM_CURRENT_HOST": "algo-2",
                      "SM_TRAINING_ENV": json.dumps({"master_hostname": "algo-2"})},
                     DistEnv(0, 0, 3, 1, 0, "algo-2", 7777, "sagemaker"), id="sagemaker-master-host-gets-rank-0"),
        pytest.param({"SM_HOSTS": HOSTS, "SM_CURRENT_HOST": "algo-1",
                      "SM_TRAINING_ENV": json.dumps({"master_hostname": "algo-2"})},
                     DistEnv(1, 0, 3, 1, 1, "algo-2", 7777, "sagemaker"), id="sagemaker-others-follow-the-master"),
        pytest.param({"SM_FRAMEWORK_PARAMS": "{}"}, DistEnv(0, 0, 1, 1, 0, "127.0.0.1", 7777, "single"),
                     id="framework-params-without-smddp"),
    ],
)
def test_detect_reads_each_launcher(environ, expected):
    assert dist_env.detect(environ) == expected


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({**TORCHRUN, "RANK": "x"}, "RANK='x' is not an integer"),
        ({**TORCHRUN, "RANK": "8"}, "RANK='8' is not below WORLD_SIZE=8"),
        ({**TORCHRUN, "RANK": "-1"}, "RANK='-1' is below 0"),
        ({**TORCHRUN, "WORLD_SIZE": "0"}, "WORLD_SIZE='0' is below 1"),
        ({**TORCHRUN, "LOCAL_RANK": "4"}, "LOCAL_RANK='4' is not below LOCAL_WORLD_SIZE=4"),
        ({**TORCHRUN, "GROUP_RANK": "one"}, "GROUP_RANK='one' is not an integer"),
        ({"RANK": "1", "WORLD_SIZE": "2"}, "LOCAL_RANK, LOCAL_WORLD_SIZE is not"),
        ({**TORCHRUN, "MASTER_PORT": "http"}, "MASTER_PORT='http' is not an integer"),
        ({**TORCHRUN, "MASTER_PORT": "70000"}, "MASTER_PORT='70000' is not a TCP port"),
        ({**OMPI, "OMPI_COMM_WORLD_RANK": "4"}, "OMPI_COMM_WORLD_RANK='4' is not below OMPI_COMM_WORLD_SIZE=4"),
        ({**OMPI, "OMPI_COMM_WORLD_LOCAL_RANK": "2"},
         "OMPI_COMM_WORLD_LOCAL_RANK='2' is not below OMPI_COMM_WORLD_LOCAL_SIZE=2"),
        ({"OMPI_COMM_WORLD_RANK": "0"}, "OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK"),
        ({**OMPI, "RANK": "0"}, "RANK='0' disagrees with OMPI_COMM_WORLD_RANK=3"),
        ({"SM_HOSTS": "algo-1", "SM_CURRENT_HOST": "algo-1"}, "SM_HOSTS='algo-1' is not a non-empty JSON list"),
        ({"SM_HOSTS": "[]", "SM_CURRENT_HOST": "algo-1"}, "SM_HOSTS='[]' is not a non-empty JSON list"),
        ({"SM_HOSTS": '{"algo-1": 1}', "SM_CURRENT_HOST": "algo-1"}, "is not a non-empty JSON list"),
        ({"SM_HOSTS": '["algo-1", 2]', "SM_CURRENT_HOST": "algo-1"}, "is not a non-empty JSON list"),
        ({"SM_HOSTS": '["algo-1","algo-1"]', "SM_CURRENT_HOST": "algo-1"}, "names a host twice"),
        ({"SM_HOSTS": HOSTS, "SM_CURRENT_HOST": "algo-9"}, "SM_CURRENT_HOST='algo-9' is not one of SM_HOSTS="),
        ({"SM_HOSTS": HOSTS}, "SM_CURRENT_HOST is not"),
        ({"SM_HOSTS": HOSTS, "SM_CURRENT_HOST": "algo-1", "SM_TRAINING_ENV": "{oops"},
         "SM_TRAINING_ENV='{oops' is not a JSON object"),
        ({**OMPI, "SM_RESOURCE_CONFIG": "[1]"}, "SM_RESOURCE_CONFIG='[1]' is not a JSON object"),
        ({"SM_FRAMEWORK_PARAMS": "true"}, "SM_FRAMEWORK_PARAMS='true' is not a JSON object"),
    ],
)
def test_detect_rejects_malformed_values_naming_them(environ, message):
    with pytest.raises(DistEnvError, match=re.escape(message)):
        dist_env.detect(environ)
    assert issubclass(DistEnvError, ValueError)


def test_detect_reports_smddp_mode_from_framework_params():
    assert dist_env.detect({"SM_FRAMEWORK_PARAMS": SMDDP_PARAMS}).backend_hint == "smddp"


def test_export_torch_env_writes_the_names_env_init_reads():
    environ: dict[str, str] = {}
    dist_env.export_torch_env(dist_env.detect({**OMPI, "MASTER_ADDR": "algo-1"}), environ)
    assert environ == {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "algo-1",
                       "MASTER_PORT": "7777"}


@pytest.mark.parametrize(
    ("environ", "model_dir", "output_dir", "checkpoint_dir"),
    [
        ({}, "/opt/ml/model", "/opt/ml/output", "/opt/ml/checkpoints"),
        ({"SAGEMAKER_BASE_DIR": "/tmp/host"}, "/tmp/host/model", "/tmp/host/output", "/tmp/host/checkpoints"),
        ({"SAGEMAKER_BASE_DIR": "/tmp/host", "SM_MODEL_DIR": "/m", "SM_OUTPUT_DIR": "/o"}, "/m", "/o",
         "/tmp/host/checkpoints"),
    ],
)
def test_container_paths_follow_the_toolkit(environ, model_dir, output_dir, checkpoint_dir):
    paths = dist_env.container_paths(environ)
    assert (str(paths.model_dir), str(paths.output_dir), str(paths.checkpoint_dir)) == (
        model_dir, output_dir, checkpoint_dir)
