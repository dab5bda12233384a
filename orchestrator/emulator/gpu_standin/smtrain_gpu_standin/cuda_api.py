"""``torch.cuda``'s device, memory and random-number functions, answering for the emulated GPUs.

* Devices: as many as the instance has per host, named after its GPU model; the selected one is per thread.
* ``synchronize`` returns at once: CPU work is done when the call that started it returns.
* Memory statistics of the CUDA caching allocator are 0 (tensors live in ordinary CPU memory, which it does not
  manage); ``mem_get_info`` reports the emulated GPU's whole memory as free; ``empty_cache`` and
  ``set_per_process_memory_fraction`` do nothing. GPU memory limits are therefore not checked.
* Each GPU's random generator is a CPU ``torch.Generator``: seeding and saving/restoring its state work as on the
  instance, but nothing draws from it, since random ops on "GPU" tensors run on the CPU's generator. A generator
  the script makes for a GPU (``torch.Generator(device="cuda")``) is a CPU one too, and random ops given it draw
  from it, as on the instance.
* NVML's queries, which need the nvidia-ml-py package and a driver: ``utilization`` is how busy this process kept
  the CPU since the previous call (the first: since torch was imported), in percent of one core, capped at 100, as
  NVML's is how busy the GPU was over its last sample; ``memory_usage``, ``device_memory_used``, ``temperature``,
  ``power_draw`` and ``clock_rate`` read 0, as the memory statistics do (the CPU has no GPU sensors); and
  ``list_gpu_processes`` lists this process with 0 MB. A CPU build raises ModuleNotFoundError for all of them.
* NVTX ranges and marks do nothing, as on the instance when no profiler is attached.
* Memory snapshots (``torch.cuda.memory._record_memory_history``, ``_snapshot``, ``_dump_snapshot``, PyTorch's
  recipe for finding what holds GPU memory) record nothing: a snapshot has no segments and empty traces, and
  pytorch.org/memory_viz opens the dumped file as an empty timeline.
"""

from __future__ import annotations

import os
import time

import torch
import torch.cuda.memory
import torch.cuda.nvtx
import torch.cuda.random

from . import devices, gpus
from .env import Settings

_properties: gpus.DeviceProperties
_generators: tuple[torch.Generator, ...] = ()
_busy_since = (time.monotonic(), time.process_time())


def install(settings: Settings) -> None:
    global _properties, _generators
    _properties = gpus.properties(settings.gpu_name, settings.memory_gib)
    _generators = tuple(torch.Generator() for _ in range(settings.num_gpus))
    for name, function in _FUNCTIONS.items():
        for module in (torch.cuda, torch.cuda.memory, torch.cuda.random):
            if hasattr(module, name):
                setattr(module, name, function)
    torch.cuda.device = device
    torch.Generator = Generator
    torch.cuda.default_generators = _generators
    torch.cuda.nvtx._nvtx = _Nvtx()
    torch._C._cuda_record_memory_history = _record_nothing
    torch._C._cuda_record_memory_history_legacy = _record_nothing
    torch._C._cuda_memorySnapshot = _empty_snapshot


class _GeneratorType(type(torch.Generator)):
    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, torch._C.Generator)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, torch._C.Generator)


class Generator(torch._C.Generator, metaclass=_GeneratorType):
    """``torch.Generator``, whose GPU generators are CPU ones: torch's CPU build cannot make a CUDA generator ("Cannot
    get CUDA generator without ATen_cuda library"). Every generator, torch's own included, is still an instance."""

    def __new__(cls, device="cpu"):
        return super().__new__(cls, devices.placement(device))


def is_available() -> bool:
    return True


def device_count() -> int:
    return devices.count()


def current_device() -> int:
    return devices.current()


def set_device(device) -> None:
    if isinstance(device, int) and device < 0:  # as torch.cuda.set_device: a negative index changes nothing
        return
    devices.select(devices.index_of(device))


class device:
    """``torch.cuda.device(n)``: GPU n is this thread's selected GPU inside the block."""

    def __init__(self, device) -> None:
        self.idx = -1 if isinstance(device, int) and device < 0 else devices.index_of(device)

    def __enter__(self) -> None:
        self.prev_idx = devices.current()
        if self.idx >= 0:
            devices.select(self.idx)

    def __exit__(self, *exc_info) -> bool:
        devices.select(self.prev_idx)
        return False


def synchronize(device=None) -> None:
    devices.index_of(device)


def init() -> None:
    """Nothing to initialise."""


def get_device_name(device=None) -> str:
    devices.index_of(device)
    return _properties.name


def get_device_properties(device=None) -> gpus.DeviceProperties:
    devices.index_of(device)
    return _properties


def get_device_capability(device=None) -> tuple[int, int]:
    devices.index_of(device)
    return _properties.major, _properties.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """As torch answers on the instance: natively from capability 8.0 (Ampere), emulated on older GPUs."""
    return including_emulation or _properties.major >= 8


def is_current_stream_capturing() -> bool:
    return False


def _zero(device=None) -> int:
    """A memory statistic or an NVML sensor reading of a GPU the instance has: 0 here (see the module's docstring)."""
    devices.index_of(device)
    return 0


