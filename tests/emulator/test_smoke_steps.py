"""`--smoke` reports the last step any rank reached, from progress lines, a host's metrics.jsonl or its checkpoints
(a short smoke often ends before the first progress line, printed every 50 steps), and says so plainly when no rank
reached one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

# Records step 3 in metrics.jsonl as the shared entrypoints do, saves ckpt-4 at SIGTERM, never prints step=N/M.
CHECKPOINTS_WITHOUT_PROGRESS_LINES = """
import json, os, signal, sys, time
out = os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], "metrics.jsonl")
with open(out, "a") as handle:
    handle.write(json.dumps({"event": "checkpoint", "step": 3, "path": "x"}) + "\\n")
def stop(*_):
    os.makedirs("/opt/ml/checkpoints", exist_ok=True)
    open("/opt/ml/checkpoints/ckpt-4.pt", "w").write("state")
    print("interrupted: checkpoint saved at step 4", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("training", flush=True)
while True:
    time.sleep(0.1)
"""
SILENT = """
import time
while True:
    time.sleep(0.1)
"""


def _smoke(make_spec, tmp_path: Path, script: str, seconds: float) -> subprocess.CompletedProcess[str]:
    spec = make_spec("stepper.py", count=2)
    (spec.parent / "src" / "stepper.py").write_text(script)
    return subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir",
                           str(tmp_path / "run"), "--smoke", str(seconds), "-o", "json"], capture_output=True,
                          text=True, timeout=600, check=False)


def test_the_last_step_comes_from_checkpoints_and_metrics_when_no_progress_line_was_printed(make_spec, tmp_path,
                                                                                             smoke_seconds):
    done = _smoke(make_spec, tmp_path, CHECKPOINTS_WITHOUT_PROGRESS_LINES, smoke_seconds(3))
    assert done.returncode == 0, done.stderr
    smoke = json.loads(done.stdout)["smoke"]
    assert (smoke["steps_reached"], smoke["step_source"]) == (4, "checkpoint")
    assert "smoke passed: 2 of 2 ranks started, step 4 reached (checkpoint)" in done.stderr


def test_a_smoke_where_no_rank_reached_a_step_says_so(make_spec, tmp_path, smoke_seconds):
    done = _smoke(make_spec, tmp_path, SILENT, smoke_seconds(3))
    smoke = json.loads(done.stdout)["smoke"]
    assert smoke["steps_reached"] is None and smoke["step_source"] is None
    assert "NO rank reached a step (no step=N/M line, no step in metrics.jsonl, no checkpoint)" in done.stderr
    assert "s in all: set-up, the stop's grace and packing)" in done.stderr


def test_a_smoke_whose_script_fails_before_its_first_step_is_not_told_to_print_step_lines(make_spec, tmp_path,
                                                                                         smoke_seconds):
    """The script's own error is the news (an argparse error, a missing data file): it may well print `step=N`
    later, so "print one of them" would send the user after the wrong thing."""
    script = "import sys\nprint('loading data', flush=True)\nsys.exit('no train.csv in /opt/ml/input/data/train')\n"
    spec = make_spec("stepper.py", count=2)
    (spec.parent / "src" / "stepper.py").write_text(script)

    done = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(tmp_path / "run"),
                           "--smoke", str(smoke_seconds(3)), "--smoke-steps", "1"], capture_output=True, text=True,
                          timeout=600, check=False)

    assert done.returncode == 1, done.stderr
    assert "no train.csv in /opt/ml/input/data/train" in done.stderr
    assert "no line of the job showed a step" not in done.stderr


def test_a_rerun_failing_at_import_reached_no_step_though_it_received_a_checkpoint(make_spec, tmp_path):
    """A rerun in the same run directory receives the checkpoint prefix's ckpt-1.pt, an earlier run's: its script
    failing at import reached no step, and its one rank started."""
    spec = make_spec("stepper.py", count=1, checkpoint={"s3_uri": "s3://bucket/checkpoints/"})
    script = spec.parent / "src" / "stepper.py"
    script.write_text("open('/opt/ml/checkpoints/ckpt-1.pt', 'w').write('state')\nprint('step=1/1', flush=True)\n")
    command = [sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(tmp_path / "run"),
               "--smoke", "600", "--smoke-steps", "1", "-o", "json"]
    assert subprocess.run(command, capture_output=True, text=True, timeout=600, check=False).returncode == 0
    script.write_text("raise ValueError('bad config')\n")

    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)

    assert done.returncode == 1, done.stderr
    smoke = json.loads(done.stdout)["smoke"]
    assert (smoke["ranks_started"], smoke["steps_reached"], smoke["step_source"]) == (1, None, None)
    assert "smoke FAILED: 1 of 1 ranks started, NO rank reached a step (" in done.stderr
