"""The job spec: strict, frozen data describing one training job.

Field docstrings are the reference documentation: they become `smtrain schema` descriptions and the
field table of docs/specs.md. Cross-field rules that depend on instance types or framework versions live in
`capabilities.py`, not here: this module only knows what a well-formed spec looks like.
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from enum import Enum
from functools import cache
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from orchestrator.contract import DEFAULT_CHECKPOINT_DIR
from orchestrator.redact import masks_its_repr, secret_values
from orchestrator.specs.bucket_names import bucket_like, bucket_name_problem, bucket_of
from orchestrator.specs.catalog import catalog
from orchestrator.specs.datafiles import load_data_file
from orchestrator.specs.metric_regex import MetricRegexError, compile_metric_regex
from orchestrator.specs.modes import Mode, ModeRules
from orchestrator.specs.path_names import path_name_problem
from orchestrator.specs.reserved_environment import reserved_name_problem

# CreateTrainingJob's limits and IAM's role-name rule as botocore states them, extracted into a small data file
# by scripts/refresh_api_limits.py (a test regenerates it and fails on drift).
_API_LIMITS = load_data_file("api_limits.yaml")
_REQUEST_LIMITS: dict[str, dict[str, Any]] = _API_LIMITS["CreateTrainingJob"]
TRAINING_INSTANCE_TYPES: frozenset[str] = frozenset(_API_LIMITS["TrainingInstanceType"])


def api_limit(member: str, trait: str) -> Any:
    """A CreateTrainingJob member's limit, e.g. `api_limit("Tags", "max")` -> 50."""
    return _REQUEST_LIMITS[member][trait]


@cache
def _api_pattern(member: str) -> re.Pattern[str]:
    """The member's pattern, to be matched whole; \\d and \\w are ASCII as in the service's Java regexes.
    Compiled when a value is first checked against it, not at import: most specs meet few of them."""
    return re.compile(_REQUEST_LIMITS[member]["pattern"], re.ASCII)


_ROLE_NAME_LIMITS: dict[str, Any] = _API_LIMITS["GetRole"]["RoleName"]


@cache
def _role_name_pattern() -> re.Pattern[str]:
    return re.compile(_ROLE_NAME_LIMITS["pattern"], re.ASCII)
# `name_from_base` appends "-YYYY-MM-DD-HH-MM-SS-mmm" (24 characters) and trims the base to fit the API's 63.
JOB_NAME_SUFFIX_LENGTH = 24
# smtrain's job names add a random tag after the stamp (`-xxxx`, planning/job_name.py), so a long base is cut to fit.
JOB_NAME_TAG_LENGTH = 4
MAX_BASE_NAME_LENGTH = api_limit("TrainingJobName", "max") - JOB_NAME_SUFFIX_LENGTH


def _shorter_name_fix(name: str) -> str:
    """Why 39, and the name cut there (at its last hyphen where it has one)."""
    cut = name[:MAX_BASE_NAME_LENGTH]
    shorter = cut if name[len(cut):].startswith("-") or "-" not in cut else cut.rsplit("-", 1)[0]
    return (f"at most {MAX_BASE_NAME_LENGTH} characters, as SDK v2 allows: each job is named "
            f"`name-<{JOB_NAME_SUFFIX_LENGTH}-character time stamp>` within SageMaker's "
            f"{MAX_BASE_NAME_LENGTH + JOB_NAME_SUFFIX_LENGTH} (smtrain adds a {JOB_NAME_TAG_LENGTH + 1}-character "
            f"random tag too, and shortens the name to fit); e.g. name: {shorter}")


JOB_NAME_RULE = "letters, digits and hyphens, starting and ending with a letter or digit"
"""SageMaker's job-name pattern, `^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`, in words: hyphens may stand several in a row
(`a--b` is a name), never first or last. The training and the tuning job's names follow it alike."""


def job_name_like(name: str) -> str:
    """The job name likely meant: every run of other characters (`_`, `.`, spaces) one hyphen, `mlp_torchrun` ->
    `mlp-torchrun`."""
    return re.sub(r"[^a-zA-Z0-9]+", "-", name).strip("-") or "my-job"


def _invalid(message: str, fix: str) -> PydanticCustomError:
    """A validation error whose fix the loader prints on its own `fix:` line."""
    return PydanticCustomError("spec_value", "{message}", {"message": message, "fix": fix})


# `s3:/b/p`, `s3//b/p`, `S3://b/p`, `s3:b/p`: an s3:// URI mistyped (a local folder is not named `s3:...`).
_MISTYPED_S3 = re.compile(r"(?i)s3(?::/*|//+)([^/].*)")


def is_uri(location: str) -> bool:
    """A channel location meant as a URI, mistyped ones included (they are refused with the URI meant), rather
    than a local path for `smtrain local`."""
    return "://" in location or _MISTYPED_S3.fullmatch(location) is not None


def _uri(value: str, member: str, example: str, *, s3_only: bool) -> str:
    """An S3 location as the API's pattern for `member` takes it, naming a bucket S3 could have; `s3_only` where
    smtrain itself needs the bucket."""
    if (s3_only and not value.startswith("s3://")) or not _api_pattern(member).fullmatch(value):
        kind = "an s3:// URI" if s3_only else "an S3 URI (s3://bucket/prefix or an https:// S3 URL)"
        mistyped = _MISTYPED_S3.fullmatch(value)
        raise _invalid(f"{value!r} is not {kind}",
                       f"did you mean s3://{mistyped.group(1)}?" if mistyped else f"write it as {example}")
    limit = api_limit(member, "max")
    if len(value) > limit:
        raise _invalid(f"the URI is {len(value)} characters; SageMaker allows {limit}", "use a shorter prefix")
    _single_slashes(value)
    return _existing_bucket(value) if value.startswith("s3://") else value


