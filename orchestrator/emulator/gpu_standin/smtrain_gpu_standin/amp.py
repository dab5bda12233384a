"""CUDA mixed precision becomes CPU mixed precision in bfloat16.

``torch.autocast("cuda", dtype=torch.float16)`` (also ``torch.cuda.amp.autocast``) runs as CPU autocast in
bfloat16: the script's reduced-precision path is exercised (casts, dtypes of activations, autocast-aware code), and
bfloat16's float32-sized exponent cannot overflow where fp16 would need the GradScaler, so losses stay sane. fp16
numerics themselves are not checked. A requested bfloat16 stays bfloat16. ``torch.is_autocast_enabled()`` and
``torch.get_autocast_dtype("cuda")`` answer for that CPU autocast, and ``torch.set_autocast_enabled("cuda", ...)``
and ``set_autocast_dtype`` set it: ``torch.compile`` saves the state with the ones and restores it with the others
around each graph, then checks that tracing changed no global state, so a setter left on CUDA's own state would
fail every graph compiled inside an eager region (nanoGPT's train.py compiles its model so).
``GradScaler("cuda")`` scales on the CPU and keeps its full behaviour (skipping steps with inf/NaN gradients, adjusting the scale). Before torch 2.3 (Debian's
1.13) the only GradScaler is ``torch.cuda.amp``'s, whose kernels exist for CUDA alone: it runs disabled, as torch
itself runs it where CUDA is missing (scale 1, steps never skipped), which bfloat16 does not need.

On a CPU without native bfloat16 (no AVX-512 BF16 or AMX, as on AVX2-only machines) torch emulates it, about
ten times slower than float32 (bench/bench_autocast.py: a 4096-wide layer's step, 8-10x). There the emulator asks
(``env.AUTOCAST``) for CUDA autocast regions to compute in float32: the region is entered with autocast off, and
the ops autocast casts (its CUDA lists: matmuls, linear and convolution layers, attention, and the norms it runs in
float32) take float16 and bfloat16 inputs as float32, as autocast would have cast them to one dtype: a float16
input to a float32 layer works as on the GPU, and computes in float32. What a script converts itself
(``model.to(torch.bfloat16)``, ``x.half()``) keeps its dtype; ``torch.is_autocast_enabled()`` answers False inside
such a region. The ops are torch's Python functions, patched: what they call inside (and ops reached from C++
only) is not cast, nor are the ops of a region that a ``torch.compile``'d function opens itself (one open around
the compiled call casts them).
"""

from __future__ import annotations

import functools
import threading

import torch
import torch.amp.autocast_mode
import torch.nn.functional

from . import torchscript

try:
    from torch.amp.grad_scaler import GradScaler
except ModuleNotFoundError:  # before torch 2.3 the only GradScaler is torch.cuda.amp's, with no device to move
    GradScaler = None


