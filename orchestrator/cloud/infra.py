"""The smtrain CloudFormation stack: deploy `infra/smtrain.yaml` through a change set, read its outputs, delete it.

A change set rather than CreateStack/UpdateStack so that the caller sees what would change (an IAM role
among it) before anything does. boto3 and the YAML parser are imported inside the functions that need
them, so importing this module costs nothing.
"""

from __future__ import annotations

import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.cloud.aws_errors import aws_errors, error_code, error_message, is_missing_stack
from orchestrator.errors import AwsError, EnvironmentProblem, SmtrainError
from orchestrator.wording import counted

if TYPE_CHECKING:
    import boto3

logger = logging.getLogger(__name__)

DEFAULT_STACK_NAME = "smtrain"
STACK_NAME_ENV = "SMTRAIN_STACK"
TEMPLATE_PATH = Path(__file__).with_name("smtrain.yaml")  # infra/smtrain.yaml links here
# The template creates IAM resources but names none of them, so CAPABILITY_NAMED_IAM is not needed.
CAPABILITIES = ("CAPABILITY_IAM",)
DEFAULT_POLL_SECONDS = 5.0
DEFAULT_TIMEOUT_SECONDS = 30 * 60.0

# StackOutputs field -> the template's output key.
_OUTPUT_KEYS = {
    "role_arn": "RoleArn",
    "bucket": "BucketName",
    "output_path": "OutputPath",
    "checkpoint_prefix": "CheckpointPrefix",
    "code_prefix": "CodePrefix",
}
_STACK_NAME_PATTERN = re.compile(r"[a-zA-Z][-a-zA-Z0-9]{0,127}")
# How CloudFormation says a change set is empty (the AWS CLI's `deploy` checks for the same two phrases).
_NO_CHANGES_PHRASES = ("didn't contain changes", "No updates are to be performed")
_SUCCESS_STATUSES = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"})


@dataclass(frozen=True)
class StackOutputs:
    """What training jobs take from the stack: the spec's `role` and `output_path`, and the S3 prefixes."""

    stack_name: str
    region: str
    role_arn: str
    bucket: str
    output_path: str
    checkpoint_prefix: str
    code_prefix: str


class DeployStage(str, Enum):
    """The moments `deploy` and `tear_down` report through their `on_event` callback."""

    PREVIEW = "preview"
    NO_CHANGES = "no-changes"
    STACK_EVENT = "stack-event"
    WAITING = "waiting"
    """No new stack event for HEARTBEAT_SECONDS: the stack is still at work (some resources take minutes)."""
    EMPTYING_BUCKET = "emptying-bucket"
    """`tear_down --delete-bucket` deleted one more batch (up to 1000) of the bucket's object versions."""


@dataclass(frozen=True)
class DeployEvent:
    """One report from `deploy`. `changes` is filled for PREVIEW only.

    Each change is a dict with keys `action` (Add, Modify, Remove, ...), `logical_id`, `type` and
    `replacement` (True, False or Conditional for Modify; empty otherwise).
    """

    stage: DeployStage
    message: str
    changes: tuple[dict[str, str], ...] = ()
    elapsed_seconds: float | None = None
    """Since the change set was executed, for STACK_EVENT and WAITING."""


HEARTBEAT_SECONDS = 30.0
"""Without a new stack event for this long, deploy reports that the stack is still at work."""


def resolve_stack_name(stack_name: str | None = None) -> str:
    """The stack to use: the argument, else $SMTRAIN_STACK, else "smtrain".

    Raises:
        SmtrainError: the name is not a valid CloudFormation stack name.
    """
    name = stack_name or os.environ.get(STACK_NAME_ENV) or DEFAULT_STACK_NAME
    if not _STACK_NAME_PATTERN.fullmatch(name):
        raise SmtrainError(
            f"'{name}' is not a valid CloudFormation stack name",
            fix="use a letter followed by up to 127 letters, digits or hyphens",
        )
    return name


