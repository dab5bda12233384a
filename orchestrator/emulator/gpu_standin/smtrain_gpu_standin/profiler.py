"""The profiler records the CPU's activity: no CUDA kernel runs on the stand-in, so CUDA activity is left out.

Asked for CUDA activity (``torch.profiler.profile(activities=[CPU, CUDA])``, or the older
``torch.autograd.profiler.profile(use_cuda=True)`` / ``use_device="cuda"``), a CPU build of torch that sees
``torch.cuda.is_available()`` falls back to recording a CUDA event around every op; each fails and logs a warning
with its C++ backtrace: 10,414 log lines for four profiled steps of one Linear layer. Both APIs record through
``torch.autograd.profiler.profile``, which here profiles the CPU only: traces, ``key_averages()`` tables and
``tensorboard_trace_handler`` hold the CPU's ops, and their CUDA times read 0, as GPU memory statistics do.
"""

from __future__ import annotations

import functools

import torch.autograd.profiler


def install() -> None:
    profile = torch.autograd.profiler.profile
    profile.__init__ = _cpu_only(profile.__init__)


def _cpu_only(init):
    @functools.wraps(init)
    def __init__(self, *args, **kwargs) -> None:
        if kwargs.get("use_device") == "cuda":
            kwargs["use_device"] = None
        if kwargs.get("use_cuda"):  # deprecated: a later torch may not take it at all
            kwargs["use_cuda"] = False
        init(self, *args, **kwargs)

    return __init__
