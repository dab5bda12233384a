"""`smtrain local --smoke SECONDS`: the real-sized job for a bounded time, stopped as StopTrainingJob stops it;
it passes only when every rank started and none failed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.specs.loader import load

pytestmark = pytest.mark.slow

SMTRAIN = Path(sys.executable).with_name("smtrain")
CHECKPOINTED = {"checkpoint-dir": "/opt/ml/checkpoints"}
RUN_DEADLINE_SECONDS = 600  # only a run that never stops reaches it
# A torchrun agent that never starts its workers on algo-2: its rendezvous then never completes either.
AGENT_HANGS_ON_ALGO_2 = """
import os, sys, time
if os.path.basename(sys.argv[0]) == "torchrun" and os.environ.get("CURRENT_HOST") == "algo-2":
    time.sleep(3600)
"""


def test_smoke_stops_at_the_deadline_keeps_checkpoints_and_passes(make_spec, tmp_path, smoke_seconds):
    spec = make_spec("smoke_script.py", count=2, hyperparameters=CHECKPOINTED, metrics=None,
                     checkpoint={"s3_uri": "s3://bucket/checkpoints/"})
    run_dir = tmp_path / "run"
    deadline = smoke_seconds(4)
    started = time.monotonic()
    # The script never ends by itself: only the smoke's stop ends it before this generous limit.
    done = subprocess.run([str(SMTRAIN), "local", str(spec), "--run-dir", str(run_dir), "--smoke", str(deadline),
                           "-o", "json"], capture_output=True, text=True, timeout=RUN_DEADLINE_SECONDS, check=False)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started >= deadline, "not stopped before the deadline"
    result = json.loads(done.stdout)
    assert result["status"] == "Stopped" and result["failure_reason"] is None
    smoke = result["smoke"]
    assert (smoke["ranks_started"], smoke["ranks_expected"], smoke["missing"]) == (2, 2, [])
    assert smoke["steps_reached"] > 5
    # The last loss any host printed (the script's loss is 1/step); the hosts step at their own pace, so on a
    # loaded machine it can be a step or two behind the furthest host's.
    step_of_last_loss = round(1 / smoke["last_loss"])
    assert smoke["last_loss"] == pytest.approx(1 / step_of_last_loss, rel=1e-3)
    assert 0 < step_of_last_loss <= smoke["steps_reached"]
    for host in ("algo-1", "algo-2"):  # each saved at SIGTERM, and the checkpoint prefix has it
        assert (run_dir / host / "checkpoints" / f"ckpt-{host}.txt").read_text().startswith("step ")
        assert (run_dir / "checkpoints-s3" / f"ckpt-{host}.txt").exists()
    assert "smoke passed: 2 of 2 ranks started" in done.stderr


def test_smoke_steps_ends_the_smoke_once_every_rank_started_and_the_step_shows(make_spec, tmp_path):
    spec = make_spec("smoke_script.py", count=2, hyperparameters=CHECKPOINTED, metrics=None)
    run_dir = tmp_path / "run"
    # A deadline no run here reaches: only --smoke-steps ends the smoke within the subprocess' limit.
    done = subprocess.run([str(SMTRAIN), "local", str(spec), "--run-dir", str(run_dir), "--smoke", "86400",
                           "--smoke-steps", "20", "-o", "json"], capture_output=True, text=True,
                          timeout=RUN_DEADLINE_SECONDS, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "Stopped" and result["failure_reason"] is None
    smoke = result["smoke"]
    assert (smoke["ranks_started"], smoke["ranks_expected"], smoke["missing"]) == (2, 2, [])
    assert smoke["steps_reached"] >= 20 and smoke["steps_wanted"] == 20
    for host in ("algo-1", "algo-2"):  # stopped as at the deadline: each saved its checkpoint at SIGTERM
        assert (run_dir / host / "checkpoints" / f"ckpt-{host}.txt").read_text().startswith("step ")
    assert "smoke passed: 2 of 2 ranks started" in done.stderr
    past = "" if smoke["steps_reached"] == 20 else " or past it"  # the script's step lines may skip step 20
    assert f"step {smoke['steps_reached']} reached (" in done.stderr
    assert f"stopped once a line showed step 20{past} (--smoke-steps 20), within the deadline of 86400 s" in done.stderr


def test_smoke_steps_fails_when_the_deadline_comes_first(make_spec, tmp_path, smoke_seconds):
    spec = make_spec("smoke_script.py", count=1, hyperparameters=CHECKPOINTED, metrics=None)
    deadline = smoke_seconds(3)
    result = run_local(load(spec), Options(run_dir=tmp_path / "run", smoke_seconds=deadline,
                                           smoke_steps=10**9))
    assert (result.status, result.exit_code) == ("Failed", 1)
    assert f"smoke: step 1000000000 (--smoke-steps) not reached within {deadline:g} s (step " in \
        result.failure_reason


def test_smoke_steps_needs_a_deadline(make_spec):
    spec = make_spec("smoke_script.py", count=1, hyperparameters=CHECKPOINTED)
    done = subprocess.run([str(SMTRAIN), "local", str(spec), "--smoke-steps", "1"], capture_output=True, text=True,
                          timeout=RUN_DEADLINE_SECONDS, check=False)
    assert done.returncode == 2
    assert "--smoke-steps needs --smoke SECONDS" in done.stderr and "Traceback" not in done.stderr


def test_smoke_fails_naming_the_ranks_that_never_started(make_spec, tmp_path):
    spec = make_spec("torchrun_ddp_script.py", mode="torch_distributed", instance="ml.g5.2xlarge", count=2)
    (spec.parent / "src" / "sitecustomize.py").write_text(AGENT_HANGS_ON_ALGO_2)
    result = run_local(load(spec), Options(run_dir=tmp_path / "run", smoke_seconds=8))
    assert (result.status, result.exit_code) == ("Failed", 1)
    assert result.failure_reason == "smoke: rank 0 (algo-1), rank 1 (algo-2) never started within 8 s (0 of 2 ranks " \
                                    "started)"
    assert result.smoke.missing == ["rank 0 (algo-1)", "rank 1 (algo-2)"]


def test_a_script_failing_at_import_under_torchrun_reports_its_ranks_started_and_no_step(make_spec, tmp_path):
    """The most common CI failure: each worker ends within a fraction of a second, before the process list is read;
    their tracebacks and torchrun's summary say they ran. The line and the `smoke` key agree."""
    spec = make_spec("fails_at_import.py", mode="torch_distributed", instance="ml.g5.12xlarge", count=1)
    (spec.parent / "src" / "fails_at_import.py").write_text("import os\n\nraise ValueError('bad config')\n")
    done = subprocess.run([str(SMTRAIN), "local", str(spec), "--run-dir", str(tmp_path / "run"), "--smoke", "600",
                           "--smoke-steps", "1", "-o", "json"], capture_output=True, text=True,
                          timeout=RUN_DEADLINE_SECONDS, check=False)
    assert done.returncode == 1, done.stderr
    smoke = json.loads(done.stdout)["smoke"]
    assert (smoke["ranks_started"], smoke["ranks_expected"], smoke["missing"]) == (4, 4, [])
    assert smoke["steps_reached"] is None
    assert "smoke FAILED: 4 of 4 ranks started, NO rank reached a step (" in done.stderr
    assert "failed: ValueError: bad config at " in done.stderr  # the cause, above the verdict


def test_smoke_fails_when_a_process_is_killed_out_of_memory_in_the_grace_period(make_spec, tmp_path,
                                                                               smoke_seconds):
    spec = make_spec("smoke_script.py", count=1, hyperparameters={**CHECKPOINTED, "on-sigterm": "sigkill"})
    deadline = smoke_seconds(3)  # the rank must have started and set its SIGTERM handler
    result = run_local(load(spec), Options(run_dir=tmp_path / "run", smoke_seconds=deadline))
    assert (result.status, result.exit_code) == ("Failed", 1)
    assert result.smoke.killed_after_deadline == ["algo-1"]
    assert "algo-1: killed by SIGKILL after the deadline" in result.failure_reason
    assert "OutOfMemory" in result.failure_reason
