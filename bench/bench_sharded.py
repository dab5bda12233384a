"""The fsdp, ZeRO-1 and model_parallel trainers: throughput against bare loops, and memory per rank.

    .venv/bin/python bench/bench_sharded.py            # throughput: 5 repetitions of each, 10-15 minutes on 2 cores
    .venv/bin/python bench/bench_sharded.py --quick    # 2 repetitions on an eighth of the data, about 2 minutes
    .venv/bin/python bench/bench_sharded.py --memory   # bytes per rank under DDP, ZeRO-1 and FSDP, 2 and 4 ranks
    .venv/bin/python bench/bench_sharded.py --only model_parallel      # one trainer only

Throughput: train.py against the hand-written loop of baseline_sharded.py for each trainer (fsdp as ZeRO-3 and
ZeRO-2, and ZeRO-1, with 2 torchrun processes; model_parallel with one process and two stages on the CPU), same
model, data, batch and Adam, alternating, so that a busy moment of the machine hits both alike. Each reports, from
rank 0, the samples trained (all ranks) and the wall and CPU seconds of its training loop; train.py's loop includes
its metric lines, metrics.jsonl, epoch-end checkpoints (sharded, through DCP, for fsdp) and SIGTERM checks. The
wall-clock ratio of the medians is the goal; the CPU-time ratio and the ratio of the fastest runs move less when
other work shares the machine, and so does the median of the ratios of each back-to-back pair.

Memory: one torchrun per world size; each rank, for each layout in turn in the same process group, builds the model
exactly as train.py does (trainers.build_strategy), trains one step, and adds up the bytes of the storage behind
its parameters, gradients and optimizer state (what a rank holds between steps; shared storage counted once,
fsdp's padding included). Not counted: DDP's gradient buckets (another copy of the
gradients inside the reducer, so DDP and ZeRO-1 hold more than shown) and the blocks fsdp gathers while they run.

Results go to bench/results/.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

BENCH = Path(__file__).resolve().parent
ENTRYPOINTS = BENCH.parent / "entrypoints"
TRAIN = ENTRYPOINTS / "train.py"
BASELINE = BENCH / "baseline_sharded.py"
RESULTS = BENCH / "results"
GOAL_RATIO = 0.97
LOOPS = ("bare", "smtrain")
CLOCKS = ("wall", "cpu")
# trainer: (train.py options, baseline_sharded.py layout, processes)
TRAINERS = {
    "fsdp": (["--trainer", "fsdp"], "fsdp", 2),
    "fsdp_zero2": (["--trainer", "fsdp", "--zero-stage", "2"], "fsdp_zero2", 2),
    "zero1": (["--trainer", "gloo", "--zero-stage", "1"], "zero1", 2),
    "model_parallel": (["--trainer", "model_parallel"], "model_parallel", 1),
}
MEMORY_LAYOUTS = {"ddp": ["--trainer", "gloo"], "zero1": ["--trainer", "gloo", "--zero-stage", "1"],
                  "fsdp": ["--trainer", "fsdp"]}
MEMORY_WORLD_SIZES = (2, 4)
MEMORY_WORKLOAD = ["--model", "mlp", "--mlp-hidden", "1024", "--mlp-layers", "8", "--optimizer", "adam",
                   "--batch-size", "8"]
HELD = ("parameters", "gradients", "optimizer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 repetitions on an eighth of the data")
    parser.add_argument("--repetitions", type=int, help="runs of each loop (default 5, or 2 with --quick)")
    parser.add_argument("--memory", action="store_true", help="measure memory per rank instead of throughput")
    # Not --trainer: the memory workers pass train.py's own --trainer through.
    parser.add_argument("--only", action="append", choices=TRAINERS, dest="trainers",
                        help="measure only this trainer's throughput (repeatable; default: all)")
    parser.add_argument("--memory-worker", type=Path, help=argparse.SUPPRESS)  # one torchrun rank of --memory
    options, train_args = parser.parse_known_args()
    if options.memory_worker:
        _memory_worker(options.memory_worker, train_args)
    elif options.memory:
        _memory()
    else:
        repetitions = options.repetitions or (2 if options.quick else 5)
        _throughput(repetitions, options.quick, options.trainers or list(TRAINERS))


def _throughput(repetitions: int, quick: bool, trainers: list[str]) -> None:
    workload = ["--model", "mlp", "--mlp-hidden", "128", "--mlp-layers", "2", "--batch-size", "64",
                "--num-samples", "8192" if quick else "65536", "--epochs", "2", "--optimizer", "adam", "--lr", "0.01"]
    rates = {(trainer, loop, clock): [] for trainer in trainers for loop in LOOPS for clock in CLOCKS}
    with tempfile.TemporaryDirectory(prefix="bench-sharded-") as scratch:
        for repetition in range(repetitions):
            for trainer in trainers:
                for loop in LOOPS if repetition % 2 == 0 else LOOPS[::-1]:  # neither always goes first
                    run_dir = Path(scratch) / f"{trainer}-{loop}-{repetition}"
                    samples, wall, cpu = (_run_bare if loop == "bare" else _run_smtrain)(trainer, workload, run_dir)
                    rates[trainer, loop, "wall"].append(samples / wall)
                    rates[trainer, loop, "cpu"].append(samples / cpu)
                    print(f"  {trainer:14s} {loop:8s} {repetition + 1}/{repetitions}: {samples / wall:9.1f} "
                          f"samples/s wall, {samples / cpu:9.1f} per CPU second", flush=True)

    medians = {key: statistics.median(values) for key, values in rates.items()}
    print(f"\n{'trainer':14s} {'loop':8s} {'clock':5s} {'median':>9s} {'min':>9s} {'max':>9s}  (samples/s)")
    for (trainer, loop, clock), values in rates.items():
        print(f"{trainer:14s} {loop:8s} {clock:5s} {medians[trainer, loop, clock]:9.1f} {min(values):9.1f} "
              f"{max(values):9.1f}")
    ratios = {}
    print(f"\nratio smtrain/bare (goal >= {GOAL_RATIO} wall clock of the medians)")
    for trainer in trainers:
        pairs = zip(rates[trainer, "smtrain", "wall"], rates[trainer, "bare", "wall"], strict=True)
        ratios[trainer] = {
            **{clock: medians[trainer, "smtrain", clock] / medians[trainer, "bare", clock] for clock in CLOCKS},
            "fastest_wall": max(rates[trainer, "smtrain", "wall"]) / max(rates[trainer, "bare", "wall"]),
            "paired_wall": statistics.median(smtrain / bare for smtrain, bare in pairs),
        }
        print(f"  {trainer:14s} {ratios[trainer]['wall']:.3f} wall, {ratios[trainer]['cpu']:.3f} CPU, "
              f"{ratios[trainer]['fastest_wall']:.3f} of the fastest runs, "
              f"{ratios[trainer]['paired_wall']:.3f} median of the pairs' wall ratios")
    _write_result("bench_sharded", {
        "workload": workload, "repetitions": repetitions,
        "samples_per_sec": {"/".join(key): values for key, values in rates.items()},
        "median_samples_per_sec": {"/".join(key): value for key, value in medians.items()},
        "ratio_smtrain_over_bare": ratios, "goal_ratio": GOAL_RATIO,
    })


def _run_bare(trainer: str, workload: list[str], run_dir: Path) -> tuple[int, float, float]:
    _, layout, processes = TRAINERS[trainer]
    result = run_dir / "result.json"
    _launch([str(BASELINE), "--layout", layout, "--result", str(result), *workload], run_dir, processes)
    measured = json.loads(result.read_text())
    return measured["samples"], measured["train_seconds"], measured["train_cpu_seconds"]


def _run_smtrain(trainer: str, workload: list[str], run_dir: Path) -> tuple[int, float, float]:
    options, _, processes = TRAINERS[trainer]
    _launch([str(TRAIN), *options, *workload], run_dir, processes)
    metadata = json.loads((run_dir / "model" / "model.json").read_text())
    return sum(metadata["samples_seen_per_epoch"]), metadata["train_seconds"], metadata["train_cpu_seconds"]


def _memory() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-sharded-memory-") as scratch:
        for world_size in MEMORY_WORLD_SIZES:
            # One launch per world size: each rank measures every layout in turn, in one process group.
            result = Path(scratch) / f"memory-{world_size}.json"
            _launch([__file__, "--memory-worker", str(result), *MEMORY_WORKLOAD], Path(scratch) / str(world_size),
                    world_size)
            for layout, per_rank in json.loads(result.read_text()).items():
                totals = [sum(rank[kind] for kind in HELD) for rank in per_rank]
                rows.append({"layout": layout, "world_size": world_size, "per_rank": per_rank,
                             "max_total": max(totals), "mean_total": statistics.mean(totals)})
    print(f"\nbytes per rank after one step: parameters + gradients + optimizer state, mlp 20-{'1024-' * 8}10 "
          f"with Adam (the largest rank; total also as the mean over ranks)")
    print(f"{'layout':7s} {'ranks':>5s} {'parameters':>12s} {'gradients':>12s} {'optimizer':>12s} {'total':>12s} "
          f"{'mean total':>12s} {'vs DDP':>7s}")
    for row in rows:
        ddp = next(other for other in rows if other["layout"] == "ddp" and other["world_size"] == row["world_size"])
        largest = max(row["per_rank"], key=lambda rank: sum(rank[kind] for kind in HELD))
        print(f"{row['layout']:7s} {row['world_size']:5d} " + " ".join(f"{largest[kind]:12,d}" for kind in HELD) +
              f" {row['max_total']:12,d} {row['mean_total']:12,.0f} {row['max_total'] / ddp['max_total']:7.3f}")
    _write_result("bench_sharded-memory", {"workload": MEMORY_WORKLOAD, "rows": rows})


def _memory_worker(result: Path, workload: list[str]) -> None:
    """One rank: for each layout, builds the model as train.py does, trains one step, and reports the bytes it
    holds; rank 0 writes every rank's figures per layout."""
    sys.path.insert(0, str(ENTRYPOINTS))
    import backends
    import dist_env
    import torch.distributed as dist
    import train
    from config import parse_config

    env = dist_env.detect(os.environ)
    group = backends.init_process_group(backends.resolve_runtime("gloo", env, print), env)
    every_layout = {}
    for layout, options in MEMORY_LAYOUTS.items():
        config = parse_config([*options, *workload], {})
        runtime = dataclasses.replace(backends.resolve_runtime(config.trainer, env, print),
                                      control_group=group.control_group)
        every_rank: list[Any] = [None] * env.world_size
        dist.all_gather_object(every_rank, _held_after_one_step(config, env, runtime))
        every_layout[layout] = every_rank
    if env.rank == 0:
        result.write_text(json.dumps(every_layout))
    dist.destroy_process_group()
    train.leave(0)  # as train.py ends: no interpreter finalization for gloo's threads to abort in


