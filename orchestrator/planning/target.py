"""Where a job goes: the account-side facts a plan needs that the spec may leave out.

A value only. `orchestrator.cloud.resolve` fills one in from the spec, the environment and the infra stack;
the emulator makes a local one. Given a Target, planning needs no AWS call.
"""

from __future__ import annotations

from dataclasses import dataclass

# The region a plan assumes when nothing names one (flagged; submit refuses to send a job there).
FALLBACK_REGION = "us-east-1"


@dataclass(frozen=True)
class Target:
    region: str
    role: str
    output_path: str
    code_location: str
    region_is_fallback: bool = False

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
