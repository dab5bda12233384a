"""How often a finished 2-rank DDP script aborts at exit: plain gloo against gloo under the CPU stand-in.

    .venv/bin/python bench/bench_exit_aborts.py               # 60 runs of each, about 6 minutes on 2 cores
    .venv/bin/python bench/bench_exit_aborts.py --runs 20

The same script (DDP, 20 steps, a last all_reduce, destroy_process_group, a normal end) runs as a GPU script would
under the stand-in (NCCL, `.cuda(local_rank)`, which the stand-in runs over gloo on the CPU) and as a CPU script
over plain gloo without it, alternating. Torch's gloo worker threads release a finished collective's tensors after
it returns; one still waiting for the GIL when interpreter finalization begins ends inside a C++ frame:
"terminate called without an active exception", exit 134 (SIGABRT). The stand-in yields the GIL at exit, so that a
GPU script does not fail here where NCCL would not; plain gloo is the baseline it improves on. A run counts as
aborted when either rank exits non-zero.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STANDIN_DIR = REPO / "orchestrator" / "emulator" / "gpu_standin"

SCRIPT = textwrap.dedent("""
    import os
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    on_gpu = torch.cuda.is_available()  # True under the stand-in
    dist.init_process_group("nccl" if on_gpu else "gloo")
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if on_gpu else torch.device("cpu")
    model = DistributedDataParallel(torch.nn.Linear(20, 10).to(device), device_ids=[device.index] if on_gpu else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(20):
        optimizer.zero_grad()
        model(torch.randn(8, 20, device=device)).sum().backward()
        optimizer.step()
    total = torch.ones(1, device=device)
    dist.all_reduce(total)
    print(dist.get_rank(), total.item(), flush=True)
    dist.destroy_process_group()
""")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_once(script: Path, standin: bool) -> list[int]:
    """Both ranks' exit statuses."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "OMP_NUM_THREADS": "1",
           "GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()),
           "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}
    if standin:
        env.update({"PYTHONPATH": str(STANDIN_DIR), "SMTRAIN_GPU_STANDIN": "2",
                    "SMTRAIN_GPU_STANDIN_NAME": "NVIDIA A10G"})
    ranks = [subprocess.Popen([sys.executable, str(script)], env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for rank in (0, 1)]
    return [rank.wait(timeout=120) for rank in ranks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60, help="runs of each arm")
    args = parser.parse_args()
    aborted = {"plain gloo": 0, "stand-in": 0}
    statuses: dict[str, dict[str, int]] = {name: {} for name in aborted}
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "ddp_exit.py"
        script.write_text(SCRIPT)
        for index in range(args.runs):
            for name, standin in (("plain gloo", False), ("stand-in", True)):
                codes = run_once(script, standin)
                if any(codes):
                    aborted[name] += 1
                    key = "/".join(map(str, codes))
                    statuses[name][key] = statuses[name].get(key, 0) + 1
            print(f"run {index + 1}/{args.runs}: aborted so far {aborted}", file=sys.stderr, flush=True)
    result = {"runs_each": args.runs, "aborted": aborted, "exit_statuses_of_aborted_runs": statuses}
    print(json.dumps(result, indent=2))
    out = REPO / "bench" / "results" / "exit_aborts.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
