"""Captures the exact CreateTrainingJob request the SDK would send, with zero network traffic.

Public botocore events only (sdk-facts.md §8, method A): `before-parameter-build` records the API parameters,
`before-call` answers CreateTrainingJob with a fake response so nothing is sent, and `before-send` raises if any
call would still reach the network, so a missed fake is a loud error, never a silent request to AWS.
"""

from __future__ import annotations

import copy
from typing import Any

from orchestrator.cloud.sdk import boto_session, sagemaker_session

_FAKE_RESPONSES = {
    "sagemaker.CreateTrainingJob": {
        "TrainingJobArn": "arn:aws:sagemaker:us-east-1:000000000000:training-job/dry-run",
    },
}


class DryRunViolation(RuntimeError):
    """The SDK tried to make a call during a dry run (a bug in smtrain, never a user error)."""


class _EmptyBody:
    def stream(self, **_: Any) -> Any:
        yield b""


def capture_create_training_job(kwargs: dict[str, Any], job_name: str, inputs: dict[str, str], region: str,
                                bucket: str) -> dict[str, Any]:
    """Builds the real estimator from `kwargs` and runs `fit(wait=False)` against a network that isn't there.

    Returns:
        The CreateTrainingJob API parameters exactly as botocore received them.
    """
    from botocore.awsrequest import AWSResponse

    from orchestrator.planning.estimator import build

    captured: dict[str, Any] = {}
    # Fixed fake credentials: no credential lookup, nothing of the user's is read or needed.
    boto = boto_session(region, aws_access_key_id="DRYRUN", aws_secret_access_key="DRYRUN")

    def capture(params: dict[str, Any], model: Any, **_: Any) -> None:
        captured.update(copy.deepcopy(params))

    def short_circuit(model: Any, params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        key = f"{model.service_model.service_name}.{model.name}"
        if key not in _FAKE_RESPONSES:
            raise DryRunViolation(f"dry run: the SDK made an unexpected call {key}")
        return AWSResponse(params["url"], 200, {}, _EmptyBody()), _FAKE_RESPONSES[key]

    def refuse(request: Any, **_: Any) -> None:
        raise DryRunViolation(f"dry run: HTTP attempted to {request.url}")

    boto.events.register("before-parameter-build.sagemaker.CreateTrainingJob", capture)
    boto.events.register("before-call", short_circuit)
    boto.events.register("before-send", refuse)
    estimator = build(kwargs, sagemaker_session(boto, bucket))
    _fit(estimator, inputs, job_name)
    return captured


def _fit(estimator: Any, inputs: dict[str, str], job_name: str) -> None:
    from orchestrator.errors import CapabilityError

    try:
        estimator.fit(inputs=inputs or None, job_name=job_name, wait=False, logs=False)
    except ValueError as exc:
        raise CapabilityError(f"the SageMaker SDK refused this job at submit time: {exc}",
                              fix="change the spec as the SDK says") from None
