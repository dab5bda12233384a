"""The instance catalog: hardware and on-demand prices of SageMaker training instances, from data/instances.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from orchestrator.specs.datafiles import load_data_file


@dataclass(frozen=True)
class InstanceType:
    """One SageMaker training instance type."""

    name: str
    vcpus: int
    memory_gib: float
    accelerator: str
    """`cpu`, `gpu` or `trainium`."""
    accelerators: int = 0
    accelerator_model: str | None = None
    accelerator_memory_gib: float | None = None
    neuron_cores: int = 0
    efa: bool = False
    price_per_hour: float | None = None
    known: bool = True
    """False for a type missing from the catalog, whose accelerator is guessed from its family."""

    @property
    def family(self) -> str:
        return family_of(self.name)

    @property
    def gpus(self) -> int:
        return self.accelerators if self.accelerator == "gpu" else 0

    @property
    def devices_per_host(self) -> int:
        """What the toolkit starts per host when nothing else says: GPUs, else NeuronCores, else 1."""
        return self.gpus or self.neuron_cores or 1


@dataclass(frozen=True)
class Catalog:
    region: str
    currency: str
    source: str
    checked: str
    instances: dict[str, InstanceType]

    @property
    def price_source(self) -> str:
        return f"{self.source}, {self.region}, transcribed {self.checked}"


def on_demand_cost(price_per_instance_hour: float | None, instance_count: int, seconds: float) -> float | None:
    """The one cost formula, for the plan's worst case and a job's cost so far: price x count x hours (None
    without a price)."""
    if price_per_instance_hour is None:
        return None
    return price_per_instance_hour * instance_count * seconds / 3600


def hourly_price(price_per_hour: float) -> str:
    """An hourly price as every command prints it: the catalog's own digits (at most 4 decimals), `0.408`,
    `32.7726`, `98.32`; totals are printed to the cent (`,.2f`)."""
    return f"{price_per_hour:,.4f}".rstrip("0").rstrip(".")


def family_of(instance_type: str) -> str:
    """`ml.p4d.24xlarge` -> `p4d`."""
    parts = instance_type.split(".")
    return parts[1] if len(parts) == 3 else instance_type


def local_nvme_volume(instance_type: str) -> bool:
    """Whether SageMaker keeps the instance's /opt/ml on its local NVMe instance store, whose size is fixed: the
    request's VolumeSizeInGB changes nothing there and it takes no EBS KMS key (the SDK's rule, sagemaker/utils.py
    `volume_size_supported`: a family with `d`, and g5, g6, p5, trn1)."""
    family = instance_type.split(".")[1] if instance_type.startswith("ml.") else instance_type.split(".")[0]
    return "d" in family or family.startswith(("g5", "g6", "p5", "trn1"))


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    data = load_data_file("instances.yaml")
    instances = {name: InstanceType(name=name, **fields) for name, fields in data["instances"].items()}
    return Catalog(
        region=data["region"],
        currency=data["currency"],
        source=data["source"],
        checked=str(data["checked"]),
        instances=instances,
    )


def lookup(instance_type: str) -> InstanceType:
    """The catalog entry, or a guess marked `known=False` (the SDK's own rule: p* and g* families are GPU)."""
    entry = catalog().instances.get(instance_type)
    if entry is not None:
        return entry
    family = family_of(instance_type)
    if family.startswith(("p", "g")):
        accelerator, count = "gpu", 1
    elif family.startswith("trn"):
        accelerator, count = "trainium", 1
    else:
        accelerator, count = "cpu", 0
    return InstanceType(name=instance_type, vcpus=0, memory_gib=0, accelerator=accelerator, accelerators=count,
                        known=False)
