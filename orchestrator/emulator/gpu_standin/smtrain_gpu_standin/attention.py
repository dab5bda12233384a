"""Scaled dot-product attention's GPU-only kernels run as the CPU's.

On the instance, ``sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)`` or ``CUDNN_ATTENTION`` (or turning off the flash
and math kernels with ``torch.backends.cuda.enable_*_sdp``) picks a CUDA kernel. A CPU build has neither, so with
only those switched on it finds no kernel at all ("No viable backend for scaled_dot_product_attention was
found"). Under the stand-in the CPU's flash and math kernels answer for the memory-efficient and cuDNN ones: the
same attention, to float tolerance. The switches read back what the script set.
"""

from __future__ import annotations

import torch

_CPU_KERNELS = ("flash", "math")
_GPU_ONLY_KERNELS = ("mem_efficient", "cudnn")
_SETTERS: dict[str, object] = {}
"""torch's own switches, for the kernels this torch has (1.x has none; 2.0 no cuDNN attention)."""
_asked: dict[str, bool] = {}
"""What the script switched on or off, for the kernels whose real switch the stand-in may hold on."""


def install() -> None:
    _SETTERS.update({name: getattr(torch._C, f"_set_sdp_use_{name}") for name in (*_CPU_KERNELS, *_GPU_ONLY_KERNELS)
                     if hasattr(torch._C, f"_set_sdp_use_{name}")})
    if not all(name in _SETTERS for name in _CPU_KERNELS):
        return  # a torch without scaled dot-product attention's switches
    _asked.update({name: getattr(torch._C, f"_get_{name}_sdp_enabled")() for name in _CPU_KERNELS})
    for name in _SETTERS:
        setattr(torch._C, f"_set_sdp_use_{name}", _setter(name))
    for name in _CPU_KERNELS:
        setattr(torch._C, f"_get_{name}_sdp_enabled", _getter(name))


def _setter(name: str):
    def set_sdp_use(enabled: bool) -> None:
        if name in _CPU_KERNELS:
            _asked[name] = enabled
        else:
            _SETTERS[name](enabled)
        gpu_only = any(getattr(torch._C, f"_get_{kernel}_sdp_enabled")() for kernel in _GPU_ONLY_KERNELS
                       if kernel in _SETTERS)
        for kernel in _CPU_KERNELS:
            _SETTERS[kernel](_asked[kernel] or gpu_only)

    return set_sdp_use


def _getter(name: str):
    def get_sdp_enabled() -> bool:
        return _asked[name]

    return get_sdp_enabled
