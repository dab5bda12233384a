"""Every benchmark in one command, into one dated results file: bench/results/<UTC date>-<time>.md.

    .venv/bin/python bench/run_all.py            # each benchmark at its own defaults (about an hour on 2 cores)
    .venv/bin/python bench/run_all.py --quick    # fewer repetitions of each (about 20 minutes on 2 cores)
    .venv/bin/python bench/run_all.py --only cli local submit
    .venv/bin/python bench/run_all.py --only cli local --against /tmp/before   # before/after in one run

Each benchmark runs in its own process, as its docstring describes (contenders alternated, medians, the baseline
in the same run); the file keeps, for each, the command, its exit code, its wall time, the load average before
and after it, and the ratios it printed (its full output when it failed). The head of the file names the
machine: CPU model, cores, memory, whether the CPU has native bfloat16, Python and torch versions, the commit.
Ratios from a loaded machine (a load average above the core count) move; the file says the load so that a
reader can tell.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from _timing import RESULTS

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
# name: (arguments at their defaults, arguments with --quick)
BENCHMARKS: dict[str, tuple[list[str], list[str]]] = {
    "cli": (["bench_cli.py"], ["bench_cli.py", "--repeats", "5"]),
    "local": (["bench_local.py"], ["bench_local.py", "--repeats", "3", "--phase-runs", "1"]),
    "submit": (["bench_submit.py"], ["bench_submit.py", "--jobs", "8"]),
    "standin": (["bench_standin.py"], ["bench_standin.py", "--rounds", "3"]),
    "autocast": (["bench_autocast.py"], ["bench_autocast.py", "--rounds", "2"]),
    "trainer": (["bench_trainer.py"], ["bench_trainer.py", "--quick"]),
    "sharded": (["bench_sharded.py"], ["bench_sharded.py", "--quick"]),
    "tune": (["bench_tune.py"], ["bench_tune.py", "--repeats", "2"]),
    "exit_aborts": (["bench_exit_aborts.py"], ["bench_exit_aborts.py", "--runs", "20"]),
}
TAKES_AGAINST = {"cli", "local"}
"""The benchmarks that time another checkout alongside (`--against DIR`): a before/after in one run."""
SUMMARY = re.compile(r"\d\.\d+x|median|goal|ratio| s wall| s cpu|beyond by hand|/tmp holds", re.IGNORECASE)
"""A line about a benchmark's result: its medians, ratios (`0.123x`) and goals, and a phase's times."""


def machine() -> dict[str, str]:
    cpu_model = platform.processor() or platform.machine()
    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and cpu_model in ("", platform.machine()):
                cpu_model = line.partition(":")[2].strip()
            if line.startswith(("flags", "Features")):
                flags |= set(line.partition(":")[2].split())
    except OSError:
        pass
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        memory = f"{pages * page_size / 2**30:.0f} GiB"
    except (ValueError, OSError):
        memory = "unknown"
    torch_version = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip() or "not installed"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip() or "unknown"
    native_bf16 = bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})
    return {"cpu": cpu_model, "cores": str(os.cpu_count()), "memory": memory,
            "native bfloat16": "yes" if native_bf16 else "no", "python": platform.python_version(),
            "torch": torch_version, "commit": commit}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def summary_lines(output: str) -> list[str]:
    """The lines a benchmark prints about its result: medians, ratios and goals (the `_timing.report` table and
    the other benchmarks' own summaries), in the order printed."""
    lines = [line.rstrip() for line in output.splitlines()]
    return [line for line in lines if SUMMARY.search(line)] or lines[-15:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions of each benchmark")
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHMARKS), help="run only these benchmarks")
    parser.add_argument("--against", metavar="DIR",
                        help=f"another checkout, timed alongside by {', '.join(sorted(TAKES_AGAINST))}")
    args = parser.parse_args()
    chosen = args.only or list(BENCHMARKS)
    started = datetime.now(timezone.utc)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{started:%Y-%m-%d-%H%M}.md"
    described = machine()
    sections = [f"# Benchmarks, {started:%Y-%m-%d %H:%M} UTC{' (--quick)' if args.quick else ''}", "",
                "| machine | |", "|---|---|", *[f"| {key} | {value} |" for key, value in described.items()],
                f"| load average at the start (1 / 5 / 15 min) | {load()} |", ""]
    failed = []
    for name in chosen:
        script, *arguments = BENCHMARKS[name][1 if args.quick else 0]
        if args.against and name in TAKES_AGAINST:
            arguments += ["--against", args.against]
        command = [sys.executable, str(BENCH / script), *arguments]
        shown_command = " ".join(["python", f"bench/{script}", *arguments])
        print(f"== {name}: {shown_command}   (load {load()})", flush=True)
        load_before, clock = load(), time.monotonic()
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        seconds = time.monotonic() - clock
        output = done.stdout + (done.stderr if done.returncode else "")
        print(output[-3000:], flush=True)
        shown = summary_lines(done.stdout) if done.returncode == 0 else output.splitlines()[-40:]
        if done.returncode:
            failed.append(name)
        sections += [f"## {name}", "",
                     f"`{shown_command}`: exit {done.returncode}, {seconds:.0f} s; load before {load_before}, after {load()}", "",
                     "```", *shown, "```", ""]
        path.write_text("\n".join(sections) + "\n")
    print(f"results: {path.relative_to(REPO)}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
