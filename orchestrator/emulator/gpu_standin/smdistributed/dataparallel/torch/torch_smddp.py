"""``import smdistributed.dataparallel.torch.torch_smddp`` registers the ``smddp`` process-group backend.

As with SMDDP, the job is started by mpirun, so a process's rank, world size and local rank are Open MPI's
``OMPI_COMM_WORLD_*``; they are copied to torch's ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``LOCAL_WORLD_SIZE`` where
those are unset, so that ``dist.init_process_group(backend="smddp")`` (``env://``) finds them, with the
``MASTER_ADDR``/``MASTER_PORT`` that the launcher sets. Underneath, the backend is gloo, on the CPU.
"""

from __future__ import annotations

import os
from datetime import timedelta

import torch.distributed as dist

_OPEN_MPI_TO_TORCH = {
    "OMPI_COMM_WORLD_RANK": "RANK",
    "OMPI_COMM_WORLD_SIZE": "WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK": "LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE": "LOCAL_WORLD_SIZE",
}


def _create_backend(store: dist.Store, rank: int, world_size: int, timeout: timedelta) -> dist.ProcessGroup:
    return dist.ProcessGroupGloo(store, rank, world_size, timeout)


for _open_mpi, _torch in _OPEN_MPI_TO_TORCH.items():
    if _open_mpi in os.environ:
        os.environ.setdefault(_torch, os.environ[_open_mpi])

if hasattr(dist.Backend, "backend_list"):
    if "smddp" not in dist.Backend.backend_list:
        dist.Backend.register_backend("smddp", _create_backend, devices=["cpu", "cuda"])
elif not hasattr(dist.Backend, "SMDDP"):  # torch before 2.0: a class attribute per backend, no device list
    dist.Backend.register_backend("smddp", _create_backend)
