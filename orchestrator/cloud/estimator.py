"""The optional SDK v2 adapter: the real `sagemaker.pytorch.PyTorch` estimator for a plan.

Nothing on smtrain's own paths (plan, submit, status, logs) comes here; it serves the notebook's
`build_estimator` and the tests that hold smtrain's request against the one v2 sends.
"""

from __future__ import annotations

import copy
from typing import Any

from orchestrator.cloud.sdk import import_sagemaker, sagemaker_session
from orchestrator.errors import CapabilityError
from orchestrator.planning.plan import Plan


def build(kwargs: dict[str, Any], session: Any) -> Any:
    """The real SDK v2 PyTorch estimator from `Plan.estimator_kwargs`.

    Raises:
        CapabilityError: the SDK's constructor refused the combination.
        EnvironmentProblem: SDK v2 is not installed (v3 or nothing is).
    """
    sagemaker = import_sagemaker()
    try:
        # A copy: the SDK writes its own sagemaker_* keys into the hyperparameters dict it is given.
        return sagemaker.pytorch.PyTorch(**copy.deepcopy(kwargs), sagemaker_session=session)
    except ValueError as exc:
        raise CapabilityError(f"SageMaker SDK v2 refused this job: {exc}",
                              fix="smtrain can still submit it (`smtrain submit`); the SDK's tables may be older "
                              "than the image") from None


def estimator_for(job_plan: Plan, session: Any | None = None, boto: Any | None = None) -> Any:
    """The plan's v2 estimator on a session for its region and bucket."""
    from orchestrator.cloud.sdk import boto_session

    session = session or sagemaker_session(boto or boto_session(job_plan.target.region), job_plan.target.bucket)
    return build(job_plan.estimator_kwargs, session)
