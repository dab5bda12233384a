"""Who this process is in the job, read from whatever launched it. Pure over a mapping, standard library only.

`detect(environ)` tries the launchers in this order and takes the first whose variables are present:

1. **torchrun** (``torch_distributed`` mode, or any torchrun launch): ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
   ``LOCAL_WORLD_SIZE`` are required once ``RANK`` is set; the node rank is ``GROUP_RANK`` (``rank //
   LOCAL_WORLD_SIZE`` when absent). Skipped when Open MPI's variables are present: see 2.
2. **Open MPI** (``mpi``, ``pytorchddp`` and ``smddp`` modes launch through mpirun): ``OMPI_COMM_WORLD_RANK``,
   ``_SIZE``, ``_LOCAL_RANK``, ``_LOCAL_SIZE``; node rank = rank // local size (SageMaker maps ranks by slot).
   ``SM_CURRENT_HOST`` is never used here: mpirun exports the master's value to every rank. ``smddprun`` may add
   ``RANK``/``WORLD_SIZE``/``LOCAL_RANK`` under mpirun; when it does they must agree with Open MPI's values,
   which is why Open MPI is checked before the torchrun names whenever both are present.
3. **Plain SageMaker** (mode ``none``): one process per host; rank = ``SM_HOSTS.index(SM_CURRENT_HOST)``,
   world size = ``len(SM_HOSTS)``. torch serves its rendezvous from rank 0 at ``MASTER_ADDR``, so the master host
   (see below) always gets rank 0; with the toolkit's own master (``hosts[0]`` in this mode) that changes nothing.
4. **Nothing set**: a single process (rank 0, world size 1).

Master address: ``MASTER_ADDR`` when set (the PyTorch toolkit and torchrun set it), else the SageMaker master host:
``SM_TRAINING_ENV["master_hostname"]``, else ``SM_TRAINING_ENV["distribution_hosts"][0]``, else for mpirun
launches the first host of the current instance group in ``SM_RESOURCE_CONFIG`` (group order, not sorted, so not
always algo-1), else ``SM_HOSTS[0]``; ``127.0.0.1`` outside SageMaker. Port: ``MASTER_PORT``, default 7777.

Malformed values raise `DistEnvError` (a ``ValueError``) naming the variable and its value.

The names below mirror ``orchestrator/contract.py``; ``tests/contract`` checks that both sides agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

# Paths inside the container, rooted at /opt/ml or at $SAGEMAKER_BASE_DIR (the local emulator sets it).
OPT_ML = "/opt/ml"
SAGEMAKER_BASE_DIR = "SAGEMAKER_BASE_DIR"
DEFAULT_CHECKPOINT_DIR = "/opt/ml/checkpoints"

# Set by the SageMaker training toolkit.
SM_HOSTS = "SM_HOSTS"
SM_CURRENT_HOST = "SM_CURRENT_HOST"
SM_MODEL_DIR = "SM_MODEL_DIR"
SM_OUTPUT_DIR = "SM_OUTPUT_DIR"
SM_OUTPUT_DATA_DIR = "SM_OUTPUT_DATA_DIR"
SM_CHANNEL_PREFIX = "SM_CHANNEL_"
SM_NUM_GPUS = "SM_NUM_GPUS"
SM_RESOURCE_CONFIG = "SM_RESOURCE_CONFIG"
SM_TRAINING_ENV = "SM_TRAINING_ENV"
SM_FRAMEWORK_PARAMS = "SM_FRAMEWORK_PARAMS"
SMDDP_ENABLED_FLAG = "sagemaker_distributed_dataparallel_enabled"

# Rendezvous: MASTER_* from the PyTorch toolkit or torchrun, the rest from torchrun.
MASTER_ADDR = "MASTER_ADDR"
MASTER_PORT = "MASTER_PORT"
DEFAULT_MASTER_PORT = 7777
TORCHRUN_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK")
RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK = TORCHRUN_VARS

OMPI_VARS = (
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
)
OMPI_RANK, OMPI_SIZE, OMPI_LOCAL_RANK, OMPI_LOCAL_SIZE = OMPI_VARS

# Files the entrypoints write.
METRICS_JSONL = "metrics.jsonl"
MODEL_STATE_FILE = "model.pt"
MODEL_METADATA_FILE = "model.json"
FAILURE_FILE = "failure"

LOOPBACK = "127.0.0.1"


class DistEnvError(ValueError):
    """A launcher variable is missing, malformed or inconsistent; the message names it and its value."""


@dataclass(frozen=True)
class DistEnv:
    """This process's place in the job.

    Attributes:
        launcher: ``torchrun``, ``mpirun``, ``sagemaker`` (one process per host) or ``single``.
        backend_hint: ``smddp`` when SageMaker's smddp mode launched the job, else None.
    """

    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    node_rank: int
    master_addr: str
    master_port: int
    launcher: str
    backend_hint: str | None = None

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1


@dataclass(frozen=True)
class ContainerPaths:
    """Where SageMaker expects the script's outputs, resolved like the toolkit does."""

    model_dir: Path
    output_dir: Path
    output_data_dir: Path | None
    checkpoint_dir: Path