def stack_outputs(stack_name: str | None = None, session: boto3.Session | None = None) -> StackOutputs:
    """Read the role ARN and S3 locations from the deployed stack.

    Raises:
        EnvironmentProblem: the stack does not exist or lacks smtrain's outputs.
        AwsError: CloudFormation refused the call.
    """
    name = resolve_stack_name(stack_name)
    with aws_errors(f"reading CloudFormation stack {name}"):
        cfn = _cloudformation(session)
        stack = _describe_stack(cfn, name)
    region = cfn.meta.region_name
    if stack is None:
        raise EnvironmentProblem(
            f"CloudFormation stack '{name}' does not exist in {region}",
            fix="run `smtrain infra deploy` to create it (--stack-name or $SMTRAIN_STACK for another name), "
            "or set `role:` and `output_path:` in the spec (the role also through $SMTRAIN_ROLE)",
        )
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}
    missing = [key for key in _OUTPUT_KEYS.values() if key not in outputs]
    if missing:
        raise EnvironmentProblem(
            f"stack '{name}' in {region} ({stack['StackStatus']}) lacks the outputs {', '.join(missing)}",
            fix="deploy smtrain's template to it with `smtrain infra deploy`, or name smtrain's stack "
            "with --stack-name or $SMTRAIN_STACK",
        )
    return StackOutputs(
        stack_name=name, region=region, **{attr: outputs[key] for attr, key in _OUTPUT_KEYS.items()}
    )


@dataclass(frozen=True)
class Deployment:
    """What `deploy` deploys, and how it reports, asks and waits."""

    stack_name: str | None = None
    """See `resolve_stack_name`."""
    parameters: Mapping[str, str] = field(default_factory=dict)
    """Template parameter overrides, e.g. {"EnableVpcAccess": "true"}."""
    template_path: Path = TEMPLATE_PATH
    """The CloudFormation template to deploy."""
    on_event: Callable[[DeployEvent], None] | None = None
    """Receives the change preview, "no changes", and the stack's events while it deploys."""
    confirm: Callable[[list[dict[str, str]]], bool] | None = None
    """Called with the changes before anything is executed; False deletes the change set."""
    poll_seconds: float = DEFAULT_POLL_SECONDS
    """Pause between DescribeChangeSet/DescribeStacks polls."""
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    """The longest the whole deployment may take."""


