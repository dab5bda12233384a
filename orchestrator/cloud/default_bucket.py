"""The SageMaker SDK's default bucket `sagemaker-<region>-<account>`: its name, whether it exists, creating it.

Both SDKs write a job's outputs there when nothing else names a place, and create the bucket when it is missing
(session.py `default_bucket`, `_create_s3_bucket_if_it_does_not_exist`); a bucket of that generated name that
already exists must belong to this account (the SDK's ExpectedBucketOwner check: someone else could have taken
the name first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrator.cloud.aws_errors import aws_errors, error_code, is_missing_in_s3
from orchestrator.errors import AwsError


def default_bucket_name(boto: Any | None, region: str) -> str | None:
    """`sagemaker-<region>-<account>` (session.py `generate_default_sagemaker_bucket_name`, one STS call);
    None without credentials."""
    account = _account(boto, region)
    return None if account is None else f"sagemaker-{region}-{account}"


def _account(boto: Any | None, region: str) -> str | None:
    from botocore.exceptions import NoCredentialsError

    from orchestrator.cloud.sdk import boto_session, client

    with aws_errors("reading this account's id (sts:GetCallerIdentity) to name the SDK's default bucket"):
        try:
            return client(boto or boto_session(region), "sts").get_caller_identity()["Account"]
        except NoCredentialsError:
            return None


def bucket_exists(boto: Any, name: str, expected_owner: str | None = None) -> bool:
    """HeadBucket: False on 404.

    Raises:
        AwsError: 403 (another account's bucket, or no permission), or another failure.
    """
    from botocore.exceptions import ClientError

    from orchestrator.cloud.sdk import client

    extra = {"ExpectedBucketOwner": expected_owner} if expected_owner else {}
    with aws_errors(f"looking for S3 bucket {name}"):
        try:
            client(boto, "s3").head_bucket(Bucket=name, **extra)
        except ClientError as exc:
            if is_missing_in_s3(exc):
                return False
            if error_code(exc) == "403" and expected_owner:
                raise AwsError(f"S3 bucket {name} exists but does not belong to account {expected_owner}, so the "
                               "job's outputs will not be written there",
                               fix="name an output_path in the spec (or $SMTRAIN_OUTPUT_PATH, or the SDK defaults' "
                                   "SageMaker.PythonSDK.Modules.Session.DefaultS3Bucket)") from None
            raise
    return True


def ensure_bucket(boto: Any, name: str, say: Callable[[str], None], generated: bool) -> bool:
    """Creates the SDK's default bucket when it does not exist, after saying so. True when created.

    Args:
        generated: the name is `sagemaker-<region>-<account>`: an existing bucket must be this account's.
    """
    from orchestrator.cloud.sdk import client

    region = boto.region_name
    owner = _account(boto, region) if generated else None
    if bucket_exists(boto, name, owner):
        return False
    say(f"creating S3 bucket {name} in {region}: nothing named an output path, so the job writes to the "
        "SageMaker SDK's default bucket, which the SDK creates as well")
    location = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    with aws_errors(f"creating S3 bucket {name}"):
        s3 = client(boto, "s3")
        try:
            s3.create_bucket(Bucket=name, **location)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            return False
    return True
