"""orchestrator.submit against moto's server: the plan's request, sent once; the source uploaded once."""

from __future__ import annotations


import boto3
import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError
from job_fakes import BUCKET, SECRET, described, shared_loader_session

import orchestrator
from orchestrator.errors import AwsError, CapabilityError, EnvironmentProblem
from orchestrator.api import plan
from orchestrator.cloud.submission import ensure_source_uploaded, submit


def _jobs() -> list[str]:
    return [
        job["TrainingJobName"]
        for job in boto3.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]
    ]


def test_submit_uploads_the_source_and_creates_the_planned_job(tiny_plan, bucket, calls):
    session, sent = calls
    job_plan = tiny_plan

    job = submit(job_plan, boto=session)

    assert sent == ["s3.HeadBucket", "s3.HeadObject", "s3.PutObject", "sagemaker.CreateTrainingJob"]
    assert job.name == job_plan.job_name and job.submission.source_uploaded
    key = job_plan.source_uri.removeprefix(f"s3://{BUCKET}/")
    assert boto3.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read() == job_plan.source.tarball.read_bytes()
    request = job_plan.create_training_job_request
    echo = boto3.client("sagemaker").describe_training_job(TrainingJobName=job.name)
    assert _jobs() == [job.name]
    # moto echoes these fields as sent; it replaces MetricDefinitions and drops Environment/ProfilerConfig
    # (sdk-facts.md §9), which the before-parameter-build check covers instead.
    assert echo["HyperParameters"] == request["HyperParameters"]
    assert (
        echo["AlgorithmSpecification"]["TrainingImage"] == request["AlgorithmSpecification"]["TrainingImage"]
    )
    assert echo["AlgorithmSpecification"]["TrainingInputMode"] == "File"
    assert echo["ResourceConfig"] == request["ResourceConfig"]
    assert echo["InputDataConfig"] == request["InputDataConfig"]
    assert echo["OutputDataConfig"] == request["OutputDataConfig"]
    assert echo["StoppingCondition"] == request["StoppingCondition"]
    assert echo["RoleArn"] == request["RoleArn"]
    assert echo["HyperParameters"]["sagemaker_submit_directory"] == f'"{job_plan.source_uri}"'


def test_submit_of_unchanged_source_reuses_the_uploaded_tarball(write_spec, bucket, calls):
    session, sent = calls
    first = submit(plan(write_spec(), boto=session), boto=session)
    sent.clear()

    second = submit(plan(write_spec(), boto=session), boto=session)

    assert not second.submission.source_uploaded
    assert sent == ["s3.HeadBucket", "s3.HeadObject", "sagemaker.CreateTrainingJob"]
    assert second.submission.plan.source_uri == first.submission.plan.source_uri
    assert sorted(_jobs()) == sorted([first.name, second.name])


def test_submit_refuses_an_output_bucket_in_another_region_before_uploading(tiny_plan, aws, calls):
    """SageMaker writes outputs only to a bucket in the job's region: before, the source was uploaded and the
    job created, to bill and then fail; now the submit stops at the HeadBucket, saying both regions (exit 2)."""
    session, sent = calls
    boto3.client("s3", region_name="us-west-2").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})

    with pytest.raises(EnvironmentProblem) as raised:
        submit(tiny_plan, boto=session)

    assert f"the output bucket {BUCKET} is in us-west-2, the job would run in us-east-1" in raised.value.message
    assert "set `region: us-west-2` in the spec" in raised.value.fix
    assert sent == ["s3.HeadBucket"] and _jobs() == []
    assert "Contents" not in boto3.client("s3").list_objects_v2(Bucket=BUCKET)


def test_ensure_source_uploaded_uploads_a_changed_tree_under_a_new_key(write_spec, bucket, tmp_path):
    session = shared_loader_session(region_name="us-east-1")
    before = plan(write_spec(), boto=session)
    assert ensure_source_uploaded(before, session)
    (tmp_path / "src" / "model.py").write_text("LAYERS = 2\n")

    after = plan(write_spec(), boto=session)

    assert after.source_uri != before.source_uri
    assert ensure_source_uploaded(after, session)
    assert not ensure_source_uploaded(after, session)


@pytest.mark.parametrize("lost", [ConnectionClosedError, ReadTimeoutError])
def test_submit_adopts_the_job_when_the_create_response_is_lost(tiny_plan, bucket, calls, lost):
    session, sent = calls
    failures = []

    def lose_response(**_):
        # The server has created the job; the caller never hears so.
        if not failures:
            failures.append(lost(endpoint_url="http://sagemaker"))
            raise failures[0]

    session.events.register("after-call.sagemaker.CreateTrainingJob", lose_response)
    job = submit(tiny_plan, boto=session)

    assert failures
    assert sent.count("sagemaker.CreateTrainingJob") == 1
    assert sent[-1] == "sagemaker.DescribeTrainingJob"
    assert _jobs() == [job.name]


def test_submit_retries_a_create_that_failed_before_it_was_sent(tiny_plan, bucket, calls):
    session, sent = calls
    failures = []

    def drop_connection(**_):
        if not failures:
            failures.append(ConnectionClosedError(endpoint_url="http://sagemaker"))
            raise failures[0]

    session.events.register("before-send.sagemaker.CreateTrainingJob", drop_connection)
    job = submit(tiny_plan, boto=session)

    assert failures
    # The dropped attempt never reached the server: the look-up finds no job, then the retry creates it.
    assert sent[-2:] == ["sagemaker.DescribeTrainingJob", "sagemaker.CreateTrainingJob"]
    assert sent.count("sagemaker.CreateTrainingJob") == 1
    assert _jobs() == [job.name]


