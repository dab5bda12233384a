"""Where a job goes: the account-side facts a plan needs that the spec may leave out.

A value only. `orchestrator.cloud.resolve` fills one in from the spec, the environment and the infra stack;
the emulator makes a local one. Given a Target, planning needs no AWS call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from orchestrator.planning.provenance import Source
from orchestrator.planning.training_defaults import TrainingDefaults

# The region a plan assumes when nothing names one (flagged; submit refuses to send a job there).
FALLBACK_REGION = "us-east-1"


@dataclass(frozen=True)
class Missing:
    """One thing `submit` needs that planning could not find: which field, why, and how to give it."""

    field: str
    message: str
    fix: str


@dataclass(frozen=True)
class RoleWrites:
    """Where a role smtrain made (the infra stack's) may write in S3: job outputs under `outputs`, checkpoints under
    `checkpoints`, the one prefix where it may also delete, as SageMaker's checkpoint sync does."""

    outputs: str
    checkpoints: str


@dataclass(frozen=True)
class Target:
    region: str
    role: str
    output_path: str
    code_location: str
    region_is_fallback: bool = False
    training_defaults: TrainingDefaults = TrainingDefaults()
    """Request values from the SageMaker SDK's defaults that have no spec field (KMS keys, profiler, hook)."""
    sources: Mapping[str, Source] = field(default_factory=dict)
    """Where the values that did not come from the spec came from: role, region, output_path, code_location,
    and each field the SDK defaults filled in."""
    bucket_to_create: str | None = None
    """The SDK's default bucket (`sagemaker-<region>-<account>`), when nothing named an output path: submit
    creates it if it does not exist yet, after saying so."""
    role_writes: RoleWrites | None = None
    """Where the role may write, when smtrain knows (the infra stack's role); None: not known."""
    missing: tuple[Missing, ...] = ()
    """What submit will need and nothing here names (a role; credentials to name the default bucket): the plan
    shows a placeholder for each and says so; submit refuses, naming them all at once."""

    @property
    def bucket(self) -> str:
        return bucket_of(self.output_path)


@dataclass(frozen=True)
class S3Uri:
    """`s3://bucket/key`: the one place an S3 URI is taken apart (the key may be a prefix, or empty)."""

    bucket: str
    key: str = ""

    @classmethod
    def parse(cls, uri: str) -> S3Uri:
        bucket, _, key = uri.removeprefix("s3://").partition("/")
        return cls(bucket, key)

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


def bucket_of(s3_uri: str) -> str:
    return S3Uri.parse(s3_uri).bucket
