"""The job spec: strict, frozen data describing one training job.

Field docstrings are the reference documentation: they become `smtrain schema` descriptions and the README's
field table. Cross-field rules that depend on instance types or framework versions live in
`capabilities.py`, not here: this module only knows what a well-formed spec looks like.
"""

from __future__ import annotations

import re
import time
from enum import Enum

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orchestrator.contract import DEFAULT_CHECKPOINT_DIR

# CreateTrainingJob limits (botocore service model; sagemaker-contract.md §12).
_JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$")
_ENV_KEY = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_CHANNEL_NAME = re.compile(r"^[A-Za-z0-9.\-_]+$")
_INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9]+$")
# `name_from_base` appends "-YYYY-MM-DD-HH-MM-SS-mmm" (24 characters) and trims the base to fit 63.
JOB_NAME_SUFFIX_LENGTH = 24
MAX_BASE_NAME_LENGTH = 63 - JOB_NAME_SUFFIX_LENGTH


def timestamped_job_name(base: str) -> str:
    """`base-YYYY-MM-DD-HH-MM-SS-mmm`, the SDK's `name_from_base` format (UTC, milliseconds), without the SDK."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%d-%H-%M-%S", time.gmtime(now))
    return f"{base[:MAX_BASE_NAME_LENGTH]}-{stamp}-{int(now * 1000) % 1000:03d}"


class Mode(str, Enum):
    """How SageMaker launches the entry point on each host (sagemaker-contract.md §7)."""

    none = "none"
    mpi = "mpi"
    pytorchddp = "pytorchddp"
    torch_distributed = "torch_distributed"
    smddp = "smddp"


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True)


class Instance(_Spec):
    """The training cluster: one instance type, `count` hosts."""

    type: str
    """SageMaker training instance type, e.g. `ml.g5.12xlarge` (`smtrain instances` lists the known ones)."""

    count: int = Field(default=1, ge=1, le=512)
    """Number of instances (hosts `algo-1` ... `algo-N`)."""

    volume_size_gb: int = Field(default=30, ge=1, le=16384)
    """EBS volume per instance for `/opt/ml` (input data, checkpoints, model), in GB."""

    @field_validator("type")
    @classmethod
    def _instance_type_shape(cls, value: str) -> str:
        if not _INSTANCE_TYPE.match(value):
            raise ValueError(f"{value!r} is not a SageMaker instance type (expected the form ml.<family>.<size>)")
        return value


class Distribution(_Spec):
    """The distribution strategy the SDK sends and the container's launcher follows."""

    mode: Mode = Field(default=Mode.none, strict=False)
    """`none` (one process per host), `mpi` (mpirun, `processes_per_host` ranks per host), `pytorchddp` (rewritten
    by the SDK into SMDDP), `torch_distributed` (torchrun, one process per GPU), `smddp` (SMDDP over mpirun)."""

    processes_per_host: int | None = Field(default=None, ge=1)
    """Processes per host, for mode `mpi`. Default: the instance's GPU count, or 1."""

    custom_mpi_options: str = ""
    """Extra mpirun options, for modes `mpi` and `smddp`, e.g. `-x NCCL_DEBUG=INFO`."""


HyperparameterValue = str | bool | int | float | None | list | dict


class Checkpoint(_Spec):
    """Checkpoint sync: SageMaker copies `local_path` to and from `s3_uri` on every instance."""

    s3_uri: str = Field(pattern=r"^(s3|https)://", max_length=1024)
    """Where checkpoints are kept between runs and spot interruptions, e.g. `s3://bucket/checkpoints/job/`."""

    local_path: str = Field(default=DEFAULT_CHECKPOINT_DIR, max_length=4096)
    """Directory inside the container that SageMaker syncs with `s3_uri`."""


class Spot(_Spec):
    """Managed spot training."""

    enabled: bool = False
    """Run on spot capacity (cheaper; may be interrupted and resumed from the checkpoint)."""

    max_wait_seconds: int | None = Field(default=None, ge=1)
    """Longest time to wait for capacity plus training; must be at least `max_run_seconds`."""


class Metric(_Spec):
    """A metric SageMaker extracts from the job's log with a regular expression (group 1, a number)."""

    name: str = Field(min_length=1, max_length=255)
    """Metric name, e.g. `train:loss`."""

    regex: str = Field(min_length=1, max_length=500)
    """Regular expression applied to every log line; group 1 is the value."""

    @field_validator("regex")
    @classmethod
    def _compiles_with_a_group(cls, value: str) -> str:
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        if compiled.groups < 1:
            raise ValueError("the regex needs a capture group around the number, e.g. 'loss=([0-9.]+)'")
        return value


class Network(_Spec):
    """VPC and isolation settings."""

    subnets: list[str] = Field(default_factory=list, max_length=16)
    """VPC subnet ids for the training instances (give security_group_ids too)."""

    security_group_ids: list[str] = Field(default_factory=list, max_length=5)
    """Security group ids for the training instances (give subnets too)."""

    enable_network_isolation: bool = False
    """Block all outbound network access from the training container."""

    encrypt_inter_container_traffic: bool = False
    """Encrypt traffic between the training instances (slower all-reduce)."""


