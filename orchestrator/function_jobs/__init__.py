"""A notebook function as a training job: `@orchestrator.remote(...)`, run locally on every rank or on SageMaker."""

from orchestrator.function_jobs.function import RemoteFunction, remote

__all__ = ["RemoteFunction", "remote"]
