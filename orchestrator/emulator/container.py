"""What the SageMaker training container gives a script, as pure functions (sagemaker-contract.md §3-6).

Two halves: what the SDK v2 sends (`sdk_hyperparameters`, the JSON-encoded HyperParameters of the request,
checked against the real SDK's captured request by the test suite) and what the training toolkit derives from
it on each host (`resource_config`, `training_env`, `toolkit_environment`, `user_args`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.contract import DEFAULT_MASTER_PORT, SMDDP_ENABLED_FLAG
from orchestrator.spec.model import JobSpec, Mode

GROUP_NAME = "homogeneousCluster"
NETWORK_INTERFACE = "eth0"
PYTORCH_TRAINING_MODULE = "sagemaker_pytorch_container.training:main"
CONTAINER_LOG_LEVEL = 20
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


def distribution_hyperparameters(spec: JobSpec) -> dict[str, Any]:
    """The mode flags the SDK v2 injects, decoded (sdk-facts.md §3; pytorchddp is rewritten into SMDDP, §4)."""
    dist = spec.distribution
    if dist.mode is Mode.mpi:
        flags: dict[str, Any] = {"sagemaker_mpi_enabled": True}
        if dist.processes_per_host:
            flags["sagemaker_mpi_num_of_processes_per_host"] = dist.processes_per_host
        flags["sagemaker_mpi_custom_mpi_options"] = dist.custom_mpi_options
        return flags
    if dist.mode in (Mode.pytorchddp, Mode.smddp):
        return {SMDDP_ENABLED_FLAG: True, "sagemaker_instance_type": spec.instance.type,
                "sagemaker_distributed_dataparallel_custom_mpi_options": dist.custom_mpi_options}
    if dist.mode is Mode.torch_distributed:
        return {"sagemaker_torch_distributed_enabled": True, "sagemaker_instance_type": spec.instance.type}
    return {}


def sdk_hyperparameters(spec: JobSpec, job_name: str, region: str, submit_directory: str) -> dict[str, str]:
    """The request's HyperParameters: every value JSON-encoded, as SDK v2 sends them (contract §3.2)."""
    decoded: dict[str, Any] = dict(spec.hyperparameters)
    decoded.update({
        "sagemaker_submit_directory": submit_directory,
        "sagemaker_program": spec.entry_point,
        "sagemaker_container_log_level": CONTAINER_LOG_LEVEL,
        "sagemaker_job_name": job_name,
        "sagemaker_region": region,
    })
    decoded.update(distribution_hyperparameters(spec))
    return {key: json.dumps(value) for key, value in decoded.items()}


def decode_hyperparameters(encoded: dict[str, str]) -> dict[str, Any]:
    """The toolkit's reading of hyperparameters.json: json.loads each value, the raw string on failure."""
    decoded = {}
    for key, value in encoded.items():
        try:
            decoded[key] = json.loads(value)
        except (TypeError, ValueError):
            decoded[key] = value
    return decoded


def resource_config(host: str, hosts: list[str], group_hosts: list[str], instance_type: str) -> dict[str, Any]:
    """resourceconfig.json as SageMaker writes it (2024 format, contract §3.1); `hosts` sorted, the group's
    host list in whatever order the platform chose."""
    return {
        "current_host": host,
        "current_instance_type": instance_type,
        "current_group_name": GROUP_NAME,
        "hosts": sorted(hosts),
        "instance_groups": [{"instance_group_name": GROUP_NAME, "instance_type": instance_type,
                             "hosts": list(group_hosts)}],
        "network_interface_name": NETWORK_INTERFACE,
    }