class JobSpec(_Spec):
    """One SageMaker PyTorch training job."""

    name: str = Field(min_length=1, max_length=MAX_BASE_NAME_LENGTH)
    """Base job name; submit appends a timestamp (`name-YYYY-MM-DD-HH-MM-SS-mmm`)."""

    entry_point: str = Field(min_length=1)
    """The script SageMaker runs, relative to `source_dir`, e.g. `train.py`."""

    source_dir: str = "."
    """Directory shipped to the container as /opt/ml/code, relative to the spec file."""

    framework_version: str | None = None
    """PyTorch version of the SageMaker training image, in quotes, e.g. `"2.3.0"` (or give image_uri)."""

    py_version: str | None = None
    """Python of the image, e.g. `py311`. Default: the one the SDK's image list has for framework_version."""

    image_uri: str | None = None
    """A custom training image; replaces framework_version/py_version and skips the SDK's version checks."""

    role: str | None = None
    """IAM execution role ARN. Default: $SMTRAIN_ROLE, the infra stack's output, or the Studio role."""

    region: str | None = None
    """AWS region. Default: $AWS_REGION, then boto3's chain (AWS_DEFAULT_REGION, the profile)."""

    instance: Instance
    """The training cluster."""

    distribution: Distribution = Field(default_factory=Distribution)
    """Distribution mode and its options."""

    hyperparameters: dict[str, HyperparameterValue] = Field(default_factory=dict, max_length=100)
    """Passed to the entry point as `--key value` arguments (and SM_HP_* variables)."""

    environment: dict[str, str] = Field(default_factory=dict, max_length=100)
    """Environment variables for the training container. Values of secret-looking names are never printed."""

    inputs: dict[str, str] = Field(default_factory=dict, max_length=20)
    """Data channels: name -> `s3://` prefix, mounted at /opt/ml/input/data/<name>. `smtrain local` also takes
    local paths."""

    output_path: str | None = None
    """S3 prefix for model.tar.gz and output.tar.gz. Default: the infra stack's output path."""

    code_location: str | None = None
    """S3 prefix for the source tarball. Default: `code/` next to output_path."""

    checkpoint: Checkpoint | None = None
    """Checkpoint sync to S3 (required for spot)."""

    spot: Spot = Field(default_factory=Spot)
    """Managed spot training."""

    max_run_seconds: int = Field(default=86400, ge=1)
    """Stop the job after this much training time (SageMaker's limit is 28 days)."""

    keep_alive_seconds: int = Field(default=0, ge=0, le=21600)
    """Keep instances warm this long after the job for the next one (warm pool; billed)."""

    metrics: list[Metric] | None = Field(default=None, max_length=40)
    """Metric definitions. Default: train:loss, train:samples_per_sec and train:epoch from the shared
    entrypoints' log line; `[]` for none."""

    tags: dict[str, str] = Field(default_factory=dict, max_length=50)
    """Tags on the training job."""

    network: Network = Field(default_factory=Network)
    """VPC and isolation settings."""

    allow_unverified: bool = False
    """Submit even when a capability rule says the combination is unverified (outside a list that may be
    stale). Rules that would certainly fail still block."""

    @field_validator("name")
    @classmethod
    def _job_name_shape(cls, value: str) -> str:
        if not _JOB_NAME.match(value):
            raise ValueError(f"{value!r} is not a valid job name: use letters, digits and single hyphens")
        return value

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

    @field_validator("environment")
    @classmethod
    def _environment_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            if not _ENV_KEY.match(key) or len(key) > 512:
                raise ValueError(f"{key!r} is not a valid environment variable name")
            if len(item) > 512:
                raise ValueError(f"the value of {key} is {len(item)} characters; SageMaker allows 512")
        return value

    @field_validator("hyperparameters")
    @classmethod
    def _hyperparameter_sizes(cls, value: dict[str, HyperparameterValue]) -> dict[str, HyperparameterValue]:
        for key in value:
            if len(key) > 256:
                raise ValueError(f"hyperparameter name {key[:40]!r}... is longer than SageMaker's 256")
            if key.startswith("sagemaker_"):
                raise ValueError(f"{key!r}: names starting with sagemaker_ are reserved for the SDK")
        return value

    @field_validator("inputs")
    @classmethod
    def _channel_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _CHANNEL_NAME.match(name) or len(name) > 64:
                raise ValueError(f"{name!r} is not a valid channel name (letters, digits, '.', '-', '_')")
        return value

    @model_validator(mode="after")
    def _image_or_version(self) -> JobSpec:
        if self.image_uri is None and self.framework_version is None:
            raise ValueError("give framework_version (e.g. \"2.3.0\") or image_uri")
        if self.image_uri is not None and (self.framework_version or self.py_version):
            raise ValueError("give either image_uri or framework_version/py_version, not both")
        return self

