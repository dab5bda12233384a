"""A hung run's stacks (`stacks.txt` and the console) are masked as its log is: py-spy's dump begins with the
rank's command line, which holds the script's hyperparameters (`--db_password v`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from orchestrator.emulator.supervising.stacks import find_py_spy

pytestmark = [pytest.mark.hardening, pytest.mark.slow]

SECRET = "hunter22-stack-secret"
URL_PASSWORD = "Url-Passw0rd-stack"


@pytest.mark.skipif(find_py_spy() is None or os.geteuid() != 0, reason="py-spy cannot attach here")
def test_a_hung_runs_stacks_show_no_hyperparameter_secret(tmp_path):
    (tmp_path / "train.py").write_text("import time\nprint('started', flush=True)\ntime.sleep(600)\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "hung", "entry_point": "train.py", "framework_version": "2.3.0", "metrics": [],
        "instance": {"type": "ml.c5.2xlarge", "count": 1},
        "hyperparameters": {"db_password": SECRET, "hub": f"https://alice:{URL_PASSWORD}@h.example.com"}}))
    run = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run),
                           "--stall-timeout", "3"], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 4, output
    stacks = (run / "stacks.txt").read_text()
    assert "stack from py-spy" in stacks and "train.py --db_password ****" in stacks  # the command line, masked
    for text in (output, stacks):
        assert SECRET not in text and URL_PASSWORD not in text