def deploy(deployment: Deployment = Deployment(), session: boto3.Session | None = None) -> StackOutputs | None:
    """Create or update the stack from the template through a change set, then return its outputs.

    Template parameters not given keep the stack's current values on an update (template defaults on a
    create), like `aws cloudformation deploy`, so changing one setting never resets the others.

    Args:
        session: boto3 session; default: boto3's chain, with $AWS_REGION honoured (`cloud.sdk.boto_session`).

    Returns:
        The stack's outputs, or None when `confirm` declined (then nothing changed).

    Raises:
        SmtrainError: a parameter the template does not declare or a value its constraints refuse, or a bad stack
            name.
        EnvironmentProblem: the template file, AWS credentials or region are missing.
        AwsError: CloudFormation refused the change set, the stack rolled back, or the timeout passed.
    """
    name = resolve_stack_name(deployment.stack_name)
    template_path = deployment.template_path
    template_body = _read_template(template_path)
    overrides = dict(deployment.parameters)
    declared = _declared_parameters(template_body, template_path)
    unknown = sorted(set(overrides) - set(declared))
    if unknown:
        raise SmtrainError(
            f"{template_path.name} has no parameter {', '.join(unknown)}",
            fix=f"use one of {', '.join(declared)}",
        )
    for key, value in overrides.items():
        _check_parameter(key, value, declared[key])
    notify = deployment.on_event or (lambda event: None)
    poller = _Poller(deployment.poll_seconds, deployment.timeout_seconds)
    with aws_errors(f"deploying CloudFormation stack {name}"):
        cfn = _cloudformation(session)
        existing = _describe_stack(cfn, name)
        if existing is not None and existing["StackStatus"] == "ROLLBACK_COMPLETE":
            raise AwsError(
                f"stack {name} is ROLLBACK_COMPLETE: its creation failed", fix=_delete_failed_stack_fix(name)
            )
        # REVIEW_IN_PROGRESS: no resources yet (a deploy stopped before executing), so create into it.
        creating = existing is None or existing["StackStatus"] == "REVIEW_IN_PROGRESS"
        previous = set() if creating else _parameter_keys(existing)
        if creating:
            overrides = {**_regional_parameters(declared, cfn.meta.region_name), **overrides}
        change_set = _create_change_set(
            cfn, name, template_body, _parameter_list(declared, overrides, previous), creating, poller
        )
        if change_set is None:
            notify(DeployEvent(DeployStage.NO_CHANGES, f"stack {name} is up to date: no changes"))
        else:
            changes = _resource_changes(change_set)
            notify(
                DeployEvent(
                    DeployStage.PREVIEW,
                    f"change set {change_set['ChangeSetName']} for stack {name}: {counted(len(changes), 'change')}",
                    tuple(changes),
                )
            )
            if deployment.confirm is not None and not deployment.confirm(changes):
                _discard(cfn, name, change_set["ChangeSetId"], creating)
                return None
            seen_events = _latest_event_ids(cfn, name)
            cfn.execute_change_set(ChangeSetName=change_set["ChangeSetId"])
            _wait_for_stack(cfn, name, seen_events, notify, poller)
    return _outputs_after_deploy(name, session, template_path)


def _outputs_after_deploy(name: str, session: boto3.Session | None, template_path: Path) -> StackOutputs:
    """The outputs of a stack just deployed; if it has none, saying "run smtrain infra deploy" would go round in
    a circle, so name the two causes instead."""
    try:
        return stack_outputs(name, session)
    except EnvironmentProblem as exc:
        raise EnvironmentProblem(
            f"stack {name} deployed, but it lacks {exc.message.split(' lacks ', 1)[-1]}" if " lacks " in exc.message
            else exc.message,
            fix=f"the template deployed ({template_path}) must declare smtrain's outputs "
            f"({', '.join(_OUTPUT_KEYS.values())}); the local AWS emulator (moto) never fills a stack's outputs after "
            "a change set (docs/check-and-infra.md)",
        ) from None


_KEEPING_POLICIES = frozenset({"Retain", "RetainExceptOnCreate"})
"""DeletionPolicy values under which deleting the stack leaves the resource in place."""


@dataclass(frozen=True)
class StackResource:
    """One resource of the stack, and what deleting the stack does to it."""

    logical_id: str
    type: str
    physical_id: str
    deletion_policy: str
    """The template's DeletionPolicy for it; "Delete" where the template names none (CloudFormation's default)."""

    @property
    def kept(self) -> bool:
        return self.deletion_policy in _KEEPING_POLICIES


@dataclass(frozen=True)
class BucketContents:
    """What a bucket holds. S3 deletes a bucket only once every version and delete marker is gone."""

    objects: int
    """Current objects: what `aws s3 ls --recursive` lists."""
    versions: int
    """Every object version and delete marker, the current ones included: what emptying deletes."""

    def __str__(self) -> str:
        markers = counted(self.versions, "version or delete marker", "versions and delete markers")
        return f"{counted(self.objects, 'object')}, {markers} in all"


@dataclass(frozen=True)
class Teardown:
    """What deleting a stack would delete and keep, read before anything is deleted (`plan_teardown`)."""

    stack_name: str
    stack_id: str
    region: str
    status: str
    resources: tuple[StackResource, ...]
    bucket: StackResource | None
    """The stack's S3 bucket, if it has one."""
    bucket_contents: BucketContents | None
    """None when there is no bucket, or it no longer exists."""


