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

from orchestrator.cache_dir import cache_root

_COMPLETE = ".complete"


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
