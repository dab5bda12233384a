"""Processes per host are derived twice: by the plan (spec.topology, the rank table a user reads before submit)
and by the emulator from the request, as the toolkit derives them. For every example spec they must agree, so
the table a user reads is what `smtrain local` starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.emulator.instances.container import DISTRIBUTION_FLAGS, ContainerJob
from orchestrator.emulator.launching.toolkit_launchers import RunnerType, processes_per_host, runner_type
from orchestrator.planning.plan import build_plan
from orchestrator.planning.target import Target
from orchestrator.specs.loader import load

SPECS = sorted((Path(__file__).resolve().parents[2] / "job_specs").glob("*.yaml"))
TARGET = Target(region="us-east-1", role="arn:aws:iam::123456789012:role/SageMakerExecution",
                output_path="s3://bucket/outputs/", code_location="s3://bucket/code")


@pytest.mark.parametrize("path", SPECS, ids=[path.stem for path in SPECS])
def test_the_plan_and_the_emulator_start_the_same_processes_per_host(path):
    plan = build_plan(load(path), TARGET)
    job = ContainerJob.from_request(plan.create_training_job_request)
    framework = {key: value for key, value in job.decoded_hyperparameters.items() if key.startswith("sagemaker_")}

    runner = runner_type(framework, any(framework.get(flag) for flag in DISTRIBUTION_FLAGS))
    per_host = 1 if runner is RunnerType.process else processes_per_host(
        framework, plan.instance.gpus, plan.instance.neuron_cores)

    assert per_host == plan.topology.processes_per_host
    assert job.instance_count * per_host == plan.topology.world_size
