"""Which of a run's processes are launchers, which wait for the processes they started, rather than ranks: one
rule for the supervisor (what is a work process), the activity sampler and the stack collector (whose stacks to
dump)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

LAUNCHER_NAMES = frozenset({"sh", "dash", "bash", "mpirun", "prterun", "prted", "orterun", "orted"})
"""Shells, and Open MPI's launcher and daemons, by their process name."""
PYTHON_LAUNCHER_SCRIPTS = frozenset({"torchrun", "torch.distributed.run", "hostfs.py"})
"""Python launchers, by their script or `-m` module (torchrun renames its process `pt_elastic`; hostfs.py's two
processes hold a host's namespaces: `python -I -S hostfs.py`)."""


def is_launcher_command(name: str, command: Sequence[str]) -> bool:
    """Whether a process called `name` running `command` is a launcher: a shell, mpirun or its daemon, torchrun's
    agent (`python .../torchrun ...`, `python -m torch.distributed.run ...`) or a host's namespace holder."""
    return name in LAUNCHER_NAMES or any(Path(word).name in PYTHON_LAUNCHER_SCRIPTS for word in command[1:4])
