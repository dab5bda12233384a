"""The training toolkit's launchers, built as the toolkit builds them, before anything is adapted to this machine.

Mirrors sagemaker-training 5.1.4 (`runner.py`, `process.py`, `mpi.py`, `smdataparallel.py`,
`torch_distributed.py`, `_entry_point_type.py`) and the PyTorch toolkit's runner choice (`training.py`):
which runner a host uses, how many processes it starts, how the entry point is typed and refused, and the
exact argument list. `launch.py` adapts these lists to one machine; `tests/referees/toolkit` compares them with the
toolkit's own, built on the same config files.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from orchestrator.contract import (SMDDP_ENABLED_FLAG, SMDDP_SERVER_ADDR, SMDDP_SERVER_PORT, SMDDP_USE_HOMOGENEOUS,
                                   SMDDP_USE_SINGLENODE)
from orchestrator.emulator.instances.container import user_args

# The EFA instance lists of sagemaker_training/__init__.py (5.1.4): NCCL over EFA, and EFA's RDMA.
EFA_NCCL_INSTANCES = frozenset({
    "ml.g4dn.8xlarge", "ml.g4dn.12xlarge", "ml.g5.48xlarge", "ml.p3dn.24xlarge", "ml.p4d.24xlarge",
    "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.trn1.32xlarge", "ml.p6e-gb200.36xlarge",
})
EFA_RDMA_INSTANCES = frozenset({
    "ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.trn1.32xlarge",
    "ml.p6e-gb200.36xlarge",
})
SMDDP_SERVER_PORT_NUMBER = 7592
TORCHRUN_MASTER_PORT = "7777"
# Stands for the path of the toolkit's gethostname extension (`inspect.getfile(gethostname)`) that mpirun
# exports as LD_PRELOAD; launch.py puts this machine's shim there.
GETHOSTNAME_LIBRARY = "<gethostname library>"

MPI_PROCESSES_PER_HOST = "sagemaker_mpi_num_of_processes_per_host"
MPI_NUM_PROCESSES = "sagemaker_mpi_num_processes"
MPI_CUSTOM_OPTIONS = "sagemaker_mpi_custom_mpi_options"
SMDDP_CUSTOM_OPTIONS = "sagemaker_distributed_dataparallel_custom_mpi_options"

_SAFE_ENTRY_POINT = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._+-]*(/[A-Za-z0-9._+-]+)*$")
_SAFE_CHARACTER = re.compile(r"[A-Za-z0-9._+/-]")
_CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


class RunnerType(str, Enum):
    process = "Process"
    mpi = "MPI"
    smdataparallel = "SMDataParallel"
    torch_distributed = "TorchDistributed"


class EntryPointType(str, Enum):
    python_package = "PYTHON_PACKAGE"
    python_program = "PYTHON_PROGRAM"
    command = "COMMAND"


class ToolkitRefusal(Exception):
    """What the toolkit raises as a ClientError before the script runs; the message is the toolkit's."""


@dataclass(frozen=True)
class ToolkitCommand:
    """One host's launcher as the toolkit builds it: the argument list and the variables it sets first."""

    runner: RunnerType
    argv: list[str]
    processes_per_host: int
    environment: dict[str, str] = field(default_factory=dict)
    """What the runner puts into os.environ before it starts (torch_distributed's EFA and NCCL settings)."""
    script_index: int = 0
    """Where the script's part of `argv` begins (after mpirun's options)."""


@dataclass(frozen=True)
class LauncherHosts:
    """Where a distributed launcher runs its ranks: the distribution's hosts (in the platform's order), the
    processes on each, the master, the network interface and the instance type (which picks EFA settings)."""

    hosts: list[str]
    per_host: int
    master: str
    interface: str
    instance_type: str


@dataclass(frozen=True)
class LocalChoices:
    """What this machine decides about a host's launcher: the interpreter, the code directory's top-level files
    (which type the entry point), whether smddprun is installed, and `smtrain local --processes-per-host`."""

    python: str
    code_files: frozenset[str]
    smddprun: bool = False
    processes_override: int | None = None


def entry_point_type(code_files: Iterable[str], entry_point: str) -> EntryPointType:
    """`_entry_point_type.get`: `.sh` is a command, a top-level setup.py makes a package, `.py` a program."""
    if entry_point.endswith(".sh"):
        return EntryPointType.command
    if "setup.py" in code_files:
        return EntryPointType.python_package
    if entry_point.endswith(".py"):
        return EntryPointType.python_program
    return EntryPointType.command


