"""Which torchrun a torch_distributed job starts: the interpreter's own, except torch 1.x on Python 3.11 or later,
whose torchrun cannot start (torch1/torchrun, run for real by tests/examples/test_examples_debian_torch.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.emulator.launching.launch import TORCH1_TORCHRUN, torch1_torchrun_notice, torchrun_launcher

DEBIAN_PYTHON = "/usr/bin/python3"


def _debian_torch1() -> bool:
    if not Path(DEBIAN_PYTHON).exists():
        return False
    probe = subprocess.run([DEBIAN_PYTHON, "-c", "import sys; from importlib.metadata import version; "
                            "print(version('torch')[:2], sys.version_info[:2] >= (3, 11))"],
                           capture_output=True, text=True, timeout=60)
    return probe.stdout.split() == ["1.", "True"]


def test_this_environment_starts_its_own_torchrun():
    assert torchrun_launcher(sys.executable) == [str(Path(sys.executable).parent / "torchrun")]
    assert torch1_torchrun_notice(sys.executable) is None


@pytest.mark.skipif(not _debian_torch1(), reason=f"{DEBIAN_PYTHON} has no torch 1.x on Python 3.11 (Debian "
                    "bookworm's python3-torch: apt-get install -y python3-torch)")
def test_torch1_on_python311_starts_through_the_fix(tmp_path):
    assert torchrun_launcher(DEBIAN_PYTHON) == [DEBIAN_PYTHON, str(TORCH1_TORCHRUN)]
    assert "cannot parse its default --redirects 0" in (torch1_torchrun_notice(DEBIAN_PYTHON) or "")
    # what it fixes: torch's own torchrun there dies before it starts a worker
    own = subprocess.run([DEBIAN_PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", "1", "-m", "this"],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TMPDIR": str(tmp_path)})  # its torchelastic_* folder: not in /tmp
    assert own.returncode and "'NoneType' object has no attribute 'get'" in own.stderr, own.stderr

