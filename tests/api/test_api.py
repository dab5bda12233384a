"""The notebook API (`orchestrator/api.py`): a plan made for one place sent to the other, against moto's server."""

from __future__ import annotations

import boto3

import orchestrator
from orchestrator.emulator.local_plan import local_plan
from orchestrator.emulator.run_options import Options
from orchestrator.specs.loader import load


def test_submit_plans_a_local_runs_plan_again_for_sagemaker(write_spec, bucket, tmp_path):
    local = local_plan(load(write_spec()), Options(run_dir=tmp_path / "run"))
    assert local.target.output_path.startswith("file://")

    job = orchestrator.submit(local)

    assert job.name == local.job_name and job.plan.target.output_path == f"s3://{bucket}/outputs/"
    created = boto3.client("sagemaker").describe_training_job(TrainingJobName=local.job_name)
    assert created["OutputDataConfig"]["S3OutputPath"] == f"s3://{bucket}/outputs/"
    assert job.submission.source_uploaded
