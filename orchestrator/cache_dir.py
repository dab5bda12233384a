"""Where smtrain's cache is on this machine, and a check that it can be written: one folder for everything smtrain
keeps outside a run directory (what local runs build and install, the source tarball while it is packed and sent).
Its own module, below planning and the emulator, so that both find the same folder."""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.errors import EnvironmentProblem

CACHE_VARIABLE = "SMTRAIN_CACHE_DIR"


def cache_root() -> Path:
    """$SMTRAIN_CACHE_DIR, else $XDG_CACHE_HOME/smtrain, else ~/.cache/smtrain."""
    explicit = os.environ.get(CACHE_VARIABLE)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "smtrain"


def writable_cache_root() -> Path:
    """cache_root(), created and writable: checked before a run starts or a source is packed, since a CI user's
    HOME is often absent or read-only (`HOME=/nonexistent`) and smtrain would otherwise stop half-way with
    mkdir's traceback."""
    root = cache_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
        if not os.access(root, os.W_OK | os.X_OK):
            raise PermissionError(f"{root} is not writable")
    except OSError as error:
        raise EnvironmentProblem(
            f"smtrain's cache {root} cannot be written ({error.strerror or error}): local runs keep what they build "
            "and install there (the gethostname shim, requirements, JIT extensions)",
            fix=f"point {CACHE_VARIABLE} (or XDG_CACHE_HOME) at a writable folder, e.g. "
                f"export {CACHE_VARIABLE}=/tmp/smtrain-cache") from None
    return root
