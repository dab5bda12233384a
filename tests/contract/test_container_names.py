"""Every name that crosses into the container is defined once per side and both sides agree:
orchestrator/contract.py (the orchestrator) and entrypoints/ (which runs inside SageMaker's images and cannot
import the orchestrator)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from orchestrator import contract
from orchestrator.planning.request import distribution_hyperparameters
from orchestrator.specs.loader import load

REPO = Path(__file__).resolve().parents[2]
SHARED_NAMES = [
    "OPT_ML", "SAGEMAKER_BASE_DIR", "DEFAULT_CHECKPOINT_DIR", "SM_HOSTS", "SM_CURRENT_HOST", "SM_MODEL_DIR",
    "SM_OUTPUT_DIR", "SM_OUTPUT_DATA_DIR", "SM_CHANNEL_PREFIX", "SM_NUM_GPUS", "SM_RESOURCE_CONFIG", "SM_TRAINING_ENV",
    "MASTER_ADDR", "MASTER_PORT", "DEFAULT_MASTER_PORT", "TORCHRUN_VARS", "OMPI_VARS", "METRICS_JSONL",
    "MODEL_STATE_FILE", "MODEL_METADATA_FILE", "FAILURE_FILE", "SM_FRAMEWORK_PARAMS", "SMDDP_ENABLED_FLAG",
]


@pytest.fixture(scope="module")
def entrypoints():
    """The entrypoints' modules, imported the way SageMaker runs them (their folder on sys.path)."""
    sys.path.insert(0, str(REPO / "entrypoints"))
    try:
        import config
        import data
        import dist_env
        import metrics
        import trainers

        yield {"config": config, "data": data, "dist_env": dist_env, "metrics": metrics, "trainers": trainers}
    finally:
        sys.path.remove(str(REPO / "entrypoints"))


@pytest.mark.parametrize("name", SHARED_NAMES)
def test_contract_names_agree(entrypoints, name):
    assert getattr(entrypoints["dist_env"], name) == getattr(contract, name)


def test_contract_hyperparameters_are_train_py_options(entrypoints):
    parser = entrypoints["config"].build_parser({})
    options = {option.removeprefix("--") for action in parser._actions for option in action.option_strings
               if option.startswith("--") and option != "--help"}
    assert options == contract.HYPERPARAMETERS
    assert entrypoints["config"].TRAINERS == contract.TRAINERS
    assert entrypoints["config"].MODELS == contract.MODELS
    assert entrypoints["trainers"].ZERO_STAGE_TRAINERS == contract.ZERO_STAGE_TRAINERS
    assert tuple(sorted([0, *contract.ZERO_STAGE_TRAINERS])) == entrypoints["config"].ZERO_STAGES


def test_contract_metric_regexes_read_the_line_train_py_prints(entrypoints):
    line = entrypoints["metrics"].metric_line(epoch=3, step=40, total_steps=96, loss=0.123456, samples_per_sec=1520.3)
    mpi_prefixed = f"[1,mpirank:0,algo-1]<stdout>:{line}"
    # The defaults also read other scripts' formats (eval loss, learning rate): train.py's line has only these three.
    values = {definition["Name"]: float(match.group(1)) for definition in contract.DEFAULT_METRIC_DEFINITIONS
              if (match := re.search(definition["Regex"], mpi_prefixed))}
    assert values == {"train:loss": 0.123456, "train:samples_per_sec": 1520.3, "train:epoch": 3.0}


def test_contract_smddp_flag_is_what_the_sdk_sends():
    spec = load(REPO / "job_specs" / "mlp-ddp-smddp-2x-p4d.24xlarge.yaml").spec
    assert contract.SMDDP_ENABLED_FLAG in distribution_hyperparameters(spec)


def test_contract_train_channel(entrypoints):
    assert entrypoints["data"].TRAIN_CHANNEL == contract.TRAIN_CHANNEL.upper()


def test_contract_example_hyperparameters_are_known_to_train_py():
    for path in (REPO / "job_specs").glob("*.yaml"):
        spec = load(path).spec
        if spec.entry_point == "train.py":
            assert set(spec.hyperparameters) <= contract.HYPERPARAMETERS, path.name


@pytest.mark.parametrize(("contract_name", "standin_name"), [
    ("SMDDP_USE_SINGLENODE", "USE_SINGLENODE"), ("SMDDP_USE_HOMOGENEOUS", "USE_HOMOGENEOUS"),
    ("SMDDP_SERVER_ADDR", "SERVER_ADDR"), ("SMDDP_SERVER_PORT", "SERVER_PORT"), ("SMDDP_LOCAL_RANK", "LOCAL_RANK"),
])
def test_contract_smddp_names_agree_with_the_cpu_standin(contract_name, standin_name):
    """The CPU stand-in runs inside the training processes and cannot import the orchestrator: it defines SMDDP's
    launcher variables on its side (smtrain_gpu_standin/smddp_env.py)."""
    from orchestrator.emulator.gpu_standin.smtrain_gpu_standin import smddp_env

    assert getattr(smddp_env, standin_name) == getattr(contract, contract_name)
    assert set(smddp_env.FROM_OPEN_MPI.values()) == set(contract.OMPI_VARS)
