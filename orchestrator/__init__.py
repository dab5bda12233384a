"""smtrain: SageMaker PyTorch training jobs from strict YAML specs.

The notebook API is imported lazily, so `import orchestrator` (and the CLI's fast commands) never pay for
pydantic, boto3 or the SageMaker SDK until they are used.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = {
    "load_spec": "orchestrator.api",
    "JobSpec": "orchestrator.specs.model",
    "plan": "orchestrator.api",
    "Plan": "orchestrator.api",
    "build_estimator": "orchestrator.api",
    "submit": "orchestrator.api",
    "Job": "orchestrator.api",
    "plan_tuning": "orchestrator.api",
    "submit_tuning": "orchestrator.api",
    "Tuning": "orchestrator.api",
    "load_tuning": "orchestrator.api",
    "tune_local": "orchestrator.api",
    "run_local": "orchestrator.api",
    "run": "orchestrator.api",
    "attach": "orchestrator.api",
    "remote": "orchestrator.function_jobs",
    # What a notebook catches: every error meant for a user is a SmtrainError (message and fix, no traceback).
    "SmtrainError": "orchestrator.errors",
    "SpecError": "orchestrator.errors",
    "CapabilityError": "orchestrator.errors",
    "EnvironmentProblem": "orchestrator.errors",
    "AwsError": "orchestrator.errors",
    "JobFailed": "orchestrator.errors",
    "JobNotFound": "orchestrator.observing.job_status",
}


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
