"""torch.compile asked for CUDA graphs says, once, that it runs without them here.

`mode="reduce-overhead"`, `mode="max-autotune"` and the option `triton.cudagraphs` ask inductor to capture each
compiled graph as a CUDA graph and replay it. On the stand-in the model's tensors are CPU tensors, so inductor
compiles its CPU code and skips the capture ("skipping cudagraphs due to cpu device"), saying so only to a torch log
that is off by default. The run then trains and computes the same, but what CUDA graphs change on the instance
(inputs a later step overwrites, shapes that re-record graphs, step times) is not exercised, and nothing said so.
"""

from __future__ import annotations

import functools
import warnings

import torch

CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")
CUDA_GRAPH_OPTION = "triton.cudagraphs"


def install() -> None:
    if not hasattr(torch, "compile"):
        return  # torch before 2.0 (Debian's 1.13) has no torch.compile: scripts cannot ask it
    torch.compile = _saying_cuda_graphs_are_skipped(torch.compile)


def _saying_cuda_graphs_are_skipped(compile_function):
    @functools.wraps(compile_function)
    def compile_on_the_standin(*args, **kwargs):
        compile_mode, options = kwargs.get("mode"), kwargs.get("options") or {}
        if compile_mode in CUDA_GRAPH_MODES:
            _say_cuda_graphs_skipped(f"torch.compile(mode={compile_mode!r})")
        elif options.get(CUDA_GRAPH_OPTION):
            _say_cuda_graphs_skipped(f"torch.compile(options={{{CUDA_GRAPH_OPTION!r}: True}})")
        return compile_function(*args, **kwargs)

    return compile_on_the_standin


@functools.cache
def _say_cuda_graphs_skipped(call: str) -> None:
    warnings.warn(f"smtrain CPU stand-in: {call} compiles inductor's CPU code here, without CUDA graphs (none exist "
                  "on a CPU): the model computes the same, but capturing and replaying them (inputs a later step "
                  "overwrites, shapes that record new graphs, their speed-up) is checked only on the instance.",
                  stacklevel=3)
