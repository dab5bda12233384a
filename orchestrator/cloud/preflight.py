"""`smtrain check`: what a first submit needs from the account, checked before anything is uploaded.

Each check makes read-only calls (and, for the bucket, writes and deletes one empty object) and says ✓ or ✗ with
the fix. The commonest first-day failure, ResourceLimitExceeded after the upload, is the quota check: the
account's Service Quotas value for "<instance type> for training job usage" against the spec's instance count.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from orchestrator.cloud.aws_errors import NETWORK_FIX, error_code, fix_for, is_access_denied, is_missing_in_s3
from orchestrator.planning.target import bucket_of
from orchestrator.specs import images
from orchestrator.specs.capabilities import resolved_py_version
from orchestrator.specs.catalog import lookup
from orchestrator.specs.model import JobSpec

SAGEMAKER_SERVICE = "sagemaker.amazonaws.com"
_ECR_URI = re.compile(r"(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/"
                      r"(?P<repository>[^:@]+)(?::(?P<tag>[^@]+))?(?:@(?P<digest>.+))?")


@dataclass(frozen=True)
class Check:
    """One line of `smtrain check`: what was checked, whether it passed, what was found, and the fix."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Account:
    """What the checks find out along the way and share."""

    session: Any
    spec: JobSpec | None
    region: str | None = None
    account: str | None = None
    role: str | None = None
    role_arn: str | None = None
    """The role's ARN as IAM gives it, once the role check passed."""
    output_path: str | None = None
    code_location: str | None = None
    """Where submit uploads the code, where the spec or the stack names it; else beside the output path."""
    sdk_prefix: str | None = None
    """The SDK session's key prefix, when the SDK's bucket is the output path's (the code goes under it too)."""


def run_checks(spec: JobSpec | None, session: Any) -> list[Check]:
    """Every check in order, in `session`'s region (the job's: `check` and `submit` take one `--region`); a check
    whose prerequisite failed says so instead of calling AWS."""
    state = _Account(session=session, spec=spec)
    steps: list[Callable[[_Account], Check]] = [_credentials, _region, _role, _bucket, _role_grants]
    if spec is not None:
        steps += [_image, _quota]
    return [step(state) for step in steps]


def _credentials(state: _Account) -> Check:
    from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as Unreachable

    try:
        identity = state.session.client("sts").get_caller_identity()
    except (Unreachable, HTTPClientError) as exc:  # STS unreachable says nothing about the credentials
        return Check("credentials", False, f"STS GetCallerIdentity failed: {exc}", NETWORK_FIX)
    except (BotoCoreError, ClientError) as exc:
        return Check("credentials", False, f"STS GetCallerIdentity failed: {error_code(exc)}",
                     "run `aws configure` or `aws sso login`, or set AWS_PROFILE (expired keys: get new ones)")
    state.account = identity["Account"]
    return Check("credentials", True, f"account {identity['Account']} as {identity['Arn']}")


def _region(state: _Account) -> Check:
    """The session's region, which every client here calls: the one checked."""
    region = state.session.region_name
    if not region:
        return Check("region", False, "no region: neither the spec, --region, $AWS_REGION nor the profile names one",
                     "pass --region <region> (e.g. us-east-1), export AWS_REGION=<region>, "
                     "or set `region:` in the spec")
    offered = state.session.get_available_regions("sagemaker") + state.session.get_available_regions(
        "sagemaker", partition_name="aws-cn")
    if region not in offered:
        return Check("region", False, f"{region} is not a region where SageMaker runs",
                     f"use one of: {', '.join(sorted(offered)[:8])}, ...")
    state.region = region
    return Check("region", True, region)


def _locations(state: _Account) -> tuple[str | None, str | None, str]:
    """The role and output path as submit would find them: the spec, the environment, the SageMaker SDK's
    defaults files, then the stack (the SDK's default bucket, the last resort, is the bucket check's); the code
    location as submit names it is left in `state`."""
    from orchestrator.cloud.infra import stack_outputs
    from orchestrator.cloud.resolve import OUTPUT_PATH_ENV, ROLE_ENV, read_sdk_defaults, sdk_output_path
    from orchestrator.planning.sdk_defaults import SESSION, TRAINING_JOB

    spec = state.spec
    defaults = read_sdk_defaults(state.session, state.region or "us-east-1")
    sdk_role, sdk_bucket = defaults.get(f"{TRAINING_JOB}.RoleArn"), defaults.get(f"{SESSION}.DefaultS3Bucket")
    prefix = defaults.get(f"{SESSION}.DefaultS3ObjectKeyPrefix")
    role = (spec.role if spec else None) or os.environ.get(ROLE_ENV) or (sdk_role.value if sdk_role else None)
    named_output = (spec.output_path if spec else None) or os.environ.get(OUTPUT_PATH_ENV)
    sdk_prefix = prefix.value if prefix else None
    output_path = named_output or (sdk_output_path(sdk_bucket.value, sdk_prefix) if sdk_bucket else None)
    state.code_location = spec.code_location if spec else None
    state.sdk_prefix = None if named_output else sdk_prefix  # the SDK's bucket or its default bucket is the output's
    source = "the spec, the environment or the SageMaker SDK defaults"
    if (not role or not output_path) and state.account and state.region:
        try:
            stack = stack_outputs(session=state.session)
        except Exception:  # no stack (or no permission to read it): the check below says what is missing
            stack = None
        if stack is not None:
            if not output_path:
                state.code_location = state.code_location or stack.code_prefix
            role, output_path = role or stack.role_arn, output_path or stack.output_path
            source = f"stack {stack.stack_name}"
    return role, output_path, source