def detect(environ: Mapping[str, str]) -> DistEnv:
    """Reads rank, world size and rendezvous address from the launcher's variables (order in the module doc).

    Raises:
        DistEnvError: a variable is missing, malformed or inconsistent with another.
    """
    hint = _backend_hint(environ)
    if OMPI_RANK in environ:
        return _from_open_mpi(environ, hint)
    if RANK in environ:
        return _from_torchrun(environ, hint)
    if SM_HOSTS in environ:
        return _from_sagemaker_hosts(environ, hint)
    return DistEnv(0, 0, 1, 1, 0, _master_addr(environ, None), _master_port(environ), "single", hint)


def export_torch_env(dist_env: DistEnv, environ: MutableMapping[str, str]) -> None:
    """Writes torch's names into `environ` so that ``init_process_group(init_method="env://")`` finds them."""
    environ[RANK] = str(dist_env.rank)
    environ[WORLD_SIZE] = str(dist_env.world_size)
    environ[LOCAL_RANK] = str(dist_env.local_rank)
    environ[MASTER_ADDR] = dist_env.master_addr
    environ[MASTER_PORT] = str(dist_env.master_port)


def container_paths(environ: Mapping[str, str]) -> ContainerPaths:
    """The SM_* output directories, falling back to $SAGEMAKER_BASE_DIR (or /opt/ml) like the toolkit."""
    base = Path(environ.get(SAGEMAKER_BASE_DIR) or OPT_ML)
    output_data = environ.get(SM_OUTPUT_DATA_DIR)
    checkpoints = base / "checkpoints" if environ.get(SAGEMAKER_BASE_DIR) else Path(DEFAULT_CHECKPOINT_DIR)
    return ContainerPaths(
        model_dir=Path(environ.get(SM_MODEL_DIR) or base / "model"),
        output_dir=Path(environ.get(SM_OUTPUT_DIR) or base / "output"),
        output_data_dir=Path(output_data) if output_data else None,
        checkpoint_dir=checkpoints,
    )


def _from_torchrun(environ: Mapping[str, str], hint: str | None) -> DistEnv:
    missing = [name for name in (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE) if name not in environ]
    if missing:
        raise DistEnvError(f"RANK={environ[RANK]!r} is set but {', '.join(missing)} is not; a torchrun-style launch "
                           f"sets RANK, LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE together")
    world_size = _int(environ, WORLD_SIZE, minimum=1)
    rank = _below(environ, RANK, world_size, WORLD_SIZE)
    local_world_size = _int(environ, LOCAL_WORLD_SIZE, minimum=1)
    local_rank = _below(environ, LOCAL_RANK, local_world_size, LOCAL_WORLD_SIZE)
    node_rank = _int(environ, GROUP_RANK, minimum=0) if GROUP_RANK in environ else rank // local_world_size
    return DistEnv(rank, local_rank, world_size, local_world_size, node_rank,
                   _master_addr(environ, None), _master_port(environ), "torchrun", hint)


def _from_open_mpi(environ: Mapping[str, str], hint: str | None) -> DistEnv:
    missing = [name for name in OMPI_VARS if name not in environ]
    if missing:
        raise DistEnvError(f"{OMPI_RANK}={environ[OMPI_RANK]!r} is set but {', '.join(missing)} is not")
    world_size = _int(environ, OMPI_SIZE, minimum=1)
    rank = _below(environ, OMPI_RANK, world_size, OMPI_SIZE)
    local_size = _int(environ, OMPI_LOCAL_SIZE, minimum=1)
    local_rank = _below(environ, OMPI_LOCAL_RANK, local_size, OMPI_LOCAL_SIZE)
    for torch_name, value, ompi_name in ((RANK, rank, OMPI_RANK), (WORLD_SIZE, world_size, OMPI_SIZE),
                                         (LOCAL_RANK, local_rank, OMPI_LOCAL_RANK)):
        if torch_name in environ and environ[torch_name] != str(value):
            raise DistEnvError(f"{torch_name}={environ[torch_name]!r} disagrees with {ompi_name}={value}")
    return DistEnv(rank, local_rank, world_size, local_size, rank // local_size,
                   _master_addr(environ, _sagemaker_master_host(environ, launched_by_mpirun=True)),
                   _master_port(environ), "mpirun", hint)


