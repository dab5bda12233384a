"""bench/bench_sharded.py --memory still runs the trainers' own layouts and finds what docs/entrypoints.md's table says:
FSDP holds 1/world of DDP's bytes per rank, ZeRO-1 shards only the optimizer state."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow


def test_memory_per_rank_of_ddp_zero1_and_fsdp():
    finished = subprocess.run([sys.executable, str(REPO / "bench" / "bench_sharded.py"), "--memory"], cwd=REPO,
                              capture_output=True, text=True, timeout=600, check=False)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    ratios = {(layout, int(ranks)): float(ratio) for layout, ranks, ratio in
              re.findall(r"^(ddp|zero1|fsdp)\s+(\d)\s+[\d,]+\s+[\d,]+\s+[\d,]+\s+[\d,]+\s+[\d,]+\s+([\d.]+)$",
                         finished.stdout, re.MULTILINE)}
    assert ratios == {("ddp", 2): 1.0, ("zero1", 2): 0.784, ("fsdp", 2): 0.5,
                      ("ddp", 4): 1.0, ("zero1", 4): 0.642, ("fsdp", 4): 0.25}
    for written in re.findall(r"^written: (\S+)$", finished.stdout, re.MULTILINE):
        (REPO / written).unlink(missing_ok=True)  # results are the benchmark's, not the suite's
