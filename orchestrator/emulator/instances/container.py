"""What the SageMaker training container gives a script, as pure functions (docs/sagemaker-contract.md §3-6).

Two halves: what the platform hands every instance, read from the plan's CreateTrainingJob request
(`ContainerJob`: hyperparameters, channels, environment, checkpoint path, stopping condition), and what the
training toolkit derives from it on each host (`resource_config`, `training_env`, `sm_variables`, `user_args`)
plus what the PyTorch toolkit and the DLC add (`framework_variables`). `tests/referees/toolkit` runs the real toolkit on
the files written from these and compares every variable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.contract import (
    AWS_REGION,
    MASTER_ADDR,
    NETWORK_INTERFACE,
    PYTORCH_TOOLKIT_VALUES,
    SMDDP_ENABLED_FLAG,
    TRAINING_JOB_ARN,
    TRAINING_JOB_NAME,
)

GROUP_NAME = "homogeneousCluster"
# TensorBoardOutputConfig.LocalPath when the request leaves it out (the API's documented default).
TENSORBOARD_DEFAULT_PATH = "/opt/ml/output/tensorboard"
PYTORCH_TRAINING_MODULE = "sagemaker_pytorch_container.training:main"
# Hyperparameters the toolkit keeps for itself; every other sagemaker_* key is a framework parameter (§5).
CORE_HYPERPARAMETERS = frozenset({
    "sagemaker_program", "sagemaker_submit_directory", "sagemaker_enable_cloudwatch_metrics", "sagemaker_region",
    "sagemaker_container_log_level", "sagemaker_job_name", "default_user_module_name", "_tuning_objective_metric",
    "sagemaker_s3_output",
})
# The flags that make the toolkit treat the current instance group as a distribution group (§6).
DISTRIBUTION_FLAGS = (
    "sagemaker_mpi_enabled", "sagemaker_parameter_server_enabled", SMDDP_ENABLED_FLAG,
    "sagemaker_pytorch_ddp_enabled", "sagemaker_pytorch_xla_multi_worker_enabled",
    "sagemaker_multi_worker_mirrored_strategy_enabled", "sagemaker_torch_distributed_enabled",
)
# The toolkit's log level when the hyperparameter is missing (logging.INFO).
DEFAULT_LOG_LEVEL = 20


@dataclass(frozen=True)
class Channel:
    name: str
    source: str
    """The channel's S3Uri in the request; a local path or file:// URI in the emulator's plans."""
    config: dict[str, str]
    """Its entry in inputdataconfig.json."""
    instance_groups: tuple[str, ...] = ()
    """The groups whose hosts get it (S3DataSource.InstanceGroupNames); () for every host."""
    compression: str = "None"

    @property
    def sharded(self) -> bool:
        return self.config["S3DistributionType"] == "ShardedByS3Key"

    @property
    def pipe(self) -> bool:
        return self.config["TrainingInputMode"] == "Pipe"

    def reaches(self, group: str) -> bool:
        return not self.instance_groups or group in self.instance_groups


@dataclass(frozen=True)
class InstanceGroup:
    """One instance group of the job: a heterogeneous cluster's, or the one SageMaker calls homogeneousCluster."""

    name: str
    instance_type: str
    count: int


