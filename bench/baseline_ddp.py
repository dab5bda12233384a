"""A bare DDP training loop: the yardstick that bench_trainer.py measures entrypoints/train.py against.

It trains the same model on the same synthetic data, in the same order, with the same batch and SGD as
``train.py --trainer gloo --optimizer sgd``, and does nothing else: no metric lines, checkpoints, checksums or
SIGTERM handling.

    torchrun --nproc-per-node 2 bench/baseline_ddp.py --result out.json --model mlp --batch-size 64

Takes train.py's options (only the model, data, batch, epoch and learning-rate ones matter) plus ``--result``, where
rank 0 writes the samples trained (all ranks) and the wall and CPU seconds of its training loop.
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
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "entrypoints"))  # the same model and data builders
from config import parse_config  # noqa: E402
from data import synthetic_dataset  # noqa: E402
from models import TASKS, build_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--result", type=Path, required=True)
    own, train_args = parser.parse_known_args()
    config = parse_config(train_args, {})
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()

    task = TASKS[config.model]
    dataset = synthetic_dataset(task, config.num_samples, config.seed)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=config.seed)
    loader = DataLoader(dataset, batch_size=config.batch_size, sampler=sampler)
    torch.manual_seed(config.seed)
    model = DistributedDataParallel(build_model(config))
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
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
    del model  # release the DDP model and its tensors before the group goes (see entrypoints/trainers.py)
    gc.collect()
    dist.destroy_process_group()
    time.sleep(0.05)  # yields the GIL to gloo's threads releasing the last collective (bench_exit_aborts.py)


if __name__ == "__main__":
    main()
