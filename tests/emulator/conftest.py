"""Specs around the fixture scripts, run through the emulator."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

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