def _single_slashes(value: str) -> None:
    """No `//` after the scheme: SageMaker fails a job at its data download for a key that holds one (`Data download
    failed: ... has an illegal char sub-sequence '//' in it`), after the instances were paid for. It is a prefix
    joined to one that ends in `/`, the same slip in every S3 URI field, so every field refuses it."""
    scheme, separator, rest = value.partition("://")
    if "//" in rest:
        raise _invalid(f"{value!r} has '//' in its path, which SageMaker refuses in an S3 key when it downloads the "
                       "job's data", f"write it as {scheme}{separator}{re.sub('/{2,}', '/', rest)}")


def _existing_bucket(value: str) -> str:
    """An s3:// location names a bucket S3 could have: caught here (exit 2), not as NoSuchBucket after the source
    was packed, or as a channel the job cannot read."""
    bucket = bucket_of(value)
    if (problem := bucket_name_problem(bucket)) is not None:
        raise _invalid(f"{bucket!r} is not an S3 bucket name: it {problem}",
                       "bucket names are 3 to 63 lowercase letters, digits, dots and hyphens, beginning and ending "
                       f"with a letter or digit, e.g. s3://{bucket_like(bucket)}/")
    return value


def _environment_name(name: str) -> str:
    limit = api_limit("Environment{key}", "max")
    if not _api_pattern("Environment{key}").fullmatch(name) or len(name) > limit:
        raise _invalid(f"{name!r} is not an environment variable name SageMaker accepts",
                       f"use letters, digits and underscores, not starting with a digit (at most {limit}), "
                       f"e.g. {re.sub(r'[^a-zA-Z0-9_]', '_', name).lstrip('0123456789') or 'MY_VARIABLE'}")
    if (reserved := reserved_name_problem(name)) is not None:
        raise _invalid(*reserved)
    return name


def _environment_value(value: str) -> str:
    if "\0" in value:  # SageMaker refuses it, and no process environment can hold it
        raise _invalid("the value has a NUL character, which SageMaker refuses", "remove the \\0 from the value")
    limit = api_limit("Environment{value}", "max")
    if len(value) > limit:  # the value itself may be a secret: never echoed
        raise _invalid(f"the value is {len(value)} characters; SageMaker allows {limit}",
                       "pass long values as a file in source_dir or an input channel")
    return value


def hyperparameter_name(name: str) -> str:
    """A hyperparameter name SageMaker and its training toolkit take (a job's, or a tuned one)."""
    limit = api_limit("HyperParameters{key}", "max")
    if len(name) > limit:
        raise _invalid(f"hyperparameter name {name[:40]!r}... is {len(name)} characters; SageMaker allows {limit}",
                       "use a shorter name")
    if not name:  # mapping.to_cmd_args gives it no option name: the script's argparse refuses the bare value
        raise _invalid("an empty hyperparameter name: the training toolkit passes no option for it, so the script "
                       "gets its value alone, a stray argument", "give it a name, or remove it")
    if name.startswith("sagemaker_"):
        raise _invalid(f"{name!r}: names starting with sagemaker_ are reserved for the SDK",
                       "rename it; smtrain sends the sagemaker_* keys itself")
    if "=" in name:  # the toolkit exports SM_HP_<NAME>: the container's os.environ refuses it, and the job fails
        raise _invalid(f"hyperparameter name {printable(name)!r} holds '=': the training toolkit exports each "
                       "hyperparameter as the variable SM_HP_<NAME>, and no variable name holds '='",
                       f"rename it, e.g. {name.replace('=', '_')}")
    refused = next((char for char in name if is_invisible(char)), None)
    if refused is not None:  # U+202E would print the name reversed in plans and logs: a name that lies
        raise _invalid(f"hyperparameter name '{printable(name)}' holds U+{ord(refused):04X}, "
                       "a control or bidirectional formatting character that changes how it is printed",
                       "use letters, digits, '-', '_' and '.'")
    return name


def is_invisible(char: str) -> bool:
    """A control, formatting (bidirectional override, zero-width) or line-separating character: in a name it
    hides or reorders what is printed."""
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


def printable(text: str) -> str:
    """`text` with its invisible characters (but newlines and tabs) written as escapes (`\\u202e`): a message
    quoting a refused name must not be reordered by it."""
    return "".join(f"\\u{ord(char):04x}" if is_invisible(char) and char not in "\n\t" else char for char in text)


def one_line(text: str) -> str:
    """printable(), with line breaks written as escapes too: a spec problem is one line whatever a key holds (a key
    "extra\\n::warning::x" must not start a line of its own, which a CI runner reads as a command)."""
    return printable(text).replace("\r", "\\r").replace("\n", "\\n")


def _has_nul(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_nul(key) or _has_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return isinstance(value, str) and "\0" in value


def _hyperparameter_value(value: Any) -> Any:
    if _has_nul(value):  # SageMaker refuses it, and no command line can carry it
        raise _invalid("the value has a NUL character, which SageMaker refuses", "remove the \\0 from the value")
    # The request carries each value JSON-encoded (a string gains its quotes), and the limit is on that text.
    encoded = len(json.dumps(value))
    limit = api_limit("HyperParameters{value}", "max")
    if encoded > limit:
        raise _invalid(f"the value is {encoded} characters once JSON-encoded for the request; SageMaker allows "
                       f"{limit}", "pass long values as a file in source_dir or an input channel")
    return value


def _channel_name(name: str) -> str:
    limit = api_limit("InputDataConfig[].ChannelName", "max")
    if not _api_pattern("InputDataConfig[].ChannelName").fullmatch(name) or len(name) > limit:
        like = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:limit].rstrip("._-")
        raise _invalid(f"{name[:limit]!r}{'...' if len(name) > limit else ''} is not a channel name SageMaker accepts"
                       + (f" ({len(name)} characters)" if len(name) > limit else ""),
                       f"use letters, digits, '.', '-' and '_' (at most {limit}), e.g. {like or 'train'}")
    if (problem := path_name_problem(name)) is not None:  # it names the channel's folder in /opt/ml/input/data
        raise _invalid(f"channel name {name!r} {problem}", "use a name such as train or validation")
    return name


