"""The reduce-scatters and all-gathers into a tensor that FSDP v1 makes, on an NCCL group (gloo under the
stand-in), in every form and with every op; prints the rank's results as one JSON line, each case as
{"shape": [...], "values": [...]}. Started once per rank with RANK and WORLD_SIZE (torch 1.13's torchrun cannot
start on Python 3.11), so that any torch can run it. Inputs depend only on the rank, so the test can compute
NCCL's answer itself."""

import json
import os
import warnings

import torch
import torch.distributed as dist

warnings.simplefilter("ignore")  # 1.13's deprecation of _reduce_scatter_base and _all_gather_base
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("nccl", rank=rank, world_size=world)
torch.cuda.set_device(rank)


def scatter_input(dtype=torch.float32) -> torch.Tensor:
    """This rank's (world * 2) x 3 input: chunk c of rank r holds 6 c + i + r + 1, for i in 0..5."""
    return (torch.arange(world * 6).reshape(world * 2, 3) + rank + 1).to(dtype).cuda()


def reduced(op, dtype=torch.float32, async_op=False, form="reduce_scatter_tensor"):
    output, given = torch.empty(2, 3, dtype=dtype).cuda(), scatter_input(dtype)
    if form == "reduce_scatter":
        work = dist.reduce_scatter(output, list(given.chunk(world)), op=op, async_op=async_op)
    else:
        work = getattr(dist, form)(output, given, op=op, async_op=async_op)
    if async_op:
        work.wait()
    assert torch.equal(given, scatter_input(dtype)), "the input changed"
    return output


results = {name.lower(): reduced(getattr(dist.ReduceOp, name))
           for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX")}
results["premul_sum"] = reduced(dist._make_nccl_premul_sum(0.5))
try:  # NCCL averages integers (a truncating division); torch 2.13's own gloo fails there
    results["avg_int64"] = reduced(dist.ReduceOp.AVG, torch.int64)
except RuntimeError as error:
    results["avg_int64"] = str(error).splitlines()[0]
results["sum_bfloat16"] = reduced(dist.ReduceOp.SUM, torch.bfloat16)
results["sum_async"] = reduced(dist.ReduceOp.SUM, async_op=True)
results["list_sum"] = reduced(dist.ReduceOp.SUM, form="reduce_scatter")
results["list_avg_async"] = reduced(dist.ReduceOp.AVG, async_op=True, form="reduce_scatter")
results["base_sum"] = reduced(dist.ReduceOp.SUM, form="_reduce_scatter_base")
results["base_premul_sum_async"] = reduced(dist._make_nccl_premul_sum(0.5), async_op=True,
                                           form="_reduce_scatter_base")
averaged = scatter_input()  # all_reduce's AVG, which 1.13's gloo lacks too: in place, sync and async
dist.all_reduce(averaged, op=dist.ReduceOp.AVG)
results["all_reduce_avg"] = averaged
averaged_int = scatter_input(torch.int64)
dist.all_reduce(averaged_int, op=dist.ReduceOp.AVG, async_op=True).wait()
results["all_reduce_avg_int64_async"] = averaged_int
gathered = torch.empty(world * 6).cuda()  # FSDP v1's flat parameter: every rank's shard, flat
dist.all_gather_into_tensor(gathered, torch.full((2, 3), float(rank)).cuda(), async_op=True).wait()
results["all_gather_into_tensor"] = gathered
gloo = dist.new_group(backend="gloo")  # gloo's own contract: under torch 1.13 it refuses, as there
try:
    dist.reduce_scatter_tensor(torch.empty(2, 3), scatter_input().cpu(), group=gloo)
    results["gloo_group"] = "reduced"
except RuntimeError as error:
    results["gloo_group"] = str(error).splitlines()[0]

print(json.dumps({name: {"shape": list(value.shape), "values": value.double().flatten().tolist()}
                  if isinstance(value, torch.Tensor) else value for name, value in results.items()}))
dist.destroy_process_group()
