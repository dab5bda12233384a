"""Side-by-side timing shared by the benchmarks: alternate the contenders in one run, report medians."""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def wall_seconds(command: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def alternate(contenders: dict[str, Sequence[str]], repeats: int, env: dict[str, str] | None = None,
              cwd: Path | None = None, warmup: int = 1) -> dict[str, list[float]]:
    """Runs every contender `repeats` times, interleaved (A B C A B C ...), after `warmup` untimed rounds,
    so that machine noise hits all of them alike."""
    for _ in range(warmup):
        for command in contenders.values():
            wall_seconds(command, env, cwd)
    timings: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, command in contenders.items():
            timings[name].append(wall_seconds(command, env, cwd))
    return timings


def report(title: str, timings: dict[str, list[float]], ratios: dict[str, tuple[str, str, float | None]]) -> dict:
    """Prints medians and ratios; writes them to bench/results/<title>.json."""
    medians = {name: statistics.median(values) for name, values in timings.items()}
    print(f"\n{title}")
    for name, values in timings.items():
        print(f"  {name:<34} median {medians[name]:8.3f} s   min {min(values):8.3f} s   n={len(values)}")
    summary = {"medians_s": medians, "runs_s": timings, "ratios": {}}
    for label, (numerator, denominator, goal) in ratios.items():
        ratio = medians[numerator] / medians[denominator]
        verdict = "" if goal is None else ("  (goal <= %.2f: %s)" % (goal, "met" if ratio <= goal else "NOT met"))
        print(f"  {label:<34} {ratio:8.3f}x{verdict}")
        summary["ratios"][label] = ratio
        summary.setdefault("goals", {})[label] = goal
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{title}.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
