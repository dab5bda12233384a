"""SMDDP's original API, ``import smdistributed.dataparallel.torch.distributed as dist``, over torch.distributed.

``init_process_group()`` takes no arguments that matter (SMDDP ignores them too) and starts the ``smddp`` group;
ranks come from mpirun (see ``torch_smddp``). Process groups other than the world are not supported by SMDDP, so
``group`` arguments are accepted and ignored, as there. ``ReduceOp.AVERAGE``, which gloo lacks, is a sum divided by
the world size.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as _dist
from smdistributed.dataparallel.torch import torch_smddp  # noqa: F401  (registers smddp, reads Open MPI's ranks)

group = _dist.group


class ReduceOp:
    SUM = _dist.ReduceOp.SUM
    MIN = _dist.ReduceOp.MIN
    MAX = _dist.ReduceOp.MAX
    AVERAGE = "average"


def is_available() -> bool:
    """Whether the script was started as a distributed job (by mpirun)."""
    return "OMPI_COMM_WORLD_RANK" in os.environ


def init_process_group(*args, **kwargs) -> None:
    if not is_available():
        raise RuntimeError("smdistributed.dataparallel (smtrain CPU stand-in) needs the ranks mpirun gives: "
                           "OMPI_COMM_WORLD_RANK is not set. To fix: run the script in smddp mode (smtrain local "
                           "starts it with mpirun), or with `mpirun -np N python script.py`.")
    _dist.init_process_group(backend="smddp")


def is_initialized() -> bool:
    return _dist.is_initialized()


def get_world_size(group=None) -> int:
    return _dist.get_world_size()


def get_rank(group=None) -> int:
    return _dist.get_rank()


def get_local_rank() -> int:
    return int(os.environ["LOCAL_RANK"])


def get_local_size() -> int:
    return int(os.environ["LOCAL_WORLD_SIZE"])


def barrier(group=None, async_op: bool = False):
    return _dist.barrier(async_op=async_op)


def all_reduce(tensor: torch.Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    if op == ReduceOp.AVERAGE:
        _dist.all_reduce(tensor, op=_dist.ReduceOp.SUM)
        tensor.div_(_dist.get_world_size())
        return _Done() if async_op else None
    return _dist.all_reduce(tensor, op=op, async_op=async_op)


def broadcast(tensor: torch.Tensor, src: int = 0, group=None, async_op: bool = False):
    return _dist.broadcast(tensor, src=src, async_op=async_op)


def all_gather(tensor_list: list[torch.Tensor], tensor: torch.Tensor, group=None, async_op: bool = False):
    return _dist.all_gather(tensor_list, tensor, async_op=async_op)


def all_to_all_single(output_t: torch.Tensor, input_t: torch.Tensor, output_split_sizes=None,
                      input_split_sizes=None, group=None, async_op: bool = False):
    return _dist.all_to_all_single(output_t, input_t, output_split_sizes, input_split_sizes, async_op=async_op)


class _Done:
    """The work handle of an averaging all-reduce, which has already finished."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True
