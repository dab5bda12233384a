"""Creating a SageMaker resource exactly once: one loop for CreateTrainingJob and CreateHyperParameterTuningJob.

The create call goes out with botocore's automatic retries off: after a lost response (read timeout, connection
closed) botocore would resend it, and the resend's ResourceInUse would hide that the first call worked. Instead,
after any failure that may be transient (throttling, a 5xx, a dropped connection), the resource is looked up by
name before another attempt, and adopted when it is ours (`Creation.is_ours`: same definition as the request).
ResourceInUse on a call that no earlier attempt could have answered is a genuine name clash.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.cloud.aws_errors import aws_errors, is_name_taken, is_not_found, is_transient
from orchestrator.errors import AwsError
from orchestrator.redact import mask_text

logger = logging.getLogger(__name__)

CREATE_ATTEMPTS = 5
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 8.0


@dataclass(frozen=True)
class Creation:
    """One Create* call to make exactly once, and how to recognise its result."""

    what: str
    """The resource, for messages: "training job my-job"."""
    operation: str
    """The API's name, for the log: "CreateTrainingJob"."""
    send: Callable[[], Any]
    """Sends the request once (a client with botocore's retries off)."""
    describe: Callable[[], dict[str, Any]]
    """Describes the resource by name (ordinary retries); a not-found ClientError when there is none."""
    is_ours: Callable[[dict[str, Any]], bool]
    """Whether a described resource of that name is this request's."""
    name_clash: AwsError
    """What to raise when the name belongs to someone else's resource."""
    secrets: frozenset[str] = frozenset()
    """Values masked in every message (the request's environment and hyperparameters)."""


def create_once(creation: Creation, *, sleep: Callable[[float], None] = time.sleep) -> None:
    """Makes `creation`'s call until the resource exists, never creating it twice.

    Raises:
        AwsError: a non-transient failure; a name clash; or CREATE_ATTEMPTS transient failures after each of
            which no such resource existed (the message says submitting again is safe).
    """
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError

    may_exist = False  # could an earlier attempt have created it?
    with aws_errors(f"creating {creation.what}", creation.secrets):
        for attempt in range(1, CREATE_ATTEMPTS + 1):
            try:
                creation.send()
                return
            except ClientError as exc:
                if is_name_taken(exc):
                    _adopt_or_refuse(creation, may_exist)
                    return
                if not is_transient(exc):
                    raise
                failure: Exception = exc
            except (BotoConnectionError, HTTPClientError) as exc:
                failure = exc
            may_exist = True
            if _existing_adopted(creation):
                logger.warning("%s %s failed (%s) after creating it: adopted it", creation.operation,
                               creation.what, failure)
                return
            if attempt == CREATE_ATTEMPTS:
                raise AwsError(mask_text(f"creating {creation.what} failed {attempt} times, last: {failure}",
                                         creation.secrets),
                               fix="check the network and AWS_ENDPOINT_URL; nothing of that name was found "
                                   "afterwards, so submitting again is safe")
            pause = random.uniform(0, min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1)))
            logger.warning("%s %s failed (%s) and nothing of that name exists: retrying in %.1f s",
                           creation.operation, creation.what, failure, pause)
            sleep(pause)


def same_training_definition(theirs: dict[str, Any], ours: dict[str, Any], hyperparameters: str) -> bool:
    """Same hyperparameters (they carry the job name, the source's SHA-256 and the region), image and role: what
    tells our own job from another of the same name. `hyperparameters` is the key they sit under."""
    return (theirs.get(hyperparameters) == ours.get(hyperparameters)
            and (theirs.get("AlgorithmSpecification") or {}).get("TrainingImage")
            == ours["AlgorithmSpecification"].get("TrainingImage")
            and theirs.get("RoleArn") == ours.get("RoleArn"))


def _existing_adopted(creation: Creation) -> bool:
    """True: the resource exists and is ours. Raises the name clash when it exists and is not."""
    described = _described_or_none(creation)
    if described is None:
        return False
    if not creation.is_ours(described):
        raise creation.name_clash
    return True


def _adopt_or_refuse(creation: Creation, may_exist: bool) -> None:
    """After ResourceInUse: adopt the resource only if an earlier attempt of ours may have created it."""
    described = _described_or_none(creation) if may_exist else None
    if described is None or not creation.is_ours(described):
        raise creation.name_clash
    logger.warning("%s %s: ResourceInUse after a lost response; adopted ours", creation.operation, creation.what)


def _described_or_none(creation: Creation) -> dict[str, Any] | None:
    from botocore.exceptions import ClientError

    with aws_errors(f"looking for {creation.what} after a failed create", creation.secrets):
        try:
            return creation.describe()
        except ClientError as exc:
            if is_not_found(exc):
                return None
            raise
