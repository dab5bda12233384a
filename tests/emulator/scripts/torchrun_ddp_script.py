"""A torchrun-style DDP script that reads only RANK, LOCAL_RANK and WORLD_SIZE (the PyTorch tutorial shape)."""

import gc
import json
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    rank, local_rank, world_size = (int(os.environ[name]) for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"))
    dist.init_process_group("gloo")
    train(rank, local_rank, world_size)
    gc.collect()  # release every tensor a collective touched before the group goes (see entrypoints/trainers.py)
    dist.destroy_process_group()
    # Gloo's threads release the last collective's tensors after it returns; one still waiting for the GIL when
    # finalization begins aborts the process (bench/bench_exit_aborts.py). Yield it to them.
    time.sleep(0.05)


def train(rank, local_rank, world_size):
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(5):
        torch.manual_seed(step * world_size + rank)
        loss = model(torch.randn(8, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    weights = [round(v, 6) for v in torch.cat([p.detach().flatten() for p in model.parameters()]).tolist()]
    out = os.environ.get("SM_OUTPUT_DATA_DIR", ".")
    with open(os.path.join(out, f"weights-rank{rank}.json"), "w") as handle:
        json.dump({"rank": rank, "local_rank": local_rank, "world_size": world_size, "weights": weights}, handle)


if __name__ == "__main__":
    main()
