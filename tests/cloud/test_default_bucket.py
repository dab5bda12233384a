"""The SDK's default bucket against moto's server: a spec that names no output path anywhere gets
`sagemaker-<region>-<account>` as both SDKs give it, `plan` says so, and `submit` creates the bucket after saying
so (once); the SDK defaults' DefaultS3Bucket and prefix are used and created the same way."""

from __future__ import annotations

import json

import boto3
import yaml
from click.testing import CliRunner
from job_fakes import write_spec_file

from orchestrator.cli.main import main
from orchestrator.cloud.preflight import default_bucket

# moto's default account
BUCKET = "sagemaker-us-east-1-123456789012"


def _spec(tmp_path):
    path = write_spec_file(tmp_path)
    document = yaml.safe_load(path.read_text())
    del document["output_path"]
    document["inputs"] = {}
    path.write_text(yaml.safe_dump(document))
    return path


def _buckets() -> set[str]:
    return {bucket["Name"] for bucket in boto3.client("s3").list_buckets()["Buckets"]}


def test_without_an_output_path_the_job_goes_to_the_sdk_default_bucket_created_on_submit(aws, tmp_path):
    spec = _spec(tmp_path)
    planned = CliRunner().invoke(main, ["plan", str(spec), "-o", "json"])
    assert planned.exit_code == 0, planned.output
    document = json.loads(planned.output)
    assert document["create_training_job_request"]["OutputDataConfig"] == {"S3OutputPath": f"s3://{BUCKET}/"}
    assert document["sources"]["output_path"] == {"from": "fallback",
                                                  "where": f"the SageMaker SDK's default bucket {BUCKET}"}
    assert BUCKET not in _buckets()  # plan creates nothing
    assert default_bucket().exists is False  # what `smtrain check` reports

    first = CliRunner().invoke(main, ["submit", str(spec)])
    assert first.exit_code == 0, first.output + first.stderr
    assert f"creating S3 bucket {BUCKET} in us-east-1" in first.stderr
    assert BUCKET in _buckets()
    [job] = boto3.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]
    described = boto3.client("sagemaker").describe_training_job(TrainingJobName=job["TrainingJobName"])
    assert described["OutputDataConfig"]["S3OutputPath"] == f"s3://{BUCKET}/"
    keys = [item["Key"] for item in boto3.client("s3").list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert keys and all(key.startswith("code/") for key in keys)

    second = CliRunner().invoke(main, ["submit", str(spec)])
    assert second.exit_code == 0
    assert "creating S3 bucket" not in second.stderr
    assert default_bucket().exists is True


def test_sdk_defaults_bucket_and_prefix_are_used_and_created(aws, tmp_path, monkeypatch):
    config = tmp_path / "admin.yaml"
    config.write_text(yaml.safe_dump({"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {"Session": {
        "DefaultS3Bucket": "platform-bucket", "DefaultS3ObjectKeyPrefix": "team-a"}}}}}))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(config))
    result = CliRunner().invoke(main, ["submit", str(_spec(tmp_path)), "-o", "json"])
    assert result.exit_code == 0, result.output + result.stderr
    assert "creating S3 bucket platform-bucket" in result.stderr
    assert json.loads(result.stdout)["bucket_created"] == "platform-bucket"
    keys = [item["Key"] for item in boto3.client("s3").list_objects_v2(Bucket="platform-bucket")["Contents"]]
    assert keys and all(key.startswith("team-a/code/") for key in keys)
    reported = default_bucket()
    assert (reported.name, reported.output_path, reported.exists) == ("platform-bucket", "s3://platform-bucket/team-a/",
                                                                      True)


def test_sdk_defaults_file_in_s3_is_read_as_the_sdk_reads_it(aws, tmp_path, monkeypatch):
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="platform-config")
    s3.put_object(Bucket="platform-config", Key="sagemaker/config.yaml", Body=yaml.safe_dump({
        "SchemaVersion": "1.0", "SageMaker": {"TrainingJob": {"Tags": [{"Key": "cost-center", "Value": "cc-7"}]}}}))
    s3.put_object(Bucket="platform-config", Key="sagemaker/README", Body=b"the folder holds two objects")
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", "s3://platform-config/sagemaker")
    result = CliRunner().invoke(main, ["plan", str(write_spec_file(tmp_path)), "-o", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert {"Key": "cost-center", "Value": "cc-7"} in document["create_training_job_request"]["Tags"]
    assert document["sources"]["tags.cost-center"]["where"] == "s3://platform-config/sagemaker"
