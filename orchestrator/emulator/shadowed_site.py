"""Running the ``sitecustomize`` that one of smtrain's start-up hooks shadows: one rule for both hooks.

smtrain puts two hooks named ``sitecustomize`` on a training process's PYTHONPATH: the CPU stand-in's
(``gpu_standin/``) and the overlay's (``overlay_site/``). Python imports only the first ``sitecustomize`` on
``sys.path``, so each hook runs the one it shadows, as it would have run without smtrain. The rule: the first
``sitecustomize`` found in the entries after the hook's own folder, skipping every other occurrence of that
folder. So hooks chain in either order on the path without running each other twice (searching the whole path
would send the second hook back to the first, forever), and a folder on the path twice (under a symlink:
``site`` removes only literal duplicates) does not hide the entries between. An error in the shadowed module goes where Python sends one: to ``site``, which reports it.

The hooks load this file by its path (it is not importable in a training process) and run it in the training
process's interpreter: standard library only, no smtrain module (import-linter keeps it so).
"""

import os
import sys
from importlib.machinery import PathFinder
from importlib.util import module_from_spec


def entries_after(hook_dir: str, path: list[str]) -> list[str]:
    """The entries of `path` a hook in `hook_dir` searches for the sitecustomize it shadows."""
    here = os.path.realpath(hook_dir)
    same = [os.path.realpath(entry or os.curdir) == here for entry in path]
    start = same.index(True) + 1 if True in same else 0
    return [entry for entry, is_here in zip(path[start:], same[start:]) if not is_here]


def run_shadowed_sitecustomize(hook_file: str) -> None:
    """Runs, as the ``sitecustomize`` module, the one the hook at `hook_file` shadows (nothing when none)."""
    spec = PathFinder.find_spec("sitecustomize", entries_after(os.path.dirname(hook_file), sys.path))
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)
