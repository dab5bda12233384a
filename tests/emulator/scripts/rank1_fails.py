"""torch.distributed: every rank joins an all-reduce, then rank 1 raises (the others wait in a barrier)."""

import torch
import torch.distributed as dist


def check_labels(rank):
    if rank == 1:
        raise ValueError(f"labels missing on rank {rank}")


dist.init_process_group("gloo")
dist.all_reduce(torch.ones(2))
check_labels(dist.get_rank())
dist.barrier()
