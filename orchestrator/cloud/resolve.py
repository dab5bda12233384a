"""Where a job goes: region, execution role, output and code locations, and the SDK defaults applied.

Each comes from the spec first, then the environment, then the SageMaker SDK's defaults files, then the infra
stack's outputs (one read-only CloudFormation call, made only when something is missing), then SageMaker
Studio's execution role; an output path last from the SDK's default bucket (an STS call for the account).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import EnvironmentProblem
from orchestrator.planning.packaging import DEFAULT_MAX_BYTES
from orchestrator.planning.provenance import (
    DEFAULT,
    ENVIRONMENT,
    FALLBACK,
    INFRA_STACK,
    SDK_DEFAULTS,
    SPEC,
    STUDIO,
    Source,
)
from orchestrator.planning.sdk_defaults import SESSION, TRAINING_JOB, SdkDefaults, load_sdk_defaults
from orchestrator.planning.target import FALLBACK_REGION, Missing, RoleWrites, Target, bucket_of
from orchestrator.planning.training_defaults import apply_training_defaults, source_of
from orchestrator.specs.capabilities import check
from orchestrator.specs.loader import LoadedSpec
from orchestrator.specs.words import SPEC_WORDS, FieldWords
from orchestrator.specs.model import JobSpec, target_problem

if TYPE_CHECKING:
    from orchestrator.planning.plan import Plan

ROLE_ENV = "SMTRAIN_ROLE"
OUTPUT_PATH_ENV = "SMTRAIN_OUTPUT_PATH"
# Present inside SageMaker Studio and notebook instances (the SDK's get_execution_role reads it too).
STUDIO_METADATA = Path("/opt/ml/metadata/resource-metadata.json")


REGION_ENV = ("AWS_REGION", "AWS_DEFAULT_REGION")
"""Where `cloud.sdk.boto_session` finds a region before the profile, in its order: read here without boto3,
whose import is most of a plan's time (and of `smtrain local`'s own) when the answer is already in the
environment. Only a profile's region (in the AWS config file) needs boto3 to read it."""


def resolve_region(spec: JobSpec, boto: Any | None = None) -> tuple[str, bool]:
    """The spec's region, else the session's (the environment's, as the session would read it, when no session
    is given); us-east-1 (flagged as a fallback) when nothing names one."""
    if spec.region:
        return spec.region, False
    if boto is None:
        variable = _region_variable()
        if variable:
            return os.environ[variable], False
        if not _readable(_aws_config_file()):  # no profile can name one: boto3 would find none either
            return FALLBACK_REGION, True
        from orchestrator.cloud.sdk import boto_session

        boto = boto_session()
    return (boto.region_name, False) if boto.region_name else (FALLBACK_REGION, True)


def resolve(loaded: LoadedSpec, boto: Any | None = None) -> tuple[LoadedSpec, Target]:
    """The spec completed from the SageMaker SDK's defaults files, and where it goes (`resolve_target`).

    Raises:
        EnvironmentProblem: an SDK defaults file is broken, or no role or output path can be found.
        SpecError: `boto` is a session for another region than the spec's (the stack, Studio and the default
            bucket would be read in one and the job sent to the other).
    """
    from orchestrator.cloud.sdk import refuse_other_region

    spec = loaded.spec
    refuse_other_region(boto, spec.region, named_by="the spec's `region:`")
    region, _ = resolve_region(spec, boto)
    defaults = read_sdk_defaults(boto, region)
    applied = apply_training_defaults(spec, defaults)
    target = resolve_target(applied.spec, boto, defaults, loaded.field_words)
    target = dataclasses.replace(target, training_defaults=applied.request,
                                 sources={**target.sources, **applied.sources})
    findings = loaded.findings if applied.spec is spec else check(applied.spec, loaded.field_words)
    return dataclasses.replace(loaded, spec=applied.spec, findings=[*findings, *applied.findings]), target


