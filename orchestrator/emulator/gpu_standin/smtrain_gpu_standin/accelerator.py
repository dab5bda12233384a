"""``torch.accelerator`` reports the emulated GPUs, as it reports CUDA on the instance.

Device-agnostic scripts (the current PyTorch DDP tutorials) ask it which accelerator to use, and torch itself asks
it whether to pin DataLoader batches and which device ``torchrun --nproc-per-node gpu`` counts. Torch's own
``torch._C._get_accelerator()`` keeps answering CPU: ``barrier`` and the default backend read it and must get
gloo's CPU (FSDP v1, which also reads it, is served in ``fsdp``).
"""

from __future__ import annotations

import functools

import torch

from . import cuda_api, devices, streams


def current_accelerator(check_available: bool = False) -> torch.device:
    return torch.device("cuda")


def get_memory_info(device=None) -> tuple[int, int]:
    return cuda_api.mem_get_info(device)


def install() -> None:
    if not hasattr(torch, "accelerator"):
        return  # torch before 2.6 has no torch.accelerator: scripts cannot ask it
    replacements = {
        "is_available": cuda_api.is_available, "current_accelerator": current_accelerator,
        "device_count": cuda_api.device_count, "current_device_index": devices.current,
        "current_device_idx": devices.current, "set_device_index": cuda_api.set_device,
        "set_device_idx": cuda_api.set_device, "synchronize": cuda_api.synchronize,
        "device_index": cuda_api.device, "current_stream": streams.current_stream, "set_stream": streams.set_stream,
        "empty_cache": cuda_api.empty_cache, "get_memory_info": get_memory_info,
        "memory_allocated": torch.cuda.memory_allocated, "max_memory_allocated": torch.cuda.max_memory_allocated,
        "memory_reserved": torch.cuda.memory_reserved, "max_memory_reserved": torch.cuda.max_memory_reserved,
        "reset_peak_memory_stats": torch.cuda.reset_peak_memory_stats,
    }
    for name, function in replacements.items():
        setattr(torch.accelerator, name, _own(function))


def _own(function):
    """`function` as an object of its own: torch.compile keeps one handler per function and refuses the same
    object registered for both ``torch.cuda.current_stream`` and ``torch.accelerator.current_stream``."""

    @functools.wraps(function)
    def same(*args, **kwargs):
        return function(*args, **kwargs)

    return same