# The functions whose float16 and bfloat16 inputs a float32 region casts: autocast's CUDA lists, the ops it casts to
# the region's dtype and those it runs in float32, as torch's Python API names them.
_CAST_BY_AUTOCAST = (
    (torch.nn.functional, ("linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                           "conv_transpose3d", "prelu", "scaled_dot_product_attention", "layer_norm", "group_norm")),
    (torch, ("matmul", "mm", "bmm", "addmm", "addmv", "addr", "baddbmm", "addbmm", "einsum", "chain_matmul")),
    (torch.Tensor, ("__matmul__", "__rmatmul__", "matmul", "mm", "bmm", "addmm", "baddbmm")),
)
_REDUCED = (torch.float16, torch.bfloat16)
_regions = threading.local()
"""Per thread, as autocast's own state: for each CUDA autocast region entered in float32 mode and not left, whether
it casts (a nested ``autocast(enabled=False)`` does not)."""


def install(in_float32: bool = False) -> None:
    """CUDA autocast runs on the CPU: in bfloat16, or with `in_float32` in float32."""
    autocast = torch.amp.autocast_mode.autocast
    autocast.__init__ = _autocast_init(autocast.__init__, in_float32)
    if in_float32:
        autocast.__enter__ = _entering(autocast.__enter__)
        autocast.__exit__ = _leaving(autocast.__exit__)
        for owner, names in _CAST_BY_AUTOCAST:
            for name in names:
                original = getattr(owner, name, None)
                if original is not None:
                    setattr(owner, name, torchscript.same_operator(_in_float32(original), original))
    if GradScaler is not None:
        GradScaler.__init__ = _scaler_init(GradScaler.__init__)
    else:
        cuda_scaler = torch.cuda.amp.GradScaler
        cuda_scaler.__init__ = _scaler_disabled(cuda_scaler.__init__)
    for name in ("is_autocast_enabled", "get_autocast_dtype"):
        original = getattr(torch, name, None)  # get_autocast_dtype came with torch 2.4
        if original is not None:
            setattr(torch, name, torchscript.same_operator(_cuda_means_cpu(original), original))
    if hasattr(torch, "set_autocast_dtype"):  # the setters by device type came with torch 2.4, as the getters
        for name in ("set_autocast_enabled", "set_autocast_dtype"):
            original = getattr(torch, name)
            setattr(torch, name, torchscript.same_operator(_cuda_sets_cpu(original), original))


def _autocast_init(init, in_float32: bool):
    @functools.wraps(init)
    def on_cpu(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None) -> None:
        casts = None
        if device_type == "cuda":
            device_type = "cpu"
            dtype = torch.bfloat16 if dtype in (None, torch.float16) else dtype
            casts = enabled if in_float32 else None
            enabled = enabled and not in_float32
        init(self, device_type, dtype, enabled, cache_enabled)
        self._smtrain_casts_to_float32 = casts

    return on_cpu


def _tracing() -> bool:
    """Whether torch.compile is tracing: it enters and leaves a region of the function it compiles for real, then
    builds its guards from the open regions as they are once tracing ended, while the ops traced inside read them
    with the region open: a guard on a region the eager code never opened (IndexError at every compile). So a
    region opened while tracing is not recorded; the ops traced in it are not cast (the module docstring says so),
    while a region open before the compiled call is (nanoGPT compiles its model inside one)."""
    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)  # torch >= 2.3
    return bool(is_compiling and is_compiling())


def _open_regions() -> list[bool]:
    if not hasattr(_regions, "casts"):
        _regions.casts = []
    return _regions.casts


def _entering(enter):
    @functools.wraps(enter)
    def entering(self):
        casts = getattr(self, "_smtrain_casts_to_float32", None)
        if casts is not None and not _tracing():
            _open_regions().append(casts)
        return enter(self)

    return entering


def _leaving(leave):
    @functools.wraps(leave)
    def leaving(self, *exc):
        try:
            return leave(self, *exc)
        finally:
            if getattr(self, "_smtrain_casts_to_float32", None) is not None and not _tracing():
                _open_regions().pop()

    return leaving


def _in_float32(function):
    """`function`, taking float16 and bfloat16 tensors (also in a list, as einsum's operands) as float32 inside a
    region that casts."""

    @functools.wraps(function)
    def computed_in_float32(*args, **kwargs):
        casts = getattr(_regions, "casts", None)
        if casts and casts[-1]:
            args = tuple(_as_float32(value) for value in args)
            kwargs = {name: _as_float32(value) for name, value in kwargs.items()}
        return function(*args, **kwargs)

    return computed_in_float32


def _as_float32(value):
    if isinstance(value, torch.Tensor):
        return value.float() if value.dtype in _REDUCED else value
    if type(value) in (list, tuple):
        return type(value)(_as_float32(item) for item in value)
    return value


def _scaler_init(init):
    @functools.wraps(init)
    def on_cpu(self, device: str = "cuda", *args, **kwargs) -> None:
        init(self, "cpu" if device == "cuda" else device, *args, **kwargs)

    return on_cpu


def _scaler_disabled(init):
    """torch.cuda.amp.GradScaler before torch 2.3: it asserts CUDA tensors and has no CPU kernels to unscale."""

    @functools.wraps(init)
    def disabled(self, *args, **kwargs) -> None:
        init(self, *args[:4], **{**kwargs, "enabled": False})

    return disabled


def _cuda_means_cpu(query):
    """``torch.is_autocast_enabled()`` without a device means CUDA; so does "cuda"."""

    @functools.wraps(query)
    def for_cpu(device_type: str | None = None):
        return query("cpu" if device_type in (None, "cuda") else device_type)

    return for_cpu


def _cuda_sets_cpu(setter):
    """``torch.set_autocast_enabled("cuda", ...)``, and its one-argument form, which means CUDA, set the CPU's
    state that ``is_autocast_enabled("cuda")`` answers; so does ``set_autocast_dtype("cuda", ...)``."""

    @functools.wraps(setter)
    def for_cpu(*args, **kwargs):
        if "device_type" in kwargs:
            kwargs["device_type"] = "cpu" if kwargs["device_type"] == "cuda" else kwargs["device_type"]
        elif args and isinstance(args[0], str):
            args = ("cpu" if args[0] == "cuda" else args[0], *args[1:])
        else:
            args = ("cpu", *args)
        return setter(*args, **kwargs)

    return for_cpu
