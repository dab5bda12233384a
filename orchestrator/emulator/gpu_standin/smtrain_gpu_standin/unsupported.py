"""Calls the stand-in cannot emulate on a CPU fail with one clear message that names the call.

Without this, a CPU build of torch answers them with "Torch not compiled with CUDA enabled", an AttributeError on
``torch._C`` or a missing module, which reads like a broken installation. Covered: CUDA graphs, ``torch.cuda.nccl``,
``torch.cuda.jiterator``, CUDA sources in ``torch.utils.cpp_extension``, ``import triton``, and every other
``torch.cuda`` function that needs a CUDA runtime (they all go through ``torch.cuda._lazy_init``).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from importlib.machinery import ModuleSpec

import torch

from . import hook


class StandinUnsupported(RuntimeError):
    """A CUDA feature that the CPU stand-in cannot emulate was used."""

    def __init__(self, call: str) -> None:
        super().__init__(
            f"{call} needs a real GPU: this process runs on smtrain's CPU stand-in for CUDA (smtrain local on a "
            f"machine without GPUs), which cannot emulate it. To fix: run this part on the GPU instance "
            f"(smtrain submit), or skip it when the SMTRAIN_GPU_STANDIN environment variable is set.")


class _TritonUnavailable(ImportError):
    """``import triton`` under the stand-in: an ImportError, so that code probing for Triton carries on."""


def _refuse(call: str) -> Callable[..., None]:
    def refuse(*args, **kwargs) -> None:
        raise StandinUnsupported(call)

    return refuse


def _refused_class(call: str) -> type:
    """A class standing for a CUDA class (``torch.cuda.CUDAGraph``): it still works in annotations such as
    ``CUDAGraph | None`` (transformers evaluates one at import time), and refuses to be instantiated."""

    def __init__(self, *args, **kwargs) -> None:
        raise StandinUnsupported(call)

    return type(call.rpartition(".")[2], (), {"__init__": __init__, "__module__": "torch.cuda"})


def _lazy_init() -> None:
    """Replaces ``torch.cuda._lazy_init``, which every CUDA-runtime call goes through: names the caller."""
    caller = sys._getframe(1)
    module = caller.f_globals.get("__name__", "torch.cuda")
    raise StandinUnsupported(f"{module}.{caller.f_code.co_name}()")


_REFUSED = {
    torch.cuda: ("CUDAGraph", "graph", "make_graphed_callables", "graph_pool_handle", "ExternalStream"),
    torch.cuda.graphs: ("CUDAGraph", "graph", "make_graphed_callables", "graph_pool_handle"),
    torch.cuda.nccl: ("unique_id", "init_rank", "all_reduce", "reduce", "broadcast", "all_gather",
                      "reduce_scatter"),
}


def install() -> None:
    for module, names in _REFUSED.items():
        for name in names:
            refuse = _refused_class if name[0].isupper() else _refuse
            setattr(module, name, refuse(f"{module.__name__}.{name}"))
    import torch.cuda.jiterator

    torch.cuda.jiterator._create_jit_fn = _refuse("torch.cuda.jiterator._create_jit_fn")
    torch.cuda.jiterator._create_multi_output_jit_fn = _refuse("torch.cuda.jiterator._create_multi_output_jit_fn")
    for name, module in list(sys.modules.items()):
        if (name == "torch.cuda" or name.startswith("torch.cuda.")) and hasattr(module, "_lazy_init"):
            module._lazy_init = _lazy_init
    hook.when_imported("torch.utils.cpp_extension", _refuse_cuda_extensions)
    sys.meta_path.append(_TritonFinder())


def _refuse_cuda_extensions(cpp_extension) -> None:
    """C++ extensions still build; CUDA sources (or ``with_cuda=True``) are refused."""
    load, load_inline = cpp_extension.load, cpp_extension.load_inline

    @functools.wraps(load)
    def checked_load(name, sources, *args, **kwargs):
        files = [sources] if isinstance(sources, str) else sources
        if kwargs.get("with_cuda") or any(str(file).endswith((".cu", ".cuh")) for file in files):
            raise StandinUnsupported(f"torch.utils.cpp_extension.load({name!r}) with CUDA sources")
        return load(name, sources, *args, **kwargs)

    @functools.wraps(load_inline)
    def checked_load_inline(name, cpp_sources, cuda_sources=None, *args, **kwargs):
        if cuda_sources or kwargs.get("with_cuda"):
            raise StandinUnsupported(f"torch.utils.cpp_extension.load_inline({name!r}) with CUDA sources")
        return load_inline(name, cpp_sources, cuda_sources, *args, **kwargs)

    cpp_extension.load = checked_load
    cpp_extension.load_inline = checked_load_inline
    cpp_extension.CUDAExtension = _refuse("torch.utils.cpp_extension.CUDAExtension")


class _TritonFinder:
    """Last on ``sys.meta_path``: when no installed Triton is found, ``import triton`` fails with the stand-in's
    message instead of a bare ModuleNotFoundError."""

    def find_spec(self, name, path, target=None):
        return ModuleSpec(name, self) if name == "triton" else None

    def create_module(self, spec) -> None:
        return None

    def exec_module(self, module) -> None:
        raise _TritonUnavailable(str(StandinUnsupported("import triton (Triton kernels)")), name="triton")
