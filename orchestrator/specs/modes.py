"""The distribution modes, and what each one means to every layer, in one table.

A mode is one row: the `sagemaker_*` hyperparameters the request carries for it (docs/sdk-facts.md §3; the SDK
rewrites pytorchddp into SMDDP, §4), the `distribution=` argument of SDK v2's estimator that sends the same
request, the launcher the container picks from those hyperparameters, how many processes it starts per host
(docs/sagemaker-contract.md §6-7), and whether it runs SageMaker's SMDDP library. The request
(planning/request.py), the SDK arguments (planning/estimator.py), the rank table (specs/topology.py) and what
`plan` prints (cli/render.py) read their column here instead of branching on the mode; which modes go with
which instances and images is validation, and stays in capabilities.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from orchestrator.contract import SMDDP_ENABLED_FLAG
from orchestrator.specs.catalog import InstanceType


class Mode(str, Enum):
    """How SageMaker launches the entry point on each host (docs/sagemaker-contract.md §7)."""

    none = "none"
    mpi = "mpi"
    pytorchddp = "pytorchddp"
    torch_distributed = "torch_distributed"
    smddp = "smddp"

    @property
    def rules(self) -> ModeRules:
        """This mode's row of the table."""
        return MODES[self]

    @property
    def runs_smddp(self) -> bool:
        """The launcher runs SageMaker's SMDDP library (mpirun + smddprun): smddp, and pytorchddp, which the SDK
        rewrites into it."""
        return MODES[self].runs_smddp


