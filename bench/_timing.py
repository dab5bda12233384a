"""Side-by-side timing shared by the benchmarks: alternate the contenders in one run, report medians.

Each run is timed on two clocks: wall-clock seconds, and CPU seconds (user + system of the process and of the
children it waited for, from os.wait4). On a shared, loaded machine the wall clock mostly measures the other
work; CPU time moves far less, so a benchmark may judge its goal on it (`judged_by="cpu"`), and says so.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def run_once(command: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run of `command` (which must exit 0)."""
    started = time.perf_counter()
    with subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, list(command))
    return wall, usage.ru_utime + usage.ru_stime


def alternate(contenders: dict[str, Sequence[str]], repeats: int, env: dict[str, str] | None = None,
              cwd: Path | None = None, warmup: int = 1,
              cpu: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """Runs every contender `repeats` times, interleaved (A B C A B C ...), after `warmup` untimed rounds,
    so that machine noise hits all of them alike. Returns each one's wall-clock seconds; each run's CPU seconds
    go into `cpu` when it is given."""
    for _ in range(warmup):
        for command in contenders.values():
            run_once(command, env, cwd)
    timings: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, command in contenders.items():
            wall, cpu_seconds = run_once(command, env, cwd)
            timings[name].append(wall)
            if cpu is not None:
                cpu.setdefault(name, []).append(cpu_seconds)
    return timings


def report(title: str, timings: dict[str, list[float]], ratios: dict[str, tuple[str, str, float | None]],
           cpu: dict[str, list[float]] | None = None, judged_by: str = "wall") -> dict:
    """Prints medians and ratios (on both clocks when `cpu` is given; each goal judged on the `judged_by` clock);
    writes them to bench/results/<title>.json."""
    medians = {name: statistics.median(values) for name, values in timings.items()}
    cpu_medians = {name: statistics.median(values) for name, values in (cpu or {}).items()}
    print(f"\n{title}" + (f" (goals judged on {judged_by} time)" if cpu else ""))
    for name, values in timings.items():
        line = f"  {name:<34} median {medians[name]:8.3f} s"
        if name in cpu_medians:
            line += f" wall {cpu_medians[name]:8.3f} s cpu"
        print(f"{line}   min {min(values):8.3f} s wall   n={len(values)}")
    summary: dict = {"medians_s": medians, "runs_s": timings, "ratios": {}, "goals": {}}
    if cpu:
        summary.update(cpu_medians_s=cpu_medians, cpu_runs_s=cpu, cpu_ratios={}, judged_by=judged_by)
    for label, (numerator, denominator, goal) in ratios.items():
        ratio = medians[numerator] / medians[denominator]
        summary["ratios"][label] = ratio
        summary["goals"][label] = goal
        shown = f"{ratio:8.3f}x"
        judged = ratio
        if cpu:
            cpu_ratio = cpu_medians[numerator] / cpu_medians[denominator]
            summary["cpu_ratios"][label] = cpu_ratio
            shown = f"{ratio:8.3f}x wall {cpu_ratio:8.3f}x cpu"
            judged = cpu_ratio if judged_by == "cpu" else ratio
        verdict = "" if goal is None else "  (goal <= %.2f on %s time: %s)" % (
            goal, judged_by, "met" if judged <= goal else "NOT met")
        print(f"  {label:<34} {shown}{verdict}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{title}.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
