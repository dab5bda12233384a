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
from orchestrator.specs.model import JOB_NAME_RULE, JOB_NAME_TAG_LENGTH, api_limit

_JOB_NAME = re.compile(api_limit("TrainingJobName", "pattern"), re.ASCII)


class _NameTags:
    """Stamps and random tags for job names: never the same pair twice within this process.

    The clock is read under the lock, so a thread that read an earlier millisecond cannot come back after a later
    one and find that millisecond's tags forgotten (the CI saw 1 clash in 4,000 names on 8 threads that way). The
    tags of the last few stamps are kept, so a clock stepped back a little does not repeat a name either.
    """

    ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
    LENGTH = JOB_NAME_TAG_LENGTH
    STAMPS_KEPT = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._used: dict[str, set[str]] = {}

    def draw(self) -> tuple[str, str]:
        """(stamp, tag): the SDK's UTC stamp with milliseconds, and a tag not yet given with that stamp."""
        with self._lock:
            now = time.time()
            stamp = f"{time.strftime('%Y-%m-%d-%H-%M-%S', time.gmtime(now))}-{int(now * 1000) % 1000:03d}"
            used = self._used.setdefault(stamp, set())
            while len(self._used) > self.STAMPS_KEPT:
                del self._used[next(iter(self._used))]
            while True:
                tag = "".join(secrets.choice(self.ALPHABET) for _ in range(self.LENGTH))
                if tag not in used:
                    used.add(tag)
                    return stamp, tag


_NAME_TAGS = _NameTags()


def check_job_name(name: str) -> str:
    """`name` if CreateTrainingJob accepts it as TrainingJobName (checked here, so a bad name sends nothing). The
    message names no argument: the command line's and the Python API's both come here.

    Raises:
        SpecError: empty, too long, or a character outside the API's pattern (`JOB_NAME_RULE`).
    """
    limit = api_limit("TrainingJobName", "max")
    if not _JOB_NAME.fullmatch(name) or len(name) > limit:
        shown = repr(name) if len(name) <= 80 else f"{name[:80]!r}... ({len(name)} characters)"
        raise SpecError(f"{shown} is not a training job name SageMaker accepts",
                        fix=f"use 1 to {limit} {JOB_NAME_RULE}, e.g. "
                        + (re.sub(r"[^a-zA-Z0-9]+", "-", name).strip("-")[:limit] or "my-job"))
    return name


def timestamped_job_name(base: str) -> str:
    """`base-YYYY-MM-DD-HH-MM-SS-mmm-xxxx`: the SDK's `name_from_base` stamp (UTC, milliseconds) and a random tag.

    The SDK's stamp alone repeats when two jobs are named in the same millisecond, and CreateTrainingJob then
    refuses the second. The tag differs for every name made in this process, and across processes two names of
    the same millisecond collide once in 36**4 (1.7 million). The base is trimmed, as the SDK trims it, to keep
    the name within SageMaker's limit.
    """
    stamp, tag = _NAME_TAGS.draw()
    suffix = f"-{stamp}-{tag}"
    return f"{base[:api_limit('TrainingJobName', 'max') - len(suffix)]}{suffix}"
