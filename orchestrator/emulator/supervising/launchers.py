"""Which of a run's processes are launchers, which wait for the processes they started, rather than ranks: one
rule for the supervisor (what is a work process, and what each launcher it waits for is called), the activity
sampler and the stack collector (whose stacks to dump)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

_ROLES_BY_NAME = {"sh": "shell", "dash": "shell", "bash": "shell", "mpirun": "mpirun", "prterun": "mpirun",
                  "orterun": "mpirun", "prted": "Open MPI daemon", "orted": "Open MPI daemon"}
LAUNCHER_NAMES = frozenset(_ROLES_BY_NAME)
"""Shells, and Open MPI's launcher and daemons, by their process name."""
MPI_JOB_ROLES = frozenset({"mpirun", "Open MPI daemon"})
"""Open MPI's own processes: mpirun ends its daemons itself once its ranks have ended, and a daemon that ends
first is to mpirun a host lost (`PRTE has lost communication with a remote daemon`, `A daemon failed to report
back`)."""
_PYTHON_LAUNCHERS = {"torchrun": "torchrun agent", "torch.distributed.run": "torchrun agent",
                     "hostfs.py": "namespace holder", "mpi_hooks.py": "MPI hook"}
"""Python launchers, by their script or `-m` module (torchrun renames its process `pt_elastic`; hostfs.py's two
processes hold a host's namespaces: `python -I -S hostfs.py`; mpi_hooks.py relabels mpirun's output and waits for
each rank to record how it ended)."""


def launcher_role(name: str, command: Sequence[str]) -> str | None:
    """What a process called `name` running `command` is, where it is a launcher (`shell`, `mpirun`, `Open MPI
    daemon`, `torchrun agent`, `namespace holder`: a note naming it by its process name read `python`); None for
    a rank."""
    if name in _ROLES_BY_NAME:
        return _ROLES_BY_NAME[name]
    return next((_PYTHON_LAUNCHERS[Path(word).name] for word in command[1:4] if Path(word).name in _PYTHON_LAUNCHERS),
                None)


def is_launcher_command(name: str, command: Sequence[str]) -> bool:
    """Whether a process called `name` running `command` is a launcher: a shell, mpirun or its daemon, torchrun's
    agent (`python .../torchrun ...`, `python -m torch.distributed.run ...`) or a host's namespace holder."""
    return launcher_role(name, command) is not None
