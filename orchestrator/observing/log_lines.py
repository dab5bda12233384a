"""A job's log lines as both executors give them: one line of one host, and the order of hosts.

SageMaker's CloudWatch streams (cloud/logs.py) and a local run's `logs/algo-N.log` files (backends/local.py)
both become `LogLine`s, so status, logs and the progress read from them are written once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure)\b:?.*$")
"""A line as Python prints an exception's last line (`ValueError: bad shape`): a rank's error, and a package
build's own error in pip's output."""


@dataclass(frozen=True)
class LogLine:
    """One log event of one host."""

    host: str
    timestamp_ms: int
    message: str

    def __str__(self) -> str:
        return f"[{self.host}] {self.message}"

    def to_dict(self) -> dict[str, Any]:
        time = datetime.fromtimestamp(self.timestamp_ms / 1000, tz=timezone.utc)
        return {"host": self.host, "time": time.isoformat(), "message": self.message}


def character_boundary(data: bytes, end: int) -> int:
    """`end`, moved back to the start of a UTF-8 character it would cut (at most 3 bytes): where a line too long
    to hold is split into pieces."""
    for cut in range(end, max(end - 3, 1), -1):
        if data[cut] & 0xC0 != 0x80:
            return cut
    return end


def host_order(host: str) -> int:
    """`algo-12` -> 12, so that hosts sort as numbers."""
    number = host.rsplit("-", 1)[-1]
    return int(number) if number.isdigit() else 0
