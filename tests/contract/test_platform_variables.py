"""The variables the emulator sets as SageMaker's own (orchestrator/contract.py's TRAINING_JOB_NAME, AWS_REGION),
read from where AWS's code names them: the training toolkit reads them in the container, and SDK v2's local mode,
AWS's own emulation of a training container, sets them."""

from __future__ import annotations

import inspect

import pytest

from orchestrator.contract import AWS_REGION, TRAINING_JOB_NAME
from orchestrator.emulator.instances.container import platform_variables


def test_the_toolkit_reads_the_job_name_and_the_region_by_these_names():
    params = pytest.importorskip("sagemaker_training.params")
    trainer = pytest.importorskip("sagemaker_training.trainer")
    assert params.TRAINING_JOB_ENV == TRAINING_JOB_NAME
    assert f'os.environ.get("{AWS_REGION}", os.environ.get(params.REGION_NAME_ENV))' in inspect.getsource(trainer)


def test_sdk_local_mode_gives_its_containers_the_same_names():
    image = pytest.importorskip("sagemaker.local.image")
    assert (image.REGION_ENV_NAME, image.TRAINING_JOB_NAME_ENV_NAME) == (AWS_REGION, TRAINING_JOB_NAME)


def test_the_emulator_sets_the_region_and_no_credentials():
    variables = platform_variables("my-job", "eu-west-1")
    assert variables[AWS_REGION] == "eu-west-1" and variables[TRAINING_JOB_NAME] == "my-job"
    assert not [name for name in variables if "CREDENTIALS" in name or "KEY" in name or "TOKEN" in name]
