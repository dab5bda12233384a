"""Two hosts (mode none) train three steps over gloo, then rank 1 never joins the next all-reduce: rank 0
blocks in it forever (gloo waits 30 minutes), exactly the hang `smtrain local --stall-timeout` must explain."""

import json
import os
import time

print("starting", flush=True)  # a sign of life before the slow torch import

import torch
import torch.distributed as dist


def load_next_batch_forever() -> None:
    """The straggler: stuck outside any collective (a data loader that never returns)."""
    while True:
        time.sleep(1)


def main() -> None:
    hosts = json.loads(os.environ["SM_HOSTS"])
    rank = hosts.index(os.environ["SM_CURRENT_HOST"])
    dist.init_process_group("gloo", rank=rank, world_size=len(hosts))
    for step in range(1, 4):
        dist.all_reduce(torch.ones(1))
        if rank == 0:
            print(f"epoch=1 step={step}/10 train_loss={1.0 / step:.6f} samples_per_sec=100.0", flush=True)
    if rank == 0:
        print("about to block", flush=True)
    if rank == 1:
        load_next_batch_forever()
    dist.all_reduce(torch.ones(1))


if __name__ == "__main__":
    main()