def input_data_config(channels: list[str]) -> dict[str, dict[str, str]]:
    return {name: {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"}
            for name in channels}


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


@dataclass(frozen=True)
class Host:
    """One emulated instance: its name and its /opt/ml root on this machine."""

    name: str
    root: Path

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


def training_env(host: Host, resource: dict[str, Any], hyperparameters: dict[str, str],
                 channels: dict[str, Any], job_name: str, num_gpus: int, num_cpus: int) -> dict[str, Any]:
    """The toolkit's Environment as SM_TRAINING_ENV shows it (the 36 keys of a 2023-2024 job log)."""
    decoded = decode_hyperparameters(hyperparameters)
    user_hps = {k: v for k, v in decoded.items() if not k.startswith("sagemaker_") and k not in CORE_HYPERPARAMETERS}
    framework = {k: v for k, v in decoded.items() if k.startswith("sagemaker_") and k not in CORE_HYPERPARAMETERS}
    group = resource["instance_groups"][0]
    distributed = any(framework.get(flag) for flag in DISTRIBUTION_FLAGS)
    distribution_groups = framework.get("sagemaker_distribution_instance_groups",
                                        [resource["current_group_name"]] if distributed else [])
    distribution_hosts = list(group["hosts"]) if distribution_groups else []
    master = (distribution_hosts or resource["hosts"])[0]
    program = decoded.get("sagemaker_program")
    return {
        "additional_framework_parameters": framework,
        "channel_input_dirs": {name: str(host.data_dir / name) for name in channels},
        "current_host": host.name,
        "current_instance_group": resource["current_group_name"],
        "current_instance_group_hosts": list(group["hosts"]),
        "current_instance_type": resource["current_instance_type"],
        "distribution_hosts": distribution_hosts,
        "distribution_instance_groups": distribution_groups,
        "framework_module": PYTORCH_TRAINING_MODULE,
        "hosts": resource["hosts"],
        "hyperparameters": user_hps,
        "input_config_dir": str(host.config_dir),
        "input_data_config": channels,
        "input_dir": str(host.input_dir),
        "instance_groups": [group["instance_group_name"]],
        "instance_groups_dict": {group["instance_group_name"]: group},
        "is_hetero": False,
        "is_master": host.name == master,
        "is_modelparallel_enabled": None,
        "is_smddpmprun_installed": False,
        "is_smddprun_installed": False,
        "job_name": job_name,
        "log_level": decoded.get("sagemaker_container_log_level", CONTAINER_LOG_LEVEL),
        "master_hostname": master,
        "model_dir": str(host.model_dir),
        "module_dir": decoded.get("sagemaker_submit_directory"),
        "module_name": program[:-3] if isinstance(program, str) and program.endswith(".py") else program,
        "network_interface_name": resource["network_interface_name"],
        "num_cpus": num_cpus,
        "num_gpus": num_gpus,
        "num_neurons": 0,
        "output_data_dir": str(host.output_dir / "data"),
        "output_dir": str(host.output_dir),
        "output_intermediate_dir": str(host.output_dir / "intermediate"),
        "resource_config": resource,
        "user_entry_point": program,
    }


def toolkit_environment(env: dict[str, Any], region: str, torch_version: str | None) -> dict[str, str]:
    """Every variable the training toolkit and the PyTorch toolkit set for the user process (contract §4)."""
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
    variables.update({f"channel_{name}": path for name, path in env["channel_input_dirs"].items()})
    variables.update({f"hp_{name}": value for name, value in env["hyperparameters"].items()})
    result = {f"SM_{key.upper()}": env_value(value) for key, value in variables.items()}
    result.update({
        "CURRENT_HOST": env["current_host"],
        "SAGEMAKER_JOB_NAME": env["job_name"],
        "SAGEMAKER_REGION": region,
        "SAGEMAKER_TRAINING_MODULE": PYTORCH_TRAINING_MODULE,
        "TRAINING_JOB_NAME": env["job_name"],
        "MASTER_ADDR": env["master_hostname"],
        "MASTER_PORT": str(DEFAULT_MASTER_PORT),
        "NCCL_SOCKET_IFNAME": env["network_interface_name"],
        "NCCL_IB_DISABLE": "1",
        "NCCL_DEBUG": "WARN",
    })
    if torch_version:
        result["SM_DLC_TORCH_VERSION"] = torch_version
    return result
