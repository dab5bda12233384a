"""The CreateTrainingJob request, built from the spec: the exact keys and values SDK v2 sends for the same job.

No SDK on this path. What v2's `sagemaker.pytorch.PyTorch(...).fit()` adds on its own is written down here
once, each with the SDK code it mirrors (sagemaker 2.257.7), and `tests/referees/sdk` builds the real v2
estimator from `plan.estimator_kwargs` over a matrix of specs and compares the two requests key for key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.errors import CapabilityError
from orchestrator.planning.target import FALLBACK_REGION, Target
from orchestrator.specs.catalog import InstanceType, lookup
from orchestrator.specs.images import default_python, image_uri, processor, region_fix, registry_account
from orchestrator.specs.model import Channel, InstancePreference, JobSpec, api_limit

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
    """The `sagemaker_*` keys the spec's mode injects: its row of the mode table (specs/modes.py)."""
    return spec.distribution.rules.hyperparameters(spec.distribution, spec.instance_type)


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
        "TrainingInputMode": spec.input_mode.value,
        "TrainingImage": training_image(spec, target, context.instance),
        "MetricDefinitions": metric_definitions(spec),
    }
    if spec.framework_version:
        # sagemaker/pytorch/estimator.py: metrics time series on for framework_version >= 1.3 (every image in
        # the table); with only an image_uri v2 leaves the key out.
        algorithm["EnableSageMakerMetricsTimeSeries"] = True
    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": spec.max_run_seconds}
    output: dict[str, Any] = {"S3OutputPath": target.output_path}
    if spec.output_kms_key:
        output["KmsKeyId"] = spec.output_kms_key
    if spec.output_compression:
        output["CompressionType"] = spec.output_compression.value
    request: dict[str, Any] = {
        "AlgorithmSpecification": algorithm,
        "OutputDataConfig": output,
        "TrainingJobName": context.job_name,
        "StoppingCondition": stopping,
        "ResourceConfig": resource_config(spec),
        "RoleArn": target.role,
        "HyperParameters": hyperparameters(context),
        # v2 sends both even when empty: the estimator is always given a dict and a list (estimator_kwargs).
        "Environment": dict(spec.environment),
        "Tags": [{"Key": key, "Value": value} for key, value in spec.tags.items()],
    }
    channels = [_channel(name, channel) for name, channel in spec.inputs.items()]
    if spec.network.enable_network_isolation:
        # after the user's, as job.py `_load_config`; with instance groups v2 gives it no InstanceGroupNames
        channels.append(_channel(CODE_CHANNEL, Channel.model_construct(uri=context.source_uri)))
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
    if spec.max_pending_seconds:
        stopping["MaxPendingTimeInSeconds"] = spec.max_pending_seconds
    if spec.checkpoint:
        request["CheckpointConfig"] = {"S3Uri": spec.checkpoint.s3_uri, "LocalPath": spec.checkpoint.local_path}
    request.update(_debugger_and_profiler(context))
    request.update(job_options(spec))
    return request


def require_request_limits(request: dict[str, Any]) -> None:
    """The API's limits that only the built request shows: its count of hyperparameters includes the sagemaker_*
    keys the mode adds.

    Raises:
        CapabilityError: CreateTrainingJob would refuse the request.
    """
    limit = api_limit("HyperParameters", "max")
    sent = request["HyperParameters"]
    if len(sent) > limit:
        own = sum(1 for key in sent if key.startswith("sagemaker_"))
        raise CapabilityError(
            f"hyperparameters: {len(sent) - own} of yours plus {own} sagemaker_* keys the mode needs make "
            f"{len(sent)}; CreateTrainingJob accepts at most {limit}",
            fix=f"drop {len(sent) - limit} hyperparameters, or pass them in a config file in source_dir")


def require_image_in_region(spec: JobSpec, region: str) -> None:
    """Raises CapabilityError where no PyTorch training image is published in `region` and the spec names none."""
    if spec.image_uri is None and registry_account(region) is None:
        raise CapabilityError(f"no SageMaker PyTorch training images are published in region {region!r}",
                              fix=region_fix(region))


_OFFLINE = "s3://placeholder-offline-check/"


def offline_request(spec: JobSpec) -> dict[str, Any]:
    """The request `plan` would build for `spec`, with placeholders for what only resolving knows (role, output
    path, the source's address), its request limits checked: what `validate` and `tune validate` check without
    credentials or packing the source, so that they refuse what `plan` refuses.

    Raises:
        CapabilityError: the request breaks a limit of the API.
    """
    if spec.region:
        require_image_in_region(spec, spec.region)
    target = Target(region=spec.region or FALLBACK_REGION, role="arn:aws:iam::000000000000:role/placeholder",
                    output_path=_OFFLINE, code_location=_OFFLINE)
    request = create_training_job_request(RequestContext(spec=spec, target=target, instance=lookup(spec.instance_type),
                                                         job_name=spec.name, source_uri=f"{_OFFLINE}sourcedir.tar.gz"))
    require_request_limits(request)
    return request


