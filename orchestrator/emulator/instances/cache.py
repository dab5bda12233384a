"""smtrain's cache on this machine: what it builds or installs for local runs, kept by content and reused.

An entry is built in place under a lock and marked complete at the end, so a run never uses a half-built one
(what a killed build leaves is rebuilt) and two runs needing the same entry build it once. In place, because
what pip installs records its own path (console scripts' `#!` lines).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from orchestrator.errors import EnvironmentProblem

CACHE_VARIABLE = "SMTRAIN_CACHE_DIR"
_COMPLETE = ".complete"


def cache_root() -> Path:
    """$SMTRAIN_CACHE_DIR, else $XDG_CACHE_HOME/smtrain, else ~/.cache/smtrain."""
    explicit = os.environ.get(CACHE_VARIABLE)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "smtrain"


def writable_cache_root() -> Path:
    """cache_root(), created and writable: checked before a run starts, since a CI user's HOME is often absent or
    read-only (`HOME=/nonexistent`) and the run would otherwise stop half-way with mkdir's traceback."""
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


def cached_directory(kind: str, key: str, build: Callable[[Path], None],
                     waiting: Callable[[Path, str], None] | None = None) -> tuple[Path, bool]:
    """The cache entry `<root>/<kind>/<key>` and whether it was built just now (by `build(directory)`).

    Where another process builds the entry, `waiting(entry, holder)` is told first (`holder`: `process N`, the
    pid that process wrote into the lock file), since the wait lasts as long as that build (a pip install: minutes)
    and, unsaid, looks like a hang.

    Raises:
        whatever `build` raises; the half-built entry is removed.
    """
    target = cache_root() / kind / key
    if (target / _COMPLETE).is_file():
        return target, False
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{key}.lock", "a+") as lock:  # not "w": that would erase the holder's pid
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                lock.seek(0)
                waiting(target, f"process {lock.read().strip() or '(unknown)'}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        lock.truncate()
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        if (target / _COMPLETE).is_file():
            return target, False
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        try:
            build(target)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        (target / _COMPLETE).touch()
    return target, True