# Tags[].Key and Tags[].Value's pattern, whose \p{..} classes Python's re lacks: Unicode letters (L), separators (Z)
# and numbers (N), and these characters. A test compares it with the pattern in api_limits.yaml.
TAG_PATTERN = r"([\p{L}\p{Z}\p{N}_.:/=+\-@]*)"
_TAG_PUNCTUATION = frozenset("_.:/=+-@")
_TAG_FIX = "use letters, digits, spaces and _ . : / = + - @"


def _tag_refuses(char: str) -> bool:
    return char not in _TAG_PUNCTUATION and unicodedata.category(char)[0] not in "LZN"


def _tag_key(key: str) -> str:
    if any(_tag_refuses(char) for char in key):
        example = "".join("_" if _tag_refuses(char) else char for char in key)
        raise _invalid(f"{key!r} is not a tag key SageMaker accepts", f"{_TAG_FIX}, e.g. {example}")
    if key[:4].lower() == "aws:":
        raise _invalid(f"tag key {key!r} begins with 'aws:', which AWS keeps for its own tags",
                       f"drop the prefix, e.g. {key[4:] or 'team'}")
    return key


def _tag_value(value: str) -> str:
    refused = next((char for char in value if _tag_refuses(char)), None)
    if refused is not None:  # the value itself may be a secret: only the refused character is shown
        raise _invalid(f"the tag value has {refused!r}, a character SageMaker refuses in tags", _TAG_FIX)
    return value


def _channel_location(location: str) -> str:
    # Local paths are for `smtrain local` (plan and submit refuse them); a URI must be one the job can read.
    if is_uri(location):
        _uri(location, "InputDataConfig[].DataSource.S3DataSource.S3Uri", "s3://<bucket>/<prefix>/", s3_only=True)
    return location


def _vpc_id(member: str, example: str) -> AfterValidator:
    limit = api_limit(member, "max")

    def check(value: str) -> str:
        if not _api_pattern(member).fullmatch(value) or len(value) > limit:
            raise _invalid(f"{value!r} is not a VPC resource id", f"write the id, e.g. {example}")
        return value

    return AfterValidator(check)


def _api_enum(member: str, name: str) -> type[Enum]:
    """The member's enumeration from botocore's model, as an Enum whose values are the API's spellings."""
    return Enum(name, {value: value for value in api_limit(member, "enum")}, type=str)  # type: ignore[return-value]


def _api_string(member: str, example: str) -> AfterValidator:
    """A string the API's length limits and pattern for `member` accept."""
    low, high = api_limit(member, "min"), api_limit(member, "max")

    def check(value: str) -> str:
        if not low <= len(value) <= high or not _api_pattern(member).fullmatch(value):
            raise _invalid(f"{value!r} is not what SageMaker accepts here ({low} to {high} characters matching "
                           f"{_api_pattern(member).pattern})", f"write it as {example}")
        return value

    return AfterValidator(check)


def _training_instance_type(value: str) -> str:
    known = TRAINING_INSTANCE_TYPES | catalog().instances.keys()
    if value in known:
        return value
    close = difflib.get_close_matches(value, sorted(known), n=1)
    raise _invalid(f"{value!r} is not a SageMaker training instance type",
                   f"did you mean `{close[0]}`?" if close else
                   "`smtrain instances` lists the types smtrain knows, e.g. ml.g5.12xlarge")


InputMode = _api_enum("AlgorithmSpecification.TrainingInputMode", "InputMode")
S3DataType = _api_enum("InputDataConfig[].DataSource.S3DataSource.S3DataType", "S3DataType")
S3Distribution = _api_enum("InputDataConfig[].DataSource.S3DataSource.S3DataDistributionType", "S3Distribution")
ChannelCompression = _api_enum("InputDataConfig[].CompressionType", "ChannelCompression")
OutputCompression = _api_enum("OutputDataConfig.CompressionType", "OutputCompression")
TrainingInstanceType = Annotated[str, AfterValidator(_training_instance_type)]
InstanceGroupName = Annotated[str, _api_string("ResourceConfig.InstanceGroups[].InstanceGroupName", "train")]
TrainingPlanArn = Annotated[str, _api_string(
    "ResourceConfig.TrainingPlanArn", "arn:aws:sagemaker:us-east-1:123456789012:training-plan/my-plan")]
KmsKey = Annotated[str, _api_string(
    "ResourceConfig.VolumeKmsKeyId", "a key id, alias/my-key or arn:aws:kms:us-east-1:123456789012:key/<id>")]
ExperimentEntityName = Annotated[str, _api_string("ExperimentConfig.ExperimentName", "my-experiment")]


EnvironmentName = Annotated[str, AfterValidator(_environment_name)]
EnvironmentValue = Annotated[str, AfterValidator(_environment_value)]
HyperparameterName = Annotated[str, AfterValidator(hyperparameter_name)]
ChannelName = Annotated[str, AfterValidator(_channel_name)]
ChannelLocation = Annotated[str, AfterValidator(_channel_location)]
SubnetId = Annotated[str, _vpc_id("VpcConfig.Subnets[]", "subnet-0abc123")]
SecurityGroupId = Annotated[str, _vpc_id("VpcConfig.SecurityGroupIds[]", "sg-0abc123")]
TagKey = Annotated[str, Field(min_length=api_limit("Tags[].Key", "min"), max_length=api_limit("Tags[].Key", "max")),
                   AfterValidator(_tag_key)]