def resource_config(spec: JobSpec) -> dict[str, Any]:
    """ResourceConfig, in the order sagemaker/job.py `_prepare_resource_config` writes it."""
    instance = spec.instance
    resources: dict[str, Any] = {}
    if instance.groups:
        resources["InstanceGroups"] = [{"InstanceGroupName": group.name, "InstanceType": group.type,
                                        "InstanceCount": group.count} for group in instance.groups]
    elif instance.preferences:
        if instance.preferences[0].count is None:
            resources["InstanceCount"] = instance.count  # one count for whichever type is picked
        resources["InstancePreferences"] = [_preference(preference) for preference in instance.preferences]
    else:
        resources["InstanceCount"] = instance.count
        resources["InstanceType"] = instance.type
    resources["VolumeSizeInGB"] = instance.volume_size_gb
    if spec.volume_kms_key:
        resources["VolumeKmsKeyId"] = spec.volume_kms_key
    if spec.keep_alive_seconds:
        resources["KeepAlivePeriodInSeconds"] = spec.keep_alive_seconds
    if instance.training_plan_arn:
        resources["TrainingPlanArn"] = instance.training_plan_arn
    if instance.placement:
        placement: dict[str, Any] = {"EnableMultipleJobs": instance.placement.enable_multiple_jobs}
        if instance.placement.specifications:
            placement["PlacementSpecifications"] = [
                {"InstanceCount": item.count, **({"UltraServerId": item.ultraserver_id} if item.ultraserver_id else {})}
                for item in instance.placement.specifications]
        resources["InstancePlacementConfig"] = placement
    return resources


def _preference(preference: InstancePreference) -> dict[str, Any]:
    entry: dict[str, Any] = {"InstanceType": preference.type}
    if preference.count is not None:
        entry["InstanceCount"] = preference.count
    if preference.training_plan_arn:
        entry["TrainingPlanArns"] = [preference.training_plan_arn]
    return entry


def job_options(spec: JobSpec) -> dict[str, Any]:
    """The top-level settings sent only when the spec sets them (sagemaker/session.py `_get_train_request`)."""
    options: dict[str, Any] = {}
    if spec.infra_check:
        options["InfraCheckConfig"] = {"EnableInfraCheck": True}
    if spec.experiment:
        experiment = {"ExperimentName": spec.experiment.experiment_name, "TrialName": spec.experiment.trial_name,
                      "TrialComponentDisplayName": spec.experiment.trial_component_display_name,
                      "RunName": spec.experiment.run_name}
        options["ExperimentConfig"] = {key: value for key, value in experiment.items() if value}
    if spec.tensorboard:
        options["TensorBoardOutputConfig"] = {"S3OutputPath": spec.tensorboard.s3_uri,
                                              "LocalPath": spec.tensorboard.local_path}
    if spec.remote_debug:
        options["RemoteDebugConfig"] = {"EnableRemoteDebug": True}
    if spec.session_tag_chaining:
        options["SessionChainingConfig"] = {"EnableSessionTagChaining": True}
    if spec.max_retry_attempts:
        options["RetryStrategy"] = {"MaximumRetryAttempts": spec.max_retry_attempts}
    if spec.mlflow:
        mlflow = {"MlflowResourceArn": spec.mlflow.tracking_server_arn,
                  "MlflowExperimentName": spec.mlflow.experiment_name, "MlflowRunName": spec.mlflow.run_name}
        options["MlflowConfig"] = {key: value for key, value in mlflow.items() if value}
    return options


def _channel(name: str, channel: Channel) -> dict[str, Any]:
    """One InputDataConfig entry, as sagemaker/inputs.py TrainingInput writes it (defaults S3Prefix,
    FullyReplicated; the other keys only when given)."""
    source: dict[str, Any] = {"S3DataType": channel.s3_data_type.value, "S3Uri": channel.uri,
                              "S3DataDistributionType": channel.distribution.value}
    entry: dict[str, Any] = {"ChannelName": name, "DataSource": {"S3DataSource": source}}
    if channel.compression is not None:
        entry["CompressionType"] = channel.compression.value
    if channel.content_type is not None:
        entry["ContentType"] = channel.content_type
    if channel.instance_groups:
        source["InstanceGroupNames"] = list(channel.instance_groups)
    if channel.input_mode is not None:
        entry["InputMode"] = channel.input_mode.value
    return entry


def _debugger_and_profiler(context: RequestContext) -> dict[str, Any]:
    """The Debugger hook and Profiler defaults v2 adds (sagemaker/estimator.py `_prepare_debugger_for_training`,
    `_prepare_profiler_for_training`, Framework `_validate_and_set_debugger_configs`)."""
    spec, output_path = context.spec, context.target.output_path
    region_supported = context.target.region.lower() not in _NO_DEBUGGER_REGIONS
    defaults = context.target.training_defaults
    extra: dict[str, Any] = {}
    # Framework drops the hook for "distributed" jobs with checkpoints (SMDebug does not support them); its test
    # `instance_count > 1 or self.distribution is not None` holds for every PyTorch job, whose distribution
    # defaults to {}, so any checkpoint drops it.
    # The SDK defaults' Estimator.DebugHookConfig: false drops the hook (estimator.py keeps False as no hook).
    if region_supported and not spec.checkpoint and defaults.debug_hook is not False:
        extra["DebugHookConfig"] = {"S3OutputPath": output_path, "CollectionConfigurations": []}
    # ProfilerConfig.DisableProfiler from the SDK defaults: `_prepare_profiler_for_training` then sends only
    # {"DisableProfiler": true}.
    if region_supported and not context.instance.family.startswith("trn") and not defaults.disable_profiler:
        extra["ProfilerConfig"] = {"S3OutputPath": output_path, "DisableProfiler": False}
    else:
        extra["ProfilerConfig"] = {"DisableProfiler": True}
    return extra
