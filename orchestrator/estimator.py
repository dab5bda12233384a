"""Spec -> keyword arguments of the SDK v2 `sagemaker.pytorch.PyTorch` estimator, and the estimator itself.

`estimator_kwargs` is pure: the plan prints exactly what the estimator is built from. The orchestrator owns
`source_dir` (the content-addressed tarball), `distribution` (from the spec's mode) and `base_job_name`.
"""

from __future__ import annotations

import copy
from typing import Any

from orchestrator.capabilities import resolved_py_version
from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.resolve import Target
from orchestrator.spec import JobSpec, Mode


def distribution_dict(spec: JobSpec) -> dict[str, Any] | None:
    """The SDK's `distribution=` dict for the spec's mode (sdk-facts.md §3)."""
    dist = spec.distribution
    if dist.mode is Mode.none:
        return None
    if dist.mode is Mode.mpi:
        mpi: dict[str, Any] = {"enabled": True, "custom_mpi_options": dist.custom_mpi_options}
        if dist.processes_per_host:
            mpi["processes_per_host"] = dist.processes_per_host
        return {"mpi": mpi}
    if dist.mode is Mode.pytorchddp:
        return {"pytorchddp": {"enabled": True}}
    if dist.mode is Mode.torch_distributed:
        return {"torch_distributed": {"enabled": True}}
    return {"smdistributed": {"dataparallel": {"enabled": True, "custom_mpi_options": dist.custom_mpi_options}}}


def metric_definitions(spec: JobSpec) -> list[dict[str, str]]:
    if spec.metrics is None:
        return [dict(definition) for definition in DEFAULT_METRIC_DEFINITIONS]
    return [{"Name": metric.name, "Regex": metric.regex} for metric in spec.metrics]


def estimator_kwargs(spec: JobSpec, target: Target, source_uri: str) -> dict[str, Any]:
    """Everything the PyTorch estimator is constructed with, except the session."""
    kwargs: dict[str, Any] = {
        "entry_point": spec.entry_point,
        "source_dir": source_uri,
        "role": target.role,
        "instance_type": spec.instance.type,
        "instance_count": spec.instance.count,
        "volume_size": spec.instance.volume_size_gb,
        "max_run": spec.max_run_seconds,
        "output_path": target.output_path,
        "code_location": target.code_location,
        "base_job_name": spec.name,
        "hyperparameters": dict(spec.hyperparameters),
        "environment": dict(spec.environment),
        "metric_definitions": metric_definitions(spec),
        "tags": [{"Key": key, "Value": value} for key, value in spec.tags.items()],
        "enable_network_isolation": spec.network.enable_network_isolation,
        "encrypt_inter_container_traffic": spec.network.encrypt_inter_container_traffic,
        "keep_alive_period_in_seconds": spec.keep_alive_seconds or None,
    }
    if spec.image_uri:
        kwargs["image_uri"] = spec.image_uri
    else:
        kwargs["framework_version"] = spec.framework_version
        kwargs["py_version"] = resolved_py_version(spec)
    distribution = distribution_dict(spec)
    if distribution:
        kwargs["distribution"] = distribution
    if spec.checkpoint:
        kwargs["checkpoint_s3_uri"] = spec.checkpoint.s3_uri
        kwargs["checkpoint_local_path"] = spec.checkpoint.local_path
    if spec.spot.enabled:
        kwargs["use_spot_instances"] = True
        kwargs["max_wait"] = spec.spot.max_wait_seconds
    if spec.network.subnets:
        kwargs["subnets"] = list(spec.network.subnets)
        kwargs["security_group_ids"] = list(spec.network.security_group_ids)
    return {key: value for key, value in kwargs.items() if value is not None}


def build(kwargs: dict[str, Any], sagemaker_session: Any) -> Any:
    """The real SDK v2 PyTorch estimator from `estimator_kwargs` output.

    Raises:
        CapabilityError: the SDK's constructor refused the combination (a rule smtrain's matrix lacks).
    """
    from orchestrator.errors import CapabilityError
    from orchestrator.sdk import import_sagemaker

    sagemaker = import_sagemaker()
    try:
        # A copy: the SDK writes its own sagemaker_* keys into the hyperparameters dict it is given.
        return sagemaker.pytorch.PyTorch(**copy.deepcopy(kwargs), sagemaker_session=sagemaker_session)
    except ValueError as exc:
        raise CapabilityError(f"the SageMaker SDK refused this job: {exc}",
                              fix="change the spec as the SDK says; smtrain's capability rules missed this one") from None


def build_estimator(spec: JobSpec, sagemaker_session: Any | None = None, upload_source: bool = True) -> Any:
    """The notebook API: the real `sagemaker.pytorch.PyTorch` estimator for a spec, configured as `plan` shows.

    Its `source_dir` is smtrain's content-addressed tarball in S3. With `upload_source` (the default) the
    tarball is uploaded now unless already there, so `estimator.fit()` works as usual.
    """
    from orchestrator.plan import plan
    from orchestrator.submission import ensure_source_uploaded

    job_plan = plan(spec)
    session = sagemaker_session or job_plan.sagemaker_session()
    if upload_source:
        ensure_source_uploaded(job_plan, session.boto_session)
    return build(job_plan.estimator_kwargs, session)
