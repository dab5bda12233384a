"""Fixtures for the hardening tests (issue 12): spec files next to a train.py."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def write_spec(tmp_path: Path):
    """Writes spec text into spec.yaml next to a train.py; returns the path."""
    (tmp_path / "train.py").write_text("print('hello')\n")

    def write(text: str) -> Path:
        path = tmp_path / "spec.yaml"
        path.write_text(text)
        return path

    return write
