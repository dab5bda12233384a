"""The emulated GPUs: how many there are, which one each thread has selected, and where their tensors live.

Every emulated GPU is the CPU. An index is checked as CUDA checks it, so a script that addresses a GPU the
instance does not have fails here as it would there. Index -1 is the thread's selected GPU: a tensor on an emulated
GPU is a CPU tensor, whose ``get_device()`` is -1 where the instance answers the GPU's index, so scripts that hand
it back (``torch.zeros(n, device=x.get_device())``, ``.to(x.get_device())``) mean the GPU their tensor is on. As in CUDA, the selected device is per thread and starts at
0 in every new thread (which is why prefetch threads call ``torch.cuda.set_device``).
"""

from __future__ import annotations

import threading

import torch

CPU = torch.device("cpu")
CPU_TENSOR_INDEX = -1
"""What ``get_device()`` answers for a tensor on an emulated GPU (a CPU tensor): here, the selected GPU."""

_num_gpus = 0


class _Selected(threading.local):
    index = 0


_selected = _Selected()


def configure(num_gpus: int) -> None:
    global _num_gpus
    _num_gpus = num_gpus


def count() -> int:
    return _num_gpus


def current() -> int:
    """The index of the GPU this thread has selected."""
    return _selected.index


def select(index: int) -> None:
    _selected.index = check(index)


def check(index: int) -> int:
    """`index`, if the instance has that GPU.

    Raises:
        RuntimeError: CUDA's "invalid device ordinal", with the emulated GPU count.
    """
    if not 0 <= index < _num_gpus:
        raise RuntimeError(f"CUDA error: invalid device ordinal {index} (smtrain CPU stand-in: the instance has "
                           f"{_num_gpus} GPUs per host, cuda:0 to cuda:{_num_gpus - 1})")
    return index


def index_of(device: object = None) -> int:
    """The GPU index meant by a ``torch.cuda`` function's `device` argument (None, an int, "cuda:1", a
    ``torch.device``): the thread's selected GPU when none is named.

    Raises:
        ValueError: `device` is not a CUDA device.
    """
    if device is None:
        return current()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return current() if device.index is None else check(device.index)
    if isinstance(device, int) and not isinstance(device, bool):
        return current() if device == CPU_TENSOR_INDEX else check(device)
    raise ValueError(f"Expected a cuda device, but got: {device!r}")


def placement(device: object) -> object:
    """Where a tensor asked to go to `device` goes: the CPU for a CUDA device (an int means ``cuda:<int>``),
    any other device unchanged. Called on every ``Tensor.to``, so the common cases return early."""
    if isinstance(device, torch.device):
        if device.type != "cuda":
            return device
        if device.index is not None:
            check(device.index)
        return CPU
    if isinstance(device, str):
        return placement(torch.device(device)) if device.startswith("cuda") else device
    if isinstance(device, int) and not isinstance(device, bool):
        if device != CPU_TENSOR_INDEX:
            check(device)
        return CPU
    return device


def is_gpu(device: object) -> bool:
    """Whether `device` names an emulated GPU (its index checked). ``CPU`` itself counts: it is what
    ``placement`` made of one."""
    return placement(device) is CPU
