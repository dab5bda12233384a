"""A script written for SageMaker's mode none, the way the AWS MNIST sample does it: hosts and the current host
come from SM_HOSTS / SM_CURRENT_HOST as argparse defaults, the rank is the host's index, MASTER_ADDR and
MASTER_PORT come from the PyTorch toolkit. Nothing here knows about smtrain."""

import argparse
import gc
import json
import os
import time

import torch
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=json.loads, default=json.loads(os.environ["SM_HOSTS"]))
    parser.add_argument("--current-host", type=str, default=os.environ["SM_CURRENT_HOST"])
    parser.add_argument("--model-dir", type=str, default=os.environ["SM_MODEL_DIR"])
    parser.add_argument("--backend", type=str, default="gloo")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    host_rank = args.hosts.index(args.current_host)
    dist.init_process_group(backend=args.backend, rank=host_rank, world_size=len(args.hosts))
    train(args, host_rank)
    gc.collect()  # release every tensor a collective touched before the group goes (see entrypoints/trainers.py)
    dist.destroy_process_group()
    # Gloo's threads release the last collective's tensors after it returns; one still waiting for the GIL when
    # finalization begins aborts the process (bench/bench_exit_aborts.py). Yield it to them.
    time.sleep(0.05)


def train(args, host_rank):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        torch.manual_seed(100 * step + host_rank)
        x = torch.randn(8, 4)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        for parameter in model.parameters():
            dist.all_reduce(parameter.grad)
            parameter.grad /= len(args.hosts)
        optimizer.step()
    weights = [round(value, 6) for value in torch.cat([p.detach().flatten() for p in model.parameters()]).tolist()]
    with open(os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], f"weights-{args.current_host}.json"), "w") as handle:
        json.dump({"rank": host_rank, "world_size": dist.get_world_size(), "weights": weights}, handle)
    if host_rank == 0:
        torch.save(model.state_dict(), os.path.join(args.model_dir, "model.pth"))
    print(f"host {args.current_host} rank {host_rank}/{len(args.hosts)} done", flush=True)


if __name__ == "__main__":
    main()
