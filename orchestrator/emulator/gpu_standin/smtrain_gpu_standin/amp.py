"""CUDA mixed precision becomes CPU mixed precision in bfloat16.

``torch.autocast("cuda", dtype=torch.float16)`` (also ``torch.cuda.amp.autocast``) runs as CPU autocast in
bfloat16: the script's reduced-precision path is exercised (casts, dtypes of activations, autocast-aware code), and
bfloat16's float32-sized exponent cannot overflow where fp16 would need the GradScaler, so losses stay sane. fp16
numerics themselves are not checked. A requested bfloat16 stays bfloat16. ``torch.is_autocast_enabled()`` and
``torch.get_autocast_dtype("cuda")`` answer for that CPU autocast. ``GradScaler("cuda")`` scales on the CPU and
keeps its full behaviour (skipping steps with inf/NaN gradients, adjusting the scale).

On a CPU without native bfloat16 (no AVX-512 BF16 or AMX, as on AVX2-only machines) torch emulates it, about
ten times slower than float32 (bench/bench_autocast.py: a 4096-wide layer's step, 8-10x). There the emulator asks
(``env.AUTOCAST``) for CUDA autocast regions to compute in float32: the region is entered with autocast off, so
each op runs in the dtype of its inputs. What a script converts itself (``model.to(torch.bfloat16)``,
``x.half()``) keeps its dtype; ``torch.is_autocast_enabled()`` answers False inside such a region.
"""

from __future__ import annotations

import functools

import torch
import torch.amp.autocast_mode

from . import torchscript

try:
    from torch.amp.grad_scaler import GradScaler
except ModuleNotFoundError:  # before torch 2.3 the only GradScaler is torch.cuda.amp's, with no device to move
    GradScaler = None


def install(in_float32: bool = False) -> None:
    """CUDA autocast runs on the CPU: in bfloat16, or with `in_float32` in float32."""
    autocast = torch.amp.autocast_mode.autocast
    autocast.__init__ = _autocast_init(autocast.__init__, in_float32)
    if GradScaler is not None:
        GradScaler.__init__ = _scaler_init(GradScaler.__init__)
    for name in ("is_autocast_enabled", "get_autocast_dtype"):
        original = getattr(torch, name, None)  # get_autocast_dtype came with torch 2.4
        if original is not None:
            setattr(torch, name, torchscript.same_operator(_cuda_means_cpu(original), original))


def _autocast_init(init, in_float32: bool):
    @functools.wraps(init)
    def on_cpu(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None) -> None:
        if device_type == "cuda":
            device_type = "cpu"
            dtype = torch.bfloat16 if dtype in (None, torch.float16) else dtype
            enabled = enabled and not in_float32
        init(self, device_type, dtype, enabled, cache_enabled)

    return on_cpu


def _scaler_init(init):
    @functools.wraps(init)
    def on_cpu(self, device: str = "cuda", *args, **kwargs) -> None:
        init(self, "cpu" if device == "cuda" else device, *args, **kwargs)

    return on_cpu


def _cuda_means_cpu(query):
    """``torch.is_autocast_enabled()`` without a device means CUDA; so does "cuda"."""

    @functools.wraps(query)
    def for_cpu(device_type: str | None = None):
        return query("cpu" if device_type in (None, "cuda") else device_type)

    return for_cpu
