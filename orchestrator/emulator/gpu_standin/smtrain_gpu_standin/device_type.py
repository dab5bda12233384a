"""``torch.device(<index>)`` names an emulated GPU, as it names a CUDA device on the instance.

A bare index means "this index of the current accelerator", resolved in C++ against the accelerator torch was
built for: on a CPU build it raises "Cannot access accelerator device when none is available", which no Python
patch of ``torch.cuda`` reaches. FSDP v1 (``torch.device(torch.cuda.current_device())``), and the frameworks
built on it, compute their device that way. So ``torch.device`` is replaced by a class that makes
``torch.device(3)`` ``cuda:3`` and hands every other call to torch's own type. It constructs torch's own device
objects, and ``isinstance(x, torch.device)`` and ``issubclass`` answer for torch's type, so code that checks,
pickles or passes devices to C++ sees no difference. ``torch.device(-1)``, the index a tensor on an emulated GPU
reports (``torch.device(x.get_device())``), is ``cuda``, the selected GPU (``type(x) is torch.device`` alone is False). TorchScript
compiles it as the ``aten::device`` builtin. Cost: a ``torch.device(...)`` call takes about 2 µs more (5 against
3 µs here), only in processes under the stand-in; torch.compile treats the constructor as user code.
"""

from __future__ import annotations

import torch

from . import devices, torchscript

TORCH_DEVICE = torch.device


class _DeviceType(type):
    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, TORCH_DEVICE)

    def __subclasscheck__(cls, subclass) -> bool:
        return issubclass(subclass, TORCH_DEVICE)

    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], int) and not isinstance(args[0], bool):
            if args[0] == devices.CPU_TENSOR_INDEX:
                return TORCH_DEVICE("cuda")
            return TORCH_DEVICE("cuda", args[0])  # checked where it is used, as CUDA checks it
        return TORCH_DEVICE(*args, **kwargs)


class device(metaclass=_DeviceType):  # noqa: N801  (it stands for torch.device)
    """``torch.device`` under the stand-in: see the module's docstring."""

    __doc__ = TORCH_DEVICE.__doc__


def install() -> None:
    if torch.device is TORCH_DEVICE:
        torch.device = torchscript.same_operator(device, TORCH_DEVICE)
