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


def bucket_of(s3_uri: str) -> str:
    return s3_uri.removeprefix("s3://").split("/", 1)[0]
