"""Spec -> keyword arguments of the SDK v2 `sagemaker.pytorch.PyTorch` estimator that sends the plan's request.

Pure, and no SDK needed: the plan carries these for the notebook's `build_estimator` and for the test that
holds smtrain's own request against the one v2 builds from them. The orchestrator owns `source_dir` (the
content-addressed tarball), `distribution` (from the spec's mode) and `base_job_name`.
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.request import metric_definitions
from orchestrator.planning.target import Target
from orchestrator.spec.capabilities import resolved_py_version
from orchestrator.spec.model import JobSpec, Mode


def distribution_dict(spec: JobSpec) -> dict[str, Any] | None:
    """The SDK's `distribution=` dict for the spec's mode (docs/sdk-facts.md §3)."""
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


def estimator_kwargs(spec: JobSpec, target: Target, source_uri: str) -> dict[str, Any]:
    """Everything the PyTorch estimator is constructed with, except the session."""
    kwargs: dict[str, Any] = {
        "entry_point": spec.entry_point,
        "source_dir": source_uri,
        "role": target.role,
        "instance_type": spec.instance_type,
        "instance_count": spec.host_count,
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
    defaults = target.training_defaults
    kwargs["output_kms_key"] = spec.output_kms_key
    kwargs["volume_kms_key"] = spec.volume_kms_key
    if defaults.disable_profiler:
        kwargs["disable_profiler"] = True
    if defaults.debug_hook is False:
        kwargs["debugger_hook_config"] = False
    return {key: value for key, value in kwargs.items() if value is not None}