TagValue = Annotated[str, Field(max_length=api_limit("Tags[].Value", "max")), AfterValidator(_tag_value)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)  # field docstrings: field_docs.py


# CreateTrainingJob states no maximum instance count (account quotas decide, in the tens or hundreds of
# instances). Validation, the plan's rank table and `smtrain local` size lists by the count, so the count is
# bounded before anything is sized: far above any quota, far below what would exhaust memory.
MAX_INSTANCE_COUNT = 10_000
# processes_per_host is a hyperparameter (SageMaker states no limit); the plan's rank table and `smtrain local` size
# lists by it, so it is bounded the same way: above the vCPUs of any training instance (192), far below memory.
MAX_PROCESSES_PER_HOST = 1024
MAX_WORLD_SIZE = 100_000
"""Processes of a job, hosts x processes per host: the plan lists every rank."""


class InstanceGroup(_Spec):
    """One group of a heterogeneous cluster: its own instance type and count."""

    name: InstanceGroupName
    """The group's name, e.g. `train`; channels and `distribution.instance_groups` refer to it."""

    type: TrainingInstanceType
    """The group's instance type, e.g. `ml.c5.2xlarge` for data pre-processing beside GPUs."""

    count: int = Field(default=1, ge=1, le=MAX_INSTANCE_COUNT)
    """Instances in this group (hosts are numbered across the groups in order: algo-1 ... algo-N)."""


class InstancePreference(_Spec):
    """One instance type SageMaker may pick, in order of preference."""

    type: TrainingInstanceType
    """The instance type, e.g. `ml.p5.48xlarge`; each type at most once."""

    count: int | None = Field(default=None, ge=1, le=MAX_INSTANCE_COUNT)
    """Instances if this type is picked. Give it on every preference, or on none and use `instance.count`."""

    training_plan_arn: TrainingPlanArn | None = None
    """A training plan whose reserved capacity this preference uses (else on-demand)."""


class PlacementSpecification(_Spec):
    """How many of the job's instances go on one UltraServer."""

    count: int = Field(ge=1, le=MAX_INSTANCE_COUNT)
    """Instances placed by this specification."""

    ultraserver_id: str | None = Field(default=None, max_length=api_limit(
        "ResourceConfig.InstancePlacementConfig.PlacementSpecifications[].UltraServerId", "max"))
    """The UltraServer to place them on; default: SageMaker picks."""


class Placement(_Spec):
    """Placement on UltraServers (UltraServer capacity only)."""

    enable_multiple_jobs: bool = False
    """Let other jobs share this job's UltraServers."""

    specifications: list[PlacementSpecification] = Field(default_factory=list, max_length=api_limit(
        "ResourceConfig.InstancePlacementConfig.PlacementSpecifications", "max"))
    """Per-UltraServer instance counts."""


class Instance(_Spec):
    """The training cluster: one instance type and `count` hosts, or instance groups, or a preference list."""

    type: TrainingInstanceType | None = None
    """SageMaker training instance type, e.g. `ml.g5.12xlarge` (`smtrain instances` lists the known ones).
    Required unless `groups` or `preferences` give the types."""

    # The API's floor for both is 0 and it states no maximum (account quotas decide); a job needs a host and
    # a volume for /opt/ml, so smtrain's floor is 1, and its ceiling MAX_INSTANCE_COUNT.
    count: int = Field(default=1, ge=1, le=MAX_INSTANCE_COUNT)
    """Number of instances (hosts `algo-1` ... `algo-N`)."""

    volume_size_gb: int = Field(default=30, ge=1)
    """EBS volume per instance for `/opt/ml` (input data, checkpoints, model), in GB."""

    groups: list[InstanceGroup] = Field(default_factory=list)
    """A heterogeneous cluster: up to 5 named groups, each with its own type and count (replaces type/count)."""

    preferences: list[InstancePreference] = Field(default_factory=list)
    """Up to 5 instance types in order of preference; SageMaker starts the job on the first with capacity
    (replaces type; not with groups, placement or spot)."""

    training_plan_arn: TrainingPlanArn | None = None
    """Run on the reserved capacity of this SageMaker training plan."""

    placement: Placement | None = None
    """UltraServer placement (only for UltraServer capacity)."""

    @field_validator("groups")
    @classmethod
    def _group_limits(cls, groups: list[InstanceGroup]) -> list[InstanceGroup]:
        limit = api_limit("ResourceConfig.InstanceGroups", "max")
        if len(groups) > limit:
            raise _invalid(f"{len(groups)} instance groups; SageMaker takes at most {limit}",
                           "merge groups that use the same instance type")
        names = [group.name for group in groups]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise _invalid(f"instance group {', '.join(repeated)} is named more than once",
                           "give every group its own name")
        return groups

    @field_validator("preferences")
    @classmethod
    def _preference_limits(cls, preferences: list[InstancePreference]) -> list[InstancePreference]:
        limit = api_limit("ResourceConfig.InstancePreferences", "max")
        if len(preferences) > limit:
            raise _invalid(f"{len(preferences)} instance preferences; SageMaker takes at most {limit}",
                           f"keep the {limit} types you prefer most")
        types = [preference.type for preference in preferences]
        repeated = sorted({name for name in types if types.count(name) > 1})
        if repeated:
            raise _invalid(f"{', '.join(repeated)} appears more than once in the preferences",
                           "list each instance type once")
        counted = [preference.count is not None for preference in preferences]
        if any(counted) and not all(counted):
            raise _invalid("count is given on some preferences but not all; SageMaker refuses that",
                           "give count on every preference, or on none and set instance.count")
        return preferences

    @model_validator(mode="after")
    def _one_shape(self) -> Instance:
        given = [name for name, value in (("type", self.type), ("groups", self.groups),
                                          ("preferences", self.preferences)) if value]
        if not given:
            raise _invalid("no instance type: give instance.type, instance.groups or instance.preferences",
                           "e.g. instance: {type: ml.g5.12xlarge, count: 2}")
        if len(given) > 1:
            raise _invalid(f"instance.{given[0]} and instance.{given[1]} both say which instances to use; "
                           "SageMaker takes one of them", f"keep one: remove instance.{given[1]}")
        if (self.groups or (self.preferences and self.preferences[0].count)) and "count" in self.model_fields_set:
            where = "the groups" if self.groups else "every preference"
            raise _invalid(f"instance.count and a count on {where}: SageMaker takes the count in one place",
                           "remove instance.count")
        if self.preferences and self.placement is not None:
            raise _invalid("instance.preferences cannot be combined with instance.placement",
                           "remove instance.placement, or give instance.type instead of preferences")
        if self.preferences and self.training_plan_arn and any(p.training_plan_arn for p in self.preferences):
            raise _invalid("a training plan on the job and on a preference: SageMaker takes one or the other",
                           "remove instance.training_plan_arn, or the preferences' training_plan_arn")
        return self

    @property
    def heterogeneous(self) -> bool:
        return bool(self.groups)

    @property
    def host_count(self) -> int:
        """All hosts of the job: the count, the groups' total, or the first preference's count."""
        if self.groups:
            return sum(group.count for group in self.groups)
        if self.preferences and self.preferences[0].count:
            return self.preferences[0].count
        return self.count

    def group_hosts(self) -> dict[str, list[str]]:
        """Group name -> its hosts (`algo-N` numbered across the groups in order); {} for a single group."""
        hosts: dict[str, list[str]] = {}
        first = 1
        for group in self.groups:
            hosts[group.name] = [f"algo-{index}" for index in range(first, first + group.count)]
            first += group.count
        return hosts