@dataclass(frozen=True)
class ContainerJob:
    """What SageMaker hands every instance of a job, read from its CreateTrainingJob request."""

    job_name: str
    instance_type: str
    """The first group's type (with instance preferences, the first preference's)."""
    instance_count: int
    hyperparameters: dict[str, str]
    """HyperParameters as sent: every value JSON-encoded (hyperparameters.json)."""
    environment: dict[str, str]
    channels: tuple[Channel, ...]
    checkpoint_local_path: str | None
    checkpoint_s3_uri: str | None
    max_run_seconds: int
    groups: tuple[InstanceGroup, ...] = ()
    """The instance groups, in the request's order; hosts are numbered algo-1... across them in that order."""
    tensorboard_local_path: str | None = None
    """TensorBoardOutputConfig.LocalPath: what SageMaker uploads to its S3OutputPath while the job runs."""
    mlflow: tuple[tuple[str, str], ...] = ()
    """MlflowConfig's members, as sent."""

    @classmethod
    def from_request(cls, request: dict[str, Any]) -> ContainerJob:
        algorithm_mode = request["AlgorithmSpecification"]["TrainingInputMode"]
        channels = tuple(
            Channel(name=item["ChannelName"], source=item["DataSource"]["S3DataSource"]["S3Uri"],
                    config=_channel_config(item, algorithm_mode),
                    instance_groups=tuple(item["DataSource"]["S3DataSource"].get("InstanceGroupNames", ())),
                    compression=item.get("CompressionType", "None"))
            for item in request.get("InputDataConfig", []))
        checkpoint = request.get("CheckpointConfig") or {}
        groups = _instance_groups(request["ResourceConfig"])
        tensorboard = request.get("TensorBoardOutputConfig") or {}
        return cls(job_name=request["TrainingJobName"], instance_type=groups[0].instance_type,
                   instance_count=sum(group.count for group in groups), groups=groups,
                   hyperparameters=dict(request["HyperParameters"]), environment=dict(request.get("Environment", {})),
                   channels=channels, checkpoint_local_path=checkpoint.get("LocalPath"),
                   checkpoint_s3_uri=checkpoint.get("S3Uri"),
                   max_run_seconds=request["StoppingCondition"]["MaxRuntimeInSeconds"],
                   tensorboard_local_path=tensorboard.get("LocalPath", TENSORBOARD_DEFAULT_PATH) if tensorboard
                   else None, mlflow=tuple((request.get("MlflowConfig") or {}).items()))

    @property
    def decoded_hyperparameters(self) -> dict[str, Any]:
        return decode_hyperparameters(self.hyperparameters)

    @property
    def region(self) -> str:
        return str(self.decoded_hyperparameters["sagemaker_region"])

    def input_data_config(self, group: str | None = None) -> dict[str, dict[str, str]]:
        """inputdataconfig.json: on a host of `group`, the channels that group gets."""
        return {channel.name: channel.config for channel in self.channels if group is None or channel.reaches(group)}

    def group_hosts(self) -> dict[str, list[str]]:
        """Group name -> its hosts, numbered across the groups in order."""
        hosts, first = {}, 1
        for group in self.groups:
            hosts[group.name] = [f"algo-{index}" for index in range(first, first + group.count)]
            first += group.count
        return hosts

    def group_of(self, host: str) -> InstanceGroup:
        hosts = self.group_hosts()
        return next(group for group in self.groups if host in hosts[group.name])


def _instance_groups(resources: dict[str, Any]) -> tuple[InstanceGroup, ...]:
    """The job's groups: InstanceGroups, else one homogeneousCluster of InstanceType (or, with InstancePreferences,
    of the first preference: what the emulator runs)."""
    if resources.get("InstanceGroups"):
        return tuple(InstanceGroup(item["InstanceGroupName"], item["InstanceType"], item["InstanceCount"])
                     for item in resources["InstanceGroups"])
    if resources.get("InstancePreferences"):
        first = resources["InstancePreferences"][0]
        return (InstanceGroup(GROUP_NAME, first["InstanceType"],
                              first.get("InstanceCount", resources.get("InstanceCount", 1))),)
    return (InstanceGroup(GROUP_NAME, resources["InstanceType"], resources["InstanceCount"]),)


def _channel_config(channel: dict[str, Any], algorithm_mode: str) -> dict[str, str]:
    """A channel as the platform describes it to the container (contract §3.3)."""
    config = {}
    if "ContentType" in channel:
        config["ContentType"] = channel["ContentType"]
    config.update({
        "TrainingInputMode": channel.get("InputMode", algorithm_mode),
        "S3DistributionType": channel["DataSource"]["S3DataSource"].get("S3DataDistributionType",
                                                                       "FullyReplicated"),
        "RecordWrapperType": channel.get("RecordWrapperType", "None"),
    })
    return config


def decode_hyperparameters(encoded: dict[str, str]) -> dict[str, Any]:
    """The toolkit's reading of hyperparameters.json: json.loads each value, the raw string on failure."""
    decoded = {}
    for key, value in encoded.items():
        try:
            decoded[key] = json.loads(value)
        except (TypeError, ValueError):
            decoded[key] = value
    return decoded


def resource_config(host: str, groups: list[tuple[InstanceGroup, list[str]]]) -> dict[str, Any]:
    """resourceconfig.json as SageMaker writes it (2024 format, contract §3.1): `hosts` sorted, each group's
    host list in whatever order the platform chose; the current group and type are the host's own."""
    current = next(group for group, hosts in groups if host in hosts)
    return {
        "current_host": host,
        "current_instance_type": current.instance_type,
        "current_group_name": current.name,
        "hosts": sorted(name for _, hosts in groups for name in hosts),
        "instance_groups": [{"instance_group_name": group.name, "instance_type": group.instance_type,
                             "hosts": list(hosts)} for group, hosts in groups],
        "network_interface_name": NETWORK_INTERFACE,
    }


