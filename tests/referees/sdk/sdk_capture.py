"""The referee: what SDK v2 itself sends for `plan.estimator_kwargs`, captured with zero network traffic.

Test code only: smtrain builds its request itself (`orchestrator/planning/request.py`); this is what holds it
to account. Public botocore events (sdk-facts.md §8, method A): `before-parameter-build` records the API
parameters, `before-call` answers with a fake so nothing is sent, and `before-send` raises if any call would
still reach the network, so a missed fake fails the test instead of calling AWS.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse

from orchestrator.cloud.estimator import build, build_from, fit_arguments
from orchestrator.cloud.sdk import boto_session, sagemaker_session
from orchestrator.planning.plan import Plan

ACCOUNT = "123456789012"
EXISTING_BUCKETS = ("platform-bucket", "research-bucket")


class DryRunViolation(RuntimeError):
    """The SDK tried a call the capture does not answer, or reached for the network."""


@dataclass
class Capture:
    """The CreateTrainingJob parameters v2 sent, and every other API call it made (service.Operation, params)."""

    request: dict[str, Any] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class _EmptyBody:
    def stream(self, **_: Any) -> Any:
        yield b""


def _fake_response(key: str, params: dict[str, Any], region: str) -> dict[str, Any]:
    if key == "sagemaker.CreateTrainingJob":
        return {"TrainingJobArn": f"arn:aws:sagemaker:{region}:{ACCOUNT}:training-job/{params['TrainingJobName']}"}
    if key == "iam.GetRole":  # v2's expand_role, for a role given by name
        name = params["RoleName"]
        return {"Role": {"Path": "/", "RoleName": name, "RoleId": "AROAREFEREE", "Arn": role_arn(name),
                         "CreateDate": "2026-01-01T00:00:00Z"}}
    if key == "s3.ListBuckets":  # Session.default_bucket() checking that the SDK defaults' bucket exists
        return {"Buckets": [{"Name": name, "CreationDate": "2026-01-01T00:00:00Z"} for name in EXISTING_BUCKETS]}
    raise DryRunViolation(f"the SDK made a call the referee does not answer: {key}")


def role_arn(name: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/{name}"


def capture_create_training_job(job_plan: Plan, kwargs: dict[str, Any] | None = None,
                                sagemaker_config: dict[str, Any] | None = None) -> Capture:
    """Builds the plan's real v2 estimator (`orchestrator.cloud.estimator.build`, what `build_estimator` returns)
    and runs its `fit(wait=False)` against a network that isn't there.

    Args:
        kwargs: the estimator's arguments instead of the plan's (what a user would write).
        sagemaker_config: the session's SDK defaults document (default: the telemetry opt-out only).

    Raises:
        CapabilityError: v2 refused the estimator (constructor) or the job (fit).
        DryRunViolation: the SDK made a call that is not answered here.
    """
    from orchestrator.errors import CapabilityError

    capture = Capture()
    boto, session = _captured_sessions(job_plan.target.region, job_plan.target.bucket)
    if sagemaker_config is not None:
        session = type(session)(boto_session=boto, sagemaker_client=session.sagemaker_client,
                                sagemaker_config=sagemaker_config)
    _capturing[:] = [capture]
    try:
        estimator = build(job_plan, session) if kwargs is None else build_from(kwargs, session)
        estimator.fit(**fit_arguments(job_plan), job_name=job_plan.job_name, wait=False, logs=False)
    except ValueError as exc:
        raise CapabilityError(f"SDK v2 refused the job at fit(): {exc}", fix="-") from None
    finally:
        _capturing.clear()
    return capture


# The capture the session's handlers record into while one runs; none between captures.
_capturing: list[Capture] = []


@functools.cache
def _captured_sessions(region: str, bucket: str) -> tuple[Any, Any]:
    """A boto3 session with the capture's handlers, and the v2 Session on it, made once per region and bucket:
    a v2 Session makes seven botocore clients (about 0.2 CPU-s), and the clients it makes later copy the
    handlers from the boto3 session. Fixed fake credentials: nothing of the developer's is read or needed."""
    boto = boto_session(region, aws_access_key_id="REFEREE", aws_secret_access_key="REFEREE")

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        key = f"{model.service_model.service_name}.{model.name}"
        capture = _capturing[-1]
        if key == "sagemaker.CreateTrainingJob":
            capture.request = copy.deepcopy(params)
        else:
            capture.calls.append((key, copy.deepcopy(params)))

    def short_circuit(model: Any, params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        key = f"{model.service_model.service_name}.{model.name}"
        body = _fake_response(key, _last_params(key, _capturing[-1]), region)
        return AWSResponse(params["url"], 200, {}, _EmptyBody()), body

    def refuse(request: Any, **_: Any) -> None:
        raise DryRunViolation(f"HTTP attempted to {request.url}")

    boto.events.register("before-parameter-build", record)
    boto.events.register("before-call", short_circuit)
    boto.events.register("before-send", refuse)
    return boto, sagemaker_session(boto, bucket)


def _last_params(key: str, capture: Capture) -> dict[str, Any]:
    if key == "sagemaker.CreateTrainingJob":
        return capture.request
    return next(params for called, params in reversed(capture.calls) if called == key)
