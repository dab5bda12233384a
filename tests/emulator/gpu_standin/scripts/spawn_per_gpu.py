"""One process per GPU with torch.multiprocessing.spawn, in the shape of PyTorch's DDP tutorial (ddp_tutorial.rst).

    python spawn_per_gpu.py

The master is hard-coded to this machine, as in the tutorial (the port may come from MASTER_PORT). Each process
also prints one JSON line: its rank, the world size and its DistributedSampler shard of a 40-sample dataset.
"""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn, optim
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import TensorDataset
from torch.utils.data.distributed import DistributedSampler

DATASET_SIZE = 40


def setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ.setdefault("MASTER_PORT", "12355")
    dist.init_process_group("nccl", rank=rank, world_size=world_size)


def cleanup():
    dist.destroy_process_group()


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def demo_basic(rank, world_size):
    print(f"Running basic DDP example on rank {rank}.", flush=True)
    setup(rank, world_size)
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(DATASET_SIZE, 10), torch.randn(DATASET_SIZE, 5))
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    shard = list(sampler)
    model = ToyModel().to(rank)
    ddp_model = DDP(model, device_ids=[rank])
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)
    optimizer.zero_grad()
    inputs, labels = dataset[shard]
    outputs = ddp_model(inputs.to(rank))
    loss_fn(outputs, labels.to(rank)).backward()
    optimizer.step()
    checksum = sum(parameter.double().sum().item() for parameter in ddp_model.parameters())
    # One write per record: the ranks share stdout, and under PYTHONUNBUFFERED (as SageMaker sets it) print's
    # separate write of the newline lets another rank's line land in between.
    sys.stdout.write(json.dumps({"rank": rank, "world_size": dist.get_world_size(), "shard": shard, "checksum": checksum,
                                "device": torch.cuda.get_device_name(rank)}) + "\n")
    sys.stdout.flush()
    print(f"Finished running basic DDP example on rank {rank} of {dist.get_world_size()}.", flush=True)
    cleanup()


def run_demo(demo_fn, world_size):
    mp.spawn(demo_fn, args=(world_size,), nprocs=world_size, join=True)


if __name__ == "__main__":
    n_gpus = torch.cuda.device_count()
    assert n_gpus >= 2, f"Requires at least 2 GPUs to run, but got {n_gpus}"
    world_size = n_gpus
    run_demo(demo_basic, world_size)
