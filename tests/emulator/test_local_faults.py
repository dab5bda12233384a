"""Faults: a rank that dies stops the whole job fast; interruptions reach every process and keep checkpoints;
a simulated spot reclaim resumes to the same model; environment mistakes fail before anything starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from orchestrator.backends.job import attach
from orchestrator.backends.local import LocalBackend
from orchestrator.emulator.local_run import Options, QuietObserver, run_local
from orchestrator.emulator.supervising.interruption import interruption
from orchestrator.errors import EnvironmentProblem
from orchestrator.specs.loader import load

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SURVIVORS_SLEEP_SECONDS = 300  # scripts/fail_script.py: the ranks that do not fail
RUN_DEADLINE_SECONDS = 600  # only a run that never ends reaches it
GLOO_EXAMPLE = REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"
SLOW_TRAINING = ["hyperparameters.epochs=2", "hyperparameters.num-samples=512", "hyperparameters.batch-size=32",
                 "hyperparameters.mlp-hidden=32", "hyperparameters.log-every=1",
                 "hyperparameters.simulate-step-seconds=0.25"]


def _processes_of(run_dir: Path) -> list[int]:
    """Live processes whose environment names this run directory."""
    marker = f"SMTRAIN_RUN_DIR={run_dir}".encode() + b"\0"
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker in Path(f"/proc/{entry}/environ").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


# mode, spec extras, failing rank, where it runs, the host whose launcher fails (mpirun runs on the master).
@pytest.mark.parametrize(("mode", "extra", "fail_rank", "where", "launcher"), [
    ("none", {}, 1, "algo-2 (rank 1)", "algo-2"),
    ("mpi", {"distribution": {"mode": "mpi", "processes_per_host": 2}}, 3, "algo-2 (rank 3)", "algo-1"),
    ("torch_distributed", {"instance": "ml.g5.2xlarge"}, 1, "algo-2 (rank 1)", "algo-2"),
])
def test_a_dying_rank_stops_every_process_and_is_named(make_spec, tmp_path, mode, extra, fail_rank, where,
                                                       launcher):
    spec = make_spec("fail_script.py", mode=mode, hyperparameters={"fail-rank": fail_rank}, **extra)
    started = time.monotonic()
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert time.monotonic() - started < SURVIVORS_SLEEP_SECONDS, "the surviving ranks must have been stopped"
    assert result.status == "Failed" and result.exit_code == 1
    assert result.failure_reason.startswith(f"{where} failed: ValueError: boom on purpose\n"), result.failure_reason
    assert _processes_of(result.run_dir) == []
    failure = (result.run_dir / launcher / "output" / "failure").read_text()
    assert failure.startswith("ExecuteUserScriptError:\nExitCode 1\nErrorMessage \"") and "boom on purpose" in failure


def _interrupted_once_logged(command: list[str], run_dir: Path, text: str, cwd: Path) -> str:
    """Runs `smtrain local` (`command`), Ctrl-C once algo-1's log shows `text`; its output, once it exited 130."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd)
    log = run_dir / "logs" / "algo-1.log"
    deadline = time.monotonic() + RUN_DEADLINE_SECONDS
    while not (log.exists() and text in log.read_text(errors="replace")):
        assert time.monotonic() < deadline and process.poll() is None, f"no {text!r} within the deadline"
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=RUN_DEADLINE_SECONDS)
    assert process.returncode == 130, output
    return output


def test_ctrl_c_reaches_every_rank_and_keeps_the_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "orchestrator", "local", str(GLOO_EXAMPLE), "--run-dir", str(run_dir), "-q",
               *(item for override in SLOW_TRAINING for item in ("--set", override))]
    # A progress line: both ranks have synchronized a step (DDP), so both train and have a step to save.
    output = _interrupted_once_logged(command, run_dir, "step=", tmp_path)
    assert "Interrupted" in output
    assert list((run_dir / "algo-1" / "checkpoints").glob("*.pt")), output
    log = (run_dir / "logs" / "algo-1.log").read_text()
    assert "interrupted: checkpoint saved at step" in log
    assert _processes_of(run_dir) == []


