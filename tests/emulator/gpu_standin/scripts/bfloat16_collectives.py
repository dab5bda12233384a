"""The bfloat16 collectives DDP and FSDP make, on an NCCL group (gloo under the stand-in), and the same on a group
the script asked gloo for; prints the rank's results as one JSON line. Started once per rank with RANK and
WORLD_SIZE (torch 1.13's torchrun cannot start on Python 3.11), so that any torch can run it."""

import json
import os

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import bf16_compress_hook

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("nccl", rank=rank, world_size=world)
torch.cuda.set_device(rank)


def mine() -> torch.Tensor:
    """This rank's input: values whose bfloat16 sums need rounding."""
    return (torch.tensor([1.0, 0.1, 3.14159, -2.5, 1e-3, 300.7]) * (rank + 1)).to(torch.bfloat16).cuda()


results = {}
summed = mine()
dist.all_reduce(summed)
results["all_reduce"] = summed
largest = mine()
dist.all_reduce(largest, op=dist.ReduceOp.MAX)
results["all_reduce_max"] = largest
pending = mine()
future = dist.all_reduce(pending, async_op=True).get_future()  # as DDP's bf16_compress_hook reads it
seen = future.then(lambda done: done.value()[0]).wait()
results["all_reduce_async_future"] = seen
results["future_gives_the_tensor_passed"] = seen is pending
gathered = [torch.zeros(6, dtype=torch.bfloat16).cuda() for _ in range(world)]
dist.all_gather(gathered, mine())
results["all_gather"] = torch.cat(gathered)
sent = mine()
dist.broadcast(sent, src=world - 1)
results["broadcast"] = sent

torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(6, 2).cuda(), device_ids=[rank])
model.register_comm_hook(None, bf16_compress_hook)
model(mine().float().unsqueeze(0)).sum().backward()
results["ddp_bf16_hook_weight_grad"] = model.module.weight.grad

gloo = dist.new_group(backend="gloo")  # gloo's own contract: under torch 1.13 it refuses bfloat16, as there
try:
    dist.all_reduce(mine(), group=gloo)
    results["gloo_group"] = "reduced"
except RuntimeError as error:
    results["gloo_group"] = str(error).splitlines()[0]

print(json.dumps({name: value.float().flatten().tolist() if isinstance(value, torch.Tensor) else value
                  for name, value in results.items()}))
