"""mpi_demo.py under a real mpirun: ring, broadcast and gather-average-broadcast on four ranks."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_mpi_demo_passes_on_four_ranks_and_writes_its_summary(launcher):
    finished = launcher.mpirun("mpi-demo", 4, "mpi_demo.py", [])
    assert finished.returncode == 0, finished.output
    summary = json.loads((finished.model_dir / "mpi_demo.json").read_text())
    assert summary["world_size"] == 4 and summary["all_checks_passed"] is True
    assert [(rank["rank"], rank["from_left"], rank["average"]) for rank in summary["ranks"]] == [
        (0, 3, 2.5), (1, 0, 2.5), (2, 1, 2.5), (3, 2, 2.5)]
    assert finished.output.count(": ok") == 4