def test_ctrl_c_of_a_job_without_a_checkpoint_prefix_promises_no_resume(make_spec, tmp_path):
    """Without `checkpoint:` a rerun starts afresh (as on SageMaker): the run says so, and prints no resume line."""
    spec = make_spec("checkpoint_script.py", count=1, hyperparameters={"checkpoint-dir": "/opt/ml/checkpoints"})
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run_dir)]
    output = _interrupted_once_logged(command, run_dir, "checkpoint written", tmp_path)

    assert "no checkpoint is kept: the spec has no `checkpoint:`, so a rerun starts from the beginning" in output
    assert "resume from its checkpoints" not in output and "checkpoints are kept" not in output


@pytest.mark.parametrize(("raised", "named"), [(interruption(signal.SIGHUP), "SIGHUP"), (KeyboardInterrupt(), "SIGINT")],
                         ids=["smtrain's SIGHUP handler", "Python's own Ctrl-C"])
def test_an_interruption_before_the_processes_start_names_its_signal(make_spec, tmp_path, raised, named):
    """The reason read `interrupted (SIGINT/SIGTERM/SIGHUP) before ...` whichever came; it names the one that did:
    smtrain's handlers raise KeyboardInterrupt carrying it, and Python's own Ctrl-C (the API, a notebook) is SIGINT.
    The interruption comes as the run announces its start, right before the job's processes would start."""

    class InterruptedAtStart(QuietObserver):
        def started(self, *args: object) -> None:
            raise raised

    with pytest.raises(KeyboardInterrupt):
        run_local(load(make_spec("env_dump.py", count=1)), Options(run_dir=tmp_path / "run"), InterruptedAtStart())
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert (result["status"], result["exit_code"]) == ("Interrupted", 130)
    assert result["failure_reason"].startswith(f"interrupted ({named}) before the job's processes ended; "), result
    said = LocalBackend().describe(str(tmp_path / "run")).transitions[-1].message  # `smtrain status`, Job.status()
    assert said == f"smtrain was interrupted ({named}) and stopped every process of the job", said


def test_simulated_spot_interruption_resumes_to_the_uninterrupted_model(tmp_path):
    # 24 steps; the interruption comes at step 12, wherever in time that falls on this machine now.
    loaded = load(GLOO_EXAMPLE, [*SLOW_TRAINING, "hyperparameters.epochs=3", "hyperparameters.simulate-step-seconds=0.1"])
    reference = run_local(loaded, Options(run_dir=tmp_path / "reference"))
    interrupted = run_local(loaded, Options(run_dir=tmp_path / "spot", simulate_spot_interruption_at_step=12))
    assert reference.status == interrupted.status == "Completed", interrupted.failure_reason
    assert interrupted.attempts == 2
    log = (tmp_path / "spot" / "logs" / "algo-1.log").read_text()
    assert "interrupted: checkpoint saved at step" in log and "resuming from" in log, log
    expected = torch.load(tmp_path / "reference" / "algo-1" / "model" / "model.pt")
    resumed = torch.load(tmp_path / "spot" / "algo-1" / "model" / "model.pt")
    assert expected.keys() == resumed.keys()
    assert all(torch.equal(expected[key], resumed[key]) for key in expected)


def test_a_simulated_spot_interruption_that_never_came_is_said(make_spec, tmp_path, notice_recorder):
    """The job completes before any line shows the step: the run passes with one attempt, and says its resume was
    never tried, so that no CI run takes it for a tested one."""
    spec = make_spec("three_steps.py", count=1)
    (tmp_path / "src" / "three_steps.py").write_text("for step in (1, 2, 3):\n    print(f'step={step}/3', flush=True)\n")

    result = run_local(load(spec), Options(run_dir=tmp_path / "run", simulate_spot_interruption_at_step=12),
                       notice_recorder)

    assert (result.status, result.attempts) == ("Completed", 1), result.failure_reason
    assert ("--simulate-spot-interruption-at-step 12: the job completed before a line showed step 12 (the last step "
            "a line showed was 3), so it was never interrupted") in "\n".join(notice_recorder.notices)


def test_max_run_seconds_stops_the_job(make_spec, tmp_path):
    spec = make_spec("fail_script.py", hyperparameters={"fail-rank": 9}, max_run_seconds=3)
    result = run_local(load(spec), Options(run_dir=tmp_path / "run", stop_grace_seconds=2))
    assert result.status == "Stopped" and result.exit_code == 3
    assert "MaxRuntimeExceeded" in result.failure_reason
    assert _processes_of(result.run_dir) == []


