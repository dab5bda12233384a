"""Every way of putting a tensor or module on a GPU puts it on the CPU, in every thread of the process.

The patches sit at torch's Python API (``Tensor.to``/``cuda``/``pin_memory``, ``Module.to``, the factory functions'
``device=``, ``torch.device(...)`` as a context, ``torch.set_default_device``, ``torch.load``), which every thread
shares. A ``TorchFunctionMode`` would be simpler but is thread-local, so a prefetch thread escapes it, and it
intercepts every torch call: +45% on a small MLP step here, against no measurable cost for these patches.

A move to an emulated GPU copies, as a host-to-device copy does on the instance, so that writing into the moved
tensor never changes the original. ``torch.device("cuda", 1)`` itself stays a CUDA device: only where a tensor is
stored changes, so ``device.type == "cuda"`` branches go as on the instance (but ``tensor.is_cuda`` is False).
"""

from __future__ import annotations

import functools

import torch

from . import devices, torchscript

try:
    from torch.utils import _device as device_contexts
except ImportError:  # before torch 2.0: no `with torch.device(...)`, no set_default_device
    device_contexts = None

# torch.* functions taking device= (torch.utils._device._device_constructors() plus the *_like functions).
_FACTORIES = (
    "tensor", "as_tensor", "asarray", "scalar_tensor", "empty", "empty_like", "empty_strided", "empty_permuted",
    "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "rand", "rand_like", "randn", "randn_like",
    "randint", "randint_like", "randperm", "arange", "range", "linspace", "logspace", "eye", "tril_indices",
    "triu_indices", "sparse_coo_tensor", "sparse_compressed_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
    "sparse_bsr_tensor", "sparse_bsc_tensor", "bartlett_window", "blackman_window", "hamming_window",
    "hann_window", "kaiser_window",
)
_TENSOR_FACTORIES = ("new_tensor", "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full")
# torch.cuda's legacy tensor types, which older scripts still use (`Tensor = torch.cuda.FloatTensor if cuda else
# torch.FloatTensor`, `x.type(torch.cuda.LongTensor)`, `torch.set_default_tensor_type("torch.cuda.FloatTensor")`).
_LEGACY_TYPES = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
                 "ShortTensor", "IntTensor", "LongTensor", "BoolTensor")
_LEGACY_PREFIX = "torch.cuda."


def install() -> None:
    if device_contexts is not None:
        # DeviceContext (`with torch.device("meta"):`) recognises factories by identity in this cached set; fill
        # it with torch's own functions before they are wrapped, or default devices would stop applying to them.
        device_contexts._device_constructors()
    for name in _FACTORIES:
        original = getattr(torch, name, None)  # torch 1.13 lacks a few (empty_permuted, sparse_bsr_tensor, ...)
        if original is not None:
            setattr(torch, name, torchscript.same_operator(_factory(original), original))
    for name in _TENSOR_FACTORIES:
        setattr(torch.Tensor, name, _factory(getattr(torch.Tensor, name)))
    to = torch.Tensor.to
    torch.Tensor.to = _tensor_to(to)
    torch.Tensor.cuda = _tensor_cuda(to)
    torch.Tensor.pin_memory = _pin_memory
    torch.nn.Module.to = _module_to(torch.nn.Module.to)
    torch.storage._StorageBase.cuda = _storage_cuda
    torch.storage.TypedStorage.cuda = _storage_cuda
    if device_contexts is not None:
        device_contexts.DeviceContext.__init__ = _device_context_init(device_contexts.DeviceContext.__init__)
    torch.load = _load(torch.load)
    _legacy_types_on_the_cpu()


def _factory(factory):
    @functools.wraps(factory)
    def on_cpu(*args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = devices.placement(kwargs["device"])
        if kwargs.get("pin_memory"):
            kwargs["pin_memory"] = False
        return factory(*args, **kwargs)

    return on_cpu


def _tensor_to(to):
    @functools.wraps(to)
    def to_cpu(self, *args, **kwargs):
        # Module.to("cuda") hands its tensors devices.CPU, which is_gpu counts, so they are copied too.
        if args and devices.is_gpu(args[0]):
            return to(self, devices.CPU, *args[1:], **{**kwargs, "copy": True})
        if "device" in kwargs and devices.is_gpu(kwargs["device"]):
            return to(self, *args, **{**kwargs, "device": devices.CPU, "copy": True})
        return to(self, *args, **kwargs)

    return to_cpu


def _tensor_cuda(to):
    def cuda(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
        """A copy on the CPU, standing in for the copy on GPU `device` (checked as CUDA would)."""
        devices.index_of(device)
        return to(self, devices.CPU, non_blocking=non_blocking, copy=True, memory_format=memory_format)

    return cuda


def _legacy_types_on_the_cpu() -> None:
    """torch.cuda.FloatTensor and its kin are the CPU's types, by class or by name: a CPU build refuses to make one
    ("type torch.cuda.FloatTensor not available. Torch not compiled with CUDA enabled")."""
    for name in _LEGACY_TYPES:
        setattr(torch.cuda, name, getattr(torch, name))
    torch.Tensor.type = _tensor_type(torch.Tensor.type)
    set_default_tensor_type = torch.set_default_tensor_type
    torch.set_default_tensor_type = functools.wraps(set_default_tensor_type)(
        lambda kind: set_default_tensor_type(_on_the_cpu(kind)))


def _tensor_type(type_):
    @functools.wraps(type_)
    def type(self, dtype=None, non_blocking=False, **kwargs):
        return type_(self) if dtype is None else type_(self, _on_the_cpu(dtype), non_blocking, **kwargs)

    return type


def _on_the_cpu(kind):
    """A legacy CUDA tensor type's name (``"torch.cuda.FloatTensor"``) as the CPU type's; anything else as is."""
    return "torch." + kind.removeprefix(_LEGACY_PREFIX) if isinstance(kind, str) and kind.startswith(
        _LEGACY_PREFIX) else kind


def _pin_memory(self, device=None):
    """A copy, as pinning makes one; page-locked memory only matters for copies to a real GPU."""
    return self.clone()


def _module_to(to):
    @functools.wraps(to)
    def to_cpu(self, *args, **kwargs):
        if args:
            args = (devices.placement(args[0]), *args[1:])
        if "device" in kwargs:
            kwargs["device"] = devices.placement(kwargs["device"])
        return to(self, *args, **kwargs)

    return to_cpu


def _storage_cuda(self, device=None, non_blocking=False):
    """Storages stay on the CPU (``torch.load(..., map_location=lambda s, loc: s.cuda(rank))``)."""
    devices.index_of(device)
    return self


def _device_context_init(init):
    @functools.wraps(init)
    def on_cpu(self, device) -> None:
        init(self, devices.placement(device))

    return on_cpu


def _load(load):
    @functools.wraps(load)
    def load_on_cpu(f, map_location=None, *args, **kwargs):
        return load(f, _map_location(map_location), *args, **kwargs)

    return load_on_cpu


def _map_location(map_location):
    """A ``torch.load`` map_location with every CUDA target on the CPU; tensors saved on a real GPU load onto the
    CPU when no map_location says otherwise."""
    if map_location is None:
        return _restore_cuda_on_cpu
    if isinstance(map_location, dict):  # location strings to location strings
        return {source: "cpu" if devices.is_gpu(target) else target for source, target in map_location.items()}
    if callable(map_location):
        return map_location
    return devices.placement(map_location)


def _restore_cuda_on_cpu(storage, location: str):
    return storage if location.startswith("cuda") else None
