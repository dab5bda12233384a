"""The install path the README gives an ordinary machine: a wheel built from this clone, installed with the
`local` extra under constraints.txt into a fresh virtualenv, runs the 2-host CPU example to Completed. It caught
numpy missing from the extra (the CPU torch wheel does not require it; torch.distributed.gather_object does)."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_a_built_wheel_with_the_local_extra_runs_the_cpu_example(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", str(REPO), "-w", str(tmp_path)],
                   check=True, timeout=600)
    (wheel,) = tmp_path.glob("smtrain-*.whl")
    venv.create(tmp_path / "env", with_pip=True)
    python = tmp_path / "env" / "bin" / "python"
    # --no-compile: byte-compiling the installed files took 27 of the install's 62 CPU-s here; each of the run's two
    # ranks then spends 4 CPU-s more importing torch without byte code.
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-compile", "-c",
                    str(REPO / "constraints.txt"), f"{wheel}[local]"], check=True, timeout=1200)
    done = subprocess.run([str(tmp_path / "env" / "bin" / "smtrain"), "local",
                           str(REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"), "--run-dir",
                           str(tmp_path / "run"), "--set", "hyperparameters.epochs=1", "--set",
                           "hyperparameters.num-samples=2048", "-o", "json"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert '"status": "Completed"' in done.stdout
