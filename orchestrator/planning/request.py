"""The CreateTrainingJob request, built from the spec: the exact keys and values SDK v2 sends for the same job.

No SDK on this path. What v2's `sagemaker.pytorch.PyTorch(...).fit()` adds on its own is written down here
once, each with the SDK code it mirrors (sagemaker 2.257.7), and `tests/sdk_referee` builds the real v2
estimator from `plan.estimator_kwargs` over a matrix of specs and compares the two requests key for key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.planning.target import Target
from orchestrator.spec.catalog import InstanceType
from orchestrator.spec.images import default_python, image_uri, processor
from orchestrator.spec.model import JobSpec, Mode

# sagemaker/estimator.py Framework: `container_log_level=logging.INFO`, sent as sagemaker_container_log_level.
CONTAINER_LOG_LEVEL = 20
# sagemaker/estimator.py Framework: an isolated container cannot read S3, so v2 sends the source tarball as an
# input channel `code` (EstimatorBase.code_channel_name) and points the toolkit at its local copy.
CODE_CHANNEL = "code"
CODE_CHANNEL_SOURCE = "/opt/ml/input/data/code/sourcedir.tar.gz"  # CONTAINER_CODE_CHANNEL_SOURCEDIR_PATH
# sagemaker/fw_utils.py DEBUGGER_UNSUPPORTED_REGIONS and PROFILER_UNSUPPORTED_REGIONS (the same list).
_NO_DEBUGGER_REGIONS = frozenset({
    "us-iso-east-1", "us-isob-east-1", "ap-southeast-3", "ap-southeast-4", "eu-south-2", "me-central-1",
    "ap-south-2", "eu-central-2", "us-gov-east-1",
})


@dataclass(frozen=True)
class RequestContext:
    """What the request needs besides the spec: where it goes, under which name, with which source."""

    spec: JobSpec
    target: Target
    instance: InstanceType
    job_name: str
    source_uri: str


def distribution_hyperparameters(spec: JobSpec) -> dict[str, Any]:
    """The `sagemaker_*` keys each mode injects (sdk-facts.md §3; pytorchddp is rewritten into smddp, §4)."""
    dist = spec.distribution
    if dist.mode is Mode.none:
        return {}
    if dist.mode is Mode.mpi:
        keys: dict[str, Any] = {"sagemaker_mpi_enabled": True}
        if dist.processes_per_host:
            keys["sagemaker_mpi_num_of_processes_per_host"] = dist.processes_per_host
        keys["sagemaker_mpi_custom_mpi_options"] = dist.custom_mpi_options
        return keys
    if dist.mode is Mode.torch_distributed:
        return {"sagemaker_torch_distributed_enabled": True, "sagemaker_instance_type": spec.instance.type}
    options = "" if dist.mode is Mode.pytorchddp else dist.custom_mpi_options
    return {
        "sagemaker_distributed_dataparallel_enabled": True,
        "sagemaker_instance_type": spec.instance.type,
        "sagemaker_distributed_dataparallel_custom_mpi_options": options,
    }


def metric_definitions(spec: JobSpec) -> list[dict[str, str]]:
    if spec.metrics is None:
        return [dict(definition) for definition in DEFAULT_METRIC_DEFINITIONS]
    return [{"Name": metric.name, "Regex": metric.regex} for metric in spec.metrics]


def training_image(spec: JobSpec, target: Target, instance: InstanceType) -> str:
    if spec.image_uri:
        return spec.image_uri
    assert spec.framework_version is not None
    python = spec.py_version or default_python(spec.framework_version)
    assert python is not None
    return image_uri(spec.framework_version, python, target.region, processor(instance.family))


def hyperparameters(context: RequestContext) -> dict[str, str]:
    """User hyperparameters plus the SDK's keys, each JSON-encoded as the SDK sends them."""
    spec = context.spec
    isolated = spec.network.enable_network_isolation
    values: dict[str, Any] = {
        **spec.hyperparameters,
        "sagemaker_submit_directory": CODE_CHANNEL_SOURCE if isolated else context.source_uri,
        "sagemaker_program": spec.entry_point,
        "sagemaker_container_log_level": CONTAINER_LOG_LEVEL,
        "sagemaker_job_name": context.job_name,
        "sagemaker_region": context.target.region,
        **distribution_hyperparameters(spec),
    }
    return {str(key): json.dumps(value) for key, value in values.items()}


