"""A disk that a job's output fills: no traceback, and result.json and status.json say why (written in
the room the run kept for them). A small tmpfs in a mount namespace of the test's own stands in for the disk."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.hardening

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_disk_filled_by_the_jobs_output_ends_with_one_reason_and_a_result(tmp_path):
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here")
    small = tmp_path / "small"
    small.mkdir()
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        for i in range(20000):
            print("loss=%d " % i + "x" * 100, flush=True)
    """))
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "full", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 1}, "max_run_seconds": 600}))
    as_user = [] if os.geteuid() == 0 else ["-r"]
    script = (f"mount -t tmpfs -o size=400k smtrain-test {small} && "
              f"{sys.executable} -m orchestrator local {spec} --run-dir {small / 'run'} --stall-timeout 0; "
              f"echo exit=$?; cat {small / 'run' / 'result.json'}; echo; cat {small / 'run' / 'status.json'}")
    result = subprocess.run(["unshare", *as_user, "-m", "sh", "-c", script], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    if "mount" in result.stderr and "exit=" not in result.stdout:
        pytest.skip(f"no mount namespace for the test here: {result.stderr.strip()}")
    assert "Traceback" not in result.stderr, result.stderr
    assert "exit=1" in result.stdout, result.stdout + result.stderr
    documents = result.stdout.split("exit=1\n", 1)[1]
    written, status = json.JSONDecoder().raw_decode(documents)[0], documents[documents.index("\n{") + 1:]
    assert written["status"] == "Failed" and "the disk is full (ENOSPC)" in written["failure_reason"]
    assert json.loads(status)["TrainingJobStatus"] == "Failed"