def test_missing_mpirun_is_reported_before_anything_starts(make_spec, tmp_path, monkeypatch):
    python_dir = tmp_path / "bin"
    python_dir.mkdir()
    (python_dir / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(python_dir))  # not /usr/bin: Debian's openmpi-bin puts an mpirun there
    spec = make_spec("mpi4py_script.py", mode="mpi")
    with pytest.raises(EnvironmentProblem, match="needs mpirun"):
        run_local(load(spec), Options(run_dir=tmp_path / "run", python=str(python_dir / "python")))
    assert not (tmp_path / "run").exists()


def test_missing_torch_is_reported_before_anything_starts(make_spec, tmp_path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    spec = make_spec("sagemaker_hosts_script.py")
    with pytest.raises(EnvironmentProblem, match="cannot import torch"):
        run_local(load(spec), Options(run_dir=tmp_path / "run", python=str(bare / "bin" / "python")))
    assert not (tmp_path / "run").exists()


def test_s3_channel_without_credentials_suggests_a_local_copy(make_spec, tmp_path):
    spec = make_spec("env_dump.py", inputs={"train": "s3://some-bucket/data/"})
    with pytest.raises(EnvironmentProblem, match="--input train=") as error:
        run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert "no AWS credentials" in str(error.value)


def test_the_reason_leads_with_the_failing_ranks_exception(make_spec, tmp_path):
    """Rank 1 (on algo-2) fails 50 frames deep while rank 0 waits in a barrier: its exception line comes first,
    and a secret-looking argument never shows (the command line is in the toolkit's message)."""
    spec = make_spec("deep_failure.py", mode="mpi", distribution={"mode": "mpi", "processes_per_host": 1},
                     hyperparameters={"api_key": "sk-live-0123456789"})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Failed"
    lines = result.failure_reason.splitlines()
    # mpirun runs the script as `deep_failure.py`: the relative frame is the source dir's
    assert lines[0].startswith("algo-2 (rank 1) failed: ValueError: shape mismatch in layer 7: (32, 64) vs (32, 48) "
                               "at ") and lines[0].endswith("src/deep_failure.py:15")
    assert lines[1] == "ExecuteUserScriptError:"
    written = [result.failure_reason, (result.run_dir / "result.json").read_text(),
               (result.run_dir / "algo-1" / "output" / "failure").read_text()]
    assert all("sk-live-0123456789" not in text for text in written)
    assert "--api_key ****" in written[2]
    log = (result.run_dir / "logs" / "algo-1.log").read_text()
    assert "[1,mpirank:1,algo-2]<stdout>: rank 1 building the model" in log
    assert "sk-live-0123456789" not in log and "--api_key ****" in log.split("\n\n")[1]  # the mpirun line shown


def test_a_process_killed_by_sigkill_is_reported_as_out_of_memory(make_spec, tmp_path):
    source = tmp_path / "src"
    spec = make_spec("env_dump.py", count=1)
    (source / "env_dump.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Failed"
    failure = (result.run_dir / "algo-1" / "output" / "failure").read_text()
    assert failure.startswith("ExecuteUserScriptError:\nExitCode 137\n")
    assert 'ExtraInfo "OutOfMemory: Process killed by SIGKILL (signal 9)"' in failure
    assert "OutOfMemory" in result.failure_reason
    assert result.failure_cause["category"] == "oom_killed" and "OOM killer" in result.failure_cause["fix"]


@pytest.mark.slow
def test_two_host_torchrun_failure_names_the_rank_its_exception_and_the_users_file(make_spec, tmp_path):
    spec = make_spec("rank1_fails.py", mode="torch_distributed", instance="ml.g5.2xlarge", count=2)
    result = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir",
                             str(tmp_path / "run")], capture_output=True, text=True, cwd=tmp_path, timeout=600,
                            check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    source = (tmp_path / "src" / "rank1_fails.py").read_text().splitlines()
    line = next(number for number, text in enumerate(source, 1) if "raise ValueError" in text)
    headline = f"algo-2 (rank 1) failed: ValueError: labels missing on rank 1 at src/rank1_fails.py:{line}"
    reason = json.loads((tmp_path / "run" / "result.json").read_text())["failure_reason"]
    assert reason.splitlines()[0] == headline
    console = result.stdout + result.stderr
    assert headline in console
    assert f'File "src/rank1_fails.py", line {line}' in console  # the console's traceback: the user's file
    assert "algo-2/code" not in reason


NEVER_JOINS = """\
import datetime, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=3))
if dist.get_rank() == 1:
    time.sleep(300)  # stalls before the all_reduce: a data loader that never returns
dist.all_reduce(torch.ones(1))
"""


@pytest.mark.slow
def test_a_gloo_timeout_under_torchrun_names_the_rank_that_never_joined(make_spec, tmp_path):
    """Before, every run named rank 0, the rank that waited and timed out; rank 1, stopped by smtrain after it,
    printed nothing, and only the rank table says it was there."""
    spec = make_spec("absent.py", mode="torch_distributed", instance="ml.g5.2xlarge", count=2)
    (tmp_path / "src" / "absent.py").write_text(NEVER_JOINS)
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Failed"
    cause = result.failure_cause
    assert (cause["host"], cause["rank"], cause["category"]) == ("algo-2", 1, "collective_timeout"), \
        result.failure_reason
    assert cause["exception"] == ("gloo: Timed out waiting 3000ms for recv operation to complete on rank 0; rank 1 "
                                  "reported no timeout: it never joined it")
    assert "waited in a collective for rank 1" in cause["fix"]


@pytest.mark.parametrize(("mode", "extra"), [
    ("none", {}),
    ("torch_distributed", {"instance": "ml.g5.2xlarge"}),
    ("mpi", {"distribution": {"mode": "mpi", "processes_per_host": 1}}),
])
def test_an_argparse_rejection_names_the_unrecognized_arguments_under_every_launcher(make_spec, tmp_path, mode,
                                                                                     extra):
    spec = make_spec("strict_args.py", mode=mode, hyperparameters={"learning_rate": 0.1}, **extra)
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Failed"
    headline, usage, fix = result.failure_reason.splitlines()[:3]
    assert headline.endswith("failed: strict_args.py: error: unrecognized arguments: --learning_rate 0.1"), headline
    assert usage == "usage: strict_args.py [-h] [--epochs EPOCHS]"
    assert fix.startswith("fix: the script's argument parser rejects --learning_rate")
    assert result.failure_cause["category"] == "argument_rejected"
    assert attach(result.run_dir).failure_cause().to_dict() == result.failure_cause  # the handle reads the same


def test_the_same_failure_gives_the_same_reason_on_every_run(make_spec, tmp_path):
    """Four torchrun ranks on one host: rank 1 fails, the others are stopped; five runs, one reason."""
    spec = make_spec("fail_script.py", mode="torch_distributed", count=1, instance="ml.g5.12xlarge",
                     hyperparameters={"fail-rank": 1})
    reasons = {run_local(load(spec), Options(run_dir=tmp_path / f"run{attempt}")).failure_reason.splitlines()[0]
               for attempt in range(5)}
    assert reasons == {"algo-1 (rank 1) failed: ValueError: boom on purpose"}


def test_a_rejected_secret_hyperparameter_is_masked_in_the_cause(make_spec, tmp_path):
    spec = make_spec("strict_args.py", count=1, hyperparameters={"api_key": "sk-live-0123456789"})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.failure_cause["exception"] == "strict_args.py: error: unrecognized arguments: --api_key ****"
    assert "sk-live-0123456789" not in (result.run_dir / "result.json").read_text()


def test_max_run_seconds_after_a_rank_raised_names_that_error_not_the_limit(make_spec, tmp_path):
    """As a SageMaker job's status does (root_cause.max_runtime_cause): raising the limit would only wait longer."""
    spec = make_spec("thread_fails.py", count=1, max_run_seconds=3)
    result = run_local(load(spec), Options(run_dir=tmp_path / "run", stop_grace_seconds=2))
    assert (result.status, result.exit_code) == ("Stopped", 3)
    cause = result.failure_cause
    assert cause is not None and cause["exception"] == "ValueError: corrupt shard 3", cause
    assert "then: the other ranks waited for it until MaxRuntimeExceeded (max_run_seconds=3) stopped the job" in (
        cause["detail"]), cause
    headline = result.failure_reason.splitlines()[0]
    assert headline.startswith("algo-1 (rank 0) failed: ValueError: corrupt shard 3 at ") and headline.endswith(
        "src/thread_fails.py:9"), result.failure_reason
