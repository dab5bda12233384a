"""Where a job goes: region, execution role, output and code locations.

Each comes from the spec first, then the environment, then the infra stack's outputs (one read-only
CloudFormation call, made only when something is missing), then SageMaker Studio's execution role.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from orchestrator.errors import EnvironmentProblem
from orchestrator.planning.target import FALLBACK_REGION, Target, bucket_of
from orchestrator.spec.model import JobSpec

ROLE_ENV = "SMTRAIN_ROLE"
OUTPUT_PATH_ENV = "SMTRAIN_OUTPUT_PATH"
# Present inside SageMaker Studio and notebook instances (the SDK's get_execution_role reads it too).
STUDIO_METADATA = Path("/opt/ml/metadata/resource-metadata.json")


def resolve_region(spec: JobSpec, boto: Any | None = None) -> tuple[str, bool]:
    """The spec's region, else the session's; us-east-1 (flagged as a fallback) when nothing names one."""
    if spec.region:
        return spec.region, False
    if boto is None:
        from orchestrator.cloud.sdk import boto_session

        boto = boto_session()
    return (boto.region_name, False) if boto.region_name else (FALLBACK_REGION, True)


def resolve_target(spec: JobSpec, boto: Any | None = None) -> Target:
    """Fills in what the spec leaves out.

    Raises:
        EnvironmentProblem: no role or output path can be found; the message lists every place to set one.
    """
    region, fallback = resolve_region(spec, boto)
    role = spec.role or os.environ.get(ROLE_ENV)
    output_path = spec.output_path or os.environ.get(OUTPUT_PATH_ENV)
    code_location = spec.code_location
    if not role or not output_path:
        stack = _stack_outputs_or_none(boto, region)
        if stack is not None:
            role = role or stack.role_arn
            if not output_path:
                output_path, code_location = stack.output_path, code_location or stack.code_prefix
        role = role or _studio_role(boto, region)
    if not role:
        raise EnvironmentProblem(
            "no SageMaker execution role: the spec has no `role:`, $SMTRAIN_ROLE is unset, no smtrain infra stack "
            "was found, and this is not SageMaker Studio",
            fix="set `role: arn:aws:iam::<account>:role/<name>` in the spec, export SMTRAIN_ROLE, "
            "or create one with `smtrain infra deploy`",
        )
    if not output_path:
        raise EnvironmentProblem(
            "no output_path: the spec has none, $SMTRAIN_OUTPUT_PATH is unset and no smtrain infra stack was found",
            fix="set `output_path: s3://<bucket>/outputs/` in the spec, or create a bucket with `smtrain infra deploy`",
        )
    if not output_path.startswith("s3://"):
        raise EnvironmentProblem(f"output_path {output_path!r} is not an s3:// URI",
                                 fix="use s3://<bucket>/<prefix>/")
    code_location = code_location or f"s3://{bucket_of(output_path)}/code"
    return Target(region=region, role=role, output_path=output_path, code_location=code_location,
                  region_is_fallback=fallback)


def _stack_outputs_or_none(boto: Any | None, region: str) -> Any | None:
    from orchestrator.cloud.infra import stack_outputs
    from orchestrator.cloud.sdk import boto_session

    try:
        return stack_outputs(session=boto or boto_session(region))
    except EnvironmentProblem:
        return None


def _studio_role(boto: Any | None, region: str) -> str | None:
    """The execution role of the Studio user or notebook instance this runs in, found as SDK v2's
    `get_execution_role` finds it (Session.get_caller_identity_arn), with boto3 alone: SageMaker's own images
    ship SDK v3, which has no v2 Session."""
    if not STUDIO_METADATA.exists():
        return None
    import json

    from orchestrator.cloud.aws_errors import aws_errors
    from orchestrator.cloud.sdk import boto_session, client

    metadata = json.loads(STUDIO_METADATA.read_text())
    if metadata.get("ExecutionRoleArn"):
        return metadata["ExecutionRoleArn"]
    with aws_errors("looking up the execution role of this SageMaker Studio or notebook instance"):
        sagemaker = client(boto or boto_session(region), "sagemaker")
        domain = metadata.get("DomainId")
        if domain is None:
            return sagemaker.describe_notebook_instance(NotebookInstanceName=metadata["ResourceName"])["RoleArn"]
        profile = sagemaker.describe_user_profile(DomainId=domain, UserProfileName=metadata["UserProfileName"])
        return (profile.get("UserSettings", {}).get("ExecutionRole")
                or sagemaker.describe_domain(DomainId=domain)["DefaultUserSettings"]["ExecutionRole"])