def plan_teardown(stack_name: str | None = None, session: boto3.Session | None = None,
                  delete_bucket: bool = False) -> Teardown:
    """Read what deleting the stack would do; nothing is changed.

    Refuses, before anything is deleted, a bucket CloudFormation would try to delete while it holds objects: that
    deletion fails (DELETE_FAILED) only after the role is gone, so jobs lose their role and the stack stays.

    Raises:
        EnvironmentProblem: the stack does not exist.
        SmtrainError: the stack's bucket is to be deleted with the stack but holds objects, and `delete_bucket` is
            False.
        AwsError: an AWS call was refused.
    """
    name = resolve_stack_name(stack_name)
    with aws_errors(f"reading CloudFormation stack {name}"):
        cfn = _cloudformation(session)
        stack = _describe_stack(cfn, name)
        if stack is None:
            raise EnvironmentProblem(
                f"CloudFormation stack '{name}' does not exist in {cfn.meta.region_name}: nothing to delete",
                fix="name the stack with --stack-name or $SMTRAIN_STACK, and its region with --region or $AWS_REGION",
            )
        resources = _stack_resources(cfn, stack["StackId"])
        bucket = next((resource for resource in resources if resource.type == "AWS::S3::Bucket"), None)
    contents = None
    if bucket and bucket.physical_id:
        with aws_errors(f"counting the objects in bucket {bucket.physical_id}"):
            contents = _bucket_contents(_s3(session), bucket.physical_id)
    teardown = Teardown(name, stack["StackId"], cfn.meta.region_name, stack["StackStatus"], resources, bucket, contents)
    if bucket and contents and contents.versions and not bucket.kept and not delete_bucket:
        raise SmtrainError(
            f"CloudFormation cannot delete bucket {bucket.physical_id} with stack {name}: it holds {contents}",
            fix="pass --delete-bucket to delete them first (every version), or move what you need out of the bucket "
            f"and empty it (`aws s3 rm s3://{bucket.physical_id} --recursive`, and its old versions)",
        )
    return teardown


@dataclass(frozen=True)
class Removal:
    """How `tear_down` deletes, reports and waits."""

    delete_bucket: bool = False
    """Also delete the stack's bucket and every version in it, even where the stack keeps the bucket."""
    on_event: Callable[[DeployEvent], None] | None = None
    """Receives the stack's events while it is deleted, and the progress of emptying the bucket."""
    poll_seconds: float = DEFAULT_POLL_SECONDS
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS


def tear_down(teardown: Teardown, removal: Removal = Removal(), session: boto3.Session | None = None) -> int:
    """Delete the stack `plan_teardown` read, wait for DELETE_COMPLETE, and with `delete_bucket` its bucket too.

    A bucket the stack deletes is emptied before the stack is deleted, so CloudFormation can delete it; a bucket
    the stack keeps is emptied and deleted after the stack, once its role can no longer write to it.

    Returns:
        How many object versions and delete markers were deleted from the bucket.

    Raises:
        AwsError: the deletion ended DELETE_FAILED (naming the first resource that failed, with CloudFormation's
            reason), S3 refused to delete an object, or the timeout passed.
    """
    notify = removal.on_event or (lambda event: None)
    poller = _Poller(removal.poll_seconds, removal.timeout_seconds)
    contents = teardown.bucket_contents
    bucket = teardown.bucket if removal.delete_bucket and contents else None
    total = contents.versions if contents else 0
    deleted = 0
    if bucket and not bucket.kept:
        deleted = _empty_bucket(_s3(session), bucket.physical_id, total, notify)
    with aws_errors(f"deleting CloudFormation stack {teardown.stack_name}"):
        cfn = _cloudformation(session)
        seen = _latest_event_ids(cfn, teardown.stack_id)
        cfn.delete_stack(StackName=teardown.stack_id)
        _wait_for_stack(cfn, teardown.stack_id, seen, notify, poller, done={"DELETE_COMPLETE"})
    if bucket and bucket.kept:
        s3 = _s3(session)
        deleted = _empty_bucket(s3, bucket.physical_id, total, notify)
        with aws_errors(f"deleting bucket {bucket.physical_id}"):
            s3.delete_bucket(Bucket=bucket.physical_id)
    return deleted