def user_args(hyperparameters: dict[str, Any]) -> list[str]:
    """The toolkit's command-line arguments: sorted keys, `-k` for one-letter keys, dicts as k=v pairs,
    everything else `str(value)` (so booleans arrive as True/False), None as an empty string (§5)."""
    args: list[str] = []
    for key in sorted(hyperparameters):
        value = hyperparameters[key]
        args.append(f"-{key}" if len(key) == 1 else f"--{key}")
        if isinstance(value, dict):
            args.append(",".join(f"{k}={v}" for k, v in sorted(value.items())))
        else:
            args.append("" if value is None else str(value))
    return args


def env_value(value: Any) -> str:
    """The toolkit's encoding of environment values: strings as is, None empty, the rest compact sorted JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


CONTAINER_PATHS = "container-paths"
"""The run directory's folder for each host's container paths outside /opt/ml: `container-paths/<host>/<path>`."""
HOST_TMP = "host-tmp"
"""The run directory's folder for each host's /tmp while the run lasts: `host-tmp/<host>`."""


@dataclass(frozen=True)
class Host:
    """One emulated instance: its name and its /opt/ml root on this machine (`<run>/<host>`)."""

    name: str
    root: Path

    @property
    def home_dir(self) -> Path:
        """The container's home (/root, HOME): the job's ~/.netrc or ~/.aws/credentials land in the run."""
        return self.container_path_dir("/root")

    def container_path_dir(self, container_path: str) -> Path:
        """Where a container path outside /opt/ml lives for this host: `container-paths/<host>/<path>`."""
        return self.root.parent / CONTAINER_PATHS / self.name / container_path.lstrip("/")

    @property
    def tmp_dir(self) -> Path:
        """The container's /tmp: bound at /tmp in the host's namespace, removed when the run ends. Not under
        CONTAINER_PATHS, where a checkpoint path below /tmp is kept past the run."""
        return self.root.parent / HOST_TMP / self.name

    @property
    def code_dir(self) -> Path:
        return self.root / "code"

    @property
    def model_dir(self) -> Path:
        return self.root / "model"

    @property
    def input_dir(self) -> Path:
        return self.root / "input"

    @property
    def config_dir(self) -> Path:
        return self.root / "input" / "config"

    @property
    def data_dir(self) -> Path:
        return self.root / "input" / "data"

    @property
    def output_dir(self) -> Path:
        return self.root / "output"

    @property
    def checkpoint_dir(self) -> Path:
        return self.root / "checkpoints"


@dataclass(frozen=True)
class HostConfig:
    """What the platform hands one host before the container starts: its config files (resourceconfig.json,
    hyperparameters.json as written, inputdataconfig.json) and the job's name."""

    host: Host
    resource: dict[str, Any]
    hyperparameters: dict[str, str]
    channels: dict[str, Any]
    job_name: str


@dataclass(frozen=True)
class Processors:
    """What the toolkit counts on a host: the instance's GPUs and NeuronCores, and the CPUs it sees."""

    gpus: int
    cpus: int
    neurons: int = 0


def training_env(config: HostConfig, processors: Processors) -> dict[str, Any]:
    """The toolkit's Environment as SM_TRAINING_ENV shows it: every public property (37 in 5.1, `topology`
    included), from this host's config files."""
    host, resource, channels = config.host, config.resource, config.channels
    decoded = decode_hyperparameters(config.hyperparameters)
    user_hps = {k: v for k, v in decoded.items() if not k.startswith("sagemaker_") and k not in CORE_HYPERPARAMETERS}
    framework = {k: v for k, v in decoded.items() if k.startswith("sagemaker_") and k not in CORE_HYPERPARAMETERS}
    # sagemaker_training.environment.Environment: the instance-group properties, derived as it derives them
    groups = resource["instance_groups"]
    current = resource["current_group_name"]
    distributed = any(framework.get(flag) for flag in DISTRIBUTION_FLAGS)
    distribution_groups = framework.get("sagemaker_distribution_instance_groups", [current] if distributed else [])
    distribution_hosts = [name for group in groups if group["instance_group_name"] in distribution_groups
                          for name in group["hosts"]]
    master = (distribution_hosts or resource["hosts"])[0]
    program = decoded.get("sagemaker_program")
    return {
        "additional_framework_parameters": framework,
        "channel_input_dirs": {name: str(host.data_dir / name) for name in channels},
        "current_host": host.name,
        "current_instance_group": resource["current_group_name"],
        "current_instance_group_hosts": next((list(group["hosts"]) for group in groups
                                              if group["instance_group_name"] == current), []),
        "current_instance_type": resource["current_instance_type"],
        "distribution_hosts": distribution_hosts,
        "distribution_instance_groups": distribution_groups,
        "framework_module": PYTORCH_TRAINING_MODULE,
        "hosts": resource["hosts"],
        "hyperparameters": user_hps,
        "input_config_dir": str(host.config_dir),
        "input_data_config": channels,
        "input_dir": str(host.input_dir),
        "instance_groups": [group["instance_group_name"] for group in groups],
        "instance_groups_dict": {group["instance_group_name"]: group for group in groups},
        "is_hetero": len(groups) > 1,
        "is_master": host.name == master,
        "is_modelparallel_enabled": None,
        "is_smddpmprun_installed": False,
        "is_smddprun_installed": False,
        "job_name": config.job_name,
        "log_level": decoded.get("sagemaker_container_log_level", DEFAULT_LOG_LEVEL),
        "master_hostname": master,
        "model_dir": str(host.model_dir),
        "module_dir": str(decoded.get("sagemaker_submit_directory", host.code_dir)),
        "module_name": program[:-3] if isinstance(program, str) and program.endswith(".py") else str(program),
        "network_interface_name": resource["network_interface_name"],
        "num_cpus": processors.cpus,
        "num_gpus": processors.gpus,
        "num_neurons": processors.neurons,
        "output_data_dir": str(host.output_dir / "data"),
        "output_dir": str(host.output_dir),
        "output_intermediate_dir": str(host.output_dir / "intermediate"),
        "resource_config": resource,
        "topology": resource.get("topology", []),
        "user_entry_point": program,
    }


