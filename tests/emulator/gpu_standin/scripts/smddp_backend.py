"""SMDDP through torch.distributed (SMDDP >= 1.4), as SageMaker's smddp mode runs it under mpirun on GPUs.

    mpirun -np 16 python -m mpi4py smddp_backend.py   (the stand-in tests run 4 ranks)

Prints, per rank, one JSON line with its ranks, host, backend, sampler shard (epoch 0), final loss and a checksum
of the weights.
"""

import json
import os
import socket
import sys

import smdistributed.dataparallel.torch.torch_smddp  # noqa: F401  (registers the smddp backend)
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group(backend="smddp")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)

    torch.manual_seed(0)
    inputs = torch.randn(64, 8)
    dataset = TensorDataset(inputs, inputs.sum(dim=1, keepdim=True))
    sampler = DistributedSampler(dataset, num_replicas=dist.get_world_size(), rank=dist.get_rank())
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    model = DDP(torch.nn.Linear(8, 1).to(device), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    sampler.set_epoch(0)
    shard = list(sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for source, targets in loader:
            optimizer.zero_grad()
            loss = F.mse_loss(model(source.to(device)), targets.to(device))
            loss.backward()
            optimizer.step()
    torch.cuda.synchronize()
    total = torch.tensor([loss.item()], device=device)
    dist.all_reduce(total)
    checksum = sum(parameter.double().sum().item() for parameter in model.parameters())
    # One write per record: the ranks share stdout, and under PYTHONUNBUFFERED (as SageMaker sets it) print's
    # separate write of the newline lets another rank's line land in between.
    sys.stdout.write(json.dumps({"rank": dist.get_rank(), "world_size": dist.get_world_size(), "local_rank": local_rank,
                                "backend": dist.get_backend(), "mean_last_loss": total.item() / dist.get_world_size(),
                                "checksum": checksum, "shard": shard, "host": socket.gethostname(),
                                "device_count": torch.cuda.device_count()}) + "\n")
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