def _role(state: _Account) -> Check:
    from botocore.exceptions import ClientError

    if not state.account:
        return Check("role", False, "not checked: needs working credentials", "fix the credentials first")
    role, output_path, source = _locations(state)
    state.role, state.output_path = role, output_path
    if not role:
        return Check("role", False, "no execution role: the spec has no `role:`, $SMTRAIN_ROLE is unset and no "
                                    "smtrain infra stack was found",
                     "set `role: arn:aws:iam::<account>:role/<name>`, export SMTRAIN_ROLE, or `smtrain infra deploy`")
    name = role.rsplit("/", 1)[-1]
    try:
        found = state.session.client("iam").get_role(RoleName=name)["Role"]
    except ClientError as exc:
        if error_code(exc) == "NoSuchEntity":
            return Check("role", False, f"role {name} does not exist in account {state.account}",
                         "check the name or ARN in `role:` ($SMTRAIN_ROLE), or create one with `smtrain infra "
                         "deploy`")
        return Check("role", False, f"cannot read role {name}: {error_code(exc)}",
                     _failed_call_fix(exc, "allow your credentials iam:GetRole", "check the role in the IAM console"))
    if role.startswith("arn:") and _path_and_name(role) != _path_and_name(found["Arn"]):
        return Check("role", False, f"{role} names role {name}, whose ARN is {found['Arn']}: SageMaker assumes the "
                                    "role by the ARN the job gives, its path included, and fails the job "
                                    "(`SageMaker was unable to assume the role`)",
                     f"set `role: {found['Arn']}` ($SMTRAIN_ROLE)")
    if not _trusts_sagemaker(found.get("AssumeRolePolicyDocument")):
        return Check("role", False, f"{found['Arn']} exists but its trust policy does not let SageMaker assume it",
                     f"add a statement allowing sts:AssumeRole to the service principal {SAGEMAKER_SERVICE} (IAM "
                     "console: the role's Trust relationships)")
    state.role_arn = found["Arn"]
    return Check("role", True, f"{found['Arn']} (from {source}), assumable by {SAGEMAKER_SERVICE}")


def _path_and_name(role_arn: str) -> str:
    """`service-role/NAME` of `arn:aws:iam::ACCOUNT:role/service-role/NAME`: IAM finds a role by its name alone,
    the ARN a job gives must also carry its path."""
    return role_arn.partition(":role/")[2]


def _failed_call_fix(exc: Exception, permission: str, otherwise: str) -> str:
    """A permission is the fix only where AWS denied one; a throttled call, a server error or refused credentials
    get the advice every command gives them; `otherwise`, what to do without the call, goes with each."""
    fix = permission if is_access_denied(exc) else fix_for(exc)
    return f"{fix}; or {otherwise}" if fix else otherwise


def _trusts_sagemaker(document: Any) -> bool:
    if isinstance(document, str):
        import json
        from urllib.parse import unquote

        document = json.loads(unquote(document))
    statements = (document or {}).get("Statement", [])
    for statement in statements if isinstance(statements, list) else [statements]:
        actions = statement.get("Action", [])
        actions = [actions] if isinstance(actions, str) else actions
        services = (statement.get("Principal") or {}).get("Service", []) if isinstance(
            statement.get("Principal"), dict) else []
        services = [services] if isinstance(services, str) else services
        if (statement.get("Effect") == "Allow" and any(action in ("sts:AssumeRole", "sts:*", "*")
                                                       for action in actions)
                and SAGEMAKER_SERVICE in services):
            return True
    return False


@dataclass(frozen=True)
class DefaultBucket:
    """What `smtrain check` reports: the bucket a job without an output path would use, and whether it exists."""

    name: str
    output_path: str
    source: str
    exists: bool