def plan_on_sagemaker(spec: LoadedSpec | Plan, boto: Any | None = None, *, job_name: str | None = None,
                      max_source_bytes: int = DEFAULT_MAX_BYTES, region: str | None = None) -> Plan:
    """The one way a spec is planned for SageMaker (`SageMakerBackend.plan`, `orchestrator.plan`, `smtrain plan`):
    resolved where it goes, then built. `region` replaces the spec's, as `--set region=X` does. A plan made for
    another place (a local run's, or another region's) is planned again from its spec, under its job name; a
    SageMaker plan is returned as it is."""
    from orchestrator.planning.plan import Plan, build_plan  # here: validate reads this module and plans nothing

    if isinstance(spec, Plan):
        if spec.target.output_path.startswith("s3://") and region in (None, spec.target.region):
            return spec
        spec, job_name = spec.loaded, job_name or spec.job_name
    completed, target = resolve(spec if region is None else spec.in_region(region), boto)
    return build_plan(completed, target, job_name=job_name, max_source_bytes=max_source_bytes)


def read_sdk_defaults(boto: Any | None, region: str) -> SdkDefaults:
    """The SDK defaults files; an s3:// location is read with this session, as the SDK reads it."""
    def read_s3(uri: str) -> bytes:
        from orchestrator.cloud.sdk import boto_session
        from orchestrator.cloud.sdk_defaults_s3 import read_config_object

        return read_config_object(boto or boto_session(region), uri)

    return load_sdk_defaults(read_s3)


def resolve_target(spec: JobSpec, boto: Any | None = None, defaults: SdkDefaults | None = None,
                   words: FieldWords = SPEC_WORDS) -> Target:
    """Fills in what the spec leaves out, noting where each value came from; `words` name the spec's fields in
    the fixes of what is missing (a function job's are keywords).

    Role: the spec, $SMTRAIN_ROLE, the SDK defaults' RoleArn, the infra stack, Studio's execution role.
    Output path: the spec, $SMTRAIN_OUTPUT_PATH, the SDK defaults' DefaultS3Bucket (and prefix), the infra
    stack, then the SDK's own default bucket `sagemaker-<region>-<account>` (created on submit if missing).

    Raises:
        EnvironmentProblem: an output path that is not an s3:// URI. A missing role or output path is no error
            here (plan sends nothing): Target.missing says what submit will need.
    """
    defaults = defaults or SdkDefaults()
    region, fallback = resolve_region(spec, boto)
    sources: dict[str, Source] = {} if spec.region else {"region": _region_source(boto, fallback)}
    role, output_path = named_role_and_output_path(spec, defaults, sources)
    code_location = _first(sources, "code_location", (spec.code_location, Source(SPEC)))
    bucket_to_create = None
    if output_path and "output_path" in sources and sources["output_path"].kind == SDK_DEFAULTS:
        bucket_to_create = bucket_of(output_path)
    # Asked only when something is missing: a spec that names its role and output path needs no boto3 to plan.
    credentials = functools.cache(lambda: _have_credentials(boto, region))
    missing: list[Missing] = []
    role_writes = None
    if (not role or not output_path) and credentials():
        stack = _stack_outputs_or_none(boto, region)
        if stack is not None:
            stack_source = Source(INFRA_STACK, stack.stack_name)
            if not role:
                role = _first(sources, "role", (stack.role_arn, stack_source))
                role_writes = RoleWrites(stack.output_path, stack.checkpoint_prefix)
            if not output_path:
                output_path = _first(sources, "output_path", (stack.output_path, stack_source))
                code_location = code_location or _first(sources, "code_location", (stack.code_prefix, stack_source))
    if not role:
        studio = _studio_role(boto, region, credentials())
        role = _first(sources, "role", (studio, Source(STUDIO, str(STUDIO_METADATA))))
    if not role:
        stack = ("no smtrain infra stack was found, and this is not SageMaker Studio" if credentials() else
                 "and with no AWS credentials the infra stack and Studio could not be asked")
        missing.append(Missing(
            "role", f"no SageMaker execution role: {words.lacks('role')}, $SMTRAIN_ROLE is unset, the SageMaker "
                    f"SDK defaults set no SageMaker.TrainingJob.RoleArn, {stack}",
            f"{words.set('role', 'arn:aws:iam::<account>:role/<name>')}, export SMTRAIN_ROLE, or create one with "
            "`smtrain infra deploy`"))
        role = ROLE_PLACEHOLDER
    if not output_path:
        bucket = _default_bucket(boto, region, defaults) if credentials() else None
        output_path = _first(sources, "output_path", bucket)
        if not output_path:
            missing.append(Missing(
                "output_path", "no output path: nothing names one, and the SageMaker SDK's default bucket "
                               "sagemaker-<region>-<account> cannot be named without AWS credentials",
                f"{words.set('output_path', 's3://<bucket>/<prefix>/')} or $SMTRAIN_OUTPUT_PATH, or configure "
                "AWS credentials"))
            output_path = sdk_output_path(f"sagemaker-{region}-<account>", _prefix(defaults))
        bucket_to_create = bucket_of(output_path)
    if not output_path.startswith("s3://"):
        raise EnvironmentProblem(f"output_path {output_path!r} is not an s3:// URI",
                                 fix="use s3://<bucket>/<prefix>/")
    if not code_location:
        output_source = sources.get("output_path")
        sdk_chosen = output_source is not None and output_source.kind in (SDK_DEFAULTS, FALLBACK)
        code_location = _first(sources, "code_location",
                               (code_beside(output_path, _prefix(defaults) if sdk_chosen else None), Source(DEFAULT)))
    return Target(region=region, role=role, output_path=output_path, code_location=code_location,
                  region_is_fallback=fallback, sources=sources, bucket_to_create=bucket_to_create,
                  role_writes=role_writes, missing=tuple(missing))


