"""Steps a Linear model under torchrun with gloo until stopped, printing `step=N loss=X` on rank 0; it does not
catch SIGTERM, so a stop ends each worker by the signal and torchrun reports them failed (`ChildFailedError`)."""

import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1, 100000):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if dist.get_rank() == 0:
        print(f"step={step} loss={loss.item():.4f}", flush=True)
    time.sleep(0.1)
