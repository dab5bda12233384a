"""The training job's name: the plan owns it (`build_plan` takes one, or makes a timestamped one).

A name given on the command line is checked against CreateTrainingJob's own pattern and limit here, so a bad
name sends nothing; a made one follows the SDK's `name_from_base` stamp plus a random tag (see
`timestamped_job_name`). The spec holds only the base (`name:`, validated in specs/model.py).
"""

from __future__ import annotations

import re
import secrets
import threading
import time

from orchestrator.errors import SpecError
from orchestrator.specs.model import api_limit

_JOB_NAME = re.compile(api_limit("TrainingJobName", "pattern"), re.ASCII)


class _NameTags:
    """Random tags for job names, never the same twice for one timestamp within this process."""

    ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
    LENGTH = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamp = ""
        self._used: set[str] = set()

    def draw(self, stamp: str) -> str:
        with self._lock:
            if stamp != self._stamp:
                self._stamp, self._used = stamp, set()
            while True:
                tag = "".join(secrets.choice(self.ALPHABET) for _ in range(self.LENGTH))
                if tag not in self._used:
                    self._used.add(tag)
                    return tag


_NAME_TAGS = _NameTags()


def check_job_name(name: str, where: str = "--job-name") -> str:
    """`name` if CreateTrainingJob accepts it as TrainingJobName (checked here, so a bad name sends nothing).

    Raises:
        SpecError: empty, too long, or a character outside the API's pattern (letters, digits, single hyphens).
    """
    limit = api_limit("TrainingJobName", "max")
    if not _JOB_NAME.fullmatch(name) or len(name) > limit:
        shown = repr(name) if len(name) <= 80 else f"{name[:80]!r}... ({len(name)} characters)"
        raise SpecError(f"{where} {shown} is not a training job name SageMaker accepts",
                        fix=f"use 1 to {limit} letters, digits and hyphens, starting and ending with a letter or "
                        "digit, e.g. " + (re.sub(r"[^a-zA-Z0-9]+", "-", name).strip("-")[:limit] or "my-job"))
    return name


def timestamped_job_name(base: str) -> str:
    """`base-YYYY-MM-DD-HH-MM-SS-mmm-xxxx`: the SDK's `name_from_base` stamp (UTC, milliseconds) and a random tag.

    The SDK's stamp alone repeats when two jobs are named in the same millisecond, and CreateTrainingJob then
    refuses the second. The tag differs for every name made in this process, and across processes two names of
    the same millisecond collide once in 36**4 (1.7 million). The base is trimmed, as the SDK trims it, to keep
    the name within SageMaker's limit.
    """
    now = time.time()
    stamp = f"{time.strftime('%Y-%m-%d-%H-%M-%S', time.gmtime(now))}-{int(now * 1000) % 1000:03d}"
    suffix = f"-{stamp}-{_NAME_TAGS.draw(stamp)}"
    return f"{base[:api_limit('TrainingJobName', 'max') - len(suffix)]}{suffix}"
