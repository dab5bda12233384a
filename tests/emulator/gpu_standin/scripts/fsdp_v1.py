"""FSDP v1 (FullyShardedDataParallel, the wrapper of torch 1.x) over NCCL: a few Linear layers, each its own FSDP unit
inside the root one, trained on this rank's shard of a regression problem. Its backward reduce-scatters every
unit's gradient (``_reduce_scatter_base`` or ``reduce_scatter_tensor``), which gloo of torch 1.13 lacks.

Prints, per rank, one JSON line: its rank, the world size and the mean loss of every step over all ranks.
"""

import json
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)]
    model = FSDP(torch.nn.Sequential(*[FSDP(layer.cuda()) if isinstance(layer, torch.nn.Linear) else layer
                                       for layer in layers]))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    inputs = torch.randn(64, 8)
    targets = inputs @ torch.randn(8, 1)
    mine = slice(rank, None, world)
    losses = []
    for _ in range(15):
        optimizer.zero_grad()
        loss = F.mse_loss(model(inputs[mine].cuda()), targets[mine].cuda())
        loss.backward()
        optimizer.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
    print(json.dumps({"rank": rank, "world_size": world, "losses": losses}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
