"""The bar of a large source's packing and upload: drawn on a terminal's stderr (bytes of the total, files), not
under `--output json` nor where stderr is no terminal; the packed bytes are the same either way."""

from __future__ import annotations

import io
import os
import sys

import pytest

from orchestrator.cli import source_bar
from orchestrator.cli.source_bar import source_progress
from orchestrator.planning.packaging import package


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _on_a_terminal(monkeypatch) -> Terminal:
    """stderr a terminal, and every stage drawn at once (the bar's delay spares small sources, not these tests).
    Called in the test itself: pytest puts its own stderr back between a fixture and the test."""
    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "150")
    monkeypatch.setattr(source_bar, "SHOW_AFTER_SECONDS", 0)
    return stream


@pytest.fixture
def source(tmp_path):
    (tmp_path / "weights.bin").write_bytes(os.urandom(3_000_000))
    (tmp_path / "train.py").write_text("x\n")
    return tmp_path


def test_packing_draws_its_bytes_and_files_on_a_terminal(monkeypatch, source):
    terminal = _on_a_terminal(monkeypatch)
    with source_progress(quiet=False):
        shown = package(source)

    drawn = terminal.getvalue()
    assert "packing the source" in drawn and "3.0/3.0 MB" in drawn and "2/2 files" in drawn
    assert shown.sha256 == package(source).sha256  # the bar changes nothing packed


@pytest.mark.parametrize("stderr_is_a_terminal", [True, False])
def test_nothing_is_drawn_under_json_or_without_a_terminal(source, monkeypatch, stderr_is_a_terminal):
    terminal = _on_a_terminal(monkeypatch)
    if not stderr_is_a_terminal:
        monkeypatch.setattr(terminal, "isatty", lambda: False)
    with source_progress(quiet=stderr_is_a_terminal):  # quiet: `--output json`
        package(source)

    assert terminal.getvalue() == ""