def validate_entry_point(entry_point: str) -> None:
    """`process.validate_entry_point`: a plain relative path inside the code directory, or a ClientError."""
    if not entry_point:
        raise ToolkitRefusal("The training entry point name is empty.")
    if not _SAFE_ENTRY_POINT.match(entry_point):
        unsupported = sorted({char for char in entry_point if not _SAFE_CHARACTER.match(char)})
        if unsupported:
            detail = "the character(s) " + ", ".join(repr(char) for char in unsupported)
        elif entry_point.startswith("-"):
            detail = "a leading '-', which is read as a command-line option"
        elif entry_point.startswith("/"):
            detail = "a leading '/', which makes it an absolute path"
        else:
            detail = "an unsupported character at the start of the name"
        raise ToolkitRefusal(f"The training entry point {entry_point!r} cannot be used because it contains "
                             f"{detail}.")
    if any(segment in (".", "..") for segment in entry_point.split("/")):
        raise ToolkitRefusal(f"The training entry point {entry_point!r} cannot be used because it contains '.' "
                             "or '..' path segments.")


def check_entry_point(entry_point: str, kind: EntryPointType, runner: RunnerType) -> None:
    """The toolkit's refusals before anything runs: an unsafe name; anything but a .py script under torchrun."""
    validate_entry_point(entry_point)
    if runner is RunnerType.torch_distributed and kind is EntryPointType.python_package:
        raise ToolkitRefusal("Python packages are not supported for torch_distributed. Please use a python "
                             "script as the entry-point")
    if runner is RunnerType.torch_distributed and kind is not EntryPointType.python_program:
        raise ToolkitRefusal("Unsupported entry point type for torch_distributed")


def runner_type(framework_params: Mapping[str, Any], in_distribution_group: bool) -> RunnerType:
    """The PyTorch toolkit's choice (training.py), first match wins, only in a distribution group."""
    if not in_distribution_group:
        return RunnerType.process
    if framework_params.get("sagemaker_mpi_enabled"):
        return RunnerType.mpi
    if framework_params.get("sagemaker_pytorch_ddp_enabled"):
        return RunnerType.smdataparallel
    if framework_params.get("sagemaker_torch_distributed_enabled"):
        return RunnerType.torch_distributed
    if framework_params.get(SMDDP_ENABLED_FLAG):
        return RunnerType.smdataparallel
    return RunnerType.process


def processes_per_host(framework_params: Mapping[str, Any], num_gpus: int, num_neurons: int) -> int:
    """`runner._get_by_runner_type`: the hp, else one per GPU, else one per NeuronCore, else 1."""
    default = num_gpus if num_gpus > 0 else num_neurons if num_neurons > 0 else 1
    return int(framework_params.get(MPI_PROCESSES_PER_HOST) or default)


def parse_custom_mpi_options(options: str) -> tuple[str, list[str]]:
    """`mpi._parse_custom_mpi_options`: argparse takes `--NCCL_DEBUG X` (or `=X`, or a prefix of the flag) out
    of the string and leaves the rest, in order, to be appended verbatim.

    Raises:
        ToolkitRefusal: where the toolkit's argparse would stop the job (`--NCCL_DEBUG` without a value, `-h`).
    """
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--NCCL_DEBUG", default="INFO", type=str)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            known, rest = parser.parse_known_args(options.split())
    except (argparse.ArgumentError, SystemExit) as error:
        raise ToolkitRefusal(f"custom_mpi_options {options!r} stop the toolkit's option parser"
                             + (f": {error}" if isinstance(error, argparse.ArgumentError) else "")) from None
    return known.NCCL_DEBUG, rest


def script_command(python: str, entry_point: str, kind: EntryPointType, args: list[str],
                   launcher_python: list[str] | None = None) -> list[str]:
    """`ProcessRunner._create_command`: `python -- x.py`, `python -m pkg`, or `/bin/sh -c "./x.sh <quoted>"`.

    Args:
        launcher_python: the interpreter part when a launcher runs the script (`python -m mpi4py`), which
            takes no `--`.
    """
    validate_entry_point(entry_point)
    python_command = launcher_python or [python, "--"]
    if kind is EntryPointType.python_package:
        return [*(launcher_python or [python]), "-m", re.sub(r"\.py$", "", entry_point), *args]
    if kind is EntryPointType.python_program:
        return [*python_command, entry_point, *args]
    quoted = " ".join(shlex.quote(arg) for arg in args)
    return ["/bin/sh", "-c", f"./{shlex.quote(entry_point)} {quoted}"]