def default_bucket(boto: Any | None = None, region: str | None = None) -> DefaultBucket | None:
    """The bucket and output path a spec without output_path gets from the SDK defaults or the SDK's naming,
    and whether that bucket exists (one HeadBucket). None without credentials.

    Raises:
        EnvironmentProblem: an SDK defaults file is broken.
        AwsError: STS or S3 refused the call.
    """
    from orchestrator.cloud.default_bucket import bucket_exists, default_bucket_name
    from orchestrator.cloud.resolve import read_sdk_defaults, sdk_output_path
    from orchestrator.cloud.sdk import boto_session
    from orchestrator.planning.sdk_defaults import SESSION

    boto = boto or boto_session(region)
    region = boto.region_name or region
    defaults = read_sdk_defaults(boto, region)
    configured = defaults.get(f"{SESSION}.DefaultS3Bucket")
    prefix = defaults.get(f"{SESSION}.DefaultS3ObjectKeyPrefix")
    if configured is not None:
        name, source = configured.value, f"SDK defaults ({configured.file.level}) {configured.file.location}"
    else:
        name, source = default_bucket_name(boto, region), "the SageMaker SDK's naming: sagemaker-<region>-<account>"
        if name is None:
            return None
    return DefaultBucket(name, sdk_output_path(name, prefix.value if prefix else None), source,
                         bucket_exists(boto, name))


def _bucket(state: _Account) -> Check:
    from botocore.exceptions import ClientError

    if not (state.account and state.region):
        return Check("bucket", False, "not checked: needs working credentials and a region",
                     "fix the lines above first")
    if not state.output_path:
        fallback = default_bucket(state.session, state.region)
        if fallback is None or not fallback.exists:
            name = fallback.name if fallback else "sagemaker-<region>-<account>"
            return Check("bucket", True, f"no output path named anywhere: submit creates the SageMaker SDK's default "
                                         f"bucket {name} in {state.region} (as the SDK does) and writes there")
        state.output_path = fallback.output_path
    if not state.output_path.startswith("s3://"):
        return Check("bucket", False, f"output_path {state.output_path} is not an s3:// URI",
                     "set `output_path: s3://<bucket>/outputs/` in the spec, or `smtrain infra deploy`")
    bucket = bucket_of(state.output_path)
    s3 = state.session.client("s3")
    try:
        location = s3.get_bucket_location(Bucket=bucket).get("LocationConstraint") or "us-east-1"
    except ClientError as exc:
        if is_missing_in_s3(exc):
            return Check("bucket", False, f"bucket {bucket} does not exist",
                         f"create it in {state.region} (`aws s3 mb s3://{bucket} --region {state.region}`), point "
                         "output_path at an existing one, or `smtrain infra deploy`")
        return Check("bucket", False, f"cannot read bucket {bucket}: {error_code(exc)}",
                     _failed_call_fix(exc, "allow your credentials s3:GetBucketLocation on it",
                               "use a bucket of this account"))
    if location == "EU":
        location = "eu-west-1"
    if location != state.region:
        return Check("bucket", False, f"bucket {bucket} is in {location}, the job runs in {state.region}: SageMaker "
                                      "needs the output bucket in the job's region",
                     f"use a bucket in {state.region}, or run the job in {location} (`region: {location}`)")
    prefix = state.output_path[len(f"s3://{bucket}/"):]
    probe = f"{prefix.rstrip('/') + '/' if prefix.strip('/') else ''}.smtrain-check-{uuid.uuid4().hex[:12]}"
    try:
        s3.put_object(Bucket=bucket, Key=probe, Body=b"")
        s3.delete_object(Bucket=bucket, Key=probe)
    except ClientError as exc:
        return Check("bucket", False, f"cannot write to {state.output_path}: {error_code(exc)}",
                     _failed_call_fix(exc, f"allow your credentials (and the execution role) s3:PutObject on "
                                    f"arn:aws:s3:::{bucket}/*", "point output_path at another bucket"))
    return Check("bucket", True, f"{bucket} in {location}, writable at {state.output_path}")