def _stack_resources(cfn: Any, stack_id: str) -> tuple[StackResource, ...]:
    """The stack's resources with their DeletionPolicy, read from the template the stack was deployed with (which
    may be another than the one smtrain ships: --template-file, an older smtrain)."""
    body = cfn.get_template(StackName=stack_id)["TemplateBody"]
    # botocore hands back a JSON template already parsed, a YAML one as text.
    template = body if isinstance(body, dict) else _load_template(body, Path(f"the template of stack {stack_id}"))
    declared = (template or {}).get("Resources") or {}
    return tuple(
        StackResource(
            logical_id=summary["LogicalResourceId"],
            type=summary["ResourceType"],
            physical_id=summary.get("PhysicalResourceId", ""),
            deletion_policy=str((declared.get(summary["LogicalResourceId"]) or {}).get("DeletionPolicy", "Delete")),
        )
        for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack_id)
        for summary in page["StackResourceSummaries"]
        if summary.get("LogicalResourceId")
    )


def _s3(session: boto3.Session | None) -> Any:
    from orchestrator.cloud.sdk import boto_session, client

    return client(session or boto_session(), "s3")


def _bucket_contents(s3: Any, bucket: str) -> BucketContents | None:
    """Counts every page of ListObjectVersions (which lists an unversioned bucket's objects too); None when the
    bucket no longer exists."""
    from botocore.exceptions import ClientError

    objects = versions = 0
    try:
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            listed = page.get("Versions", [])
            objects += sum(1 for version in listed if version.get("IsLatest"))
            versions += len(listed) + len(page.get("DeleteMarkers", []))
    except ClientError as exc:
        if error_code(exc) == "NoSuchBucket":
            return None
        raise
    return BucketContents(objects, versions)


def _empty_bucket(s3: Any, bucket: str, total: int, notify: Callable[[DeployEvent], None]) -> int:
    """Delete every object version and delete marker, a page (up to 1000, DeleteObjects' limit) at a time,
    reporting each against the `total` counted before; returns how many were deleted (objects written since the
    count go too)."""
    deleted = 0
    with aws_errors(f"emptying bucket {bucket}"):
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            batch = [{"Key": item["Key"], "VersionId": item["VersionId"]}
                     for item in (*page.get("Versions", []), *page.get("DeleteMarkers", []))]
            if not batch:
                continue
            errors = s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True}).get("Errors", [])
            if errors:
                first = errors[0]
                raise AwsError(
                    f"S3 refused to delete {counted(len(errors), 'object version')} of bucket {bucket}, the first "
                    f"{first.get('Key')} ({first.get('VersionId')}): {first.get('Code')} {first.get('Message', '')}",
                    fix="fix the cause (s3:DeleteObjectVersion permission, Object Lock) and run the command again",
                )
            deleted += len(batch)
            notify(DeployEvent(DeployStage.EMPTYING_BUCKET,
                               f"bucket {bucket}: deleted {deleted} of {counted(total, 'object version')}"))
    return deleted


@dataclass
class _Poller:
    """Spaces out polls and enforces one deadline across all the waits of a deployment."""

    poll_seconds: float
    timeout_seconds: float
    started: float = field(default_factory=time.monotonic)

    def pause(self, waiting_for: str) -> None:
        if time.monotonic() + self.poll_seconds - self.started > self.timeout_seconds:
            raise AwsError(
                f"gave up after {self.timeout_seconds:.0f} s waiting for {waiting_for}",
                fix="follow it with `aws cloudformation describe-stack-events`, then `smtrain infra show`",
            )
        time.sleep(self.poll_seconds)


