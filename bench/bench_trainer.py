"""Throughput of train.py's gloo trainer against a bare DDP loop (baseline_ddp.py), side by side in one run.

    .venv/bin/python bench/bench_trainer.py            # 5 repetitions of each, about 3 minutes on 2 cores
    .venv/bin/python bench/bench_trainer.py --quick    # 2 repetitions on an eighth of the data, about 1 minute

Both run under torchrun with 2 CPU processes (one thread each) on the same model, data, batch and SGD, and
alternate so that a busy moment of the machine hits both alike. Each reports, from rank 0, the samples it
trained (all ranks) and the wall and CPU seconds of its training loop; smtrain's loop includes its metric
lines, metrics.jsonl, epoch-end checkpoints and SIGTERM checks. The wall-clock ratio is the goal; the CPU-time
ratio, and the ratio of the fastest runs (the least disturbed), are printed beside it because they move less
when other work shares the machine. Writes everything to bench/results/.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

BENCH = Path(__file__).resolve().parent
TRAIN = BENCH.parent / "entrypoints" / "train.py"
BASELINE = BENCH / "baseline_ddp.py"
RESULTS = BENCH / "results"
NUM_PROCESSES = 2
GOAL_RATIO = 0.97
LOOPS = ("bare", "smtrain")
CLOCKS = ("wall", "cpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 repetitions on an eighth of the data")
    parser.add_argument("--repetitions", type=int, help="runs of each loop (default 5, or 2 with --quick)")
    options = parser.parse_args()
    repetitions = options.repetitions or (2 if options.quick else 5)
    workload = ["--model", "mlp", "--mlp-hidden", "128", "--mlp-layers", "2", "--batch-size", "64",
                "--num-samples", "8192" if options.quick else "65536", "--epochs", "2", "--lr", "0.01"]

    rates = {(loop, clock): [] for loop in LOOPS for clock in CLOCKS}
    with tempfile.TemporaryDirectory(prefix="bench-trainer-") as scratch:
        for repetition in range(repetitions):
            for loop in LOOPS:
                run_dir = Path(scratch) / f"{loop}-{repetition}"
                samples, wall, cpu = (_run_bare if loop == "bare" else _run_smtrain)(workload, run_dir)
                rates[loop, "wall"].append(samples / wall)
                rates[loop, "cpu"].append(samples / cpu)
                print(f"  {loop:8s} {repetition + 1}/{repetitions}: {samples / wall:9.1f} samples/s wall, "
                      f"{samples / cpu:9.1f} per CPU second", flush=True)

    medians = {key: statistics.median(values) for key, values in rates.items()}
    ratios = {clock: medians["smtrain", clock] / medians["bare", clock] for clock in CLOCKS}
    best_wall_ratio = max(rates["smtrain", "wall"]) / max(rates["bare", "wall"])
    print(f"\n{'loop':8s} {'clock':5s} {'median':>9s} {'min':>9s} {'max':>9s}  (samples/s, 2 ranks)")
    for (loop, clock), values in rates.items():
        print(f"{loop:8s} {clock:5s} {medians[loop, clock]:9.1f} {min(values):9.1f} {max(values):9.1f}")
    print(f"\nratio smtrain/bare of medians: {ratios['wall']:.3f} wall clock (goal >= {GOAL_RATIO}), "
          f"{ratios['cpu']:.3f} CPU time; of the fastest runs: {best_wall_ratio:.3f} wall clock")

    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    result_path = RESULTS / f"bench_trainer-{stamp}.json"
    result_path.write_text(json.dumps({
        "workload": workload, "num_processes": NUM_PROCESSES, "repetitions": repetitions,
        "samples_per_sec": {f"{loop}_{clock}": values for (loop, clock), values in rates.items()},
        "median_samples_per_sec": {f"{loop}_{clock}": value for (loop, clock), value in medians.items()},
        "ratio_smtrain_over_bare": ratios, "ratio_of_fastest_wall": best_wall_ratio, "goal_ratio": GOAL_RATIO,
        "torch_version": torch.__version__, "cpu_count": os.cpu_count(), "load_average": os.getloadavg(),
    }, indent=2) + "\n")
    print(f"written: {result_path}")


def _run_bare(workload: list[str], run_dir: Path) -> tuple[int, float, float]:
    result = run_dir / "result.json"
    _torchrun([str(BASELINE), "--result", str(result), *workload], run_dir)
    measured = json.loads(result.read_text())
    return measured["samples"], measured["train_seconds"], measured["train_cpu_seconds"]


def _run_smtrain(workload: list[str], run_dir: Path) -> tuple[int, float, float]:
    _torchrun([str(TRAIN), "--trainer", "gloo", "--optimizer", "sgd", *workload], run_dir)
    metadata = json.loads((run_dir / "model" / "model.json").read_text())
    return sum(metadata["samples_seen_per_epoch"]), metadata["train_seconds"], metadata["train_cpu_seconds"]


def _torchrun(script_and_args: list[str], run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo", "SAGEMAKER_BASE_DIR": str(run_dir),
           "SM_OUTPUT_DATA_DIR": str(run_dir / "output" / "data")}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(NUM_PROCESSES),
               "--master-addr", "127.0.0.1", "--master-port", str(_free_port()), *script_and_args]
    finished = subprocess.run(command, env=env, capture_output=True, text=True)
    if finished.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({finished.returncode}):\n{finished.stdout}{finished.stderr}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


if __name__ == "__main__":
    main()
