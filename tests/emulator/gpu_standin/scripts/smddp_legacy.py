"""SMDDP's original API, in the shape of SageMaker's SMDDP guide (before 1.4), run under mpirun on GPUs.

    mpirun -np 2 python -m mpi4py smddp_legacy.py

Prints, per rank, one JSON line with its ranks, an averaged value and a checksum of the weights.
"""

import json
import sys

import smdistributed.dataparallel.torch.distributed as dist
import torch
import torch.nn.functional as F
from smdistributed.dataparallel.torch.parallel.distributed import DistributedDataParallel as DDP

dist.init_process_group()


def main():
    local_rank = dist.get_local_rank()
    torch.cuda.set_device(local_rank)
    torch.manual_seed(dist.get_rank())  # different initial weights: DDP must broadcast rank 0's
    model = DDP(torch.nn.Linear(8, 1).cuda(local_rank))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05 * dist.get_world_size())
    for _ in range(3):
        source = torch.randn(16, 8).cuda(local_rank)
        optimizer.zero_grad()
        F.mse_loss(model(source), source.sum(dim=1, keepdim=True)).backward()
        optimizer.step()
    value = torch.tensor([float(dist.get_rank())]).cuda()
    dist.all_reduce(value, op=dist.ReduceOp.AVERAGE)
    dist.barrier()
    checksum = sum(parameter.double().sum().item() for parameter in model.parameters())
    # One write per record: the ranks share stdout, and under PYTHONUNBUFFERED (as SageMaker sets it) print's
    # separate write of the newline lets another rank's line land in between.
    sys.stdout.write(json.dumps({"rank": dist.get_rank(), "world_size": dist.get_world_size(), "local_rank": local_rank,
                                "average_rank": value.item(), "checksum": checksum}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
