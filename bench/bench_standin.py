"""What the CPU stand-in for CUDA costs a process that never touches CUDA, side by side in one run.

    .venv/bin/python bench/bench_standin.py              # 7 alternating rounds, about 4 minutes on 2 cores
    .venv/bin/python bench/bench_standin.py --rounds 3

Every process `smtrain local` starts for a GPU job gets the stand-in, including ones whose work is plain CPU
training (and mpirun's or torchrun's helpers). Each contender is a fresh process, with and without the stand-in
(its directory on PYTHONPATH and SMTRAIN_GPU_STANDIN set, as the emulator will do), alternating:

* the same small MLP training loop on the CPU, no CUDA calls (`--train`): goal <= 1.10x wall time;
* `import torch` alone: the cost of the import hook and of applying the patches;
* `python -c pass`: the cost of sitecustomize in a process that never imports torch.

Wall-clock and CPU time (user + system) of each process are both reported. Writes medians, every run and the
ratios to bench/results/standin.json.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import report

REPO = Path(__file__).resolve().parent.parent
STANDIN_DIR = REPO / "orchestrator" / "emulator" / "gpu_standin"
STANDIN_VARIABLES = [f"PYTHONPATH={STANDIN_DIR}", "SMTRAIN_GPU_STANDIN=4", "SMTRAIN_GPU_STANDIN_NAME=A10G"]
GOAL_RATIO = 1.10
STEPS = 2000
# workload -> (python arguments, runs of each contender per round): short runs are repeated to see past noise.
WORKLOADS = {
    "train": ([__file__, "--train"], 1),
    "import torch": (["-c", "import torch"], 3),
    "python -c pass": (["-c", "pass"], 10),
}


def train() -> None:
    """A small MLP regression on the CPU, written as any CPU training loop is: no CUDA calls."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                                torch.nn.ReLU(), torch.nn.Linear(128, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    inputs = torch.randn(4096, 32)
    targets = inputs[:, :8].sum(dim=1, keepdim=True)
    started = time.perf_counter()
    for step in range(STEPS):
        batch = torch.randint(0, inputs.shape[0], (64,))
        x, y = inputs[batch].to("cpu"), targets[batch].to("cpu")
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"{STEPS} steps in {time.perf_counter() - started:.2f} s, final loss {loss.item():.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--train", action="store_true", help="run the training loop once (what is timed)")
    options = parser.parse_args()
    if options.train:
        train()
        return
    with tempfile.TemporaryDirectory(prefix="bench-standin-pycache-") as pycache:
        timings = _alternate(options.rounds, pycache)
    ratios = {f"{workload}: stand-in / plain, {clock}": (
        f"{workload}, stand-in, {clock}", f"{workload}, plain, {clock}",
        GOAL_RATIO if (workload, clock) == ("train", "wall") else None)
        for workload in WORKLOADS for clock in ("wall", "cpu")}
    medians = report("standin", timings, ratios)["medians_s"]
    for workload in WORKLOADS:
        for clock in ("wall", "cpu"):
            fastest = min(timings[f"{workload}, stand-in, {clock}"]) / min(timings[f"{workload}, plain, {clock}"])
            added = (medians[f"{workload}, stand-in, {clock}"] - medians[f"{workload}, plain, {clock}"]) * 1000
            print(f"  {workload}, {clock}: fastest runs {fastest:.3f}x; stand-in adds {added:.1f} ms (medians)")


def _alternate(rounds: int, pycache: str) -> dict[str, list[float]]:
    """Every workload with and without the stand-in, alternating, `rounds` times; wall and CPU seconds."""
    ignored = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")
    env = {name: value for name, value in os.environ.items() if not name.startswith("SMTRAIN_") and name not in ignored}
    # Bytecode is cached, as in normal use, under a scratch prefix so that the tree stays clean.
    env.update(OMP_NUM_THREADS="1", PYTHONPYCACHEPREFIX=pycache)
    for args, _ in WORKLOADS.values():  # fill the bytecode and file caches
        for prefix in ([], STANDIN_VARIABLES):
            _run_once(["env", *prefix, sys.executable, *args], env)
    timings: dict[str, list[float]] = {}
    for _ in range(rounds):
        for workload, (args, runs_per_round) in WORKLOADS.items():
            for _ in range(runs_per_round):
                for contender, prefix in (("plain", []), ("stand-in", STANDIN_VARIABLES)):
                    # `env` starts both, so that only the stand-in differs between them.
                    wall, cpu = _run_once(["env", *prefix, sys.executable, *args], env)
                    timings.setdefault(f"{workload}, {contender}, wall", []).append(wall)
                    timings.setdefault(f"{workload}, {contender}, cpu", []).append(cpu)
    return timings


def _run_once(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of one process; CPU time moves less when other work shares
    the machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


if __name__ == "__main__":
    main()