class Distribution(_Spec):
    """The distribution strategy the SDK sends and the container's launcher follows."""

    mode: Mode = Field(default=Mode.none, strict=False)
    """`none` (one process per host), `mpi` (mpirun, `processes_per_host` ranks per host), `pytorchddp` (rewritten
    by the SDK into SMDDP), `torch_distributed` (torchrun, one process per GPU), `smddp` (SMDDP over mpirun)."""

    processes_per_host: int | None = Field(default=None, ge=1, le=MAX_PROCESSES_PER_HOST)
    """Processes per host, for mode `mpi`. Default: the instance's GPU count, or 1."""

    custom_mpi_options: str = ""
    """Extra mpirun options, for modes `mpi` and `smddp`, e.g. `-x NCCL_DEBUG=INFO`."""

    instance_groups: list[InstanceGroupName] = Field(default_factory=list)
    """With instance groups: the one group whose hosts run the distributed launcher (modes `mpi`, `smddp`); the
    other groups run the entry point once per host. Default: the only group."""

    @property
    def rules(self) -> ModeRules:
        """The mode's row of the mode table (specs/modes.py): what the request, the SDK and the launcher make of it."""
        return self.mode.rules


HyperparameterValue = str | bool | int | float | None | list | dict
HyperparameterEntry = Annotated[HyperparameterValue, AfterValidator(_hyperparameter_value)]


class Checkpoint(_Spec):
    """Checkpoint sync: SageMaker copies `local_path` to and from `s3_uri` on every instance."""

    s3_uri: str
    """Where checkpoints are kept between runs and spot interruptions, e.g. `s3://bucket/checkpoints/job/`."""

    local_path: str = Field(default=DEFAULT_CHECKPOINT_DIR, max_length=api_limit("CheckpointConfig.LocalPath", "max"))
    """Directory inside the container that SageMaker syncs with `s3_uri`."""

    @field_validator("s3_uri")
    @classmethod
    def _s3_uri(cls, value: str) -> str:
        return _uri(value, "CheckpointConfig.S3Uri", "s3://<bucket>/checkpoints/<job>/", s3_only=False)


class Spot(_Spec):
    """Managed spot training."""

    enabled: bool = False
    """Run on spot capacity (cheaper; may be interrupted and resumed from the checkpoint)."""

    max_wait_seconds: int | None = Field(default=None, ge=api_limit("StoppingCondition.MaxWaitTimeInSeconds", "min"))
    """Longest time to wait for capacity plus training; must be at least `max_run_seconds`."""


class Metric(_Spec):
    """A metric SageMaker extracts from the job's log with a regular expression (group 1, a number)."""

    name: str = Field(min_length=api_limit("AlgorithmSpecification.MetricDefinitions[].Name", "min"),
                      max_length=api_limit("AlgorithmSpecification.MetricDefinitions[].Name", "max"))
    """Metric name, e.g. `train:loss`."""

    regex: str = Field(min_length=api_limit("AlgorithmSpecification.MetricDefinitions[].Regex", "min"),
                       max_length=api_limit("AlgorithmSpecification.MetricDefinitions[].Regex", "max"))
    """Regular expression applied to every log line; group 1 is the value."""

    @field_validator("regex")
    @classmethod
    def _compiles_with_a_group(cls, value: str) -> str:
        try:
            compiled = compile_metric_regex(value)
        except MetricRegexError as exc:
            raise _invalid(f"not a regular expression smtrain can match in linear time (RE2): {exc}",
                           exc.fix) from None
        if compiled.groups < 1:
            raise ValueError("the regex needs a capture group around the number, e.g. 'loss=([0-9.]+)'")
        return value


class Network(_Spec):
    """VPC and isolation settings."""

    subnets: list[SubnetId] = Field(default_factory=list, max_length=api_limit("VpcConfig.Subnets", "max"))
    """VPC subnet ids for the training instances (give security_group_ids too)."""

    security_group_ids: list[SecurityGroupId] = Field(default_factory=list,
                                                      max_length=api_limit("VpcConfig.SecurityGroupIds", "max"))
    """Security group ids for the training instances (give subnets too)."""

    enable_network_isolation: bool = False
    """Block all outbound network access from the training container."""

    encrypt_inter_container_traffic: bool = False
    """Encrypt traffic between the training instances (slower all-reduce)."""


