"""A job's log lines as both executors give them: one line of one host, and the order of hosts.

SageMaker's CloudWatch streams (cloud/logs.py) and a local run's `logs/algo-N.log` files (backends/local.py)
both become `LogLine`s, so status, logs and the progress read from them are written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any


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


def host_order(host: str) -> int:
    """`algo-12` -> 12, so that hosts sort as numbers."""
    number = host.rsplit("-", 1)[-1]
    return int(number) if number.isdigit() else 0
