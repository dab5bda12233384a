"""Run a function right after a module finishes importing, without importing it first.

Processes that never import torch (mpirun helpers, torchrun's agent before it needs torch, shell tools written in
Python) must not pay for it, so the stand-in waits for the first ``import torch`` and patches as soon as torch
has finished loading, before the importing code sees it. A finder at the front of ``sys.meta_path`` locates the
watched module with the other finders and wraps its loader's ``exec_module``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

Callback = Callable[[ModuleType], None]


class _PostImportFinder:
    """Finds nothing itself; for a watched name it hands back the spec the other finders give, with a loader that
    calls the callbacks once the module has executed."""

    def __init__(self) -> None:
        self.callbacks: dict[str, list[Callback]] = {}

    def find_spec(self, name, path, target=None):
        if name not in self.callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader.exec_module = self._exec_then_call(spec.loader.exec_module, name)
        return spec

    def _exec_then_call(self, exec_module: Callable[[ModuleType], None], name: str) -> Callable[[ModuleType], None]:
        def exec_module_then_call(module: ModuleType) -> None:
            exec_module(module)
            for callback in self.callbacks.pop(name, []):
                callback(module)

        return exec_module_then_call


_FINDER = _PostImportFinder()


def when_imported(name: str, callback: Callback) -> None:
    """Calls ``callback(module)`` once module `name` has been imported: now if it already is, else right after
    its code has run, before the import statement that loaded it returns."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    _FINDER.callbacks.setdefault(name, []).append(callback)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