def _uri_shorthand(value: Any) -> Any:
    """`train: s3://bucket/prefix/` is short for `train: {uri: s3://bucket/prefix/}` (checked here, so an error
    names `inputs.train`, what the user wrote)."""
    return {"uri": _channel_location(value)} if isinstance(value, str) else value


class Channel(_Spec):
    """One data channel: where its data is and how SageMaker delivers it."""

    uri: ChannelLocation
    """The `s3://` prefix (or manifest file); `smtrain local` also takes a local path."""

    input_mode: InputMode | None = Field(default=None, strict=False)  # type: ignore[valid-type]
    """`File` (copied before the script starts), `FastFile` (streamed, read as files) or `Pipe` (a FIFO per
    epoch, /opt/ml/input/data/<name>_<epoch>). Default: the job's `input_mode`."""

    distribution: S3Distribution = Field(default=S3Distribution("FullyReplicated"), strict=False)  # type: ignore[valid-type]
    """`FullyReplicated` (every host gets all files) or `ShardedByS3Key` (each host its own share of the files)."""

    s3_data_type: S3DataType = Field(default=S3DataType("S3Prefix"), strict=False)  # type: ignore[valid-type]
    """`S3Prefix` (every object under the prefix), `ManifestFile` or `AugmentedManifestFile` (uri is the manifest)."""

    compression: ChannelCompression | None = Field(default=None, strict=False)  # type: ignore[valid-type]
    """`Gzip` for gzip-compressed data in Pipe mode; default: not sent (`None`)."""

    content_type: str | None = Field(default=None, max_length=api_limit("InputDataConfig[].ContentType", "max"))
    """The data's MIME type, passed to the script (e.g. `text/csv`); default: not sent."""

    instance_groups: list[InstanceGroupName] = Field(default_factory=list)
    """With instance groups: the groups whose hosts get this channel. Default: every host."""

    @property
    def sharded(self) -> bool:
        return self.distribution.value == "ShardedByS3Key"

    @property
    def options_default(self) -> bool:
        """Only the location is given: the request is the one a bare URI gives."""
        return not self.model_fields_set - {"uri"}

    @model_serializer(mode="wrap")
    def _shorthand(self, handler: Any) -> Any:
        # A channel given as a bare URI dumps as one, so `plan --output json` shows what the user wrote.
        return self.uri if self.options_default else handler(self)


ChannelEntry = Annotated[Channel, BeforeValidator(_uri_shorthand, json_schema_input_type=str | Channel)]


class TensorBoard(_Spec):
    """TensorBoard output: SageMaker uploads what the script writes to `local_path` to `s3_uri` while it runs."""

    s3_uri: str
    """Where the event files go, e.g. `s3://bucket/tensorboard/job/`."""

    local_path: str = Field(default="/opt/ml/output/tensorboard",
                            max_length=api_limit("TensorBoardOutputConfig.LocalPath", "max"))
    """The container directory the script writes event files to (`smtrain local` keeps it in the run directory)."""

    @field_validator("s3_uri")
    @classmethod
    def _s3_uri(cls, value: str) -> str:
        return _uri(value, "TensorBoardOutputConfig.S3OutputPath", "s3://<bucket>/tensorboard/", s3_only=False)


class Mlflow(_Spec):
    """SageMaker managed MLflow: the tracking server the job logs to."""

    tracking_server_arn: Annotated[str, _api_string(
        "MlflowConfig.MlflowResourceArn", "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/name")]
    """The MLflow tracking server's (or app's) ARN."""

    experiment_name: Annotated[str, _api_string("MlflowConfig.MlflowExperimentName", "my-experiment")] | None = None
    """The MLflow experiment; default: SageMaker's."""

    run_name: Annotated[str, _api_string("MlflowConfig.MlflowRunName", "run-1")] | None = None
    """The MLflow run; default: SageMaker's."""


class Experiment(_Spec):
    """SageMaker Experiments: the experiment, trial and run this job is recorded under."""

    experiment_name: ExperimentEntityName | None = None
    """The experiment, e.g. `mnist-tuning`."""

    trial_name: ExperimentEntityName | None = None
    """The trial within the experiment."""

    trial_component_display_name: ExperimentEntityName | None = None
    """The display name of the job's trial component."""

    run_name: ExperimentEntityName | None = None
    """The run within the experiment."""


