"""Wrappers of torch's builtin functions stay builtins for TorchScript.

TorchScript maps ``torch.zeros`` and the like to ATen operators by identity, in a table torch fills before the
stand-in patches anything; a wrapper missing from it would be compiled as Python source, and fail. Registering each
wrapper under its original's operator keeps ``torch.jit.script`` working on code that calls them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.jit._builtins


def same_operator(wrapper: Callable, original: Callable) -> Callable:
    """`wrapper`, registered with TorchScript as the operator `original` stands for (if it stands for one)."""
    operator = torch.jit._builtins._find_builtin(original)
    if operator is not None:
        torch.jit._builtins._register_builtin(wrapper, operator)
    return wrapper
