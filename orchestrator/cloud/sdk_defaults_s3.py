"""SDK defaults documents kept in S3, found as SDK v2's `_load_config_from_s3` finds them."""

from __future__ import annotations

from typing import Any

from orchestrator.cloud.aws_errors import aws_errors
from orchestrator.errors import EnvironmentProblem
from orchestrator.planning.sdk_defaults import CONFIG_FILE_NAME, READ_LIMIT


def read_config_object(boto: Any, uri: str) -> bytes:
    """The SDK defaults document at `uri` (sagemaker/config/config.py `_get_inferred_s3_uri`), at most READ_LIMIT
    bytes of it: the reader refuses a larger one, and decodes what it reads with the spec's guards.

    The objects under the prefix are listed: none is an error; more than one means a folder, whose
    `config.yaml` must be among them; exactly one means the URI itself is read.

    Raises:
        EnvironmentProblem: nothing, or no config.yaml, under the prefix.
        AwsError: S3 refused the calls.
    """
    from orchestrator.cloud.sdk import client

    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    with aws_errors(f"reading the SageMaker SDK defaults at {uri}"):
        s3 = client(boto, "s3")
        keys = [item["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
                for item in page.get("Contents", [])]
        if not keys:
            raise EnvironmentProblem(f"no SageMaker SDK defaults document at {uri}",
                                     fix="point the variable at an existing s3:// object or folder, or unset it")
        key = prefix
        if len(keys) > 1:
            key = f"{prefix.rstrip('/')}/{CONFIG_FILE_NAME}"
            if key not in keys:
                raise EnvironmentProblem(f"{uri} is a folder without a {CONFIG_FILE_NAME}",
                                         fix=f"put the defaults in {uri.rstrip('/')}/{CONFIG_FILE_NAME}")
        return s3.get_object(Bucket=bucket, Key=key)["Body"].read(READ_LIMIT)
