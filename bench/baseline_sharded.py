"""Bare training loops for FSDP, ZeRO-1 and model parallelism: what bench_sharded.py measures train.py against.

Each trains the same model on the same synthetic data, in the same order, with the same batch and optimizer as
train.py with the trainer in brackets (only the model and data builders come from entrypoints/, the rest is
written by hand with torch), and does nothing else: no metric lines, checkpoints, checksums or SIGTERM handling.

    torchrun --nproc-per-node 2 bench/baseline_sharded.py --layout fsdp --result out.json  # [--trainer fsdp]
    torchrun --nproc-per-node 2 bench/baseline_sharded.py --layout fsdp_zero2 ...          # [fsdp --zero-stage 2]
    torchrun --nproc-per-node 2 bench/baseline_sharded.py --layout zero1 --result out.json # [gloo --zero-stage 1]
    python bench/baseline_sharded.py --layout model_parallel --result out.json             # [model_parallel]

Takes train.py's options (only the model, data, batch, epoch, optimizer and learning-rate ones matter) plus
``--layout`` and ``--result``, where rank 0 writes the samples trained (all ranks) and the wall and CPU seconds of
its training loop.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "entrypoints"))  # the same model and data builders
from config import parse_config  # noqa: E402
from data import synthetic_dataset  # noqa: E402
from models import TASKS, build_model  # noqa: E402

LAYOUTS = ("fsdp", "fsdp_zero2", "zero1", "model_parallel")
# Where train.py's parameter balance cuts the benchmark's mlp (20-128-128-10: layers 0-2 hold 19,200 of its 20,490
# parameters); the stages are both on the CPU, as on a host without CUDA.
MODEL_PARALLEL_CUT = 3


class _TwoStages(nn.Module):
    def __init__(self, model: nn.Sequential) -> None:
        super().__init__()
        self.first, self.second = model[:MODEL_PARALLEL_CUT], model[MODEL_PARALLEL_CUT:]

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(features).to("cpu"))  # the hand-off, a no-op on one CPU


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout", choices=LAYOUTS, required=True)
    parser.add_argument("--result", type=Path, required=True)
    own, train_args = parser.parse_known_args()
    config = parse_config(train_args, {})
    if own.layout == "model_parallel":
        rank, world_size = 0, 1  # one host: one process, no process group
    else:
        dist.init_process_group("gloo")
        rank, world_size = dist.get_rank(), dist.get_world_size()

    task = TASKS[config.model]
    dataset = synthetic_dataset(task, config.num_samples, config.seed)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=config.seed)
    loader = DataLoader(dataset, batch_size=config.batch_size, sampler=sampler)
    torch.manual_seed(config.seed)
    model = build_model(config)
    optimizer_class = torch.optim.Adam if config.optimizer == "adam" else torch.optim.SGD
    if own.layout in ("fsdp", "fsdp_zero2"):
        mesh = init_device_mesh("cpu", (world_size,))
        reshard = own.layout == "fsdp"
        for layer in model:
            if any(True for _ in layer.parameters()):
                fully_shard(layer, mesh=mesh, reshard_after_forward=reshard)
        fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
        optimizer = optimizer_class(model.parameters(), lr=config.lr)
    elif own.layout == "zero1":
        optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=optimizer_class, lr=config.lr)
        model = DistributedDataParallel(model)
    else:
        model = _TwoStages(model)
        optimizer = optimizer_class(model.parameters(), lr=config.lr)
    loss_function = task.loss_function()

    started, cpu_started = time.perf_counter(), time.process_time()
    for epoch in range(config.epochs):
        sampler.set_epoch(epoch)
        for features, targets in loader:
            loss = loss_function(model(features), targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    train_seconds, train_cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started

    if rank == 0:
        samples = len(sampler) * world_size * config.epochs
        own.result.write_text(json.dumps({"samples": samples, "train_seconds": train_seconds,
                                          "train_cpu_seconds": train_cpu_seconds}))
    if dist.is_initialized():
        del model, optimizer  # release what holds the group before it goes (see entrypoints/trainers.py)
        gc.collect()
        dist.destroy_process_group()
        time.sleep(0.05)  # yields the GIL to gloo's threads releasing the last collective (bench_exit_aborts.py)


if __name__ == "__main__":
    main()
