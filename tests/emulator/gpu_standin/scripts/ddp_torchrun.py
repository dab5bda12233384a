"""DDP over NCCL in the shape of PyTorch's multi-node tutorial (ddp-tutorial-series/multinode.py), for GPUs.

    torchrun --nnodes 2 --nproc-per-node 4 --node-rank N --master-addr HOST --master-port PORT ddp_torchrun.py

Prints, per rank, one JSON line: its sampler shard, world size, final loss and a checksum of the weights.
"""

import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.distributed import destroy_process_group, get_world_size, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def ddp_setup():
    init_process_group(backend="nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))


class Trainer:
    def __init__(self, model, train_data, optimizer):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.model = model.to(self.local_rank)
        self.train_data = train_data
        self.optimizer = optimizer
        self.model = DDP(self.model, device_ids=[self.local_rank])
        self.loss = None

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.mse_loss(output, targets)
        loss.backward()
        self.optimizer.step()
        self.loss = loss.item()

    def _run_epoch(self, epoch):
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            source = source.to(self.local_rank)
            targets = targets.to(self.local_rank)
            self._run_batch(source, targets)

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)


def main():
    ddp_setup()
    torch.manual_seed(0)
    inputs = torch.randn(64, 8)
    dataset = TensorDataset(inputs, inputs.sum(dim=1, keepdim=True))
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=4, pin_memory=True, shuffle=False, sampler=sampler)
    trainer = Trainer(model, loader, optimizer)
    trainer.train(max_epochs=2)
    sampler.set_epoch(0)
    with torch.no_grad():
        source, targets = dataset.tensors
        final_loss = F.mse_loss(trainer.model(source.to(trainer.local_rank)), targets.to(trainer.local_rank)).item()
    checksum = sum(parameter.double().sum().item() for parameter in trainer.model.parameters())
    # One write per record: the ranks share stdout, and under PYTHONUNBUFFERED (as SageMaker sets it) print's
    # separate write of the newline lets another rank's line land in between.
    sys.stdout.write(json.dumps({"rank": trainer.global_rank, "world_size": get_world_size(), "shard": list(sampler),
                                "last_batch_loss": trainer.loss, "final_loss": final_loss, "checksum": checksum,
                                "device_count": torch.cuda.device_count(), "device": torch.cuda.current_device()}) + "\n")
    sys.stdout.flush()
    destroy_process_group()


if __name__ == "__main__":
    main()
