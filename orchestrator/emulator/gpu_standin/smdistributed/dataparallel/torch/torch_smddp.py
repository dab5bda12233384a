"""``import smdistributed.dataparallel.torch.torch_smddp`` registers the ``smddp`` process-group backend.

As with SMDDP, the job is started by mpirun, so a process's rank, world size and local rank are Open MPI's
``OMPI_COMM_WORLD_*``; they are copied to torch's ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``LOCAL_WORLD_SIZE`` and
to SMDDP's ``SMDATAPARALLEL_LOCAL_RANK`` where those are unset (``smtrain_gpu_standin.smddp_env``), so that
``dist.init_process_group(backend="smddp")`` (``env://``) finds them, with the ``MASTER_ADDR``/``MASTER_PORT``
that the launcher sets. Underneath, the backend is gloo, on the CPU, running its collectives in order as the
stand-in's NCCL groups do (``smtrain_gpu_standin.distributed.in_order_gloo``).
"""

from __future__ import annotations

import os
from datetime import timedelta

import torch.distributed as dist
from smtrain_gpu_standin import smddp_env
from smtrain_gpu_standin.distributed import in_order_gloo


def _create_backend(store: dist.Store, rank: int, world_size: int, timeout: timedelta) -> dist.ProcessGroup:
    return in_order_gloo()(store, rank, world_size, timeout)


smddp_env.fill(os.environ)

if hasattr(dist.Backend, "backend_list"):
    if "smddp" not in dist.Backend.backend_list:
        dist.Backend.register_backend("smddp", _create_backend, devices=["cpu", "cuda"])
elif not hasattr(dist.Backend, "SMDDP"):  # torch before 2.0: a class attribute per backend, no device list
    dist.Backend.register_backend("smddp", _create_backend)