def _from_sagemaker_hosts(environ: Mapping[str, str], hint: str | None) -> DistEnv:
    hosts = _host_list(environ, SM_HOSTS)
    if SM_CURRENT_HOST not in environ:
        raise DistEnvError(f"{SM_HOSTS}={environ[SM_HOSTS]!r} is set but {SM_CURRENT_HOST} is not")
    current = environ[SM_CURRENT_HOST]
    if current not in hosts:
        raise DistEnvError(f"{SM_CURRENT_HOST}={current!r} is not one of {SM_HOSTS}={environ[SM_HOSTS]!r}")
    master_host = _sagemaker_master_host(environ, launched_by_mpirun=False)
    if environ.get(MASTER_ADDR) in hosts:
        master_host = environ[MASTER_ADDR]
    rank_order = [master_host] + [host for host in hosts if host != master_host] if master_host in hosts else hosts
    rank = rank_order.index(current)
    return DistEnv(rank, 0, len(hosts), 1, rank, _master_addr(environ, master_host), _master_port(environ),
                   "sagemaker", hint)


def _sagemaker_master_host(environ: Mapping[str, str], launched_by_mpirun: bool) -> str | None:
    """The host the toolkit calls master (docs/sagemaker-contract.md §6), or None outside SageMaker."""
    training_env = _json_object(environ, SM_TRAINING_ENV)
    if training_env.get("master_hostname"):
        return str(training_env["master_hostname"])
    distribution_hosts = training_env.get("distribution_hosts")
    if isinstance(distribution_hosts, list) and distribution_hosts:
        return str(distribution_hosts[0])
    resource_config = _json_object(environ, SM_RESOURCE_CONFIG)
    if launched_by_mpirun:
        # mpirun only runs with a distribution flag on, and then the master heads the current group's list.
        for group in resource_config.get("instance_groups", []):
            if group.get("instance_group_name") == resource_config.get("current_group_name") and group.get("hosts"):
                return str(group["hosts"][0])
    if SM_HOSTS in environ:
        return _host_list(environ, SM_HOSTS)[0]
    if resource_config.get("hosts"):
        return str(resource_config["hosts"][0])
    return None


def _backend_hint(environ: Mapping[str, str]) -> str | None:
    """``smddp`` when SageMaker's smddp mode is on (its hp flags arrive as SM_FRAMEWORK_PARAMS, contract §4.1)."""
    return "smddp" if _json_object(environ, SM_FRAMEWORK_PARAMS).get(SMDDP_ENABLED_FLAG) is True else None


def _master_addr(environ: Mapping[str, str], sagemaker_master: str | None) -> str:
    return environ.get(MASTER_ADDR) or sagemaker_master or LOOPBACK


def _master_port(environ: Mapping[str, str]) -> int:
    if MASTER_PORT not in environ:
        return DEFAULT_MASTER_PORT
    port = _int(environ, MASTER_PORT, minimum=1)
    if port > 65535:
        raise DistEnvError(f"{MASTER_PORT}={environ[MASTER_PORT]!r} is not a TCP port (1-65535)")
    return port


def _int(environ: Mapping[str, str], name: str, minimum: int) -> int:
    raw = environ[name]
    try:
        value = int(raw)
    except ValueError:
        raise DistEnvError(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise DistEnvError(f"{name}={raw!r} is below {minimum}")
    return value


def _below(environ: Mapping[str, str], name: str, limit: int, limit_name: str) -> int:
    value = _int(environ, name, minimum=0)
    if value >= limit:
        raise DistEnvError(f"{name}={environ[name]!r} is not below {limit_name}={limit}")
    return value


def _host_list(environ: Mapping[str, str], name: str) -> list[str]:
    raw = environ[name]
    try:
        hosts = json.loads(raw)
    except json.JSONDecodeError:
        hosts = None
    if not isinstance(hosts, list) or not hosts or not all(isinstance(host, str) and host for host in hosts):
        raise DistEnvError(f'{name}={raw!r} is not a non-empty JSON list of host names, e.g. ["algo-1","algo-2"]')
    if len(set(hosts)) != len(hosts):
        raise DistEnvError(f"{name}={raw!r} names a host twice")
    return hosts


def _json_object(environ: Mapping[str, str], name: str) -> dict:
    raw = environ.get(name)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise DistEnvError(f"{name}={_shorten(raw)!r} is not a JSON object")
    return value


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
