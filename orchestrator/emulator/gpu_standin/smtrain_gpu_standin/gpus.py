"""What the emulated GPU model reports about itself: compute capability, multiprocessors, memory.

The models are those of SageMaker's GPU instances (the emulator's instance catalog); an unknown name answers like
a generic Ampere GPU. Scripts read these to pick a precision (bf16 needs capability 8.0) or a batch size.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30


@dataclass(frozen=True)
class _Model:
    capability: tuple[int, int]
    multi_processor_count: int
    memory_gib: float


# Matched by substring of the upper-cased name, in this order.
_MODELS = {
    "H200": _Model((9, 0), 132, 141),
    "H100": _Model((9, 0), 132, 80),
    "A100": _Model((8, 0), 108, 40),
    "A10G": _Model((8, 6), 80, 24),
    "L4": _Model((8, 9), 58, 24),
    "T4": _Model((7, 5), 40, 16),
    "V100": _Model((7, 0), 80, 16),
}
_UNKNOWN = _Model((8, 0), 108, 40)


@dataclass(frozen=True)
class DeviceProperties:
    """What ``torch.cuda.get_device_properties`` returns, with the fields scripts read."""

    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int
    is_integrated: bool = False
    is_multi_gpu_board: bool = False

    @property
    def gcnArchName(self) -> str:  # torch's name
        """torch.compile keys its cache on this field when ``torch.version.cuda`` is None, as on a CPU build of
        torch (it takes that for ROCm); on the instance it keys on the name."""
        return self.name

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // 2**20}MB, multi_processor_count={self.multi_processor_count})")


def properties(gpu_name: str, memory_gib: float | None) -> DeviceProperties:
    """The properties of model `gpu_name` (as given to the stand-in), with `memory_gib` if known."""
    model = next((model for key, model in _MODELS.items() if key in gpu_name.upper()), _UNKNOWN)
    memory = model.memory_gib if memory_gib is None else memory_gib
    return DeviceProperties(name=display_name(gpu_name), major=model.capability[0], minor=model.capability[1],
                            total_memory=int(memory * GIB), multi_processor_count=model.multi_processor_count)


def display_name(gpu_name: str) -> str:
    """What ``torch.cuda.get_device_name`` says: the model, and that this is not a real GPU."""
    return f"{gpu_name} (smtrain CPU stand-in)"
