"""`smtrain status` of a local run that failed: the failure reason's lines stay in the value column, the cause is
not repeated when the reason already opens with it, and the progress row does not list step formats."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow


def _failed_run(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("print('loading', flush=True)\nraise ValueError('no rows in the training set')\n")
    spec = {"name": "fails", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 1}, "distribution": {"mode": "none"}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(tmp_path / "spec.yaml"), "--run-dir",
                           str(run_dir)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stderr
    return run_dir


def test_status_of_a_failed_run_reads_as_one_table(tmp_path):
    run_dir = _failed_run(tmp_path)

    shown = subprocess.run([sys.executable, "-m", "orchestrator", "status", str(run_dir)], capture_output=True,
                           text=True, timeout=600, check=False)

    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    failure = next(index for index, line in enumerate(lines) if line.startswith("  failure "))
    column = lines[failure].index("algo-1 (rank 0) failed: ValueError: no rows in the training set")
    assert lines[failure + 1] == " " * column + "ExecuteUserScriptError:", shown.stdout
    assert lines[failure + 2] == " " * column + "ExitCode 1", shown.stdout
    assert not any(line.startswith("  cause ") for line in lines), shown.stdout  # the reason's first line is it
    assert "  progress   no step in the logs' last lines\n" in shown.stdout
