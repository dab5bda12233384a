"""Specs around the fixture scripts (scripts/), run through the emulator."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest
import yaml

from orchestrator.emulator.launching import opt_ml
from orchestrator.emulator.launching.launch import RUN_DIR_VARIABLE

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture
def make_spec(tmp_path):
    """Writes a spec whose source_dir holds the fixture scripts; returns its path."""

    def make(entry_point: str, mode: str = "none", count: int = 2, instance: str = "ml.c5.2xlarge", **extra) -> Path:
        source = tmp_path / "src"
        if not source.exists():
            shutil.copytree(SCRIPTS, source)
        spec = {"name": "emu-test", "entry_point": entry_point, "source_dir": "src", "framework_version": "2.3.0",
                "instance": {"type": instance, "count": count}, "distribution": {"mode": mode}, "metrics": [],
                "max_run_seconds": 600, **extra}
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(spec))
        return path

    return make


@pytest.fixture
def host_seen_at():
    """`host_seen_at(run_dir, "algo-2")`: the /opt/ml a run's job is told its host has, as SageMaker tells it
    (/opt/ml itself) where this machine gives each host a mount namespace, else the host's folder of the run."""

    def seen_at(run_dir: Path, host: str) -> Path:
        return Path("/opt/ml") if opt_ml.choose(run_dir).namespaced else run_dir / host

    return seen_at


@pytest.fixture
def hang_spec(tmp_path: Path) -> Path:
    """Two hosts in mode none running scripts/hang_script.py: rank 0 blocks in an all_reduce rank 1 never joins."""
    shutil.copytree(SCRIPTS, tmp_path / "src")
    spec = {"name": "hang-test", "entry_point": "hang_script.py", "source_dir": "src", "framework_version": "2.3.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 2}, "distribution": {"mode": "none"},
            "max_run_seconds": 600}
    path = tmp_path / "hang.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


# A smoke deadline that the ranks must start within is this many times what importing smtrain's runner takes now
# (about 0.6 s on an idle 2-core machine, several times that under load).
SMOKE_STARTUPS = 6


@pytest.fixture
def smoke_seconds(startup_seconds):
    """`smoke_seconds(3)`: a smoke's deadline, at least 3 s, long enough for smtrain and light ranks (no torch) to
    start and take a few steps on this machine now."""

    def deadline(floor: float) -> float:
        return round(max(floor, SMOKE_STARTUPS * startup_seconds("orchestrator.emulator.local_run")), 1)

    return deadline


@pytest.fixture
def processes_of():
    """`processes_of(run_dir)`: the live processes whose environment names this run directory (none should outlive
    their run)."""

    def live(run_dir: Path) -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter():
            try:
                if process.environ().get(RUN_DIR_VARIABLE) == str(run_dir):
                    found.append(process)
            except psutil.Error:
                continue
        return found

    return live
