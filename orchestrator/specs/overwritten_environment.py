"""Environment values the PyTorch container writes over: warned about, not refused (docs/sagemaker-contract.md §4).

The PyTorch toolkit's train() sets MASTER_ADDR, MASTER_PORT, NCCL_SOCKET_IFNAME, NCCL_IB_DISABLE and NCCL_DEBUG on
every host, in every mode, before it starts the launcher; mpirun (modes mpi, smddp, pytorchddp) then gives every
rank NCCL_DEBUG=INFO unless custom_mpi_options names another, and torchrun its workers its own rendezvous. A user
who sets NCCL_DEBUG: INFO to debug a hang would get WARN without a word. The same value is harmless (examples set
NCCL_DEBUG: WARN), so only a value the ranks will not see gets a warning, with what they see and how to get it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from orchestrator.contract import (MASTER_ADDR, MASTER_PORT, MPIRUN_NCCL_DEBUG, NETWORK_INTERFACE,
                                   PYTORCH_TOOLKIT_VALUES)
from orchestrator.specs.catalog import lookup
from orchestrator.specs.model import JobSpec
from orchestrator.specs.topology import topology

_TOOLKIT = "the PyTorch toolkit sets it on every host before it starts the script"


@dataclass(frozen=True)
class Overwritten:
    """One environment value the training processes will not see."""

    name: str
    value: str
    container_value: str
    setter: str
    fix: str


def overwritten_values(spec: JobSpec) -> Iterator[Overwritten]:
    """Each of the spec's environment values that the container replaces with another in this job's mode."""
    seen = _container_values(spec)
    for name, value in spec.environment.items():
        if name in seen and str(value) != seen[name][0]:
            container_value, setter = seen[name]
            yield Overwritten(name, str(value), container_value, setter, _fix(spec, name, str(value)))


def _container_values(spec: JobSpec) -> dict[str, tuple[str, str]]:
    """What the training processes see for each variable the container sets, and who sets it."""
    rules = spec.distribution.rules
    rendezvous = topology(spec, lookup(spec.instance_type))
    meeting = ("the PyTorch toolkit sets it on every host, and torchrun gives its workers its own rendezvous"
               if rules.launcher_sets_rendezvous else _TOOLKIT)
    seen = {name: (value, _TOOLKIT) for name, value in PYTORCH_TOOLKIT_VALUES.items()}
    seen.update({MASTER_ADDR: (rendezvous.master_addr, meeting), MASTER_PORT: (str(rendezvous.master_port), meeting),
                 "NCCL_SOCKET_IFNAME": (NETWORK_INTERFACE, _TOOLKIT)})
    if rules.mpirun_sets_nccl_debug:
        if rules.sends_custom_mpi_options and "NCCL_DEBUG" in spec.distribution.custom_mpi_options:
            del seen["NCCL_DEBUG"]  # the user chose it in custom_mpi_options, which mpirun passes on
        else:
            seen["NCCL_DEBUG"] = (MPIRUN_NCCL_DEBUG, "the toolkit's mpirun passes it to every rank (the default of "
                                                     "its --NCCL_DEBUG option)")
    return seen


def _fix(spec: JobSpec, name: str, value: str) -> str:
    if name in (MASTER_ADDR, MASTER_PORT):
        return "remove it: the ranks meet where the container says, and a script that reads it gets that value"
    if name == "NCCL_DEBUG" and spec.distribution.rules.sends_custom_mpi_options:
        return (f'set distribution.custom_mpi_options: "--NCCL_DEBUG {value}" (the toolkit passes it to mpirun), '
                "and remove it from environment")
    return (f'set it at the top of the script, before torch.distributed starts: os.environ["{name}"] = "{value}" '
            "(NCCL reads it when the first communicator is created), and remove it from environment")