def _held_after_one_step(config: Any, env: Any, runtime: Any) -> dict[str, int]:
    """The bytes of parameters, gradients and optimizer state a rank holds after one step of `config`'s layout."""
    import trainers
    from data import synthetic_dataset
    from models import TASKS

    torch.manual_seed(config.seed)
    strategy = trainers.build_strategy(config, env, runtime, None, print)
    task = TASKS[config.model]
    features, targets = synthetic_dataset(task, config.batch_size, config.seed + env.rank).tensors
    task.loss_function()(strategy.module(features), targets).backward()
    strategy.optimizer.step()
    parameters = list(strategy.module.parameters())
    optimizers = [strategy.optimizer, getattr(strategy.optimizer, "optim", None)]  # ZeRO-1 keeps its shard in .optim
    held = {"parameters": _storage_bytes(parameters),
            "gradients": _storage_bytes(parameter.grad for parameter in parameters if parameter.grad is not None),
            "optimizer": _storage_bytes(value for optimizer in optimizers if optimizer is not None
                                        for state in optimizer.state.values() for value in state.values()
                                        if isinstance(value, torch.Tensor))}
    del strategy, parameters, optimizers  # release what holds the group before the next layout
    gc.collect()
    return held


def _storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind `tensors`; for a DTensor (fsdp), those of this rank's shard."""
    from torch.distributed.tensor import DTensor

    storages = {}
    for tensor in tensors:
        local = tensor.to_local() if isinstance(tensor, DTensor) else tensor
        storage = local.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


def _launch(script_and_args: list[str], run_dir: Path, processes: int) -> None:
    """One process of `script_and_args` with python, or several under torchrun, on 1 thread each."""
    run_dir.mkdir(parents=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo", "SAGEMAKER_BASE_DIR": str(run_dir),
           "SM_OUTPUT_DATA_DIR": str(run_dir / "output" / "data")}
    launcher = ([sys.executable] if processes == 1 else
                [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(processes),
                 "--master-addr", "127.0.0.1", "--master-port", str(_free_port())])
    command = [*launcher, *script_and_args]
    finished = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if finished.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({finished.returncode}):\n{finished.stdout}{finished.stderr}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write_result(name: str, content: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"{name}-{stamp}.json"
    path.write_text(json.dumps({**content, "torch_version": torch.__version__, "cpu_count": os.cpu_count(),
                                "load_average": os.getloadavg()}, indent=2) + "\n")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
