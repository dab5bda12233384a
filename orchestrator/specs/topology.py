"""Which processes a mode starts on which hosts, and the ranks they get (docs/sagemaker-contract.md §6-7).

The launcher, processes per host and single-host rendezvous of each mode are its row of specs/modes.py; this
module lays them out over the job's hosts. Read by `plan` (the rank table shown before submit). The local
emulator derives the same from the request, as SageMaker's toolkit does
(emulator/launching/toolkit_launchers.py); tests/emulator/test_one_topology.py holds the two to each other for
every example spec, so the table a user reads is the topology the emulator runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.contract import DEFAULT_MASTER_PORT
from orchestrator.specs.catalog import InstanceType
from orchestrator.specs.model import JobSpec
from orchestrator.specs.modes import ModeRules


@dataclass(frozen=True)
class RankRow:
    host: str
    local_rank: int
    rank: int
    world_size: int
    master: str


@dataclass(frozen=True)
class Topology:
    rules: ModeRules
    """The mode's row of the mode table."""
    hosts: tuple[str, ...]
    processes_per_host: int
    master_addr: str
    master_port: int

    @property
    def launcher(self) -> str:
        return self.rules.launcher

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
    """What the container starts per host for this mode (the toolkit's rule, contract §7; specs/modes.py)."""
    return spec.distribution.rules.processes_per_host(spec.distribution, instance)


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
    rendezvous = spec.distribution.rules.single_host_rendezvous
    if rendezvous is not None and len(hosts) == 1:
        master_addr, master_port = rendezvous
    else:
        master_addr, master_port = hosts[0], DEFAULT_MASTER_PORT
    return Topology(rules=spec.distribution.rules, hosts=hosts, processes_per_host=per_host,
                    master_addr=master_addr, master_port=master_port)