def _read_template(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot read the CloudFormation template {path}: {exc.strerror}",
            fix="pass an existing template with --template-file (the default one ships inside the smtrain "
            "package)",
        ) from exc


def _load_template(template_body: str, path: Path) -> Any:
    """The template as data; CloudFormation's short-form tags (!Ref, !Sub, !If ...) become {"Fn::X": value}."""
    import yaml

    class _TemplateLoader(yaml.SafeLoader):
        pass

    def intrinsic(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
        name = "Ref" if tag_suffix == "Ref" else f"Fn::{tag_suffix}"
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        return {name: value}

    _TemplateLoader.add_multi_constructor("!", intrinsic)
    try:
        return yaml.load(template_body, Loader=_TemplateLoader)
    except yaml.YAMLError as exc:
        raise EnvironmentProblem(f"{path} is not valid YAML: {exc}", fix="run cfn-lint on it") from exc


def _declared_parameters(template_body: str, path: Path) -> dict[str, dict[str, Any]]:
    """Parameter name -> its definition, in template order."""
    return dict((_load_template(template_body, path) or {}).get("Parameters") or {})


def _check_parameter(key: str, value: str, definition: dict[str, Any]) -> None:
    """Refuse a value the template's constraints refuse, before anything is sent. CloudFormation refuses it only
    when the change set is created (moto never does), and a list parameter's bad item only the IAM policy refuses,
    once a first deploy has created the bucket: a ROLLBACK_COMPLETE stack to delete before trying again.

    Raises:
        SmtrainError: the value breaks the parameter's AllowedValues, AllowedPattern or MinValue/MaxValue.
    """
    # A list's constraints hold for each of its items (CloudFormation's own rule for CommaDelimitedList).
    items = [item.strip() for item in value.split(",")] if definition.get("Type") == "CommaDelimitedList" else [value]
    allowed = [str(choice) for choice in definition.get("AllowedValues", [])]
    pattern = definition.get("AllowedPattern")
    for item in items:
        if allowed and item not in allowed:
            constraint = f"must be one of {', '.join(allowed)}"
        elif pattern and not re.fullmatch(pattern, item):
            constraint = definition.get("ConstraintDescription") or f"must match {pattern}"
        elif definition.get("Type") == "Number" and not _within(item, definition):
            bounds = [f"{word} {definition[bound]}" for word, bound in (("at least", "MinValue"), ("at most", "MaxValue"))
                      if bound in definition]
            constraint = ", ".join(["must be a number", *bounds])
        else:
            continue
        raise SmtrainError(f"parameter {key}: '{item}' {constraint}",
                           fix=f"{key}: {definition.get('Description', 'see the template')}")


def _within(number: str, definition: dict[str, Any]) -> bool:
    """A number within the parameter's MinValue and MaxValue."""
    try:
        value = float(number)
    except ValueError:
        return False
    return float(definition.get("MinValue", "-inf")) <= value <= float(definition.get("MaxValue", "inf"))


def _parameter_keys(stack: dict[str, Any] | None) -> set[str]:
    return {parameter["ParameterKey"] for parameter in (stack or {}).get("Parameters", [])}


def _regional_parameters(declared: Collection[str], region: str) -> dict[str, str]:
    """The template parameters whose right value depends on the stack's region, for a stack being created.

    The Deep Learning Containers registry is another account in the opt-in regions (af-south-1: 626614931356),
    so the template's default 763104351884 would let the role pull none of the images smtrain plans there.
    """
    from orchestrator.specs.images import registry_account

    account = registry_account(region)
    return {"ImageRegistryAccountId": account} if account and "ImageRegistryAccountId" in declared else {}


def _parameter_list(
    declared: Collection[str], overrides: dict[str, str], previous: set[str]
) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = []
    for key in declared:
        if key in overrides:
            parameters.append({"ParameterKey": key, "ParameterValue": overrides[key]})
        elif key in previous:
            parameters.append({"ParameterKey": key, "UsePreviousValue": True})
    return parameters


def _cloudformation(session: boto3.Session | None) -> Any:
    from orchestrator.cloud.sdk import boto_session, client

    return client(session or boto_session(), "cloudformation")


def _describe_stack(cfn: Any, name: str) -> dict[str, Any] | None:
    from botocore.exceptions import ClientError

    try:
        return cfn.describe_stacks(StackName=name)["Stacks"][0]
    except ClientError as exc:
        if is_missing_stack(exc):
            return None
        raise


def _means_no_changes(reason: str) -> bool:
    return any(phrase in reason for phrase in _NO_CHANGES_PHRASES)


def _create_change_set(
    cfn: Any,
    name: str,
    template_body: str,
    parameters: list[dict[str, Any]],
    creating: bool,
    poller: _Poller,
) -> dict[str, Any] | None:
    """Create the change set and wait until it is ready; None when it would change nothing."""
    from botocore.exceptions import ClientError

    try:
        created = cfn.create_change_set(
            StackName=name,
            ChangeSetName=f"smtrain-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:6]}",
            ChangeSetType="CREATE" if creating else "UPDATE",
            TemplateBody=template_body,
            Parameters=parameters,
            Capabilities=list(CAPABILITIES),
            Description="smtrain infra deploy",
        )
    except ClientError as exc:
        # CloudFormation reports an empty change set as FAILED (below); moto 5.2.5 refuses to create it.
        if _means_no_changes(error_message(exc)):
            return None
        raise
    while True:
        change_set = _describe_change_set(cfn, created["Id"])
        if change_set["Status"] == "CREATE_COMPLETE":
            return change_set
        if change_set["Status"] == "FAILED":
            reason = change_set.get("StatusReason", "")
            if _means_no_changes(reason):
                cfn.delete_change_set(ChangeSetName=created["Id"])
                return None
            raise AwsError(
                f"CloudFormation could not create a change set for stack {name}: {reason}",
                fix="fix the template or the parameters named above, then deploy again",
            )
        poller.pause(f"change set {change_set['ChangeSetName']}")


def _describe_change_set(cfn: Any, change_set_id: str) -> dict[str, Any]:
    """DescribeChangeSet with every page of changes gathered into the first page's response."""
    described = cfn.describe_change_set(ChangeSetName=change_set_id)
    next_token = described.get("NextToken")
    while next_token:
        page = cfn.describe_change_set(ChangeSetName=change_set_id, NextToken=next_token)
        described["Changes"].extend(page.get("Changes", []))
        next_token = page.get("NextToken")
    return described


def _resource_changes(change_set: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {
            "action": change["ResourceChange"]["Action"],
            "logical_id": change["ResourceChange"]["LogicalResourceId"],
            "type": change["ResourceChange"]["ResourceType"],
            "replacement": change["ResourceChange"].get("Replacement", ""),
        }
        for change in change_set.get("Changes", [])
        if change.get("Type") == "Resource"
    ]


def _discard(cfn: Any, name: str, change_set_id: str, creating: bool) -> None:
    """Delete a declined change set, and the empty stack (REVIEW_IN_PROGRESS) that a create left behind."""
    cfn.delete_change_set(ChangeSetName=change_set_id)
    if creating:
        cfn.delete_stack(StackName=name)
    logger.info("declined: deleted change set %s", change_set_id)


def _latest_event_ids(cfn: Any, name: str) -> set[str]:
    """Ids of the newest page of events: history that predates this deployment and is not reported."""
    return {event["EventId"] for event in cfn.describe_stack_events(StackName=name)["StackEvents"]}


def _new_events(cfn: Any, name: str, seen: set[str]) -> list[dict[str, Any]]:
    """Events not in `seen`, oldest first; reads pages (newest first) only until it meets a seen one."""
    fresh: list[dict[str, Any]] = []
    for page in cfn.get_paginator("describe_stack_events").paginate(StackName=name):
        for event in page["StackEvents"]:
            if event["EventId"] in seen:
                return fresh[::-1]
            fresh.append(event)
    return fresh[::-1]


def _describe_event(event: dict[str, Any]) -> str:
    reason = event.get("ResourceStatusReason")
    line = f"{event['LogicalResourceId']} ({event['ResourceType']}) {event['ResourceStatus']}"
    return f"{line}: {reason}" if reason else line


def _wait_for_stack(
    cfn: Any,
    stack_ref: str,
    seen: set[str],
    notify: Callable[[DeployEvent], None],
    poller: _Poller,
    done: Collection[str] = _SUCCESS_STATUSES,
) -> None:
    """Poll until the stack reaches a status in `done`, reporting its events (and, when none comes for
    HEARTBEAT_SECONDS, that it is still at work), each with the time since the change set was executed or the
    deletion began; a rollback or failure raises AwsError.

    `stack_ref` is the stack's name or, to follow a deletion, its id: a deleted stack answers only to its id.
    """
    name = stack_ref.split("/")[1] if stack_ref.startswith("arn:") else stack_ref
    failures: list[dict[str, Any]] = []
    started = last_report = time.monotonic()
    while True:
        stack = _describe_stack(cfn, stack_ref)
        if stack is None:
            raise AwsError(
                f"stack {name} disappeared while deploying", fix="check the stack's events in the console"
            )
        for event in _new_events(cfn, stack_ref, seen):
            seen.add(event["EventId"])
            last_report = time.monotonic()
            notify(DeployEvent(DeployStage.STACK_EVENT, _describe_event(event),
                               elapsed_seconds=last_report - started))
            if event["ResourceStatus"].endswith("_FAILED"):
                failures.append(event)
        status = stack["StackStatus"]
        if status in done:
            return
        if not status.endswith("_IN_PROGRESS"):
            raise _stack_failed(name, status, stack.get("StackStatusReason"), failures)
        if time.monotonic() - last_report >= HEARTBEAT_SECONDS:
            last_report = time.monotonic()
            notify(DeployEvent(DeployStage.WAITING, f"stack {name} still {status}: CloudFormation is still at work "
                                                    "on its resources (some take several minutes)",
                               elapsed_seconds=last_report - started))
        poller.pause(f"stack {name} ({status})")


def _stack_failed(
    name: str, status: str, stack_reason: str | None, failures: list[dict[str, Any]]
) -> AwsError:
    """Name the first resource that failed: later failures are usually CloudFormation cancelling the rest."""
    cause = _describe_event(failures[0]) if failures else stack_reason or "CloudFormation gave no reason"
    if status == "ROLLBACK_COMPLETE":
        fix = _delete_failed_stack_fix(name)
    elif status == "UPDATE_ROLLBACK_COMPLETE":
        fix = "the stack is back to its previous state; fix the cause and deploy again"
    elif status == "DELETE_FAILED":
        fix = (
            "what was deleted stays deleted; fix the cause named above and run `smtrain infra delete` again, or leave "
            "that resource behind with `aws cloudformation delete-stack --stack-name "
            f"{name} --retain-resources <Logical ID>`"
        )
    else:
        fix = f"see `aws cloudformation describe-stack-events --stack-name {name}`; the stack may need repair"
    return AwsError(f"stack {name} ended in {status}: {cause}", fix=fix)


def _delete_failed_stack_fix(name: str) -> str:
    return (
        "fix the cause, then delete the empty stack "
        f"(`aws cloudformation delete-stack --stack-name {name}`) and deploy again: "
        "a stack whose creation rolled back cannot be updated"
    )
