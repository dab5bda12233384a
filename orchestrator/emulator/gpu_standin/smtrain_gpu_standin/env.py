"""The environment variables that switch the stand-in on, and their parsing.

Torch-free and cheap: ``sitecustomize`` reads them at the start of every Python process, and the emulator imports
the names to set them. The stand-in is on when ``SMTRAIN_GPU_STANDIN`` holds a positive number of GPUs per host.
"""

from __future__ import annotations

from collections.abc import Mapping

NUM_GPUS = "SMTRAIN_GPU_STANDIN"
"""GPUs per host of the emulated instance, e.g. ``4`` for ml.g5.12xlarge. Unset, empty or ``0``: no stand-in."""

GPU_NAME = "SMTRAIN_GPU_STANDIN_NAME"
"""The instance's GPU model as the catalog names it, e.g. ``A10G`` or ``NVIDIA A100``. Default: ``GPU``."""

GPU_MEMORY_GIB = "SMTRAIN_GPU_STANDIN_MEMORY_GIB"
"""Memory of one GPU in GiB, e.g. ``24``. Default: the model's usual size (see ``gpus.py``)."""

AUTOCAST = "SMTRAIN_GPU_STANDIN_AUTOCAST"
"""``float32``: CUDA autocast regions compute in float32 (the emulator sets it on a CPU without native bfloat16,
which would emulate it about ten times slower). Unset or empty: in the dtype asked for (fp16 as bfloat16)."""

AUTOCAST_FLOAT32 = "float32"

VARIABLES = (NUM_GPUS, GPU_NAME, GPU_MEMORY_GIB, AUTOCAST)


class Settings:
    """What the stand-in emulates: ``num_gpus`` GPUs named ``gpu_name`` with ``memory_gib`` each (None: the
    model's usual size); ``autocast_in_float32``: CUDA autocast regions compute in float32. A plain class, not a
    dataclass: ``dataclasses`` would cost every process a few ms."""

    __slots__ = ("autocast_in_float32", "gpu_name", "memory_gib", "num_gpus")

    def __init__(self, num_gpus: int, gpu_name: str, memory_gib: float | None,
                 autocast_in_float32: bool = False) -> None:
        self.num_gpus = num_gpus
        self.gpu_name = gpu_name
        self.memory_gib = memory_gib
        self.autocast_in_float32 = autocast_in_float32

    def __repr__(self) -> str:
        return (f"Settings(num_gpus={self.num_gpus}, gpu_name={self.gpu_name!r}, memory_gib={self.memory_gib}, "
                f"autocast_in_float32={self.autocast_in_float32})")


class SettingsError(ValueError):
    """A stand-in variable holds a value that cannot be used; the message names it and says how to fix it."""


def read(environ: Mapping[str, str]) -> Settings | None:
    """The stand-in's settings, or None when it is off.

    Raises:
        SettingsError: a variable is malformed.
    """
    raw_count = environ.get(NUM_GPUS, "").strip()
    if raw_count in ("", "0"):
        return None
    num_gpus = _number(NUM_GPUS, raw_count, int)
    raw_memory = environ.get(GPU_MEMORY_GIB, "").strip()
    memory_gib = _number(GPU_MEMORY_GIB, raw_memory, float) if raw_memory else None
    autocast = environ.get(AUTOCAST, "").strip()
    if autocast not in ("", AUTOCAST_FLOAT32):
        raise SettingsError(f"{AUTOCAST}={autocast!r} is not {AUTOCAST_FLOAT32!r}. To fix: set it to "
                            f"{AUTOCAST_FLOAT32} to compute CUDA autocast regions in float32, or unset it to keep "
                            "the dtype the script asks for.")
    return Settings(num_gpus, environ.get(GPU_NAME, "").strip() or "GPU", memory_gib, autocast == AUTOCAST_FLOAT32)


def _number(name: str, raw: str, kind: type[int | float]) -> int | float:
    try:
        value = kind(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise SettingsError(f"{name}={raw!r} is not a positive number. To fix: set {name} to the instance's "
                            f"{'GPUs per host, e.g. 4' if kind is int else 'GPU memory in GiB, e.g. 24'}, "
                            f"or unset {NUM_GPUS} to run without the CPU stand-in for CUDA.")
    return value
