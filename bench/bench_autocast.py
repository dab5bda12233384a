"""What CPU bfloat16 autocast costs against float32 on this CPU: why the stand-in computes CUDA autocast regions
in float32 on a CPU without native bfloat16 (docs/gpu-standin.md).

    .venv/bin/python bench/bench_autocast.py             # 3 alternating rounds, one thread
    .venv/bin/python bench/bench_autocast.py --rounds 5 --batch 256 --threads 2

One 4096 x 4096 linear layer (the model-parallel example's width), forward and backward, in float32 and under
`torch.autocast("cpu", dtype=torch.bfloat16)`, alternating in one process; medians of wall and CPU time. On a CPU
with native bfloat16 (avx512_bf16, amx_bf16, Arm bf16) the ratio is about 1 or below; without it torch emulates
bfloat16 and the ratio is tens. Writes bench/results/autocast.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from _timing import RESULTS

WIDTH = 4096


def _step(layer: torch.nn.Linear, batch: torch.Tensor, dtype: torch.dtype | None) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
        out = layer(batch)
    out.float().sum().backward()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch's intra-op threads (a job's default: cores)")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    layer, batch = torch.nn.Linear(WIDTH, WIDTH), torch.randn(args.batch, WIDTH)
    _step(layer, batch, None)  # warm-up
    runs: dict[str, list[tuple[float, float]]] = {"float32": [], "bfloat16 autocast": []}
    for _ in range(args.rounds):
        runs["float32"].append(_step(layer, batch, None))
        runs["bfloat16 autocast"].append(_step(layer, batch, torch.bfloat16))
    medians = {name: {"wall_s": statistics.median(wall for wall, _ in values),
                      "cpu_s": statistics.median(cpu for _, cpu in values)} for name, values in runs.items()}
    print(f"\nautocast: one {WIDTH}-wide linear layer, batch {args.batch}, forward + backward, "
          f"{args.threads} thread(s)")
    for name, median in medians.items():
        print(f"  {name:<34} median {median['wall_s']:8.3f} s wall {median['cpu_s']:8.3f} s cpu   n={args.rounds}")
    ratios = {unit: medians["bfloat16 autocast"][unit] / medians["float32"][unit] for unit in ("wall_s", "cpu_s")}
    print(f"  {'bfloat16 autocast / float32':<34} {ratios['wall_s']:8.3f}x wall {ratios['cpu_s']:8.3f}x cpu")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "autocast.json").write_text(json.dumps({"medians": medians, "ratios": ratios, "runs": runs},
                                                      indent=2) + "\n")


if __name__ == "__main__":
    main()
