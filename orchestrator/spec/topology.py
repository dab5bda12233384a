"""Which processes a mode starts on which hosts, and the ranks they get (docs/sagemaker-contract.md §6-7).

Read by `plan` (the rank table shown before submit). The local emulator derives the same from the request, as
SageMaker's toolkit does (emulator/launching/toolkit_launchers.py); tests/backends/test_one_topology.py holds
the two to each other for every example spec, so the table a user reads is the topology the emulator runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.contract import DEFAULT_MASTER_PORT
from orchestrator.spec.catalog import InstanceType
from orchestrator.spec.model import JobSpec, Mode

LAUNCHERS = {
    Mode.none: "python",
    Mode.mpi: "mpirun",
    Mode.torch_distributed: "torchrun",
    Mode.pytorchddp: "mpirun (SMDDP)",
    Mode.smddp: "mpirun (SMDDP)",
}
# torchrun's own default rendezvous when the toolkit passes no --master_addr (single node).
TORCHRUN_SINGLE_NODE_MASTER = ("127.0.0.1", 29500)


@dataclass(frozen=True)
class RankRow:
    host: str
    local_rank: int
    rank: int
    world_size: int
    master: str


@dataclass(frozen=True)
class Topology:
    mode: Mode
    hosts: tuple[str, ...]
    processes_per_host: int
    master_addr: str
    master_port: int

    @property
    def launcher(self) -> str:
        return LAUNCHERS[self.mode]

    @property
    def world_size(self) -> int:
        return len(self.hosts) * self.processes_per_host

    def ranks(self) -> list[RankRow]:
        master = f"{self.master_addr}:{self.master_port}"
        return [
            RankRow(host=host, local_rank=local, rank=index * self.processes_per_host + local,
                    world_size=self.world_size, master=master)
            for index, host in enumerate(self.hosts)
            for local in range(self.processes_per_host)
        ]


def processes_per_host(spec: JobSpec, instance: InstanceType) -> int:
    """What the container starts per host for this mode (the toolkit's rule, contract §7)."""
    mode = spec.distribution.mode
    if mode is Mode.none:
        return 1
    if mode is Mode.mpi:
        return spec.distribution.processes_per_host or instance.devices_per_host
    if mode is Mode.torch_distributed:
        return instance.devices_per_host
    return instance.gpus or 1


def launcher_hosts(spec: JobSpec) -> tuple[str, ...]:
    """The hosts the mode's launcher spans: every host, or with instance groups the hosts of the group(s) named in
    distribution.instance_groups (the toolkit's distribution hosts; the others run the entry point once each)."""
    groups = spec.instance.group_hosts()
    named = [name for name in spec.distribution.instance_groups if name in groups]
    if named:
        return tuple(host for name in named for host in groups[name])
    return tuple(f"algo-{index + 1}" for index in range(spec.host_count))


def topology(spec: JobSpec, instance: InstanceType, processes_per_host_override: int | None = None) -> Topology:
    """The hosts, processes and rendezvous point of a job.

    Args:
        processes_per_host_override: the local emulator's `--processes-per-host`, which shrinks a GPU instance's
            process count to what this machine can run.
    """
    hosts = launcher_hosts(spec)
    per_host = processes_per_host_override or processes_per_host(spec, instance)
    if spec.distribution.mode is Mode.torch_distributed and len(hosts) == 1:
        master_addr, master_port = TORCHRUN_SINGLE_NODE_MASTER
    else:
        master_addr, master_port = hosts[0], DEFAULT_MASTER_PORT
    return Topology(mode=spec.distribution.mode, hosts=hosts, processes_per_host=per_host,
                    master_addr=master_addr, master_port=master_port)