def sm_variables(env: dict[str, Any]) -> dict[str, str]:
    """`Environment.to_env_vars()`: the SM_* variables, in the toolkit's order (mpirun exports them in it)."""
    variables: dict[str, Any] = {
        "hosts": env["hosts"],
        "network_interface_name": env["network_interface_name"],
        "hps": env["hyperparameters"],
        "user_entry_point": env["user_entry_point"],
        "framework_params": env["additional_framework_parameters"],
        "resource_config": env["resource_config"],
        "input_data_config": env["input_data_config"],
        "output_data_dir": env["output_data_dir"],
        "channels": sorted(env["channel_input_dirs"]),
        "current_host": env["current_host"],
        "current_instance_type": env["current_instance_type"],
        "current_instance_group": env["current_instance_group"],
        "current_instance_group_hosts": env["current_instance_group_hosts"],
        "instance_groups": env["instance_groups"],
        "instance_groups_dict": env["instance_groups_dict"],
        "distribution_instance_groups": env["distribution_instance_groups"],
        "is_hetero": env["is_hetero"],
        "module_name": env["module_name"],
        "log_level": env["log_level"],
        "framework_module": env["framework_module"],
        "input_dir": env["input_dir"],
        "input_config_dir": env["input_config_dir"],
        "output_dir": env["output_dir"],
        "num_cpus": env["num_cpus"],
        "num_gpus": env["num_gpus"],
        "num_neurons": env["num_neurons"],
        "model_dir": env["model_dir"],
        "module_dir": env["module_dir"],
        "training_env": env,
        "user_args": user_args(env["hyperparameters"]),
        "output_intermediate_dir": env["output_intermediate_dir"],
    }
    if env["topology"]:
        variables["topology"] = env["topology"]
    variables.update({f"channel_{name}": path for name, path in env["channel_input_dirs"].items()})
    variables.update({f"hp_{name}": value for name, value in env["hyperparameters"].items()})
    return {f"SM_{key.upper()}": env_value(value) for key, value in variables.items()}


def platform_variables(job_name: str, region: str) -> dict[str, str]:
    """What SageMaker sets in the container beside the job's Environment: the job's name, its ARN (this emulator's
    has account 000000000000) and its region. Never credentials: the container's come from the job's role."""
    return {TRAINING_JOB_NAME: job_name,
            TRAINING_JOB_ARN: f"arn:aws:sagemaker:{region}:000000000000:training-job/{job_name}",
            AWS_REGION: region}


def framework_variables(env: dict[str, Any], region: str, torch_version: str | None) -> dict[str, str]:
    """What the toolkit (CURRENT_HOST, SAGEMAKER_*), the PyTorch toolkit (MASTER_*, NCCL_*, the torch version)
    and the DLC (SAGEMAKER_TRAINING_MODULE) put into the environment before the launcher starts."""
    variables = {
        "CURRENT_HOST": env["current_host"],
        "SAGEMAKER_JOB_NAME": env["job_name"],
        "SAGEMAKER_REGION": region,
        "SAGEMAKER_TRAINING_MODULE": PYTORCH_TRAINING_MODULE,
        MASTER_ADDR: env["master_hostname"],
        "NCCL_SOCKET_IFNAME": env["network_interface_name"],
        **PYTORCH_TOOLKIT_VALUES,
    }
    if torch_version:
        variables["SM_DLC_TORCH_VERSION"] = torch_version
    return variables