@masks_its_repr(lambda spec: spec.secret_values())
class JobSpec(_Spec):
    """One SageMaker PyTorch training job."""

    # A spec file's top-level `x-` keys are the user's own (anchors to reuse): the loader leaves them out.
    model_config = ConfigDict(json_schema_extra={"patternProperties": {"^x-": {}}})

    name: str = Field(min_length=1, json_schema_extra={"maxLength": MAX_BASE_NAME_LENGTH})  # checked below
    """Base job name; submit appends a timestamp and a random tag (`name-YYYY-MM-DD-HH-MM-SS-mmm-xxxx`)."""

    entry_point: str = Field(min_length=1)
    """The script SageMaker runs, relative to `source_dir`, e.g. `train.py`."""

    source_dir: str = "."
    """Directory shipped to the container as /opt/ml/code, relative to the spec file."""

    framework_version: str | None = None
    """PyTorch version of the SageMaker training image, in quotes, e.g. `"2.3.0"` (or give image_uri)."""

    py_version: str | None = None
    """Python of the image, e.g. `py311`. Default: the one the SDK's image list has for framework_version."""

    image_uri: str | None = Field(default=None, max_length=api_limit("AlgorithmSpecification.TrainingImage", "max"))
    """A custom training image; replaces framework_version/py_version and skips the SDK's version checks."""

    role: str | None = None
    """IAM execution role: its ARN, or its name (submit looks up the ARN). Default: $SMTRAIN_ROLE, the infra
    stack's output, or the Studio role."""

    region: str | None = None
    """AWS region. Default: $AWS_REGION, then boto3's chain (AWS_DEFAULT_REGION, the profile)."""

    instance: Instance
    """The training cluster."""

    distribution: Distribution = Field(default_factory=Distribution)
    """Distribution mode and its options."""

    hyperparameters: dict[HyperparameterName, HyperparameterEntry] = Field(default_factory=dict,
                                                                           max_length=api_limit("HyperParameters", "max"))
    """Passed to the entry point as `--key value` arguments (and SM_HP_* variables). A value YAML would send as
    other text than written (`010` as 8, `1:30` as 90, `2.10` as 2.1, `on` as true) is sent as the text written."""

    environment: dict[EnvironmentName, EnvironmentValue] = Field(default_factory=dict,
                                                                 max_length=api_limit("Environment", "max"))
    """Environment variables for the training container. Values of secret-looking names are never printed."""

    inputs: dict[ChannelName, ChannelEntry] = Field(default_factory=dict,
                                                    max_length=api_limit("InputDataConfig", "max"))
    """Data channels: name -> `s3://` prefix, or a mapping with `uri` and options (input_mode, distribution,
    s3_data_type, compression, content_type, instance_groups), mounted at /opt/ml/input/data/<name>.
    `smtrain local` also takes local paths."""

    input_mode: InputMode = Field(default=InputMode("File"), strict=False)  # type: ignore[valid-type]
    """How channels reach the container unless a channel says otherwise: `File`, `FastFile` or `Pipe`."""

    local_inputs: dict[ChannelName, str] = Field(default_factory=dict)
    """Local directories `smtrain local` uses for channels of `inputs` instead of downloading their S3 prefix,
    relative to the spec file, e.g. `{train: data/train}`; submit and plan ignore them, `--input` overrides them."""

    output_path: str | None = None
    """S3 prefix for model.tar.gz and output.tar.gz. Default: the infra stack's output path."""

    code_location: str | None = None
    """S3 prefix for the source tarball. Default: `code/` next to output_path."""

    output_kms_key: KmsKey | None = None
    """KMS key that encrypts model.tar.gz and output.tar.gz in S3 (id, alias or ARN)."""

    volume_kms_key: KmsKey | None = None
    """KMS key that encrypts the instances' EBS volumes (id, alias or ARN)."""

    output_compression: OutputCompression | None = Field(default=None, strict=False)  # type: ignore[valid-type]
    """`NONE` to upload the model and output uncompressed; default: not sent (`GZIP`)."""

    checkpoint: Checkpoint | None = None
    """Checkpoint sync to S3 (required for spot)."""

    spot: Spot = Field(default_factory=Spot)
    """Managed spot training."""

    max_pending_seconds: int | None = Field(default=None,
                                            ge=api_limit("StoppingCondition.MaxPendingTimeInSeconds", "min"),
                                            le=api_limit("StoppingCondition.MaxPendingTimeInSeconds", "max"))
    """Stop the job if it waits longer than this for capacity (training plans, instance preferences; accelerated
    instances only)."""

    max_retry_attempts: int | None = Field(default=None, ge=api_limit("RetryStrategy.MaximumRetryAttempts", "min"),
                                           le=api_limit("RetryStrategy.MaximumRetryAttempts", "max"))
    """Retry the job this many times when it fails with an internal error (RetryStrategy)."""

    infra_check: bool = False
    """Run SageMaker's infrastructure health checks on the instances before training."""

    remote_debug: bool = False
    """Allow a shell into the running container through AWS Systems Manager (`smtrain status` prints the command)."""

    session_tag_chaining: bool = False
    """Pass the job's session tags on to the role's sessions (attribute-based access control)."""

    tensorboard: TensorBoard | None = None
    """TensorBoard event files uploaded to S3 while the job runs."""

    mlflow: Mlflow | None = None
    """SageMaker managed MLflow tracking for the job."""

    experiment: Experiment | None = None
    """SageMaker Experiments names for the job."""

    max_run_seconds: int = Field(default=86400, ge=api_limit("StoppingCondition.MaxRuntimeInSeconds", "min"),
                                 le=api_limit("StoppingCondition.MaxRuntimeInSeconds", "documented_max"))
    """Stop the job after this much training time (SageMaker's limit is 28 days)."""

    keep_alive_seconds: int = Field(default=0, ge=api_limit("ResourceConfig.KeepAlivePeriodInSeconds", "min"),
                                    le=api_limit("ResourceConfig.KeepAlivePeriodInSeconds", "max"))
    """Keep instances warm this long after the job for the next one (warm pool; billed)."""

    metrics: list[Metric] | None = Field(default=None,
                                         max_length=api_limit("AlgorithmSpecification.MetricDefinitions", "max"))
    """Metric definitions. Default: train:loss, eval:loss, train:learning_rate, train:samples_per_sec, train:epoch
    and eval:train_loss from the common formats (`loss=0.4`, `loss: 0.4`, transformers' dicts, Lightning's bar,
    nanoGPT's lines, the shared entrypoints' line); `[]` for none."""

    tags: dict[TagKey, TagValue] = Field(default_factory=dict, max_length=api_limit("Tags", "max"))
    """Tags on the training job: letters, digits, spaces and _ . : / = + - @ (any script); keys not starting with aws:."""

    network: Network = Field(default_factory=Network)
    """VPC and isolation settings."""

    allow_unverified: bool = False
    """Submit even when a capability rule says the combination is unverified (outside a list that may be
    stale). Rules that would certainly fail still block."""

    @property
    def instance_type(self) -> str:
        """The instance type the training processes run on: instance.type, the first preference (SageMaker may
        pick a later one; `smtrain status` shows which), or the distribution's group (else the first group)."""
        instance = self.instance
        if instance.type:
            return instance.type
        if instance.preferences:
            return instance.preferences[0].type
        named = self.distribution.instance_groups[:1]
        return next((group.type for group in instance.groups if group.name in named), instance.groups[0].type)

    @property
    def host_count(self) -> int:
        return self.instance.host_count

    def channel_locations(self) -> dict[str, str]:
        """Channel name -> its URI or local path."""
        return {name: channel.uri for name, channel in self.inputs.items()}

    def secret_values(self) -> frozenset[str]:
        """The values under secret-looking names in the maps users fill (environment, hyperparameters, tags)."""
        return secret_values(self.environment, self.hyperparameters, self.tags)

    @field_validator("name")
    @classmethod
    def _job_name_shape(cls, value: str) -> str:
        if len(value) > MAX_BASE_NAME_LENGTH:
            shown = repr(printable(value[:60])) + ("..." if len(value) > 60 else "")
            raise _invalid(f"{shown} is {len(value)} characters long, more than a job's name leaves for it",
                           _shorter_name_fix(value))
        if not _api_pattern("TrainingJobName").fullmatch(value):
            raise _invalid(f"{value!r} is not a valid job name: use {JOB_NAME_RULE}",
                           f"e.g. name: {job_name_like(value)}")
        return value

    @field_validator("role")
    @classmethod
    def _role_arn_or_name(cls, value: str | None) -> str | None:
        if value is None:
            return value
        fix = "give the execution role's ARN, e.g. arn:aws:iam::123456789012:role/SageMakerExecution, or its name"
        if value.startswith("arn:"):
            if _api_pattern("RoleArn").fullmatch(value) and api_limit("RoleArn", "min") <= len(value) <= api_limit("RoleArn", "max"):
                return value
            service = value.split(":")[2] if value.count(":") >= 2 else ""
            if service == "s3":
                fix += "; an S3 location goes in output_path as s3://<bucket>/<prefix>/"
            raise _invalid(f"{value!r} is not an IAM role ARN (arn:aws:iam::<12-digit account>:role/<name>)", fix)
        if not _role_name_pattern().fullmatch(value) or len(value) > _ROLE_NAME_LIMITS["max"]:
            raise _invalid(f"{value!r} is neither an IAM role ARN nor a role name (letters, digits and +=,.@_-, "
                           f"at most {_ROLE_NAME_LIMITS['max']})", fix)
        return value

    @field_validator("output_path")
    @classmethod
    def _output_path(cls, value: str | None) -> str | None:
        # smtrain puts the source tarball in this bucket, so it needs the s3:// form (the API also takes https).
        return value if value is None else _uri(value, "OutputDataConfig.S3OutputPath", "s3://<bucket>/outputs/",
                                                s3_only=True)

    @field_validator("code_location")
    @classmethod
    def _code_location(cls, value: str | None) -> str | None:
        # Uploaded with S3 PutObject and sent as sagemaker_submit_directory: an s3:// prefix.
        return value if value is None else _uri(value, "OutputDataConfig.S3OutputPath", "s3://<bucket>/code/",
                                                s3_only=True)

    @field_validator("framework_version")
    @classmethod
    def _version_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\d+\.\d+(\.\d+)?", value):
            raise ValueError(f"{value!r} is not a PyTorch version such as \"2.3.0\"")
        return value

    @field_validator("py_version")
    @classmethod
    def _py_version_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"py3\d+", value):
            raise ValueError(f"{value!r} is not a Python tag such as py311")
        return value

    @model_validator(mode="after")
    def _local_inputs_mirror_channels(self) -> JobSpec:
        unknown = sorted(set(self.local_inputs) - set(self.inputs))
        if unknown:
            channels = ", ".join(self.inputs) or "none"
            raise _invalid(f"local_inputs {', '.join(unknown)}: no such channel in inputs ({channels})",
                           "local_inputs name local copies of the channels in inputs; add the channel to inputs, "
                           "or use --input NAME=PATH with smtrain local")
        remote = sorted(name for name, path in self.local_inputs.items() if "://" in path)
        if remote:
            raise _invalid(f"local_inputs {', '.join(remote)}: a local directory is needed, not a URI",
                           "give a path relative to the spec file, e.g. data/train")
        return self

    @model_validator(mode="after")
    def _world_size_bounded(self) -> JobSpec:
        """Checked before anything is sized by it (the rank table holds a row per process)."""
        per_host = self.distribution.processes_per_host or 1
        if self.host_count * per_host > MAX_WORLD_SIZE:
            raise _invalid(f"{self.host_count} hosts x {per_host} processes per host is more than {MAX_WORLD_SIZE} "
                           "processes", "use fewer hosts or fewer distribution.processes_per_host")
        return self

    @model_validator(mode="after")
    def _image_or_version(self) -> JobSpec:
        if self.image_uri is None and self.framework_version is None:
            raise ValueError("give framework_version (e.g. \"2.3.0\") or image_uri")
        if self.image_uri is not None and (self.framework_version or self.py_version):
            raise ValueError("give either image_uri or framework_version/py_version, not both")
        return self


def target_problem(field: str, value: str) -> tuple[str, str] | None:
    """What the spec's own check of `field` (`role` or `output_path`) refuses in `value`, as (message, fix): a role
    or output path from $SMTRAIN_ROLE, $SMTRAIN_OUTPUT_PATH or an SDK defaults file meets the spec's rules, or
    SageMaker refuses it after the source was packed and uploaded."""
    check = {"role": JobSpec._role_arn_or_name, "output_path": JobSpec._output_path}[field]
    try:
        check(value)
    except PydanticCustomError as exc:
        return exc.message(), str((exc.context or {})["fix"])
    return None