class DistributionFields(Protocol):
    """The spec's `distribution:` as the table reads it (spec.model.Distribution)."""

    @property
    def processes_per_host(self) -> int | None: ...

    @property
    def custom_mpi_options(self) -> str: ...

    @property
    def instance_groups(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class ModeRules:
    """What one mode means to the request, the SDK, the launcher and the rank table."""

    launcher: str
    """What starts the entry point on each launcher host, as `plan`'s rank table names it."""
    runs_smddp: bool
    """The launcher runs SageMaker's SMDDP library (capabilities, the SDK v2 adapter and the emulator ask)."""
    assigns_ranks: bool
    """A launcher gives each process its rank; False: each host runs the script once, its rank the index of
    SM_CURRENT_HOST in SM_HOSTS."""
    hyperparameters: Callable[[DistributionFields, str], dict[str, Any]]
    """The `sagemaker_*` keys SDK v2 writes into the request, in its order, given the distribution and the
    instance type the training processes run on."""
    sdk_distribution: Callable[[DistributionFields], dict[str, Any] | None]
    """SDK v2's `distribution=` argument that makes v2 write those keys (None: v2 is given none)."""
    processes_per_host: Callable[[DistributionFields, InstanceType], int]
    """What the container starts per launcher host (the toolkit's rule, contract §7)."""
    single_host_rendezvous: tuple[str, int] | None = None
    """Where the ranks meet when the launcher spans one host, if not at the first host on the default port."""
    mpirun_sets_nccl_debug: bool = False
    """The toolkit's mpirun passes every rank NCCL_DEBUG (its --NCCL_DEBUG option's), over the host's value."""
    sends_custom_mpi_options: bool = False
    """distribution.custom_mpi_options reaches the toolkit (the SDK's pytorchddp rewrite sends none)."""
    launcher_sets_rendezvous: bool = False
    """The launcher gives its workers MASTER_ADDR and MASTER_PORT of its own (torchrun), over the host's."""
    enabled_by: str | None = None
    """The `sagemaker_*` hyperparameter whose `true` says a job runs in this mode (how a description is read back);
    None for mode none, which sends none."""
    starting_instance: str | None = None
    """The instance `smtrain init` writes for a script in this mode whatever the script uses: one that SageMaker
    runs the mode on and its launcher fills (None: chosen by whether the script uses a GPU)."""


def _instance_groups_key(dist: DistributionFields) -> dict[str, Any]:
    # sagemaker/estimator.py Framework._distribution_configuration: the first key it writes.
    return {"sagemaker_distribution_instance_groups": list(dist.instance_groups)} if dist.instance_groups else {}


def _sdk_instance_groups(dist: DistributionFields) -> dict[str, Any]:
    return {"instance_groups": list(dist.instance_groups)} if dist.instance_groups else {}


def _mpi_hyperparameters(dist: DistributionFields, instance_type: str) -> dict[str, Any]:
    keys = {**_instance_groups_key(dist), "sagemaker_mpi_enabled": True}
    if dist.processes_per_host:
        keys["sagemaker_mpi_num_of_processes_per_host"] = dist.processes_per_host
    keys["sagemaker_mpi_custom_mpi_options"] = dist.custom_mpi_options
    return keys


def _mpi_sdk(dist: DistributionFields) -> dict[str, Any]:
    mpi: dict[str, Any] = {"enabled": True, "custom_mpi_options": dist.custom_mpi_options}
    if dist.processes_per_host:
        mpi["processes_per_host"] = dist.processes_per_host
    return {"mpi": mpi, **_sdk_instance_groups(dist)}


def _torchrun_hyperparameters(dist: DistributionFields, instance_type: str) -> dict[str, Any]:
    # v2 writes no instance-groups key for torch_distributed (capabilities warns where that matters).
    return {"sagemaker_torch_distributed_enabled": True, "sagemaker_instance_type": instance_type}


def _dataparallel_hyperparameters(dist: DistributionFields, instance_type: str, mpi_options: str) -> dict[str, Any]:
    return {
        **_instance_groups_key(dist),
        "sagemaker_distributed_dataparallel_enabled": True,
        "sagemaker_instance_type": instance_type,
        "sagemaker_distributed_dataparallel_custom_mpi_options": mpi_options,
    }


def _smddp_hyperparameters(dist: DistributionFields, instance_type: str) -> dict[str, Any]:
    return _dataparallel_hyperparameters(dist, instance_type, dist.custom_mpi_options)


def _pytorchddp_hyperparameters(dist: DistributionFields, instance_type: str) -> dict[str, Any]:
    # The SDK's rewrite of pytorchddp into SMDDP passes no custom mpirun options (docs/sdk-facts.md §4).
    return _dataparallel_hyperparameters(dist, instance_type, "")


def _smddp_sdk(dist: DistributionFields) -> dict[str, Any]:
    return {"smdistributed": {"dataparallel": {"enabled": True, "custom_mpi_options": dist.custom_mpi_options}},
            **_sdk_instance_groups(dist)}


def _one_per_gpu(dist: DistributionFields, instance: InstanceType) -> int:
    return instance.gpus or 1


MODES: dict[Mode, ModeRules] = {
    Mode.none: ModeRules(
        launcher="python", runs_smddp=False, assigns_ranks=False,
        hyperparameters=lambda dist, instance_type: {},
        sdk_distribution=lambda dist: None,
        processes_per_host=lambda dist, instance: 1,
    ),
    Mode.mpi: ModeRules(
        launcher="mpirun", runs_smddp=False, assigns_ranks=True,
        hyperparameters=_mpi_hyperparameters,
        sdk_distribution=_mpi_sdk,
        processes_per_host=lambda dist, instance: dist.processes_per_host or instance.devices_per_host,
        mpirun_sets_nccl_debug=True, sends_custom_mpi_options=True, enabled_by="sagemaker_mpi_enabled",
    ),
    Mode.torch_distributed: ModeRules(
        launcher="torchrun", runs_smddp=False, assigns_ranks=True,
        hyperparameters=_torchrun_hyperparameters,
        sdk_distribution=lambda dist: {"torch_distributed": {"enabled": True}},
        processes_per_host=lambda dist, instance: instance.devices_per_host,
        # torchrun's own default rendezvous when the toolkit passes no --master_addr (single node).
        single_host_rendezvous=("127.0.0.1", 29500),
        launcher_sets_rendezvous=True, enabled_by="sagemaker_torch_distributed_enabled",
        starting_instance="ml.g5.12xlarge",
    ),
    Mode.pytorchddp: ModeRules(
        launcher="mpirun (SMDDP)", runs_smddp=True, assigns_ranks=True,
        hyperparameters=_pytorchddp_hyperparameters,
        sdk_distribution=lambda dist: {"pytorchddp": {"enabled": True}},
        processes_per_host=_one_per_gpu,
        mpirun_sets_nccl_debug=True, enabled_by=SMDDP_ENABLED_FLAG, starting_instance="ml.p4d.24xlarge",
    ),
    Mode.smddp: ModeRules(
        launcher="mpirun (SMDDP)", runs_smddp=True, assigns_ranks=True,
        hyperparameters=_smddp_hyperparameters,
        sdk_distribution=_smddp_sdk,
        processes_per_host=_one_per_gpu,
        mpirun_sets_nccl_debug=True, sends_custom_mpi_options=True, enabled_by=SMDDP_ENABLED_FLAG,
        starting_instance="ml.p4d.24xlarge",
    ),
}


def described_mode(hyperparameters: Mapping[str, Any]) -> Mode:
    """The mode a job's hyperparameters say it runs in (a DescribeTrainingJob's, whose values are the SDK's JSON
    text: `true` or `"true"`); mode none where none is enabled. pytorchddp and smddp send the same key and launch
    the same way: the first of them is given."""
    def enabled(key: str) -> bool:
        return str(hyperparameters.get(key, "")).strip('"').lower() == "true"

    return next((mode for mode, rules in MODES.items() if rules.enabled_by and enabled(rules.enabled_by)), Mode.none)


def launching_mode(reads_launcher_ranks: bool, uses_mpi: bool) -> Mode:
    """The mode that starts a script as it expects to be started (`smtrain init`): torchrun for one that reads
    RANK, LOCAL_RANK or WORLD_SIZE, mpirun for one that uses MPI, else once per host."""
    if reads_launcher_ranks:
        return Mode.torch_distributed
    return Mode.mpi if uses_mpi else Mode.none