def mpi_command(cluster: LauncherHosts, *, num_processes: int | None, custom_mpi_options: str,
                exported: list[str], environ: Mapping[str, str]) -> list[str]:
    """`mpi.MasterRunner._create_command` up to the script (no model parallelism, which needs SageMaker's
    smdistributed)."""
    hosts, per_host, interface, instance_type = (cluster.hosts, cluster.per_host, cluster.interface,
                                                 cluster.instance_type)
    host_list = hosts if per_host == 1 else [f"{host}:{per_host}" for host in hosts]
    nccl_debug, extra = parse_custom_mpi_options(custom_mpi_options)
    command = [
        "mpirun", "--host", ",".join(host_list), "-np", str(num_processes or per_host * len(hosts)),
        "--allow-run-as-root", "--display-map", "--tag-output",
        "-mca", "btl_tcp_if_include", interface, "-mca", "oob_tcp_if_include", interface,
        "-mca", "plm_rsh_no_tree_spawn", "1", "-bind-to", "none", "-map-by", "slot",
        "-mca", "pml", "ob1", "-mca", "btl", "^openib", "-mca", "orte_abort_on_non_zero_status", "1",
        "-mca", "btl_vader_single_copy_mechanism", "none",
        "-x", "NCCL_MIN_NRINGS=4", "-x", f"NCCL_SOCKET_IFNAME={interface}", "-x", f"NCCL_DEBUG={nccl_debug}",
        "-x", "LD_LIBRARY_PATH", "-x", "PATH", "-x", f"LD_PRELOAD={GETHOSTNAME_LIBRARY}",
        *extra,
    ]
    if instance_type in EFA_NCCL_INSTANCES:
        command += ["-x", "FI_PROVIDER=efa", "-x", "NCCL_PROTO=simple"]
    if instance_type in EFA_RDMA_INSTANCES:
        command += ["-x", "FI_EFA_USE_DEVICE_RDMA=1"]
    command += [item for name in _CREDENTIALS if name in environ for item in ("-x", name)]
    return command + [item for name in exported for item in ("-x", name)]


def smddp_command(cluster: LauncherHosts, *, custom_mpi_options: str, smddprun: bool) -> list[str]:
    """`smdataparallel.SMDataParallelRunner`: `_create_command` + `_get_mpirun_command`, up to the script."""
    hosts, per_host, master, interface, instance_type = (cluster.hosts, cluster.per_host, cluster.master,
                                                         cluster.interface, cluster.instance_type)
    multi_node = len(hosts) > 1
    host_list = [f"{host}:{per_host}" for host in hosts] if multi_node else hosts
    nccl_debug, extra = parse_custom_mpi_options(custom_mpi_options)
    command = [
        "mpirun", "--host", ",".join(host_list), "-np", str(per_host * len(hosts)),
        "--allow-run-as-root", "--tag-output", "--oversubscribe",
        "-mca", "btl_tcp_if_include", interface, "-mca", "oob_tcp_if_include", interface,
        "-mca", "plm_rsh_no_tree_spawn", "1", "-mca", "pml", "ob1", "-mca", "btl", "^openib",
        "-mca", "orte_abort_on_non_zero_status", "1", "-mca", "btl_vader_single_copy_mechanism", "none",
        "-mca", "plm_rsh_num_concurrent", str(len(hosts)),
        "-x", f"NCCL_SOCKET_IFNAME={interface}", "-x", f"NCCL_DEBUG={nccl_debug}",
        "-x", "LD_LIBRARY_PATH", "-x", "PATH",
        "-x", f"{SMDDP_USE_HOMOGENEOUS if multi_node else SMDDP_USE_SINGLENODE}=1",
        "-x", "FI_PROVIDER=efa", "-x", "RDMAV_FORK_SAFE=1", "-x", f"LD_PRELOAD={GETHOSTNAME_LIBRARY}",
        *extra,
    ]
    if instance_type in EFA_NCCL_INSTANCES:
        command += ["-x", "NCCL_PROTO=simple"]
    if instance_type in EFA_RDMA_INSTANCES:
        command += ["-x", "FI_EFA_USE_DEVICE_RDMA=1"]
    if multi_node:
        command += ["-x", f"{SMDDP_SERVER_ADDR}={master}",
                    "-x", f"{SMDDP_SERVER_PORT}={SMDDP_SERVER_PORT_NUMBER}",
                    "-x", f"SAGEMAKER_INSTANCE_TYPE={instance_type}"]
    if smddprun:
        command.append("smddprun")
    return command


