"""Specs as the text a user writes: spec files in a temporary folder beside a train.py. Here `write_spec` takes
that text; elsewhere (tests/support/job_fixtures.py) it takes the fields to change in a complete job spec."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def spec_dir(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("print('hello')\n")
    return tmp_path


@pytest.fixture
def write_spec(spec_dir: Path):
    """Writes spec text into spec.yaml next to a train.py; returns the path."""

    def write(text: str) -> Path:
        path = spec_dir / "spec.yaml"
        path.write_text(text)
        return path

    return write