def _role_grants(state: _Account) -> Check:
    """What the role itself may do, as IAM's policy simulator says: writing the job's logs, and its S3 locations
    (the bucket check writes with your credentials, not the role's)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from orchestrator.cloud.resolve import code_beside
    from orchestrator.cloud.role_grants import needed_grants, refusals, refusals_detail, refusals_fix

    if not (state.role_arn and state.region):
        return Check("permissions", False, "not checked: needs the role above", "fix the role first")
    name = state.role_arn.rsplit("/", 1)[-1]
    beside_output = (code_beside(state.output_path, state.sdk_prefix)
                     if state.output_path and state.output_path.startswith("s3://") else None)
    code_location = state.code_location or beside_output
    grants = needed_grants(state.role_arn, state.region, state.output_path, code_location, state.spec)
    try:
        found = refusals(state.session.client("iam"), state.role_arn, grants)
    except (BotoCoreError, ClientError) as exc:
        if is_access_denied(exc):
            return Check("permissions", True, "not checked (your credentials may not simulate the role's policy: "
                                         "iam:SimulatePrincipalPolicy)")
        advice = fix_for(exc)
        otherwise = "read the role's policies in the IAM console"
        return Check("permissions", False, f"cannot simulate role {name}'s policy: {error_code(exc)}",
                     f"{advice}; or {otherwise}" if advice else otherwise)
    if found:
        return Check("permissions", False, refusals_detail(name, found), refusals_fix(name, found))
    return Check("permissions", True, f"role {name} may write the job's CloudWatch Logs"
                                 + (" and use its S3 locations" if len(grants) > 1 else ""))


def _image(state: _Account) -> Check:
    spec = state.spec
    assert spec is not None
    if not state.region:
        return Check("image", False, "not checked: needs a region", "fix the region first")
    if spec.image_uri:
        return _custom_image(state, spec.image_uri)
    account = images.registry_account(state.region)
    if account is None:
        return Check("image", False, f"SageMaker's PyTorch training images have no registry in {state.region} "
                                     "(smtrain's image table)",
                     "run the job in another region, or give image_uri of an image copied to this region")
    python = resolved_py_version(spec)
    assert spec.framework_version is not None and python is not None  # the spec was validated
    uri = images.image_uri(spec.framework_version, python, state.region,
                           images.processor(lookup(spec.instance_type).family))
    return Check("image", True, f"{uri} (AWS's registry {account} for {state.region}, smtrain's image table)")


def _custom_image(state: _Account, uri: str) -> Check:
    from botocore.exceptions import ClientError

    match = _ECR_URI.fullmatch(uri)
    if match is None:
        return Check("image", True, f"{uri}: not an ECR image; SageMaker needs it in ECR or a private registry "
                                    "it can reach (not checked)")
    if match["region"] != state.region:
        return Check("image", False, f"{uri} is in {match['region']}, the job runs in {state.region}: SageMaker "
                                     "pulls training images from the job's region",
                     f"copy the image to ECR in {state.region} and use that URI")
    if match["account"] != state.account:
        return Check("image", True, f"{uri} (account {match['account']}'s registry; not readable from here)")
    image_id = {"imageDigest": match["digest"]} if match["digest"] else {"imageTag": match["tag"] or "latest"}
    try:
        state.session.client("ecr").describe_images(repositoryName=match["repository"], imageIds=[image_id])
    except ClientError as exc:
        return Check("image", False, f"{uri}: {error_code(exc)}",
                     f"push the image (`docker push {uri}`), or fix image_uri")
    return Check("image", True, f"{uri} (found in this account's ECR)")


def _quota(state: _Account) -> Check:
    from botocore.exceptions import BotoCoreError, ClientError

    spec = state.spec
    assert spec is not None
    if not (state.account and state.region):
        return Check("quota", False, "not checked: needs working credentials and a region", "fix the lines above")
    kind = "spot training job usage" if spec.spot.enabled else "training job usage"
    wanted = f"{spec.instance_type} for {kind}"
    try:
        quotas = state.session.client("service-quotas")
        pages = quotas.get_paginator("list_service_quotas").paginate(ServiceCode="sagemaker")
        found = next((quota for page in pages for quota in page["Quotas"] if quota["QuotaName"] == wanted), None)
    except (BotoCoreError, ClientError) as exc:
        return Check("quota", False, f"cannot read the SageMaker quotas: {error_code(exc)}",
                     _failed_call_fix(exc, "allow your credentials servicequotas:ListServiceQuotas",
                               f"look up '{wanted}' in the Service Quotas console"))
    if found is None:
        return Check("quota", False, f"no quota '{wanted}' in {state.region}: the instance type is not offered "
                                     "for training there",
                     "pick an instance type SageMaker trains on in this region (`smtrain instances`), or another "
                     "region")
    limit = int(found["Value"])
    if limit < spec.host_count:
        return Check("quota", False, f"'{wanted}' is {limit} in {state.region}; the spec needs "
                                     f"{spec.host_count}: CreateTrainingJob would fail with "
                                     "ResourceLimitExceeded",
                     f"request an increase to {spec.host_count} (`aws service-quotas "
                     f"request-service-quota-increase --service-code sagemaker --quota-code {found['QuotaCode']} "
                     f"--desired-value {spec.host_count}`), or lower instance.count")
    return Check("quota", True, f"'{wanted}' is {limit} >= {spec.host_count} (running jobs share it)")

