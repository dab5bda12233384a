"""Calls every collective a framework makes as NCCL defines it, on an NCCL group (gloo under the stand-in), and
prints each result as one JSON line per rank: {"rank": r, "case": name, "shape": [...], "values": [...]}.
Inputs depend only on the rank, so the test can compute NCCL's answer itself."""

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import _coalescing_manager

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
device = torch.device("cuda", local_rank)


def block(r: int) -> torch.Tensor:
    """Rank r's 2 x 3 input."""
    return torch.arange(6, dtype=torch.float32, device=device).reshape(2, 3) + 100 * r


results = {}


def report(case: str, result) -> None:
    if isinstance(result, torch.Tensor):
        results[case] = {"shape": list(result.shape), "values": result.flatten().tolist()}
    else:
        results[case] = {"values": result}


def all_gather_into(shape, async_op=False, requires_grad=False):
    output = torch.empty(shape, device=device)
    work = dist.all_gather_into_tensor(output, block(rank).requires_grad_(requires_grad), async_op=async_op)
    if async_op:
        work.wait()
    return output


report("all_gather_into_tensor_flat", all_gather_into((world * 6,)))
report("all_gather_into_tensor_stacked", all_gather_into((world, 2, 3)))
report("all_gather_into_tensor_concatenated", all_gather_into((world * 2, 3)))
report("all_gather_into_tensor_flat_async", all_gather_into((world * 6,), async_op=True))
report("all_gather_into_tensor_requires_grad", all_gather_into((world * 2, 3), requires_grad=True))
# Accelerate's gather of a model's 0-dim weight: a clone of the parameter, one element, still requiring grad.
weight = torch.nn.Parameter(torch.tensor(float(rank), device=device))
gathered = torch.empty(world, device=device)
dist.all_gather_into_tensor(gathered, weight.clone()[None])
report("all_gather_into_tensor_of_a_weight", gathered)
report("all_gather_base_flat", (dist._all_gather_base(out := torch.empty(world * 6, device=device), block(rank)), out)[1]
       if hasattr(dist, "_all_gather_base") else torch.cat([block(r).flatten() for r in range(world)]))

first, second = torch.empty(world * 6, device=device), torch.empty(world, 2, 3, device=device)
with _coalescing_manager(device=device, async_ops=True) as coalesced:
    dist.all_gather_into_tensor(first, block(rank))
    dist.all_gather_into_tensor(second, block(rank) * 2)
coalesced.wait()
report("all_gather_into_tensor_coalesced", torch.cat([first, second.flatten()]))

scatter_input = torch.arange(world * 6, dtype=torch.float32, device=device).reshape(world * 2, 3) + rank
report("reduce_scatter_tensor", (dist.reduce_scatter_tensor(out := torch.empty(2, 3, device=device), scatter_input),
                                 out)[1])
report("reduce_scatter_tensor_avg", (dist.reduce_scatter_tensor(out := torch.empty(2, 3, device=device),
                                                                scatter_input, op=dist.ReduceOp.AVG), out)[1])
report("reduce_scatter_tensor_premul_sum", (dist.reduce_scatter_tensor(
    out := torch.empty(2, 3, device=device), scatter_input, op=dist._make_nccl_premul_sum(0.5)), out)[1])
report("reduce_scatter_tensor_input_kept", scatter_input)  # NCCL leaves the input as it was

splits_in = [rank + peer + 1 for peer in range(world)]  # rank r sends r + j + 1 elements to rank j
a2a_input = torch.cat([torch.full((count,), 10.0 * rank + peer, device=device) for peer, count in enumerate(splits_in)])
a2a_output = torch.empty(sum(splits_in), device=device)  # receives j + r + 1 from each rank j
work = dist.all_to_all_single(a2a_output, a2a_input, output_split_sizes=splits_in, input_split_sizes=splits_in,
                              async_op=True)
work.wait()
report("all_to_all_single_uneven", a2a_output)

report("all_reduce_avg", (dist.all_reduce(t := torch.full((3,), rank + 1.0, device=device), op=dist.ReduceOp.AVG),
                          t)[1])
report("all_reduce_premul_sum_scalar", (dist.all_reduce(t := torch.full((3,), rank + 1.0, device=device),
                                                        dist._make_nccl_premul_sum(0.25)), t)[1])  # op by position
report("all_reduce_premul_sum_tensor", (dist.all_reduce(t := torch.full((3,), rank + 1.0, device=device),
                                                        op=dist._make_nccl_premul_sum(torch.tensor(2.0))), t)[1])
report("all_reduce_async", [float(t.sum()) for t in (lambda ts: (
    [dist.all_reduce(t, async_op=True) for t in ts][-1].wait(), ts)[1])(
    [torch.full((2,), rank + 1.0, device=device), torch.full((1,), 2.0 * rank, device=device)])])

# NCCL runs a group's collectives in order on one stream, so waiting on the last work covers the earlier ones; a
# large first all_reduce and a small second, many times, catch a backend that runs them at once (gloo's 2 threads).
in_order = []
for _ in range(50):
    large, small = torch.full((100_000,), rank + 1.0, device=device), torch.full((1,), 1.0, device=device)
    works = [dist.all_reduce(large, async_op=True), dist.all_reduce(small, async_op=True)]
    works[-1].wait()
    in_order.append(float(large.sum()))
    works[0].wait()
report("all_reduce_async_in_order", sorted(set(in_order)))

dist.barrier(device_ids=[local_rank])
report("barrier_device_ids", "passed")

gathered = [None] * world
dist.all_gather_object(gathered, {"rank": rank, "name": f"r{rank}"})
report("all_gather_object", gathered)
objects = [{"from": rank}, rank * 3]
dist.broadcast_object_list(objects, src=world - 1)
report("broadcast_object_list", objects)
collected = [None] * world if rank == 0 else None
dist.gather_object(rank * 7, collected, dst=0)
report("gather_object", collected)

try:  # one element too many: NCCL refuses it too, and gloo's refusal must name the stand-in
    dist.all_gather_into_tensor(torch.empty(world * 6 + 1, device=device), block(rank))
    report("refused_call_error", "no error")
except RuntimeError as error:
    report("refused_call_error", str(error))

with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as file:
    json.dump(results, file)
dist.destroy_process_group()