def named_role_and_output_path(spec: JobSpec, defaults: SdkDefaults,
                               sources: dict[str, Source]) -> tuple[str | None, str | None]:
    """The role and output path named without asking AWS: the spec's, else $SMTRAIN_ROLE and $SMTRAIN_OUTPUT_PATH,
    else the SDK defaults files' (each one's source recorded in `sources`). `plan`, `submit` and `validate` check
    them here alike, so that a value the environment gives is judged as one the spec writes.

    Raises:
        EnvironmentProblem: a value from the environment or an SDK defaults file breaks a rule the spec's field
            keeps, naming where it came from.
    """
    role = _first(sources, "role", (spec.role, Source(SPEC)), (os.environ.get(ROLE_ENV), Source(ENVIRONMENT, ROLE_ENV)),
                  _sdk_value(defaults, f"{TRAINING_JOB}.RoleArn"))
    output_path = _first(sources, "output_path", (spec.output_path, Source(SPEC)),
                         (os.environ.get(OUTPUT_PATH_ENV), Source(ENVIRONMENT, OUTPUT_PATH_ENV)),
                         _sdk_bucket(defaults))
    for name, value in (("role", role), ("output_path", output_path)):
        _require_valid(name, value, sources.get(name))
    return role, output_path


def _require_valid(name: str, value: str | None, source: Source | None) -> None:
    """A role or output path taken from the environment or an SDK defaults file is held to the spec's rules
    (role ARN, bucket name, `//`): refused here, naming where it came from, before anything is packed or sent.

    Raises:
        EnvironmentProblem: the value breaks a rule the spec's field keeps.
    """
    if value is None or source is None:
        return
    problem = target_problem(name, value)
    if problem is not None:
        raise EnvironmentProblem(f"{name} from {source}: {problem[0]}", fix=problem[1])


ROLE_PLACEHOLDER = "<execution role: submit needs one>"
"""The RoleArn a plan shows when nothing names a role (Target.missing says what to set)."""


def _have_credentials(boto: Any | None, region: str) -> bool:
    """Whether boto3's chain finds credentials (read locally: no call is made)."""
    from orchestrator.cloud.sdk import boto_session

    return (boto or boto_session(region)).get_credentials() is not None


def _first(sources: dict[str, Source], name: str, *candidates: tuple[str | None, Source] | None) -> str | None:
    """The first candidate with a value; its source is recorded under `name` unless it is the spec (the plan
    knows the spec's own lines and --set overrides)."""
    for candidate in candidates:
        if candidate is not None and candidate[0]:
            if candidate[1].kind != SPEC:
                sources[name] = candidate[1]
            return candidate[0]
    return None


def _region_source(boto: Any | None, fallback: bool) -> Source:
    if fallback:
        return Source(FALLBACK, FALLBACK_REGION)
    variable = _region_variable() if boto is None else None
    if variable:
        return Source(ENVIRONMENT, variable)
    return Source(ENVIRONMENT, "boto3 region chain (AWS_REGION, AWS_DEFAULT_REGION, the profile)")


def _aws_config_file() -> Path:
    """Where boto3 reads profiles' regions: $AWS_CONFIG_FILE, else ~/.aws/config."""
    return Path(os.environ.get("AWS_CONFIG_FILE") or "~/.aws/config").expanduser()


