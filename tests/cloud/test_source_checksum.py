"""A re-submit reuses the content-addressed source tarball only when S3's own SHA-256 checksum of the
object at that key is the tarball's; an object replaced there (or stored without a checksum) is uploaded over.
Against moto's server, which keeps the checksum S3 verified at upload."""

from __future__ import annotations

import boto3
from job_fakes import shared_loader_session

from orchestrator.api import plan
from orchestrator.cloud.submission import ensure_source_uploaded
from orchestrator.planning.target import S3Uri


def _key(source_uri: str) -> tuple[str, str]:
    location = S3Uri.parse(source_uri)
    return location.bucket, location.key


def test_the_upload_carries_the_tarballs_checksum_and_an_unchanged_object_is_reused(write_spec, bucket):
    session = shared_loader_session(region_name="us-east-1")
    job_plan = plan(write_spec(), boto=session)
    assert ensure_source_uploaded(job_plan, session)
    head = boto3.client("s3").head_object(Bucket=bucket, Key=_key(job_plan.source_uri)[1], ChecksumMode="ENABLED")
    assert head["ChecksumSHA256"] == job_plan.source.checksum_sha256
    assert not ensure_source_uploaded(job_plan, session)


def test_an_object_replaced_at_the_key_is_not_reused(write_spec, bucket):
    session = shared_loader_session(region_name="us-east-1")
    job_plan = plan(write_spec(), boto=session)
    assert ensure_source_uploaded(job_plan, session)
    s3 = boto3.client("s3")
    _, key = _key(job_plan.source_uri)
    for replacement in ({"ChecksumAlgorithm": "SHA256"}, {}):  # with S3's checksum of other bytes, or none
        s3.put_object(Bucket=bucket, Key=key, Body=b"someone else's code", **replacement)

        assert ensure_source_uploaded(job_plan, session), "a replaced object must be uploaded over"
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == job_plan.source.tarball.read_bytes()
