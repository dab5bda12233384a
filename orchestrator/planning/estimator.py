"""Spec -> keyword arguments of the SDK v2 `sagemaker.pytorch.PyTorch` estimator that sends the plan's request.

Pure, and no SDK needed: the plan carries these for the notebook's `build_estimator` and for the test that
holds smtrain's own request against the one v2 builds from them. The orchestrator owns `source_dir` (the
content-addressed tarball), `distribution` (from the spec's mode) and `base_job_name`.
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.request import metric_definitions, resource_config
from orchestrator.planning.target import Target
from orchestrator.specs.capabilities import resolved_py_version
from orchestrator.specs.model import JobSpec


def distribution_dict(spec: JobSpec) -> dict[str, Any] | None:
    """The SDK's `distribution=` dict for the spec's mode: its row of the mode table (specs/modes.py)."""
    return spec.distribution.rules.sdk_distribution(spec.distribution)


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
    kwargs.update(_further_settings(spec))
    if spec.instance.groups:  # v2 takes the groups instead of a type and count
        del kwargs["instance_type"], kwargs["instance_count"]
    return {key: value for key, value in kwargs.items() if value is not None}


def _further_settings(spec: JobSpec) -> dict[str, Any]:
    """The v2 arguments of the settings beyond the basics, only where the spec sets them. `instance_groups` and
    `tensorboard_output_config` are plain data here; `cloud/estimator.py` makes v2's objects of them."""
    instance = spec.instance
    kwargs: dict[str, Any] = {
        "input_mode": spec.input_mode.value if spec.input_mode.value != "File" else None,
        "disable_output_compression": True if spec.output_compression and
        spec.output_compression.value == "NONE" else None,
        "max_retry_attempts": spec.max_retry_attempts,
        "enable_infra_check": spec.infra_check or None,
        "enable_remote_debug": spec.remote_debug or None,
        "enable_session_tag_chaining": spec.session_tag_chaining or None,
        "training_plan": instance.training_plan_arn,
        "instance_placement_config": resource_config(spec).get("InstancePlacementConfig"),
    }
    if instance.groups:
        kwargs["instance_groups"] = [{"instance_group_name": group.name, "instance_type": group.type,
                                      "instance_count": group.count} for group in instance.groups]
    if spec.tensorboard:
        kwargs["tensorboard_output_config"] = {"s3_output_path": spec.tensorboard.s3_uri,
                                               "container_local_output_path": spec.tensorboard.local_path}
    return kwargs


def training_inputs(spec: JobSpec) -> dict[str, dict[str, Any]]:
    """`fit(inputs=...)`: each channel as the keyword arguments of v2's `TrainingInput` (only what is set)."""
    inputs = {}
    for name, channel in spec.inputs.items():
        arguments: dict[str, Any] = {"s3_data": channel.uri, "distribution": channel.distribution.value,
                                     "s3_data_type": channel.s3_data_type.value}
        if channel.compression is not None:
            arguments["compression"] = channel.compression.value
        if channel.content_type is not None:
            arguments["content_type"] = channel.content_type
        if channel.instance_groups:
            arguments["instance_groups"] = list(channel.instance_groups)
        if channel.input_mode is not None:
            arguments["input_mode"] = channel.input_mode.value
        inputs[name] = arguments
    return inputs
