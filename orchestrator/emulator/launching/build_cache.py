"""Where the emulated hosts build torch's JIT extensions (torch.utils.cpp_extension, DeepSpeed's ops): in
smtrain's cache, shared by the runs of one torch and Python, and never blocked by a compile that was killed.

In the container each job builds into its own fresh `~/.cache/torch_extensions`. Here every run would build
into the user's, where a compile that is stopped mid-way (Ctrl-C, a stop, a hang) leaves torch's build lock
(`<extension>/lock`, torch.utils.file_baton.FileBaton): the next run that needs the extension waits on that file
forever. So the hosts build in smtrain's cache, one folder per torch version and Python version (what an
extension is built against), and every run holds a shared flock on it while it runs. A run that can take that
flock exclusively knows no run builds there, and removes the build locks left behind, when it starts and when it
ends. Where each host has a mount namespace, that folder is shown at torch's own default, /root/.cache/
torch_extensions, with TORCH_EXTENSIONS_DIR unset as in the container (torch then builds in its `py311_cpu/`
below it); elsewhere TORCH_EXTENSIONS_DIR names it.

torch.compile (inductor) keeps the C++ it compiled for the CPU, keyed by the graph, torch and compiler, in
TORCHINDUCTOR_CACHE_DIR. Its default is /tmp/torchinductor_<user>, which is each host's own /tmp here, emptied at
the run's end: every run, every rank, compiled again (about 20 CPU-s for a two-layer model on 2 cores). Its folder
is in smtrain's cache too, beside the extensions', shown at that default in each host's namespace with the
variable unset as in the container (opt_ml.container_inductor_dir), else named by it. Inductor writes it atomically
under fcntl locks, which a killed compile releases, so runs share it and nothing there needs removing. (Triton's
cache is not set: Triton compiles for GPUs only, which the CPU stand-in replaces.)
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from orchestrator.cache_dir import cache_root
from orchestrator.emulator.launching.launch import interpreter_versions

_BUILD_LOCK = "lock"
"""FileBaton's file in each extension's build folder (torch.utils.cpp_extension._jit_compile)."""


def extensions_dir(python: str) -> Path:
    """`<smtrain cache>/torch_extensions/py3.11-torch2.13.0+cpu`: one folder per ABI an extension is built for."""
    return cache_root() / "torch_extensions" / _abi(python)


def inductor_cache_dir(python: str) -> Path:
    """`<smtrain cache>/torchinductor/py3.11-torch2.13.0+cpu`: torch.compile's output, per ABI as extensions."""
    return cache_root() / "torchinductor" / _abi(python)


def _abi(python: str) -> str:
    torch, (major, minor) = interpreter_versions(python)
    return f"py{major}.{minor}-torch{torch or 'none'}"


@contextmanager
def shared(directory: Path) -> Iterator[list[Path]]:
    """Holds `directory` for one run; yields the build locks of killed compiles it removed as it started (those
    it removes as it ends are gone before the next run looks)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory.with_name(directory.name + ".users"), "w") as users:
        removed = _remove_build_locks_if_alone(users, directory)
        fcntl.flock(users, fcntl.LOCK_SH)  # waits only while another run removes its locks
        try:
            yield removed
        finally:
            _remove_build_locks_if_alone(users, directory)


def _remove_build_locks_if_alone(users: IO[str], directory: Path) -> list[Path]:
    try:
        fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return []  # another run uses the folder: a lock there may be its compile's
    removed = []  # an extension's folder, or one below torch's `py311_cpu/` where TORCH_EXTENSIONS_DIR is unset
    for lock in [*directory.glob(f"*/{_BUILD_LOCK}"), *directory.glob(f"*/*/{_BUILD_LOCK}")]:
        lock.unlink(missing_ok=True)
        removed.append(lock)
    return removed