def create_training_job_request(context: RequestContext) -> dict[str, Any]:
    """The CreateTrainingJob API parameters, as botocore receives them."""
    spec, target = context.spec, context.target
    algorithm: dict[str, Any] = {
        "TrainingInputMode": "File",
        "TrainingImage": training_image(spec, target, context.instance),
        "MetricDefinitions": metric_definitions(spec),
    }
    if spec.framework_version:
        # sagemaker/pytorch/estimator.py: metrics time series on for framework_version >= 1.3 (every image in
        # the table); with only an image_uri v2 leaves the key out.
        algorithm["EnableSageMakerMetricsTimeSeries"] = True
    resources: dict[str, Any] = {"InstanceCount": spec.instance.count, "InstanceType": spec.instance.type,
                                 "VolumeSizeInGB": spec.instance.volume_size_gb}
    if spec.keep_alive_seconds:
        resources["KeepAlivePeriodInSeconds"] = spec.keep_alive_seconds
    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": spec.max_run_seconds}
    request: dict[str, Any] = {
        "AlgorithmSpecification": algorithm,
        "OutputDataConfig": {"S3OutputPath": target.output_path},
        "TrainingJobName": context.job_name,
        "StoppingCondition": stopping,
        "ResourceConfig": resources,
        "RoleArn": target.role,
        "HyperParameters": hyperparameters(context),
        # v2 sends both even when empty: the estimator is always given a dict and a list (estimator_kwargs).
        "Environment": dict(spec.environment),
        "Tags": [{"Key": key, "Value": value} for key, value in spec.tags.items()],
    }
    channels = [_channel(name, uri) for name, uri in spec.inputs.items()]
    if spec.network.enable_network_isolation:
        channels.append(_channel(CODE_CHANNEL, context.source_uri))  # after the user's, as job.py `_load_config`
    if channels:
        request["InputDataConfig"] = channels
    if spec.network.subnets:
        request["VpcConfig"] = {"Subnets": list(spec.network.subnets),
                                "SecurityGroupIds": list(spec.network.security_group_ids)}
    if spec.network.enable_network_isolation:
        request["EnableNetworkIsolation"] = True
    if spec.network.encrypt_inter_container_traffic:
        request["EnableInterContainerTrafficEncryption"] = True
    if spec.spot.enabled:
        request["EnableManagedSpotTraining"] = True
        if spec.spot.max_wait_seconds:
            stopping["MaxWaitTimeInSeconds"] = spec.spot.max_wait_seconds
    if spec.checkpoint:
        request["CheckpointConfig"] = {"S3Uri": spec.checkpoint.s3_uri, "LocalPath": spec.checkpoint.local_path}
    request.update(_debugger_and_profiler(context))
    return request


def _channel(name: str, uri: str) -> dict[str, Any]:
    # sagemaker/inputs.py TrainingInput defaults: S3Prefix, FullyReplicated.
    return {"ChannelName": name, "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": "FullyReplicated"}}}


def _debugger_and_profiler(context: RequestContext) -> dict[str, Any]:
    """The Debugger hook and Profiler defaults v2 adds (sagemaker/estimator.py `_prepare_debugger_for_training`,
    `_prepare_profiler_for_training`, Framework `_validate_and_set_debugger_configs`)."""
    spec, output_path = context.spec, context.target.output_path
    region_supported = context.target.region.lower() not in _NO_DEBUGGER_REGIONS
    extra: dict[str, Any] = {}
    # Framework drops the hook for "distributed" jobs with checkpoints (SMDebug does not support them); its test
    # `instance_count > 1 or self.distribution is not None` holds for every PyTorch job, whose distribution
    # defaults to {}, so any checkpoint drops it.
    if region_supported and not spec.checkpoint:
        extra["DebugHookConfig"] = {"S3OutputPath": output_path, "CollectionConfigurations": []}
    if region_supported and not context.instance.family.startswith("trn"):
        extra["ProfilerConfig"] = {"S3OutputPath": output_path, "DisableProfiler": False}
    else:
        extra["ProfilerConfig"] = {"DisableProfiler": True}
    return extra