def torchrun_command(entry_point: str, kind: EntryPointType, args: list[str], cluster: LauncherHosts,
                     current: str) -> ToolkitCommand:
    """`torch_distributed.TorchDistributedRunner`: `_setup` (environment) and `_create_command`."""
    hosts, per_host, master, interface, instance_type = (cluster.hosts, cluster.per_host, cluster.master,
                                                         cluster.interface, cluster.instance_type)
    check_entry_point(entry_point, kind, RunnerType.torch_distributed)
    environment = {}
    if instance_type in EFA_NCCL_INSTANCES:
        environment["FI_PROVIDER"] = "efa"
    if instance_type in EFA_RDMA_INSTANCES:
        environment.update({"FI_EFA_USE_DEVICE_RDMA": "1", "RDMAV_FORK_SAFE": "1"})
    environment.update({"NCCL_SOCKET_IFNAME": interface, "NCCL_PROTO": "simple"})
    argv = ["torchrun", "--nnodes", str(len(hosts)), "--nproc_per_node", str(per_host)]
    if len(hosts) > 1:
        argv += ["--master_addr", master, "--master_port", TORCHRUN_MASTER_PORT,
                 "--node_rank", str(hosts.index(current))]
    return ToolkitCommand(RunnerType.torch_distributed, [*argv, entry_point, *args], per_host, environment)


def toolkit_command(training_env: Mapping[str, Any], exported: list[str], environ: Mapping[str, str],
                    choices: LocalChoices) -> ToolkitCommand | None:
    """What the toolkit starts on one host, from that host's Environment (SM_TRAINING_ENV's keys); None on an
    MPI worker, which only serves the master's mpirun.

    Args:
        exported: the names the toolkit passes to mpirun with `-x` (its SM_* variables, then PYTHONPATH).
        environ: the host's environment (mpirun forwards AWS credentials found there).

    Raises:
        ToolkitRefusal: the toolkit's ClientError (an unsafe entry point name, a package under torchrun).
    """
    framework = training_env["additional_framework_parameters"]
    in_group = training_env["current_instance_group"] in training_env["distribution_instance_groups"]
    runner = runner_type(framework, in_group)
    entry_point = training_env["user_entry_point"]
    kind = entry_point_type(choices.code_files, entry_point)
    args = user_args(training_env["hyperparameters"])
    per_host = choices.processes_override or processes_per_host(framework, training_env["num_gpus"],
                                                                 training_env["num_neurons"])
    python = choices.python
    cluster = LauncherHosts(hosts=list(training_env["distribution_hosts"]), per_host=per_host,
                            master=training_env["master_hostname"],
                            interface=training_env["network_interface_name"],
                            instance_type=training_env["current_instance_type"])
    if runner is RunnerType.process:
        return ToolkitCommand(runner, script_command(python, entry_point, kind, args), per_host)
    if runner is RunnerType.torch_distributed:
        return torchrun_command(entry_point, kind, args, cluster, training_env["current_host"])
    if not training_env["is_master"]:
        return None
    if runner is RunnerType.mpi:
        launcher = mpi_command(cluster, num_processes=framework.get(MPI_NUM_PROCESSES),
                               custom_mpi_options=framework.get(MPI_CUSTOM_OPTIONS) or "", exported=exported,
                               environ=environ)
    else:  # SMDataParallel takes the instance type from its own hyperparameter first
        cluster = replace(cluster, instance_type=framework.get("sagemaker_instance_type")
                          or cluster.instance_type)
        launcher = smddp_command(cluster, custom_mpi_options=framework.get(SMDDP_CUSTOM_OPTIONS) or "",
                                 smddprun=choices.smddprun)
    script = script_command(python, entry_point, kind, args, [python, "-m", "mpi4py"])
    return ToolkitCommand(runner, launcher + script, per_host, script_index=len(launcher))