def test_submit_refuses_blocking_findings_before_any_call(write_spec, calls):
    session, sent = calls
    spec = write_spec(
        name="smddp-g5",
        framework_version="2.2.0",
        py_version="py310",
        instance={"type": "ml.g5.12xlarge", "count": 1},
        distribution={"mode": "pytorchddp"},
    )
    job_plan = plan(spec, boto=session)

    with pytest.raises(CapabilityError, match=r"smddp-g5\.yaml:\d+:\d+: instance\.type: unverified: ") as raised:
        submit(job_plan, boto=session)

    assert raised.value.exit_code == 2
    assert "allow_unverified: true" in raised.value.fix
    assert sent == []


def test_submit_sends_exactly_the_plans_request(tiny_plan, bucket, calls):
    """The parameters botocore receives for CreateTrainingJob are the plan's request, key for key."""
    session, _ = calls
    captured = {}
    session.events.register("before-parameter-build.sagemaker.CreateTrainingJob",
                            lambda params, **_: captured.update(params))

    submit(tiny_plan, boto=session)

    assert captured == tiny_plan.create_training_job_request


def test_create_failure_message_masks_secret_values(tiny_plan, bucket, calls):
    session, _ = calls

    def reject(**_):
        raise ClientError(
            {
                "Error": {
                    "Code": "ValidationException",
                    "Message": f"Value '{SECRET}' at 'environment' failed",
                }
            },
            "CreateTrainingJob",
        )

    session.events.register("before-send.sagemaker.CreateTrainingJob", reject)
    with pytest.raises(AwsError) as raised:
        submit(tiny_plan, boto=session)

    assert "ValidationException" in str(raised.value) and SECRET not in str(raised.value)
    assert raised.value.exit_code == 1


def test_submit_adopts_after_resource_in_use_only_when_an_earlier_attempt_may_have_created_it(
    tiny_plan, stubbed
):
    job_plan = tiny_plan
    request = job_plan.create_training_job_request
    ours = described(
        job_plan.job_name,
        "InProgress",
        "Starting",
        HyperParameters=request["HyperParameters"],
        RoleArn=request["RoleArn"],
        AlgorithmSpecification={
            "TrainingInputMode": "File",
            "TrainingImage": request["AlgorithmSpecification"]["TrainingImage"],
        },
    )
    sagemaker = stubbed.stubbers["sagemaker"]
    stubbed.stubbers["s3"].add_response("head_bucket", {})
    stubbed.stubbers["s3"].add_response("head_object", {"ChecksumSHA256": job_plan.source.checksum_sha256})
    # 1: a 503 (outcome unknown), and the look-up does not see the job yet; 2: the name is taken, by call 1.
    sagemaker.add_client_error("create_training_job", "ServiceUnavailable", http_status_code=503)
    sagemaker.add_client_error(
        "describe_training_job", "ValidationException", "Requested resource not found."
    )
    sagemaker.add_client_error("create_training_job", "ResourceInUse", "Training job names must be unique")
    sagemaker.add_response("describe_training_job", ours)

    job = submit(job_plan, boto=stubbed)

    assert job.name == job_plan.job_name


def test_submit_reports_a_genuine_name_clash(tiny_plan, stubbed):
    stubbed.stubbers["s3"].add_response("head_bucket", {})
    stubbed.stubbers["s3"].add_response("head_object", {"ChecksumSHA256": tiny_plan.source.checksum_sha256})
    # On the first attempt nothing of ours can exist yet: no look-up, no adoption.
    stubbed.stubbers["sagemaker"].add_client_error("create_training_job", "ResourceInUse", "already exists")

    with pytest.raises(AwsError, match="a training job named tiny-1 already exists in us-east-1"):
        submit(tiny_plan, boto=stubbed)


def test_a_refused_head_object_names_both_likely_causes(tiny_plan, stubbed):
    """Submit's first call with credentials AWS does not accept: S3 answers the HEAD with a bare 403 and no reason
    (botocore's code is "403"). Before, `HeadObject failed: 403: Forbidden` came with no fix. The HeadBucket
    before it (the bucket's region) gets the same bare 403, and leaves the verdict to the upload."""
    stubbed.stubbers["s3"].add_client_error("head_bucket", "403", "Forbidden", http_status_code=403)
    stubbed.stubbers["s3"].add_client_error("head_object", "403", "Forbidden", http_status_code=403)

    with pytest.raises(AwsError) as raised:
        submit(tiny_plan, boto=stubbed)

    shown = str(raised.value)
    assert f"uploading the source to {tiny_plan.source_uri}: HeadObject failed: 403: Forbidden\n  To fix: " in shown
    assert "either AWS did not accept your credentials (`aws sts get-caller-identity`" in shown
    assert "s3:GetObject on its objects and s3:ListBucket on it" in shown


def test_notebook_api_exposes_submit_and_job_lazily():
    from orchestrator import api
    from orchestrator.backends.job import Job as Handle

    assert orchestrator.submit is api.submit
    assert orchestrator.Job is Handle


def test_run_submit_and_attach_return_the_one_job_handle(tiny_plan, bucket, tmp_path):
    """One handle for every place a job runs."""
    submitted = orchestrator.submit(tiny_plan)
    assert type(submitted) is orchestrator.Job and submitted.backend.name == "sagemaker"
    assert submitted.submission.source_uploaded and submitted.name == tiny_plan.job_name
    assert type(orchestrator.attach(submitted.name)) is orchestrator.Job
    assert type(orchestrator.Job.attach(submitted.name)) is orchestrator.Job