def _readable(path: Path) -> bool:
    """A file boto3 could read (a path this user may not even look at, such as another user's home, is not)."""
    try:
        return path.is_file() and os.access(path, os.R_OK)
    except OSError:
        return False


def _region_variable() -> str | None:
    """The first of REGION_ENV that is set (and not empty)."""
    return next((name for name in REGION_ENV if os.environ.get(name)), None)


def _sdk_value(defaults: SdkDefaults, key: str) -> tuple[str, Source] | None:
    setting = defaults.get(key)
    return (setting.value, source_of(setting)) if setting else None


def _sdk_bucket(defaults: SdkDefaults) -> tuple[str, Source] | None:
    """Session.DefaultS3Bucket (and DefaultS3ObjectKeyPrefix) as the SDK's default output path:
    `s3_path_join("s3://", bucket, prefix, with_end_slash=True)`."""
    bucket = defaults.get(f"{SESSION}.DefaultS3Bucket")
    if bucket is None:
        return None
    return sdk_output_path(bucket.value, _prefix(defaults)), source_of(bucket)


def _prefix(defaults: SdkDefaults) -> str | None:
    prefix = defaults.get(f"{SESSION}.DefaultS3ObjectKeyPrefix")
    return prefix.value if prefix else None


def sdk_output_path(bucket: str, prefix: str | None) -> str:
    """sagemaker.s3.s3_path_join("s3://", bucket, prefix, with_end_slash=True): slashes collapsed, one at the end."""
    parts = [part.strip("/") for part in (bucket, prefix or "") if part.strip("/")]
    joined = "/".join(parts)
    while "//" in joined:
        joined = joined.replace("//", "/")
    return f"s3://{joined}/"


def code_beside(output_path: str, sdk_prefix: str | None) -> str:
    """Where submit uploads the code when nothing names code_location (`smtrain check` simulates the role's read of
    it): `code` beside the outputs, under the SDK session's prefix when the output path is the SDK's bucket."""
    bucket = bucket_of(output_path)
    return sdk_output_path(bucket, sdk_prefix) + "code" if sdk_prefix else f"s3://{bucket}/code"


def _default_bucket(boto: Any | None, region: str, defaults: SdkDefaults) -> tuple[str, Source] | None:
    """`sagemaker-<region>-<account>`, as the SDK names its default bucket (session.py
    `generate_default_sagemaker_bucket_name`); None when the account cannot be read (no credentials)."""
    from orchestrator.cloud.default_bucket import default_bucket_name

    name = default_bucket_name(boto, region)
    if name is None:
        return None
    return sdk_output_path(name, _prefix(defaults)), Source(FALLBACK, f"the SageMaker SDK's default bucket {name}")


def _stack_outputs_or_none(boto: Any | None, region: str) -> Any | None:
    from orchestrator.cloud.infra import stack_outputs
    from orchestrator.cloud.sdk import boto_session

    try:
        return stack_outputs(session=boto or boto_session(region))
    except EnvironmentProblem:
        return None


def _studio_role(boto: Any | None, region: str, credentials: bool) -> str | None:
    """The execution role of the Studio user or notebook instance this runs in, found as SDK v2's
    `get_execution_role` finds it (Session.get_caller_identity_arn), with boto3 alone: SageMaker's own images
    ship SDK v3, which has no v2 Session. Without credentials, only what the metadata file itself says."""
    if not STUDIO_METADATA.exists():
        return None
    import json

    from orchestrator.cloud.aws_errors import aws_errors
    from orchestrator.cloud.sdk import boto_session, client

    metadata = json.loads(STUDIO_METADATA.read_text())
    if metadata.get("ExecutionRoleArn") or not credentials:
        return metadata.get("ExecutionRoleArn")
    with aws_errors("looking up the execution role of this SageMaker Studio or notebook instance"):
        sagemaker = client(boto or boto_session(region), "sagemaker")
        domain = metadata.get("DomainId")
        if domain is None:
            return sagemaker.describe_notebook_instance(NotebookInstanceName=metadata["ResourceName"])["RoleArn"]
        profile = sagemaker.describe_user_profile(DomainId=domain, UserProfileName=metadata["UserProfileName"])
        return (profile.get("UserSettings", {}).get("ExecutionRole")
                or sagemaker.describe_domain(DomainId=domain)["DefaultUserSettings"]["ExecutionRole"])