def _reset(device=None) -> None:
    devices.index_of(device)


_POOLED_STATISTICS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
                      "active_bytes", "inactive_split_bytes", "requested_bytes")
_METRICS = ("current", "peak", "allocated", "freed")


def memory_stats_as_nested_dict(device=None) -> dict:
    """The caching allocator's statistics, every one 0, so that ``torch.cuda.memory_stats()`` has the keys scripts
    read (``"allocated_bytes.all.peak"``): a CPU build answers an empty dictionary."""
    devices.index_of(device)
    zeros = dict.fromkeys(_METRICS, 0)
    return {**{name: {pool: dict(zeros) for pool in ("all", "large_pool", "small_pool")}
               for name in _POOLED_STATISTICS},
            "oversize_allocations": dict(zeros), "oversize_segments": dict(zeros),
            **dict.fromkeys(("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
                             "num_device_free"), 0)}


def mem_get_info(device=None) -> tuple[int, int]:
    devices.index_of(device)
    return _properties.total_memory, _properties.total_memory


def memory_summary(device=None, abbreviated: bool = False) -> str:
    index = devices.index_of(device)
    return (f"|  cuda:{index}: smtrain CPU stand-in, no CUDA caching allocator: 0 bytes allocated, 0 reserved "
            f"(tensors live in CPU memory)  |")


def utilization(device=None) -> int:
    """Percent of the wall time since the previous call that this process's threads kept the CPU busy."""
    global _busy_since
    devices.index_of(device)
    now = (time.monotonic(), time.process_time())
    wall, busy = now[0] - _busy_since[0], now[1] - _busy_since[1]
    _busy_since = now
    return min(100, round(100 * busy / wall)) if wall > 0 else 0


def list_gpu_processes(device=None) -> str:
    """NVML's list for the GPU: this process, using 0 MB of it (its tensors live in CPU memory)."""
    index = devices.index_of(device)
    return f"GPU:{index}\nprocess {os.getpid():>10d} uses {0:>12.3f} MB GPU memory"


def _record_nothing(*args, **kwargs) -> None:
    """torch.cuda.memory._record_memory_history's recorder: no allocation here goes through CUDA's allocator."""


def _empty_snapshot(*args, **kwargs) -> dict:
    """torch.cuda.memory._snapshot's: the dictionary the allocator gives, with nothing allocated."""
    return {"segments": [], "device_traces": [[] for _ in range(devices.count())]}


def empty_cache() -> None:
    """No caching allocator here."""


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    devices.index_of(device)
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")


def manual_seed(seed: int) -> None:
    _generators[devices.current()].manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for generator in _generators:
        generator.manual_seed(int(seed))


def seed() -> None:
    _generators[devices.current()].seed()


def seed_all() -> None:
    manual_seed_all(_generators[0].seed())


def initial_seed() -> int:
    return _generators[devices.current()].initial_seed()


def get_rng_state(device="cuda") -> torch.Tensor:
    return _generators[devices.index_of(device)].get_state()


def set_rng_state(new_state: torch.Tensor, device="cuda") -> None:
    _generators[devices.index_of(device)].set_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [generator.get_state() for generator in _generators]


def set_rng_state_all(new_states) -> None:
    for generator, state in zip(_generators, new_states):
        generator.set_state(state)


_FUNCTIONS = {
    "is_available": is_available, "device_count": device_count, "current_device": current_device,
    "set_device": set_device, "synchronize": synchronize, "init": init, "get_device_name": get_device_name,
    "get_device_properties": get_device_properties, "get_device_capability": get_device_capability,
    "is_bf16_supported": is_bf16_supported, "is_current_stream_capturing": is_current_stream_capturing,
    "memory_allocated": _zero, "max_memory_allocated": _zero, "memory_reserved": _zero,
    "max_memory_reserved": _zero, "reset_peak_memory_stats": _reset, "reset_max_memory_allocated": _reset,
    "reset_max_memory_cached": _reset, "reset_accumulated_memory_stats": _reset, "mem_get_info": mem_get_info,
    "memory_summary": memory_summary, "memory_stats_as_nested_dict": memory_stats_as_nested_dict,
    "empty_cache": empty_cache, "utilization": utilization, "memory_usage": _zero,
    "device_memory_used": _zero, "temperature": _zero, "power_draw": _zero, "clock_rate": _zero,
    "list_gpu_processes": list_gpu_processes,
    "set_per_process_memory_fraction": set_per_process_memory_fraction,
    "manual_seed": manual_seed, "manual_seed_all": manual_seed_all, "seed": seed, "seed_all": seed_all,
    "initial_seed": initial_seed, "get_rng_state": get_rng_state, "set_rng_state": set_rng_state,
    "get_rng_state_all": get_rng_state_all, "set_rng_state_all": set_rng_state_all,
}


class _Nvtx:
    """Stands in for NVIDIA's NVTX library behind ``torch.cuda.nvtx``: ranges and marks are accepted and dropped."""

    def rangePushA(self, message: str) -> int:
        return 0

    def rangePop(self) -> int:
        return 0

    def rangeStartA(self, message: str) -> int:
        return 0

    def rangeEnd(self, range_id: int) -> None:
        return None

    def markA(self, message: str) -> None:
        return None
